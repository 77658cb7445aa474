# -*- coding: utf-8 -*-
"""task_netns on real kernel objects: a veth whose host end carries the ENI's MAC, a peer namespace as
the VPC side, a real DHCP server (dnsmasq), containers that join the task's namespace."""

from __future__ import absolute_import, division, print_function

import os
import sqlite3

import pytest

from helpers import IMAGE, host_links, net_snapshot, netns_list, store_rows

from ansible_collections.drover.fleet.plugins.module_utils.network.spec import netns_name
from ansible_collections.drover.fleet.plugins.module_utils.network.plan import host_ifname

pytestmark = pytest.mark.usefixtures('netns_cleanup')


@pytest.fixture
def netns(module_runner, store_path, cluster):
    def run(check=False, diff=False, **args):
        args.setdefault('store_path', store_path)
        args.setdefault('cluster', cluster)
        return module_runner('task_netns', args, check=check, diff=diff)
    return run


def in_ns(engine, holder_id, script):
    """Run `script` in a container that joins the task's namespace; (exit code, output)."""
    box = engine.containers.run(IMAGE, ['sh', '-c', script], network_mode='container:%s' % holder_id,
                                detach=True)
    try:
        code = box.wait(timeout=30)['StatusCode']
        return code, box.logs().decode()
    finally:
        box.remove(force=True)


def test_static_address_in_four_steps(engine, netns, fake_eni, store_path, cluster):
    eni = fake_eni()
    eni.plug()
    task = 'n%s' % cluster
    ns = netns_name(cluster, task)
    args = dict(name=task, eni_mac=eni.mac.upper(), address=eni.address(), gateway=eni.gateway,
                dns_servers=[eni.gateway], routes=[{'dst': '198.19.0.0/16'}])
    check = netns(check=True, **args)
    assert check['changed'] and check['steps'][:3] == ['holder', 'attach', 'eni']
    assert ns not in netns_list()
    apply = netns(**args)
    assert apply['changed'], apply.get('msg')
    again = netns(**args)
    check2 = netns(check=True, **args)
    assert [again['changed'], check2['changed']] == [False, False], (again['steps'], check2['steps'])
    view = apply['netns']
    assert view['name'] == ns and view['path'] == '/run/netns/' + ns
    assert ns in netns_list()
    ifaces = dict((i['name'], i) for i in view['interfaces'])
    assert ifaces[eni.ifname]['mac'] == eni.mac and ifaces[eni.ifname]['addresses'] == [eni.address()]
    link = view['credential_link']
    assert link['host_ip'].startswith('169.254.') and link['task_ip'].startswith('169.254.')
    assert store_rows(store_path)['link_allocations'][0][1:2] == (ns,)
    # A container of the task sees the ENI and reaches the peer; the credential route is there.
    code, out = in_ns(engine, view['holder_id'], 'ip addr; ip route; ping -c1 -W2 %s; cat /etc/resolv.conf'
                      % eni.gateway)
    assert code == 0, out
    assert eni.address() in out and '169.254.170.2 via %s' % link['host_ip'] in out
    assert '198.19.0.0/16 via %s' % eni.gateway in out and 'default via %s' % eni.gateway in out
    assert 'nameserver %s' % eni.gateway in out
    with open('/etc/netns/%s/resolv.conf' % ns) as handle:
        assert handle.read() == 'nameserver %s\n' % eni.gateway
    # Teardown in four steps; the ENI returns to the host with its MAC.
    down = [netns(check=True, name=task, state='absent'), netns(name=task, state='absent'),
            netns(name=task, state='absent'), netns(check=True, name=task, state='absent')]
    assert [d['changed'] for d in down] == [True, True, False, False]
    assert (eni.ifname, eni.mac) in host_links()
    assert ns not in netns_list()
    assert not [l for l in host_links() if l[0] == host_ifname(ns)]
    assert store_rows(store_path)['link_allocations'] == []
    assert not os.path.exists('/etc/netns/%s' % ns)
    assert engine.containers.list(all=True, filters={'label': 'drover.task=%s' % task}) == []


def test_eni_that_appears_late(netns, fake_eni, cluster):
    eni = fake_eni()
    timer = eni.plug(delay=1.5)
    r = netns(name='late' + cluster, eni_mac=eni.mac, address=eni.address(), wait_timeout=15)
    timer.join()
    assert r['changed'] and not r.failed, r.get('msg')


def test_eni_that_never_appears_leaves_nothing(engine, netns, store_path, cluster):
    mac = '02:00:c6:12:ff:fe'
    netns(name='keep' + cluster, state='absent')          # creates the store, so rows can be compared
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    r = netns(name='ghost' + cluster, eni_mac=mac, address='198.18.250.2/24', wait_timeout=1)
    assert r.failed and r['msg'] == 'network setup failed: nic with mac %s not found within 1s' % mac
    assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_dhcp_from_a_real_server(engine, netns, fake_eni, cluster):
    eni = fake_eni()
    eni.plug()
    eni.serve_dhcp()
    task = 'dh' + cluster
    r = netns(name=task, eni_mac=eni.mac, dhcp=True, wait_timeout=10)
    assert not r.failed, r.get('msg')
    addr = dict((i['name'], i) for i in r['netns']['interfaces'])[eni.ifname]['addresses'][0]
    host = int(addr.split('/')[0].split('.')[-1])
    assert addr.startswith('198.18.%d.' % eni.n) and addr.endswith('/24') and 50 <= host <= 60
    assert r['netns']['dns_servers'] == [eni.gateway]
    assert not netns(name=task, eni_mac=eni.mac, dhcp=True)['changed']
    code, out = in_ns(engine, r['netns']['holder_id'], 'ping -c1 -W2 %s && ip route' % eni.gateway)
    assert code == 0 and 'default via %s' % eni.gateway in out, out


def test_two_tasks_never_share_a_link_subnet(netns, fake_eni, cluster):
    subnets = []
    for i in range(2):
        eni = fake_eni()
        eni.plug()
        r = netns(name='pair%d%s' % (i, cluster), eni_mac=eni.mac, address=eni.address())
        subnets.append(r['netns']['credential_link']['host_ip'])
    assert subnets[0] != subnets[1]


def test_store_lost_rebuilds_records_without_a_second_netns(engine, netns, fake_eni, cluster, tmp_path, store_path):
    eni = fake_eni()
    eni.plug()
    task = 'lost' + cluster
    args = dict(name=task, eni_mac=eni.mac, address=eni.address())
    first = netns(**args)
    fresh = str(tmp_path / 'fresh' / 'store.db')
    again = netns(store_path=fresh, **args)
    assert again['netns']['holder_id'] == first['netns']['holder_id']
    assert again['netns']['credential_link'] == first['netns']['credential_link']
    assert again['steps'] == ['allocate']
    assert [n for n in netns_list() if n == netns_name(cluster, task)] == [netns_name(cluster, task)]
    rows = store_rows(fresh)['link_allocations']
    assert [(r[0], r[1]) for r in rows] == [(str(__import__('ipaddress').IPv4Interface(
        first['netns']['credential_link']['task_ip'] + '/30').network), netns_name(cluster, task))]
    assert not netns(store_path=fresh, **args)['changed']


def test_repair_after_the_holder_dies(engine, netns, fake_eni, cluster):
    eni = fake_eni()
    eni.plug()
    task = 'rep' + cluster
    args = dict(name=task, eni_mac=eni.mac, address=eni.address(), gateway=eni.gateway)
    first = netns(**args)
    engine.api.kill(first['netns']['holder_id'])
    r = netns(**args)
    assert r['changed'] and r['steps'][0] == 'holder'
    assert r['netns']['holder_id'] != first['netns']['holder_id']
    code, out = in_ns(engine, r['netns']['holder_id'], 'ping -c1 -W2 %s' % eni.gateway)
    assert code == 0, out


def test_a_missing_holder_image_fails_a_repair_before_any_change(engine, netns, fake_eni, store_path, cluster):
    """The holder died and its image is gone (here: a name no registry answers for): the repair fails naming the
    image and the role that installs it, before the ENI leaves the namespace or the dead holder is removed."""
    eni = fake_eni()
    eni.plug()
    args = dict(name='rhi' + cluster, eni_mac=eni.mac, address=eni.address(), gateway=eni.gateway)
    first = netns(**args)
    engine.api.kill(first['netns']['holder_id'])
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    image = 'drover.local/no-such-holder:1'
    r = netns(holder_image=image, **args)
    said = 'network setup failed: task %s/rhi%s needs the netns holder image %s' % (cluster, cluster, image)
    assert r.failed and r['msg'].startswith(said), r.get('msg')
    assert 'the drover.fleet.host role installs it' in r['msg'] and 'or set holder_image to' in r['msg']
    assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


@pytest.mark.parametrize('args,words', [
    (dict(eni_mac='02:00:c6:zz:00:10', address='198.18.9.2/24'), ('eni_mac', 'MAC address')),
    (dict(eni_mac='02:00:c6:12:00:10', address='198.18.9.2'), ('address', 'prefix length')),
    (dict(eni_mac='02:00:c6:12:00:10', address='198.18.9.2/24', dhcp=True), ('dhcp', 'mutually exclusive')),
    (dict(eni_mac='02:00:c6:12:00:10'), ('address', 'dhcp')),
    (dict(eni_mac='02:00:c6:12:00:10', address='198.18.9.2/24', gateway='198.18.10.1'), ('gateway', 'subnet')),
    (dict(eni_mac='03:00:c6:12:00:10', address='198.18.9.2/24'), ('multicast',)),
    (dict(address='198.18.9.2/24'), ('eni_mac',)),
    (dict(eni_mac='02:00:c6:12:00:10', address='198.18.9.2/24', routes=[{'dst': '10.0.0.0/8'}]),
     ('routes[0]', 'gateway')),
])
def test_bad_input_changes_nothing(engine, netns, store_path, cluster, args, words):
    netns(name='keep' + cluster, state='absent')
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    for check in (True, False):
        r = netns(check=check, name='bad' + cluster, **args)
        assert r.failed, r
        for word in words:
            assert word in r['msg'], r['msg']
        assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_store_rows_are_real_sqlite(store_path, netns, cluster):
    netns(name='x' + cluster, state='absent')
    db = sqlite3.connect(store_path)
    try:
        assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
    finally:
        db.close()


def test_two_stores_on_one_host_never_share_a_link_subnet(netns, fake_eni, cluster, tmp_path):
    hosts = []
    for i in range(2):
        eni = fake_eni()
        eni.plug()
        r = netns(name='st%d%s' % (i, cluster), eni_mac=eni.mac, address=eni.address(),
                  store_path=str(tmp_path / ('store%d' % i) / 'store.db'))
        hosts.append(r['netns']['credential_link']['host_ip'])
    assert hosts[0] != hosts[1]
