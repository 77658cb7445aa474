# -*- coding: utf-8 -*-
"""awsvpc tasks kept apart, on a real engine with real namespaces, links and iptables rules: a task is its
cluster and its name (two tasks named alike in two clusters get a namespace, holder, link, /30 and
credentials each, and removing one leaves the other whole); task_netns leaves an ecs_task task's network
alone; the credential link carries traffic to and from the credentials endpoint only (a bridge container
cannot reach into the task over it, the task cannot reach host services over it, and the endpoint still
answers); a network made under the names of earlier releases is adopted and torn down."""

from __future__ import absolute_import, division, print_function

import os
import socket
import subprocess
import sys

import pytest

from helpers import IMAGE, container, host_links, net_snapshot, netns_list, store_rows, wait_for
from test_credentials_endpoint import fetch, service, sts  # noqa: F401  pylint: disable=unused-import

from ansible_collections.drover.fleet.plugins.module_utils.network import apply as _apply_netns
from ansible_collections.drover.fleet.plugins.module_utils.network import spec as _netns_spec
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import netns_name
from ansible_collections.drover.fleet.plugins.module_utils.network.plan import host_ifname

pytestmark = pytest.mark.usefixtures('netns_cleanup')

ROLE = 'arn:aws:iam::123456789012:role/app-task'


def rules_naming(ifname):
    out = subprocess.run(['iptables', '-S'], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (' -i %s ' % ifname) in line + ' ' or (' -o %s ' % ifname) in line + ' ']


def creds(path):
    return sorted((r[0], r[1], r[2], r[4]) for r in store_rows(path)['credentials'])


@pytest.fixture
def other_cluster(engine, cluster):
    """A second cluster of this test's own; emptied afterwards."""
    name = cluster + 'x'
    yield name
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % name}):
        c.remove(force=True)


def test_same_task_name_in_two_clusters_gets_a_network_each(engine, cluster, other_cluster, converge, store_path,
                                                            fake_eni, service):  # noqa: F811
    service()
    enis = [fake_eni(), fake_eni()]
    for eni in enis:
        eni.plug()
    runs = []
    # (Container names are the task's and the container's: two tasks named alike name their containers apart.)
    for where, eni, box in zip((cluster, other_cluster), enis, ('a', 'b')):
        r = converge(name='web', cluster=where, task_role_arn=ROLE, cred_id='web-%s' % where, network_mode='awsvpc',
                     awsvpc={'eni_mac': eni.mac, 'address': eni.address()}, containers=[container(box)])
        assert not r.failed and r['task']['last_status'] == 'RUNNING', r.get('msg') or r['task']['stopped_reason']
        runs.append(r['task'])
    nets = [t['network'] for t in runs]
    names = [n['name'] for n in nets]
    assert names[0] != names[1] and nets[0]['holder_id'] != nets[1]['holder_id']
    assert names == [netns_name(cluster, 'web'), netns_name(other_cluster, 'web')]
    assert set(names) <= set(netns_list())
    # Each ENI in its own task's namespace, never in the other's.
    for net, mine, theirs in ((nets[0], enis[0], enis[1]), (nets[1], enis[1], enis[0])):
        macs = [i['mac'] for i in net['interfaces']]
        assert mine.mac in macs and theirs.mac not in macs
    # A /30 each, recorded with its task; a registration each, naming its own link's task address.
    links = [n['credential_link'] for n in nets]
    assert links[0]['task_ip'] != links[1]['task_ip']
    rows = store_rows(store_path)['link_allocations']
    assert sorted((r[1], r[3], r[4]) for r in rows) == sorted(
        [(names[0], cluster, 'web'), (names[1], other_cluster, 'web')])
    assert creds(store_path) == sorted([('web-%s' % cluster, cluster, 'web', links[0]['task_ip']),
                                        ('web-%s' % other_cluster, other_cluster, 'web', links[1]['task_ip'])])
    boxes = [t['containers'][0]['runtime_id'] for t in runs]
    # Each fetches its own credentials, and is refused the other's.
    assert fetch(engine, boxes[0])[0] == 200 and fetch(engine, boxes[1])[0] == 200
    assert fetch(engine, boxes[0], 'web-%s' % other_cluster)[0] == 403
    assert fetch(engine, boxes[1], 'web-%s' % cluster)[0] == 403

    # Removing one leaves the other's namespace, link, filter, /30 and registration.
    gone = converge(name='web', cluster=other_cluster, state='absent')
    assert gone['changed'] and not gone.failed, gone.get('msg')
    assert names[0] in netns_list() and names[1] not in netns_list()
    assert (enis[1].ifname, enis[1].mac) in host_links() and (enis[0].ifname, enis[0].mac) not in host_links()
    assert [l for l in host_links() if l[0] == host_ifname(names[0])]
    assert rules_naming(host_ifname(names[0])) and not rules_naming(host_ifname(names[1]))
    assert [(r[1], r[3]) for r in store_rows(store_path)['link_allocations']] == [(names[0], cluster)]
    assert creds(store_path) == [('web-%s' % cluster, cluster, 'web', links[0]['task_ip'])]
    assert fetch(engine, boxes[0])[0] == 200
    again = converge(name='web', cluster=cluster, task_role_arn=ROLE, cred_id='web-%s' % cluster,
                     network_mode='awsvpc', awsvpc={'eni_mac': enis[0].mac, 'address': enis[0].address()},
                     containers=[container('a')])
    assert not again['changed'], again.get('msg')
    converge(name='web', cluster=cluster, state='absent')
    assert names[0] not in netns_list() and not rules_naming(host_ifname(names[0]))
    assert store_rows(store_path)['link_allocations'] == [] and creds(store_path) == []


def test_task_netns_will_not_remove_an_ecs_task_network(engine, cluster, converge, module_runner, store_path,
                                                        fake_eni):
    eni = fake_eni()
    eni.plug()
    r = converge(name='own', network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                 containers=[container('main')])
    assert r['task']['last_status'] == 'RUNNING'
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    for check in (True, False):
        out = module_runner('task_netns', dict(name='own', cluster=cluster, state='absent', store_path=store_path),
                            check=check)
        assert out.failed, out
        assert 'ecs_task' in out['msg'] and 'own' in out['msg'] and netns_name(cluster, 'own') in out['msg']
        assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    # Its own networks, task_netns removes; the task's goes with the task.
    assert converge(name='own', state='absent')['changed']
    assert netns_name(cluster, 'own') not in netns_list()


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def host_service(tmp_path):
    """A host service listening on all addresses (0.0.0.0): its port."""
    port = _free_port()
    (tmp_path / 'www').mkdir()
    (tmp_path / 'www' / 'index.html').write_text('host service\n')
    proc = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '0.0.0.0', str(port)],
                            cwd=str(tmp_path / 'www'), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up():
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return True
        except OSError:
            return False
    try:
        wait_for(up, timeout=10, step=0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_credential_link_carries_endpoint_traffic_only(engine, cluster, converge, fake_eni, host_service,
                                                           service):  # noqa: F811
    service()
    eni = fake_eni()
    eni.plug()
    serve = 'mkdir -p /www && echo inside-the-task > /www/index.html && httpd -f -p 8080 -h /www'
    r = converge(name='iso', task_role_arn=ROLE, cred_id='iso-%s' % cluster, network_mode='awsvpc',
                 awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                 containers=[container('main', ['sh', '-c', serve])])
    assert not r.failed and r['task']['last_status'] == 'RUNNING', r.get('msg') or r['task']['stopped_reason']
    link = r['task']['network']['credential_link']
    box = engine.containers.get(r['task']['containers'][0]['runtime_id'])
    wait_for(lambda: box.exec_run(['wget', '-q', '-O', '-', 'http://127.0.0.1:8080/']).output == b'inside-the-task\n')
    ifname = host_ifname(r['task']['network']['name'])

    # The endpoint still answers over the link.
    status, body = fetch(engine, box.id)
    assert status == 200, body
    # A container on the engine's bridge cannot reach into the task at its link address.
    # (busybox's wget -T and nc -w do not work in the test image: timeout(1) bounds the tries, in a shell so
    # that it is not the container's first process, which ignores its SIGTERM.)
    probe = engine.containers.run(IMAGE, ['sh', '-c', 'timeout 5 wget -q -O - http://%s:8080/; exit $?' % link['task_ip']],
                                  detach=True)
    try:
        code = probe.wait(timeout=30)['StatusCode']
        assert code != 0 and b'inside-the-task' not in probe.logs(), probe.logs()
    finally:
        probe.remove(force=True)
    # The task cannot reach a host service listening on all addresses through the link.
    code, out = box.exec_run(['timeout', '5', 'wget', '-q', '-O', '-', 'http://%s:%d/' % (link['host_ip'], host_service)])
    assert code != 0 and b'host service' not in out, out
    # No IPv6 on the host side of the link (a link-local address would reach host services on '::').
    with open('/proc/sys/net/ipv6/conf/%s/disable_ipv6' % ifname) as handle:
        assert handle.read().strip() == '1'

    # The filter goes with the link.
    assert len(rules_naming(ifname)) >= 6
    assert converge(name='iso', state='absent')['changed']
    assert not rules_naming(ifname) and not [l for l in host_links() if l[0] == ifname]


def test_a_filter_rule_lost_is_put_back(cluster, converge, fake_eni):
    eni = fake_eni()
    eni.plug()
    args = dict(name='back', network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                containers=[container('main')])
    r = converge(**args)
    ifname = host_ifname(r['task']['network']['name'])
    subprocess.run(['iptables', '-D', 'INPUT', '-i', ifname, '-j', 'DROP'], check=True)
    again = converge(**args)
    assert again['changed']
    assert [l for l in rules_naming(ifname) if l.startswith('-A INPUT')][-1] == '-A INPUT -i %s -j DROP' % ifname
    assert not converge(**args)['changed']
    converge(name='back', state='absent')
    assert not rules_naming(ifname)


def test_a_network_named_by_an_earlier_release_is_adopted_and_torn_down(engine, cluster, converge, fake_eni,
                                                                        store_path, monkeypatch):
    eni = fake_eni()
    eni.plug()
    task = 'old' + cluster
    args = dict(name=task, network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                containers=[container('main')])
    # Built as earlier releases named it: after the task alone.
    with monkeypatch.context() as patch:
        for module in (_netns_spec, _apply_netns):
            patch.setattr(module, 'netns_name', lambda cluster_, task_: 'drover-%s' % task_)
            patch.setattr(module, 'holder_name', lambda cluster_, task_: 'drover-netns-%s' % task_)
        first = converge(**args)
    assert first['task']['network']['name'] == 'drover-' + task and 'drover-' + task in netns_list()
    again = converge(**args)
    assert again['task']['last_status'] == 'RUNNING' and not again['events']
    assert again['task']['network']['holder_id'] == first['task']['network']['holder_id']
    assert again['task']['network']['name'] == 'drover-' + task
    assert netns_name(cluster, task) not in netns_list()
    gone = converge(name=task, state='absent')
    assert gone['changed']
    assert 'drover-' + task not in netns_list() and (eni.ifname, eni.mac) in host_links()
    assert not rules_naming(host_ifname('drover-' + task))
    assert store_rows(store_path)['link_allocations'] == []
    assert engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}) == []
    assert not os.path.exists('/etc/netns/drover-' + task)
