# -*- coding: utf-8 -*-
"""awsvpc with no ENI declared: the task's namespace is held on the engine's bridge network. The rules of the
declaration (ports as AWS has them in awsvpc, the ENI's options refused by name), the spec hash (an ENI
network's unchanged, a bridge-backed one's its own), and the decider's steps for such a network."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.network import plan
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import (
    ENI_ONLY_KEYS, bridge_backed, hashable, net_spec, netns_name)
from ansible_collections.drover.fleet.plugins.module_utils.tasks.spec import SpecError

IMG = 'drover.local/busybox:1'
MAC = '02:00:c6:12:00:10'


def task(awsvpc=None, containers=None, **kw):
    raw = {'name': 'web', 'cluster': 'c1', 'network_mode': 'awsvpc', 'awsvpc': awsvpc,
           'containers': containers or [{'name': 'app', 'image': IMG}]}
    raw.update(kw)
    return spec.task_set(raw)[0][0]


def refused(*words, **kw):
    with pytest.raises(SpecError) as err:
        task(**kw)
    for word in words:
        assert word in str(err.value), str(err.value)
    return str(err.value)


def ports(*mappings):
    return [{'name': 'app', 'image': IMG, 'port_mappings': list(mappings)}]


@pytest.mark.parametrize('awsvpc', [None, {}, {'eni_mac': None, 'dns_servers': None, 'holder_image': None}])
def test_no_eni_gives_a_bridge_backed_network(awsvpc):
    t = task(awsvpc)
    net = t.network
    assert bridge_backed(net) and net.netns == netns_name('c1', 'web')
    assert (net.address, net.dhcp, net.gateway, net.routes, net.credential_link) == (None, False, None, (), False)
    assert net.holder_image == IMG and net.dns_servers == () and net.ports == ()


def test_dns_servers_and_holder_image_are_taken_without_an_eni():
    net = task({'dns_servers': ['198.18.0.53'], 'holder_image': 'drover.local/holder:2'}).network
    assert net.dns_servers == ('198.18.0.53',) and net.holder_image == 'drover.local/holder:2'
    refused('awsvpc.dns_servers[0]', awsvpc={'dns_servers': ['nine']})


@pytest.mark.parametrize('key,value', [
    ('address', '198.18.9.2/24'), ('dhcp', True), ('dhcp', False), ('gateway', '198.18.9.1'),
    ('routes', [{'dst': '198.19.0.0/16', 'gateway': '198.18.9.1'}]), ('credential_link', True),
    ('credential_link', False), ('wait_timeout', 5)])
def test_the_options_of_an_eni_are_refused_without_one(key, value):
    assert key in ENI_ONLY_KEYS
    refused('awsvpc.%s' % key, 'awsvpc.eni_mac', awsvpc={key: value})


def test_in_a_set_of_tasks_the_entry_is_named():
    with pytest.raises(SpecError) as err:
        spec.task_set({'tasks': [{'name': 'a', 'network_mode': 'awsvpc', 'awsvpc': {'gateway': '198.18.9.1'},
                                  'containers': [{'name': 'app', 'image': IMG}]}]})
    assert 'tasks[0].awsvpc.gateway' in str(err.value) and 'tasks[0].awsvpc.eni_mac' in str(err.value)


def test_ports_are_published_on_the_same_host_port():
    t = task(containers=ports({'container_port': 8080}, {'container_port': 53, 'host_port': 53, 'protocol': 'udp'},
                              {'container_port': 9090, 'host_port': 0}))
    assert t.containers[0].port_mappings == (settings.PortMapping(8080, 8080, 'tcp'), settings.PortMapping(53, 53, 'udp'),
                                             settings.PortMapping(9090, 9090, 'tcp'))
    assert t.network.ports == ((8080, 8080, 'tcp'), (53, 53, 'udp'), (9090, 9090, 'tcp'))


def test_a_host_port_other_than_the_container_port_is_refused():
    msg = refused('containers[0].port_mappings[0].host_port', '18081', '8080', containers=ports(
        {'container_port': 8080, 'host_port': 18081}))
    assert 'awsvpc' in msg


def test_a_task_definition_s_host_port_is_checked_as_well():
    td = {'family': 'fargate', 'networkMode': 'awsvpc', 'requiresCompatibilities': ['FARGATE'],
          'containerDefinitions': [{'name': 'app', 'image': IMG,
                                    'portMappings': [{'containerPort': 80, 'hostPort': 80, 'protocol': 'tcp'}]}]}
    t = spec.task_set({'task_definition': td})[0][0]
    assert bridge_backed(t.network) and t.network.ports == ((80, 80, 'tcp'),)
    td['containerDefinitions'][0]['portMappings'][0]['hostPort'] = 8080
    with pytest.raises(SpecError) as err:
        spec.task_set({'task_definition': td})
    assert 'portMappings[0].hostPort 8080 differs from its containerPort 80' in str(err.value)


def test_one_port_is_mapped_by_one_container_of_the_task():
    refused('containers[1].port_mappings[0]', 'container app', containers=[
        {'name': 'app', 'image': IMG, 'port_mappings': [{'container_port': 80}]},
        {'name': 'side', 'image': IMG, 'port_mappings': [{'container_port': 80, 'host_port': 80}]}])
    t = task(containers=[{'name': 'app', 'image': IMG, 'port_mappings': [{'container_port': 80}]},
                         {'name': 'side', 'image': IMG, 'port_mappings': [{'container_port': 80, 'protocol': 'udp'}]}])
    assert t.network.ports == ((80, 80, 'tcp'), (80, 80, 'udp'))


def test_an_eni_network_still_publishes_no_ports():
    refused('containers[0].port_mappings', 'bridge', awsvpc={'eni_mac': MAC, 'address': '198.18.9.2/24'},
            containers=ports({'container_port': 80}))


def test_an_eni_network_keeps_its_rules_and_defaults():
    net = task({'eni_mac': MAC, 'address': '198.18.9.2/24', 'dhcp': None, 'credential_link': None,
                'wait_timeout': None}).network
    assert not bridge_backed(net) and net.credential_link is True and net.dhcp is False and net.wait_timeout == 30
    refused('awsvpc.address', awsvpc={'eni_mac': MAC})


def test_port_mappings_are_refused_with_none_and_on_the_same_port_with_host():
    with pytest.raises(SpecError) as err:
        spec.task_set({'name': 'web', 'network_mode': 'none', 'containers': ports({'container_port': 80})})
    assert 'port_mappings' in str(err.value) and 'none' in str(err.value)
    # host: as AWS has it, the container listens on the host's port of the same number
    t = spec.task_set({'name': 'web', 'network_mode': 'host', 'allow_host_network': True,
                       'containers': ports({'container_port': 80})})[0][0]
    assert t.containers[0].port_mappings == (settings.PortMapping(80, 80, 'tcp'),)
    with pytest.raises(SpecError) as err:
        spec.task_set({'name': 'web', 'network_mode': 'host', 'allow_host_network': True,
                       'containers': ports({'container_port': 80, 'host_port': 8080})})
    assert 'port_mappings[0].host_port 8080 differs from its container_port 80' in str(err.value)


# What ENI networks hashed to before networks without an ENI: a run made then is never replaced for it.
ENI_DOCS = [
    ({'eni_mac': MAC, 'address': '198.18.7.2/24', 'gateway': '198.18.7.1'}, 'api', 'c1',
     '{"address": "198.18.7.2/24", "credential_link": true, "dhcp": false, "dns_servers": [], "eni_mac": '
     '"02:00:c6:12:00:10", "gateway": "198.18.7.1", "holder_image": "drover.local/busybox:1", "netns": '
     '"drover-api", "routes": []}'),
    ({'eni_mac': MAC, 'dhcp': True, 'dns_servers': ['198.18.0.53'], 'routes': [{'dst': '198.19.0.0/16',
      'gateway': '198.18.7.1'}], 'credential_link': False, 'wait_timeout': 5}, 'api', 'default',
     '{"address": null, "credential_link": false, "dhcp": true, "dns_servers": ["198.18.0.53"], "eni_mac": '
     '"02:00:c6:12:00:10", "gateway": null, "holder_image": "drover.local/busybox:1", "netns": "drover-api", '
     '"routes": [["198.19.0.0/16", "198.18.7.1"]]}'),
]


@pytest.mark.parametrize('raw,name,cluster,doc', ENI_DOCS)
def test_an_eni_network_hashes_as_it_always_did(raw, name, cluster, doc):
    assert json.dumps(hashable(net_spec(raw, name, cluster, 'awsvpc')), sort_keys=True) == doc


def test_a_bridge_backed_network_hashes_apart_from_an_eni_one():
    bridge = task()
    eni = task({'eni_mac': MAC, 'address': '198.18.9.2/24'})
    bridge_mode = task(network_mode='bridge', awsvpc=None)
    assert len(set([bridge.spec_hash, eni.spec_hash, bridge_mode.spec_hash])) == 3
    assert hashable(bridge.network)['backing'] == 'bridge' and 'backing' not in hashable(eni.network)
    assert task({'dns_servers': ['198.18.0.53']}).spec_hash != bridge.spec_hash
    # The declared ports are the containers': published ports that change replace the task.
    assert task(containers=ports({'container_port': 80})).spec_hash != \
        task(containers=ports({'container_port': 81})).spec_hash
    assert task().spec_hash == task({}).spec_hash


def test_task_netns_still_needs_an_eni():
    with pytest.raises(SpecError) as err:
        net_spec({'address': '198.18.9.2/24'}, 'web', 'c1')
    assert 'eni_mac is required' in str(err.value)


def _seen(**kw):
    seen = {'holder': {'state': 'running'}, 'attached': True, 'eni': None, 'host_link': False, 'resolv': [],
            'interfaces': [{'name': 'lo', 'mac': '', 'addresses': ['127.0.0.1/8'], 'up': True},
                           {'name': 'eth0', 'mac': '02:42:c6:12:00:05', 'addresses': ['198.18.0.5/24'], 'up': True}],
            'routes': [{'dst': '0.0.0.0/0', 'gateway': '198.18.0.1'}], 'link_subnet': None,
            'guarded': False, 'guard_rules': False}
    seen.update(kw)
    return seen


def test_the_decider_builds_a_holder_and_its_name_only():
    net = task().network
    assert plan.plan_present(net, _seen(holder=None, attached=False, interfaces=[], routes=[]), {}) == \
        ['holder', 'attach']
    assert plan.plan_present(net, _seen(), {}) == []
    assert plan.plan_present(net, _seen(attached=False), {}) == ['attach']
    dns = task({'dns_servers': ['198.18.0.53']}).network
    assert plan.plan_present(dns, _seen(holder=None), {}) == ['holder', 'attach', 'resolv']
    assert plan.plan_present(dns, _seen(resolv=['198.18.0.53']), {}) == []
    # A link or /30 an earlier run left goes.
    assert plan.plan_present(net, _seen(host_link=True, guard_rules=True), {net.netns: '169.254.1.0/30'}) == \
        ['unlink', 'unguard', 'free']
    assert plan.plan_absent(_seen(netns_exists=True), False) == ['holder_remove', 'netns_remove']
