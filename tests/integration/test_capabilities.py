# -*- coding: utf-8 -*-
"""Capabilities and the host-network policy on the real engine: task and runner containers run without
NET_RAW unless declared with it, so a task on the default bridge cannot forge ARP to take its neighbours'
traffic (the attack is shown to work with NET_RAW given back); a task or runner profile on the host's network
is refused, and nothing changes, unless the host allows it."""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import subprocess
import time

import pytest

from helpers import IMAGE, container, host_snapshot, wait_for, warnings_of

RUNNER_IMAGE = 'drover.local/runner:1'


def inspect(engine, result, index=0):
    return engine.api.inspect_container(result['task']['containers'][index]['runtime_id'])


def in_netns(pid, *argv):
    """A host command run in the network namespace of process `pid` (the host's own binaries)."""
    return subprocess.run(['nsenter', '-t', str(pid), '-n'] + list(argv), capture_output=True, text=True,
                          check=False, timeout=30)


def neighbour_mac(pid, address):
    """The MAC the namespace's neighbour table holds for `address`, or None."""
    words = in_netns(pid, 'ip', 'neigh', 'show', address).stdout.split()
    return words[words.index('lladdr') + 1] if 'lladdr' in words else None


def test_task_containers_run_without_net_raw_unless_declared(engine, cluster, converge):
    plain = converge(name='plain', containers=[container('main')])
    assert not plain.failed, plain.get('msg')
    host_config = inspect(engine, plain)['HostConfig']
    assert 'NET_RAW' in (host_config['CapDrop'] or []) and not host_config['CapAdd'], host_config

    given = converge(name='given', allowed_capabilities=['SYS_PTRACE'],
                     containers=[container('main', capabilities={'add': ['NET_RAW', 'SYS_PTRACE']})])
    host_config = inspect(engine, given)['HostConfig']
    assert sorted(host_config['CapAdd']) == ['NET_RAW', 'SYS_PTRACE'] and not host_config['CapDrop'], host_config

    td = {'family': 'tdcaps', 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'],
        'linuxParameters': {'capabilities': {'add': ['NET_RAW'], 'drop': ['MKNOD']}, 'devices': []}}]}
    from_td = converge(task_definition=td)
    assert not from_td.failed, from_td.get('msg')
    host_config = inspect(engine, from_td)['HostConfig']
    assert host_config['CapAdd'] == ['NET_RAW'] and host_config['CapDrop'] == ['MKNOD'], host_config

    # a change of capabilities replaces the task's containers
    old = plain['task']['containers'][0]['runtime_id']
    changed = converge(name='plain', containers=[container('main', capabilities={'add': ['NET_RAW']})])
    assert changed['changed'] and [e['event'] for e in changed['events']] == ['task.stopped', 'task.running']
    assert changed['task']['containers'][0]['runtime_id'] != old
    assert inspect(engine, changed)['HostConfig']['CapAdd'] == ['NET_RAW']


def test_a_container_of_an_earlier_release_is_replaced_without_net_raw(engine, cluster, converge):
    """A task container that an earlier release started (with Docker's default capabilities, and a spec hash
    that had no capabilities in it) is replaced on the next converge by one without NET_RAW."""
    declared = [container('main')]
    doc = {'name': 'old', 'network_mode': 'bridge', 'task_role_arn': None, 'cred_id': None,
           'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'entrypoint': None,
                           'environment': [], 'essential': True, 'cpu': None, 'memory': None,
                           'port_mappings': [], 'gpu': 0}]}
    old_hash = hashlib.sha256(json.dumps(doc, sort_keys=True).encode('utf-8')).hexdigest()[:16]
    earlier = engine.containers.run(IMAGE, ['sleep', '3600'], name='old-main', detach=True, labels={
        'drover.role': 'task', 'drover.task': 'old', 'drover.container': 'main', 'drover.cluster': cluster,
        'drover.spec-hash': old_hash, 'drover.essential': 'true'})
    assert not engine.api.inspect_container(earlier.id)['HostConfig']['CapDrop']
    r = converge(name='old', containers=declared)
    assert not r.failed and r['changed'], r.get('msg')
    new_id = r['task']['containers'][0]['runtime_id']
    assert new_id != earlier.id
    assert 'NET_RAW' in engine.api.inspect_container(new_id)['HostConfig']['CapDrop']
    assert [c.id for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster})] == [new_id]


def gateway_of_the_bridge(engine):
    return engine.networks.get('bridge').attrs['IPAM']['Config'][0]['Gateway']


@pytest.mark.parametrize('net_raw', [True, False], ids=['with-NET_RAW-given-back', 'default'])
def test_arp_spoof_of_the_gateway_needs_net_raw(engine, cluster, converge, net_raw):
    """A task on the default bridge claims the gateway's address with a gratuitous ARP (busybox arping), to
    take the traffic a neighbour task sends to the host (its credential fetches among them). With NET_RAW
    given back the victim's neighbour entry for the gateway turns into the attacker's MAC; by default the
    attacker cannot open the packet socket and the entry keeps the gateway's own MAC."""
    gateway = gateway_of_the_bridge(engine)
    victim = converge(name='victim', containers=[container('main')])
    given = {'capabilities': {'add': ['NET_RAW']}} if net_raw else {}         # the default: nothing said
    attacker = converge(name='attacker', containers=[container('main', **given)])
    assert not victim.failed and not attacker.failed, (victim.get('msg'), attacker.get('msg'))
    victim_box = engine.containers.get(victim['task']['containers'][0]['runtime_id'])
    attacker_box = engine.containers.get(attacker['task']['containers'][0]['runtime_id'])
    victim_pid = victim_box.attrs['State']['Pid']
    attacker_pid = attacker_box.attrs['State']['Pid']
    link = in_netns(attacker_pid, 'ip', '-o', 'link', 'show', 'eth0').stdout.split()
    attacker_mac = link[link.index('link/ether') + 1]

    # The victim talks to the gateway (a TCP connection to a closed port is enough to learn its MAC).
    victim_box.exec_run(['nc', '-w', '1', gateway, '9'])
    real_mac = wait_for(lambda: neighbour_mac(victim_pid, gateway))
    assert real_mac != attacker_mac
    time.sleep(1.5)              # past the neighbour entry's locktime (1 s), when a newer claim may replace it

    # busybox arping binds its packet socket to the -s address: an attacker's own tool would not need this
    assert in_netns(attacker_pid, 'sysctl', '-w', 'net.ipv4.ip_nonlocal_bind=1').returncode == 0
    code, out = attacker_box.exec_run(['arping', '-U', '-s', gateway, '-I', 'eth0', '-c', '2', gateway])
    out = out.decode('utf-8', 'replace')
    if net_raw:
        assert code == 0, out
        assert wait_for(lambda: neighbour_mac(victim_pid, gateway) == attacker_mac, timeout=5)
    else:
        assert code != 0 and 'Operation not permitted' in out, out
        time.sleep(1)
        assert neighbour_mac(victim_pid, gateway) == real_mac


def test_a_host_network_task_is_refused_and_nothing_changes(engine, cluster, converge, store_path):
    converge(name='web', containers=[container('main')])
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    for check in (True, False):
        r = converge(check=check, name='hostnet', network_mode='host', containers=[container('main')])
        assert r.failed and r['msg'].startswith('network_mode is host'), r.get('msg')
        assert 'allow_host_network' in r['msg'] and '%s/hostnet' % cluster in r['msg']
        td = {'family': 'hostnet', 'networkMode': 'host', 'containerDefinitions': [container('main')]}
        r = converge(check=check, task_definition=td)
        assert r.failed and r['msg'].startswith('task_definition.networkMode is host'), r.get('msg')
        r = converge(check=check, tasks=[{'name': 'hostnet', 'network_mode': 'host', 'containers': [container('main')]}])
        assert r.failed and r['msg'].startswith('tasks[0].network_mode is host'), r.get('msg')
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    allowed = converge(name='hostnet', network_mode='host', allow_host_network=True, containers=[container('main')])
    assert not allowed.failed and allowed['task']['last_status'] == 'RUNNING', allowed.get('msg')
    assert inspect(engine, allowed)['HostConfig']['NetworkMode'] == 'host'
    # once the host no longer allows it, the task can still be stopped and removed
    gone = converge(name='hostnet', state='absent')
    assert not gone.failed and gone['changed'], gone.get('msg')


# --- runner containers -----------------------------------------------------------------------------------

def pool_args(standin, store_path, pool_name, **kw):
    args = dict(pool=pool_name, repository='octo/app', labels=['self-hosted'], token=standin.test_token,
                api_url=standin.url, store_path=store_path, machine_id='mid' + pool_name, warm=1,
                profile=dict(name='caps', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64))
    args.update(kw)
    return dict((k, v) for k, v in args.items() if v is not None)


def test_a_host_network_runner_profile_is_refused_and_nothing_changes(engine, module_runner, standin, store_path,
                                                                      pool_name):
    before = host_snapshot(engine, store_path, 'drover.pool=%s' % pool_name)
    for check in (True, False):
        r = module_runner('gh_runner_slot', pool_args(standin, store_path, pool_name), check=check)
        assert r.failed and r['msg'].startswith('profile.network_mode is host'), r.get('msg')
        assert 'allow_host_network' in r['msg']
        args = pool_args(standin, store_path, pool_name)
        del args['pool']
        r = module_runner('gh_runner_slot', dict(args, pools=[{'pool': pool_name}]), check=check)
        assert r.failed and r['msg'].startswith('pools[0] (pool %s): profile.network_mode is host' % pool_name), \
            r.get('msg')
    assert host_snapshot(engine, store_path, 'drover.pool=%s' % pool_name) == before
    assert [c for c in standin.requests if c['method'] == 'POST'] == []


def test_runner_containers_run_without_net_raw_unless_the_profile_adds_it(engine, module_runner, standin,
                                                                          store_path, pool_name):
    r = module_runner('gh_runner_slot', pool_args(standin, store_path, pool_name, allow_host_network=True))
    assert not r.failed and len(r['started']) == 1, (r.get('msg'), warnings_of(r))
    box = engine.api.inspect_container(r['pool']['slots'][0]['container_id'])
    assert 'NET_RAW' in (box['HostConfig']['CapDrop'] or []) and not box['HostConfig']['CapAdd'], box['HostConfig']
    other = pool_name + 'x'
    try:
        r = module_runner('gh_runner_slot', pool_args(
            standin, store_path, other, allow_host_network=True, machine_id='mid' + pool_name,
            profile=dict(name='capsx', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64,
                         capabilities={'add': ['NET_RAW']})))
        assert not r.failed and len(r['started']) == 1, (r.get('msg'), warnings_of(r))
        box = engine.api.inspect_container(r['pool']['slots'][0]['container_id'])
        assert box['HostConfig']['CapAdd'] == ['NET_RAW'] and not box['HostConfig']['CapDrop'], box['HostConfig']
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % other}):
            c.remove(force=True)
