# -*- coding: utf-8 -*-
"""The task-network decider and names: a task is its cluster and its name; the credential link's filter is
planned with the link and goes with it; a /30 a registration names is never handed out."""

from __future__ import absolute_import, division, print_function

import collections

from ansible_collections.drover.fleet.plugins.module_utils.network import plan
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import (
    hashable, holder_name, legacy_netns_name, net_spec, netns_name)
from ansible_collections.drover.fleet.plugins.module_utils.network.netlink import guard_rules

IFNAMSIZ = 16


def test_names_are_per_cluster_and_task_short_and_stable():
    names = set()
    for cluster, task in (('a', 'web'), ('b', 'web'), ('a-b', 'c'), ('a', 'b-c'), ('a', 'x' * 200)):
        name = netns_name(cluster, task)
        assert name == netns_name(cluster, task) and name.startswith('drover-')
        assert len(name) <= len('drover-') + 24 + 11 and len(plan.host_ifname(name)) < IFNAMSIZ
        assert holder_name(cluster, task).endswith(name[len('drover-'):])
        names.add(name)
    assert len(names) == 5
    assert netns_name('a', 'web') != legacy_netns_name('web')


def test_the_spec_hash_keeps_the_name_it_always_carried():
    spec = net_spec({'eni_mac': '02:00:c6:12:00:10', 'address': '198.18.9.2/24'}, 'web', 'a')
    assert spec.netns == netns_name('a', 'web')
    assert hashable(spec)['netns'] == 'drover-web'


def test_a_subnet_a_registration_names_is_never_handed_out():
    taken = plan.registered_subnets([{'source_ip': '169.254.1.2'}, {'source_ip': None},
                                     {'source_ip': '172.17.0.5'}])
    assert taken == {'169.254.1.0/30'}
    assert plan.allocate({}, 'drover-x', taken) == '169.254.1.4/30'
    assert plan.allocate({}, 'drover-x') == '169.254.1.0/30'


Spec = collections.namedtuple('Spec', 'netns eni_mac address dhcp gateway routes dns_servers credential_link')


def _spec(link=True):
    return Spec('drover-web-0123456789', '02:00:c6:12:00:10', '198.18.9.2/24', False, None, (), (), link)


def _seen(**kw):
    seen = {'holder': {'state': 'running'}, 'attached': True, 'eni': 'ns', 'host_link': True, 'resolv': [],
            'interfaces': [{'name': 'lo', 'mac': '', 'addresses': [], 'up': True},
                           {'name': 'eth0', 'mac': '02:00:c6:12:00:10', 'addresses': ['198.18.9.2/24'], 'up': True},
                           {'name': 'drover-cred', 'mac': 'x', 'addresses': ['169.254.1.2/30'], 'up': True}],
            'routes': [{'dst': '169.254.170.2/32', 'gateway': '169.254.1.1'}], 'link_subnet': '169.254.1.0/30',
            'guarded': True, 'guard_rules': True}
    seen.update(kw)
    return seen


def test_the_filter_is_planned_with_the_link_and_goes_with_it():
    allocations = {'drover-web-0123456789': '169.254.1.0/30'}
    assert plan.plan_present(_spec(), _seen(), allocations) == []
    assert plan.plan_present(_spec(), _seen(guarded=False), allocations) == ['guard']
    assert plan.plan_present(_spec(), _seen(host_link=False), allocations) == ['link', 'guard']
    assert plan.plan_present(_spec(link=False), _seen(), allocations) == ['unlink', 'unguard', 'free']
    assert plan.plan_absent(_seen(host_link=False), False)[:2] == ['eni_back', 'unguard']
    assert 'unguard' not in plan.plan_absent(_seen(guard_rules=False), True)


def test_the_filter_admits_the_endpoint_only():
    rules = guard_rules('dv0123456789')
    assert rules['INPUT'][-1] == ['-i', 'dv0123456789', '-j', 'DROP']
    accepted = [r for r in rules['INPUT'] if r[-1] == 'ACCEPT' and '--dport' in r]
    assert sorted(r[r.index('--dport') + 1] for r in accepted) == ['51679', '80']
    assert all(r[r.index('-d') + 1] == '169.254.170.2/32' for r in accepted)
    assert rules['FORWARD'] == rules['DOCKER-USER'] == [['-i', 'dv0123456789', '-j', 'DROP'],
                                                        ['-o', 'dv0123456789', '-j', 'DROP']]
