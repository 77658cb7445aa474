# -*- coding: utf-8 -*-
"""ecs_task with network_mode awsvpc and no ENI declared (a Fargate task definition on any host): the task's
namespace is held by a holder on the engine's bridge network, every container joins it (they reach each other
on localhost), the task's ports are published on the holder, `ip netns` lists it, and it goes on every path
that ends the task; it is adopted from labels after the store is lost."""

from __future__ import absolute_import, division, print_function

import json
import os
import random
import shutil
import socket
import urllib.request

import pytest

from helpers import container, net_snapshot, netns_list, statuses, store_rows, wait_for, warnings_of

from ansible_collections.drover.fleet.plugins.module_utils.network.spec import netns_name

pytestmark = pytest.mark.usefixtures('netns_cleanup')

HOLDER_LABEL = 'drover.role=netns-holder'


def free_port():
    """A TCP port in 18000-18999 that nothing on the host listens on now."""
    for _attempt in range(200):
        port = random.randint(18000, 18999)
        with socket.socket() as probe:
            try:
                probe.bind(('0.0.0.0', port))
            except OSError:
                continue
        return port
    raise AssertionError('no free port in 18000-18999')


def web_task(name, port, **kw):
    """`app` serves a file on `port`; `side` fetches it from app over localhost and keeps it in /tmp/got."""
    app = container('app', ['sh', '-c', 'mkdir -p /www && echo hello-%s > /www/index.html && '
                                        'exec httpd -f -p %d -h /www' % (name, port)],
                    port_mappings=[{'container_port': port}])
    side = container('side', ['sh', '-c', 'until wget -q -O /tmp/got http://127.0.0.1:%d/; do sleep 0.2; done; '
                                          'exec sleep 3600' % port])
    args = dict(name=name, network_mode='awsvpc', containers=[app, side])
    args.update(kw)
    return args


def holders(engine, cluster):
    return engine.containers.list(all=True, filters={'label': [HOLDER_LABEL, 'drover.cluster=%s' % cluster]})


def http_get(port):
    with urllib.request.urlopen('http://127.0.0.1:%d/' % port, timeout=5) as answer:
        return answer.read().decode()


def snapshot(engine, store_path, cluster):
    """What a task network can leave: the cluster's containers (holders carry the cluster too), namespaces,
    links, and the store's rows but the task records, events and their counters."""
    snap = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    snap['store'] = {k: v for k, v in (snap['store'] or {}).items() if k not in ('tasks', 'events', 'counters', 'sqlite_sequence')}
    return snap


def nothing_left(engine, cluster, store_path, task):
    assert statuses(engine, cluster) == {} and holders(engine, cluster) == []
    assert netns_name(cluster, task) not in netns_list()
    rows = store_rows(store_path) or {}
    assert rows.get('link_allocations', []) == [] and rows.get('credentials', []) == []


def test_bridge_backed_task_in_four_steps(engine, cluster, converge, store_path):
    task = 'bvpc' + cluster
    port = free_port()
    args = web_task(task, port, awsvpc={'dns_servers': ['198.18.0.53']})
    check = converge(check=True, **args)
    assert check['changed'] and check['task']['last_status'] == 'PENDING', check.get('msg')
    assert netns_name(cluster, task) not in netns_list() and statuses(engine, cluster) == {}
    assert store_rows(store_path) is None
    results = [check] + [converge(check=c, **args) for c in (False, False, True)]
    assert [r['changed'] for r in results] == [True, True, False, False], [r.get('msg') for r in results]
    view = results[1]['task']
    assert view['last_status'] == 'RUNNING' and results[2]['task']['last_status'] == 'RUNNING'
    assert view['network']['name'] == netns_name(cluster, task) and view['network']['credential_link'] is None

    # One holder, on the engine's bridge, publishing the port on the same host port; the containers join it.
    holder_id = view['network']['holder_id']
    [holder] = holders(engine, cluster)
    assert holder.id == holder_id
    held = engine.api.inspect_container(holder_id)
    assert held['HostConfig']['NetworkMode'] in ('default', 'bridge')
    assert held['HostConfig']['PortBindings'] == {'%d/tcp' % port: [{'HostIp': '', 'HostPort': str(port)}]}
    assert 'drover.eni-mac' not in held['Config']['Labels']
    assert held['Config']['Labels']['drover.netns'] == netns_name(cluster, task)
    for c in view['containers']:
        box = engine.api.inspect_container(c['runtime_id'])
        assert box['HostConfig']['NetworkMode'] == 'container:' + holder_id
        assert not box['HostConfig'].get('PortBindings')

    # `ip netns` lists it under the task's name, and it is the holder's namespace.
    assert netns_name(cluster, task) in netns_list()
    assert os.stat('/run/netns/' + netns_name(cluster, task)).st_ino == \
        os.stat('/proc/%d/ns/net' % held['State']['Pid']).st_ino

    # side reached app on localhost; the host reaches it through the published port.
    side = engine.containers.get([c for c in view['containers'] if c['name'] == 'side'][0]['runtime_id'])
    got = wait_for(lambda: side.exec_run(['cat', '/tmp/got']).output.decode().strip())
    assert got == 'hello-%s' % task
    assert wait_for(lambda: http_get(port)).strip() == 'hello-%s' % task
    # The task's name servers: in the resolv.conf every container shares, and for `ip netns exec`.
    assert 'nameserver 198.18.0.53' in side.exec_run(['cat', '/etc/resolv.conf']).output.decode()
    with open('/etc/netns/%s/resolv.conf' % netns_name(cluster, task)) as handle:
        assert handle.read() == 'nameserver 198.18.0.53\n'

    # absent: containers, holder, namespace and its resolv.conf go.
    gone = converge(name=task, state='absent')
    assert gone['changed']
    nothing_left(engine, cluster, store_path, task)
    assert not os.path.exists('/etc/netns/%s' % netns_name(cluster, task))
    assert not converge(name=task, state='absent')['changed']


def test_purge_after_store_loss_finds_the_holder_by_its_labels(engine, cluster, converge, store_path):
    task = 'bpg' + cluster
    r = converge(**web_task(task, free_port()))
    assert r['task']['last_status'] == 'RUNNING', r.get('msg')
    shutil.rmtree(os.path.dirname(store_path))
    purged = converge(tasks=[], purge=True)
    assert purged['changed'], purged.get('msg')
    nothing_left(engine, cluster, store_path, task)


def test_purge_removes_an_undeclared_task(engine, cluster, converge, store_path):
    task = 'bpu' + cluster
    converge(**web_task(task, free_port()))
    purged = converge(tasks=[{'name': 'keep', 'containers': [container('main')]}], purge=True)
    assert purged['changed'], purged.get('msg')
    assert set(statuses(engine, cluster)) == {'keep-main'} and holders(engine, cluster) == []
    assert netns_name(cluster, task) not in netns_list()


def test_an_essential_container_killed_ends_the_network(engine, cluster, converge, store_path):
    task = 'bkl' + cluster
    port = free_port()
    args = web_task(task, port)
    first = converge(**args)
    app = [c for c in first['task']['containers'] if c['name'] == 'app'][0]['runtime_id']
    engine.containers.get(app).kill()
    r = converge(**args)
    assert r['changed'] and r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == 'container app exited (137)'
    nothing_left(engine, cluster, store_path, task)
    # The port is free again.
    with socket.socket() as probe:
        probe.bind(('0.0.0.0', port))
    assert not converge(**args)['changed']


def test_a_failed_start_leaves_nothing(engine, cluster, converge, store_path):
    converge(name='keep', containers=[container('main')])
    before = snapshot(engine, store_path, cluster)
    task = 'bfl' + cluster
    port = free_port()
    args = web_task(task, port, pull='never', task_role_arn='arn:aws:iam::123456789012:role/app-task')
    args['containers'][1]['image'] = 'drover.local/nothing-here:1'
    r = converge(**args)
    assert r['changed'] and r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('image pull failed: ')
    assert snapshot(engine, store_path, cluster) == before
    assert netns_name(cluster, task) not in netns_list() and holders(engine, cluster) == []


def test_a_published_port_in_use_fails_the_network_and_leaves_nothing(engine, cluster, converge, store_path):
    converge(name='keep', containers=[container('main')])
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(('0.0.0.0', free_port()))
        taken.listen(1)
        port = taken.getsockname()[1]
        before = snapshot(engine, store_path, cluster)
        r = converge(**web_task('bpt' + cluster, port))
        assert r['task']['last_status'] == 'STOPPED', r.get('msg')
        assert r['task']['stopped_reason'].startswith('network setup failed: ')
        assert snapshot(engine, store_path, cluster) == before


@pytest.mark.parametrize('eni', [False, True], ids=['no-eni', 'eni'])
def test_a_host_without_the_holder_image_fails_before_anything_is_made(engine, cluster, converge, store_path,
                                                                       fake_eni, eni):
    """The holder image is missing and cannot be pulled (here: a name no registry answers for): the converge fails
    naming the image and the role that installs it, and leaves the host as it was (no container, holder or
    namespace; an ENI stays on the host)."""
    converge(name='keep', containers=[container('main')])
    task = 'bhi' + cluster
    image = 'drover.local/no-such-holder:1'
    if eni:
        card = fake_eni()
        card.plug()
        args = dict(name=task, network_mode='awsvpc', containers=[container('main')],
                    awsvpc={'eni_mac': card.mac, 'address': card.address(), 'gateway': card.gateway,
                            'holder_image': image})
    else:
        args = web_task(task, free_port(), awsvpc={'holder_image': image})
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    check = converge(check=True, **args)
    assert not check.failed and check['changed'], check.get('msg')
    assert any(image in w and 'drover.fleet.host role' in w for w in warnings_of(check)), warnings_of(check)
    r = converge(**args)
    assert r.failed, r.get('task')
    for words in (image, 'netns holder image', 'the drover.fleet.host role installs it', 'awsvpc.holder_image'):
        assert words in r['msg'], r['msg']
    assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    assert netns_name(cluster, task) not in netns_list() and holders(engine, cluster) == []
    assert statuses(engine, cluster) == {'keep-main': 'running'}


@pytest.mark.parametrize('change,words', [
    ({'host_port': 1}, ('port_mappings[0].host_port', 'differs', 'awsvpc')),
    ({'awsvpc': {'address': '198.18.9.2/24'}}, ('awsvpc.address', 'awsvpc.eni_mac')),
    ({'awsvpc': {'credential_link': False}}, ('awsvpc.credential_link', 'awsvpc.eni_mac')),
    ({'awsvpc': {'wait_timeout': 3}}, ('awsvpc.wait_timeout', 'awsvpc.eni_mac')),
])
def test_bad_input_changes_nothing(engine, cluster, converge, store_path, change, words):
    converge(name='keep', containers=[container('main')])
    before = net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    port = free_port()
    args = web_task('bad' + cluster, port)
    if 'host_port' in change:
        args['containers'][0]['port_mappings'][0]['host_port'] = port + change['host_port']
    else:
        args.update(change)
    r = converge(**args)
    assert r.failed
    for word in words:
        assert word in r['msg'], r['msg']
    assert net_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_store_lost_adopts_the_task_as_it_runs(engine, cluster, converge, store_path):
    task = 'bado' + cluster
    port = free_port()
    args = web_task(task, port)
    first = converge(**args)
    assert first['task']['last_status'] == 'RUNNING', first.get('msg')
    ids = sorted(c['runtime_id'] for c in first['task']['containers'])
    shutil.rmtree(os.path.dirname(store_path))
    again = converge(**args)
    assert not again['changed'] and again['task']['last_status'] == 'RUNNING', again.get('msg')
    assert sorted(c['runtime_id'] for c in again['task']['containers']) == ids
    assert again['task']['network']['holder_id'] == first['task']['network']['holder_id']
    assert [n for n in netns_list() if n == netns_name(cluster, task)] == [netns_name(cluster, task)]
    assert wait_for(lambda: http_get(port)).strip() == 'hello-%s' % task
    assert not converge(check=True, **args)['changed']
    gone = converge(name=task, state='absent')
    assert gone['changed']
    nothing_left(engine, cluster, store_path, task)


def test_a_fargate_task_definition_runs_as_it_is(engine, cluster, converge, store_path):
    task = 'btd' + cluster
    port = free_port()
    td = {'family': task, 'networkMode': 'awsvpc', 'requiresCompatibilities': ['FARGATE'],
          'containerDefinitions': [
              {'name': 'app', 'image': container('x')['image'], 'essential': True,
               'command': ['sh', '-c', 'mkdir -p /www && echo td > /www/index.html && exec httpd -f -p %d -h /www'
                           % port],
               'portMappings': [{'containerPort': port, 'hostPort': port, 'protocol': 'tcp'}]}]}
    r = converge(task_definition=td)
    assert r['changed'] and r['task']['last_status'] == 'RUNNING', r.get('msg')
    assert wait_for(lambda: http_get(port)).strip() == 'td'
    assert not converge(task_definition=td)['changed']
    converge(name=task, state='absent')
    nothing_left(engine, cluster, store_path, task)


ROLE = 'arn:aws:iam::123456789012:role/app-task'


def test_the_task_fetches_its_credentials_as_a_bridge_task_does(engine, cluster, converge, store_path,
                                                                moto_aws, tmp_path):
    from test_credentials_endpoint import Service, dummy_present, fetch, nat_rules
    svc = Service(store_path, moto_aws, tmp_path).start()
    try:
        task = 'bcr' + cluster
        cred_id = 'bcr-' + cluster
        args = web_task(task, free_port(), task_role_arn=ROLE, cred_id=cred_id)
        r = converge(**args)
        assert r['task']['last_status'] == 'RUNNING', r.get('msg')
        other = converge(**web_task('bot' + cluster, free_port()))
        holder = engine.api.inspect_container(r['task']['network']['holder_id'])
        assert holder['Config']['Labels']['drover.cred-id'] == cred_id
        for c in r['task']['containers']:
            status, body = fetch(engine, c['runtime_id'])
            assert status == 200, body
            assert json.loads(body)['RoleArn'] == ROLE
        other_box = other['task']['containers'][0]['runtime_id']
        assert fetch(engine, other_box, cred_id)[0] == 403
        # No credential link and no /30 for a namespace on the bridge.
        assert store_rows(store_path)['link_allocations'] == []
        assert [row[0] for row in store_rows(store_path)['credentials']] == [cred_id]
        # Adopted after the store is lost: registered again, and served.
        os.remove(store_path)
        for suffix in ('-wal', '-shm'):
            if os.path.exists(store_path + suffix):
                os.remove(store_path + suffix)
        assert not converge(**args)['changed']
        assert fetch(engine, r['task']['containers'][0]['runtime_id'])[0] == 200
        converge(name=task, state='absent')
        converge(name='bot' + cluster, state='absent')
        nothing_left(engine, cluster, store_path, task)
    finally:
        svc.stop()
    assert nat_rules() == [] and not dummy_present()
