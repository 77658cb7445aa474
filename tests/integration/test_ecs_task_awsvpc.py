# -*- coding: utf-8 -*-
"""ecs_task with network_mode awsvpc: the task's netns is built by the task_netns core before the first
container, every container joins it, and it goes on every path that ends the task."""

from __future__ import absolute_import, division, print_function

import pytest

from helpers import container, host_links, net_snapshot, netns_list, statuses, store_rows, wait_for

from ansible_collections.drover.fleet.plugins.module_utils.network.spec import netns_name

pytestmark = pytest.mark.usefixtures('netns_cleanup')


def awsvpc(eni, **kw):
    spec = {'eni_mac': eni.mac, 'address': eni.address(), 'gateway': eni.gateway}
    spec.update(kw)
    return spec


def test_awsvpc_task_in_four_steps(engine, cluster, converge, fake_eni, store_path):
    eni = fake_eni()
    eni.plug()
    task = 'vpc' + cluster
    args = dict(name=task, network_mode='awsvpc', awsvpc=awsvpc(eni),
                containers=[container('main', ['sh', '-c', 'ip addr > /tmp/addr; ping -c1 -W2 %s > /tmp/ping; '
                                                           'sleep 3600' % eni.gateway],
                                      capabilities={'add': ['NET_RAW']}),   # busybox ping needs raw sockets
                            container('side')])
    check = converge(check=True, **args)
    assert check['changed'] and check['task']['last_status'] == 'PENDING'
    assert netns_name(cluster, task) not in netns_list() and statuses(engine, cluster) == {}
    results = [check] + [converge(check=c, **args) for c in (False, False, True)]
    assert [r['changed'] for r in results] == [True, True, False, False], [r.get('msg') for r in results]
    task_view = results[1]['task']
    assert task_view['last_status'] == 'RUNNING'
    assert task_view['network']['name'] == netns_name(cluster, task)
    holder = task_view['network']['holder_id']
    for c in task_view['containers']:
        assert engine.api.inspect_container(c['runtime_id'])['HostConfig']['NetworkMode'] == 'container:' + holder
    main = engine.containers.get(task_view['containers'][0]['runtime_id'])
    wait_for(lambda: main.exec_run(['cat', '/tmp/ping']).output.count(b'1 packets received'))
    assert eni.address().encode() in main.exec_run(['cat', '/tmp/addr']).output
    route = main.exec_run(['ip', 'route']).output.decode()
    link = task_view['network']['credential_link']
    assert '169.254.170.2 via %s' % link['host_ip'] in route
    labels = engine.api.inspect_container(holder)['Config']['Labels']
    assert labels['drover.role'] == 'netns-holder' and labels['drover.eni-mac'] == eni.mac
    # absent: containers, holder, netns and /30 go; the ENI is back on the host with its MAC.
    gone = converge(name=task, state='absent')
    assert gone['changed'] and statuses(engine, cluster) == {}
    assert netns_name(cluster, task) not in netns_list() and (eni.ifname, eni.mac) in host_links()
    assert store_rows(store_path)['link_allocations'] == []


def test_essential_exit_tears_the_network_down(engine, cluster, converge, fake_eni, store_path):
    eni = fake_eni()
    eni.plug()
    task = 'ex' + cluster
    args = dict(name=task, network_mode='awsvpc', awsvpc=awsvpc(eni),
                containers=[container('main', ['sh', '-c', 'sleep 0.5; exit 5'])])
    converge(**args)
    wait_for(lambda: statuses(engine, cluster).get(task + '-main') == 'exited')
    r = converge(**args)
    assert r['task']['stopped_reason'] == 'container main exited (5)'
    assert statuses(engine, cluster) == {}
    assert netns_name(cluster, task) not in netns_list() and (eni.ifname, eni.mac) in host_links()
    assert store_rows(store_path)['link_allocations'] == []
    assert not converge(**args)['changed']


def test_eni_missing_stops_with_network_reason_and_leaves_nothing(engine, cluster, converge, store_path):
    converge(name='keep', containers=[container('main')])
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    before['store'] = {k: v for k, v in before['store'].items() if k not in ('tasks', 'events', 'counters', 'sqlite_sequence')}
    mac = '02:00:c6:12:fe:01'
    r = converge(name='nonic' + cluster, network_mode='awsvpc',
                 awsvpc={'eni_mac': mac, 'address': '198.18.251.2/24', 'wait_timeout': 1},
                 containers=[container('main')])
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == 'network setup failed: nic with mac %s not found within 1s' % mac
    after = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    after['store'] = {k: v for k, v in after['store'].items() if k not in ('tasks', 'events', 'counters', 'sqlite_sequence')}
    assert after == before


def test_store_lost_adopts_without_a_second_netns(engine, cluster, converge, fake_eni, tmp_path):
    eni = fake_eni()
    eni.plug()
    task = 'ad' + cluster
    args = dict(name=task, network_mode='awsvpc', awsvpc=awsvpc(eni), containers=[container('main')])
    first = converge(**args)
    fresh = str(tmp_path / 'fresh' / 'store.db')
    r = converge(store_path=fresh, **args)
    assert not r['changed'] and r['task']['last_status'] == 'RUNNING'
    assert r['task']['network']['holder_id'] == first['task']['network']['holder_id']
    assert r['task']['network']['credential_link'] == first['task']['network']['credential_link']
    assert [n for n in netns_list() if n == netns_name(cluster, task)] == [netns_name(cluster, task)]
    assert len(store_rows(fresh)['link_allocations']) == 1


def test_changed_network_replaces_the_task(engine, cluster, converge, fake_eni):
    eni = fake_eni()
    eni.plug()
    task = 'chg' + cluster
    first = converge(name=task, network_mode='awsvpc', awsvpc=awsvpc(eni), containers=[container('main')])
    r = converge(name=task, network_mode='awsvpc', awsvpc=awsvpc(eni, address=eni.address(9)),
                 containers=[container('main')])
    assert r['changed'] and [e['event'] for e in r['events']] == ['task.stopped', 'task.running']
    addrs = dict((i['mac'], i['addresses']) for i in r['task']['network']['interfaces'])
    assert addrs[eni.mac] == [eni.address(9)]
    assert r['task']['network']['holder_id'] != first['task']['network']['holder_id']


@pytest.mark.parametrize('net,words', [
    ({'eni_mac': 'zz:00:c6:12:00:10', 'address': '198.18.9.2/24'}, ('awsvpc.eni_mac',)),
    ({'eni_mac': '02:00:c6:12:00:10', 'address': '198.18.9.2'}, ('awsvpc.address', 'prefix')),
    ({'eni_mac': '02:00:c6:12:00:10', 'address': '198.18.9.2/24', 'dhcp': True}, ('dhcp', 'mutually exclusive')),
    ({'eni_mac': '02:00:c6:12:00:10'}, ('awsvpc.address', 'required')),
])
def test_bad_awsvpc_input_changes_nothing(engine, cluster, converge, store_path, net, words):
    converge(name='keep', containers=[container('main')])
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    r = converge(name='bad', network_mode='awsvpc', awsvpc=net, containers=[container('main')])
    assert r.failed
    for word in words:
        assert word in r['msg'], r['msg']
    assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_port_mappings_refused_with_awsvpc(converge, fake_eni):
    eni = fake_eni()
    r = converge(name='p', network_mode='awsvpc', awsvpc=awsvpc(eni),
                 containers=[container('main', port_mappings=[{'container_port': 80}])])
    assert r.failed and 'bridge' in r['msg']
