# -*- coding: utf-8 -*-
"""The Salt extension (salt/) on the real engine, masterless: `salt-call --local state.apply drover` with the
example state salt/examples/drover and a pillar of the test's own; the four steps, agreement with the Ansible
module on the same declaration, bad pillar, a runner pool against the GitHub stand-in, events on the bus."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import uuid

import pytest

from helpers import IMAGE, host_links, host_snapshot, netns_list, wait_for

from ansible_collections.drover.fleet.plugins.module_utils.network.spec import netns_name
from sweep import register

TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'
RUNNER_IMAGE = 'drover.local/runner:1'


def declaration(cluster, **extra):
    tasks = dict(cluster=cluster, purge=True, tasks=[
        dict(name='web', restart='always',
             containers=[dict(name='main', image=IMAGE, command=['sleep', '3600'], memory=64)]),
        dict(name='batch', containers=[dict(name='job', image=IMAGE, command=['sleep', '3600'])]),
    ])
    tasks.update(extra)
    return tasks


def running(engine, cluster):
    return sorted(c.name for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster}))


def test_tasks_in_four_steps_with_events(engine, minion, bus, cluster, store_path):
    minion.pillar({'host': {'store_path': store_path}, 'tasks': declaration(cluster)})
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    check = minion.apply(test=True)['drover-tasks']
    assert check['result'] is None, check
    assert sorted(check['changes']) == ['%s/batch' % cluster, '%s/web' % cluster]
    assert check['changes']['%s/web' % cluster]['old'] is None
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    assert bus.events(1, timeout=1) == []
    apply = minion.apply()['drover-tasks']
    assert apply['result'] is True and sorted(apply['changes']) == ['%s/batch' % cluster, '%s/web' % cluster], apply
    assert running(engine, cluster) == ['batch-job', 'web-main']
    seen = bus.events(2)
    assert sorted(tag for tag, dummy in seen) == ['drover/task/%s/batch/task.running' % cluster,
                                                  'drover/task/%s/web/task.running' % cluster]
    assert all(data['cluster'] == cluster for dummy, data in seen)
    again = minion.apply()['drover-tasks']
    assert again['result'] is True and again['changes'] == {}, again
    check = minion.apply(test=True)['drover-tasks']
    assert check['result'] is True and check['changes'] == {}, check
    # The execution module: what ecs_task_info returns.
    info = minion.call('drover.tasks', 'cluster=%s' % cluster, 'store_path=%s' % store_path)
    assert sorted((t['name'], t['last_status']) for t in info['tasks']) == [('batch', 'RUNNING'), ('web', 'RUNNING')]
    # Nothing declared any more, with purge: the tasks go.
    minion.pillar({'host': {'store_path': store_path}, 'tasks': dict(cluster=cluster, purge=True, tasks=[])})
    gone = minion.apply()['drover-tasks']
    assert gone['result'] is True and sorted(gone['changes']) == ['%s/batch' % cluster, '%s/web' % cluster]
    assert engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}) == []


@pytest.mark.parametrize('first', ['salt', 'ansible'])
def test_salt_and_ansible_agree(engine, minion, module_runner, cluster, store_path, first):
    decl = declaration(cluster)
    minion.pillar({'host': {'store_path': store_path}, 'tasks': decl})

    def salt():
        ret = minion.apply()['drover-tasks']
        assert ret['result'] is True, ret
        return bool(ret['changes'])

    def ansible():
        result = module_runner('ecs_task', dict(decl, store_path=store_path))
        assert not result.failed, result
        return result['changed']
    order = (salt, ansible) if first == 'salt' else (ansible, salt)
    assert order[0]() is True
    assert running(engine, cluster) == ['batch-job', 'web-main']
    ids = sorted(c.id for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster}))
    assert order[1]() is False
    assert order[0]() is False
    assert sorted(c.id for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster})) == ids


@pytest.mark.parametrize('bad, named', [
    ({'restart': 'sometimes'}, 'restart'),                                    # a choice (the argument spec)
    ({'tasks': [{'name': 'web', 'containers': [{'name': 'main', 'image': IMAGE, 'memory': 'lots'}]}]},
     'memory'),                                                               # the core's own check
    ({'tasks': [{'name': 'web', 'containers': [{'name': 'main', 'imagee': IMAGE}]}]}, 'imagee'),
    ({'timeout': 'soon'}, 'timeout'),                                         # a type
    # the host's policy and its store, set in the declarations' pillar (another team may write it): refused
    ({'allow_privileged': True, 'bind_paths': ['/']}, 'pillar_key drover:tasks: allow_privileged, bind_paths are the '
                                                      'host\'s own'),
    ({'store_path': '/tmp/elsewhere.db'}, 'pillar_key drover:tasks: store_path is the host\'s own'),
])
def test_bad_pillar_changes_nothing(engine, minion, cluster, store_path, bad, named):
    minion.pillar({'host': {'store_path': store_path}, 'tasks': declaration(cluster)})
    assert minion.apply()['drover-tasks']['result'] is True
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    minion.pillar({'host': {'store_path': store_path}, 'tasks': declaration(cluster, **bad)})
    for test in (True, False):
        ret = minion.apply(test=test)['drover-tasks']
        assert ret['result'] is False and ret['changes'] == {}, ret
        assert named in ret['comment'], ret['comment']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_the_host_s_policy_is_never_pillar(engine, minion, cluster, store_path):
    """A team's pillar file adds drover:policy and drover:host (Salt merges pillar files key by key): the example
    state reads the host's options from the minion's configuration alone, so a privileged task stays refused."""
    minion.pillar({'host': {'store_path': store_path}, 'tasks': declaration(cluster)})
    assert minion.apply()['drover-tasks']['result'] is True
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    evil = declaration(cluster, tasks=[dict(name='web', containers=[dict(name='main', image=IMAGE, privileged=True,
                                                                        command=['sleep', '3600'])])])
    path = os.path.join(minion.base, 'pillar', 'drover.sls')
    with open(path, 'w') as handle:
        json.dump({'drover': {'tasks': evil, 'policy': {'allow_privileged': True},
                              'host': {'allow_host_network': True, 'store_path': '/tmp/elsewhere.db'}}}, handle)
    for test in (True, False):
        ret = minion.apply(test=test)['drover-tasks']
        assert ret['result'] is False and 'allow_privileged is true' in ret['comment'], ret
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    assert not os.path.exists('/tmp/elsewhere.db')


def test_secrets_never_returned(engine, minion, cluster, store_path):
    password = register('pw-%s' % uuid.uuid4().hex)
    decl = declaration(cluster)
    decl['tasks'][0].update(registry_auth={'registry': 'registry.invalid', 'username': 'u', 'password': password},
                            pull='never')
    decl['tasks'][1]['containers'][0]['bogus'] = password       # refused: the message must not echo it either
    minion.pillar({'host': {'store_path': store_path}, 'tasks': decl})
    ret = minion.apply(test=True)['drover-tasks']
    assert ret['result'] is False and password not in repr(ret), ret


def test_runner_pool_against_the_standin(engine, minion, bus, standin, pool_name, store_path):
    pools = dict(token=TOKEN, api_url=standin.url, repository=REPO, labels=['self-hosted', 'linux', 'drover'],
                 pools=[dict(
                     pool=pool_name, machine_id='mid' + pool_name, warm=1,
                     profile=dict(name='small', image=RUNNER_IMAGE, slots=2, network_mode='host', memory=64,
                                  environment={'DROVER_JOB_SECONDS': '1'}))])
    minion.pillar({'host': {'store_path': store_path, 'allow_host_network': True}, 'pools': pools})
    check = minion.apply(test=True)['drover-pools']
    assert check['result'] is None and len(check['changes']['started']) == 1, check
    assert engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}) == []
    apply = minion.apply()['drover-pools']
    assert apply['result'] is True and len(apply['changes']['started']) == 1, apply
    name = apply['changes']['started'][0]
    assert [tag for tag, dummy in bus.events(1)] == ['drover/pool/%s/runner.started' % pool_name]
    wait_for(lambda: (standin.runner_by_name(name) or {}).get('status') == 'online')
    again = minion.apply()['drover-pools']
    assert again['result'] is True and again['changes'] == {}, again
    check = minion.apply(test=True)['drover-pools']
    assert check['result'] is True and check['changes'] == {}, check
    assert TOKEN not in repr([check, again, apply])
    info = minion.call('drover.pools', 'pool=%s' % pool_name, 'store_path=%s' % store_path)
    assert [p['name'] for p in info['pools']] == [pool_name]
    pools['pools'][0]['state'] = 'absent'
    minion.pillar({'host': {'store_path': store_path, 'allow_host_network': True}, 'pools': pools})
    gone = minion.apply()['drover-pools']
    assert gone['result'] is True and gone['changes'], gone
    assert engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}) == []


def test_virtual_says_what_is_missing(minion, tmp_path):
    """Without the collection, the states do not load, and say why."""
    import json
    import os
    path = os.path.join(minion.conf, 'minion')
    with open(path) as f:
        config = json.load(f)
    config['drover.collections_path'] = str(tmp_path / 'nowhere')
    with open(path, 'w') as f:
        json.dump(config, f)
    minion.pillar({'tasks': {'tasks': []}})
    out = minion.call('state.apply', 'drover', env={'HOME': str(tmp_path)})
    text = repr(out)
    assert 'drover.fleet collection was not found' in text and 'nowhere' in text, text


def test_gpu_pins_in_four_steps(minion, store_path):
    """drover_gpu.pinned on a host whose GPUs are declared (discovery static): the ledger in the host store."""
    devices = ['GPU-%s' % uuid.uuid4() for dummy in range(2)]
    with open(minion.sls_path('gpu'), 'w') as f:
        f.write('train:\n  drover_gpu.pinned:\n    - container: main\n    - count: 1\n    - discovery: static\n'
                '    - devices: %s\n    - store_path: %s\n' % (devices, store_path))
    steps = [minion.call('state.apply', 'drover_test.gpu', 'test=%s' % test) for test in (True, False, False, True)]
    rets = [list(s.values())[0] for s in steps]
    assert rets[0]['result'] is None and rets[0]['changes'], rets[0]
    assert rets[1]['result'] is True and rets[1]['changes'], rets[1]
    assert [r['result'] for r in rets[2:]] == [True, True] and [r['changes'] for r in rets[2:]] == [{}, {}], rets
    info = minion.call('drover.gpus', 'discovery=static', 'devices=%s' % ','.join(devices), 'store_path=%s' % store_path)
    assert info['pinned'] == {'train/main': devices[:1]}, info


@pytest.mark.usefixtures('netns_cleanup')
def test_netns_in_four_steps_around_a_standin_eni(engine, minion, fake_eni, cluster, store_path):
    """drover_netns.present and .absent on real kernel objects: a stand-in ENI (a veth end with the declared
    MAC, its peer in a namespace of its own), the task's namespace, its holder and the credential link."""
    eni = fake_eni()
    eni.plug()
    ns = netns_name(cluster, 'vpc')
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)

    def steps(function, extra=''):
        with open(minion.sls_path('netns'), 'w') as f:
            f.write('vpc:\n  drover_netns.%s:\n    - cluster: %s\n    - store_path: %s\n%s'
                    % (function, cluster, store_path, extra))
        return [list(minion.call('state.apply', 'drover_test.netns', 'test=%s' % test).values())[0]
                for test in (True, False, False, True)]

    up = steps('present', '    - eni_mac: "%s"\n    - address: %s\n    - gateway: %s\n'
               % (eni.mac.upper(), eni.address(), eni.gateway))
    assert up[0]['result'] is None and up[0]['changes'], up[0]
    assert up[1]['result'] is True and up[1]['changes'], up[1]
    assert [r['result'] for r in up[2:]] == [True, True] and [r['changes'] for r in up[2:]] == [{}, {}], up
    assert ns in netns_list()
    holders = engine.containers.list(filters={'label': 'drover.netns=%s' % ns})
    assert len(holders) == 1, holders
    with open('/run/netns/%s' % ns):
        pass
    addresses = subprocess.run(['ip', '-n', ns, '-o', 'addr'], capture_output=True, text=True, check=True).stdout
    assert eni.address() in addresses, addresses
    down = steps('absent')
    assert down[0]['result'] is None and down[0]['changes'], down[0]
    assert down[1]['result'] is True and down[1]['changes'], down[1]
    assert [r['result'] for r in down[2:]] == [True, True] and [r['changes'] for r in down[2:]] == [{}, {}], down
    assert ns not in netns_list() and (eni.ifname, eni.mac) in host_links()
    after = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    assert after['containers'] == before['containers'] and not any(after['store'].values()), after


def test_task_running_stopped_absent_in_four_steps(engine, minion, cluster, store_path):
    """drover_task.running, .stopped and .absent, each in the four steps: stopped removes the containers and keeps
    the task's record (STOPPED), absent removes the record too."""
    def steps(function):
        with open(minion.sls_path('task'), 'w') as f:
            f.write('solo:\n  drover_task.%s:\n    - cluster: %s\n    - store_path: %s\n    - containers:\n'
                    '      - {name: main, image: %s, command: [sleep, "3600"]}\n' % (function, cluster, store_path, IMAGE))
        return [list(minion.call('state.apply', 'drover_test.task', 'test=%s' % test).values())[0]
                for test in (True, False, False, True)]

    def containers():
        return [(c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster})]

    def recorded():
        info = minion.call('drover.tasks', 'cluster=%s' % cluster, 'store_path=%s' % store_path)
        return [(t['name'], t['last_status']) for t in info['tasks']]

    for function, after, record in (('running', [('solo-main', 'running')], [('solo', 'RUNNING')]),
                                    ('stopped', [], [('solo', 'STOPPED')]), ('absent', [], [])):
        rets = steps(function)
        assert rets[0]['result'] is None and rets[0]['changes'], (function, rets[0])
        assert rets[1]['result'] is True and rets[1]['changes'], (function, rets[1])
        assert [r['result'] for r in rets[2:]] == [True, True], (function, rets)
        assert [r['changes'] for r in rets[2:]] == [{}, {}], (function, rets)
        assert containers() == after and recorded() == record, function


def test_task_healthy_waits_for_its_health_check(engine, minion, cluster, store_path):
    """drover_task.healthy: the task runs, and the state returns once it is HEALTHY (its declared check passed)."""
    with open(minion.sls_path('healthy'), 'w') as f:
        f.write('checked:\n  drover_task.healthy:\n    - cluster: %s\n    - store_path: %s\n    - healthy_wait_timeout: 20\n'
                '    - containers:\n      - name: main\n        image: %s\n'
                '        command: [sh, -c, "touch /tmp/ok; exec sleep 3600"]\n'
                '        health_check: {command: [CMD-SHELL, "test -e /tmp/ok"], interval: 5, timeout: 2, retries: 1}\n'
                % (cluster, store_path, IMAGE))
    ret = list(minion.call('state.apply', 'drover_test.healthy').values())[0]
    assert ret['result'] is True and ret['changes'], ret
    assert engine.api.inspect_container('checked-main')['State']['Health']['Status'] == 'healthy'
    info = minion.call('drover.tasks', 'cluster=%s' % cluster, 'store_path=%s' % store_path)
    assert [(t['name'], t['last_status'], t['health_status']) for t in info['tasks']] == [('checked', 'RUNNING', 'HEALTHY')]


def test_a_task_definition_kept_as_a_template_is_rendered_from_a_state_file(minion, cluster, store_path):
    """drover.ecs_placeholders and drover.ecs_render, the filters' core from Salt: listed and filled, then
    converged by drover_task.running from a state file's Jinja; what is left is named."""
    template = {'family': 'tpl', 'containerDefinitions': [{'name': 'web', 'image': '<IMAGE1_NAME>', 'memory': '${MEM}',
                                                           'command': ['sleep', '3600']}]}
    listed = minion.call('drover.ecs_placeholders', 'task_definition=%s' % json.dumps(template))
    assert [(p['field'], p['name']) for p in listed] == [('containerDefinitions[0].image', 'IMAGE1_NAME'),
                                                         ('containerDefinitions[0].memory', 'MEM')]
    with pytest.raises(AssertionError) as err:     # salt-call fails: no result, the message on its output
        minion.call('drover.ecs_render', 'task_definition=%s' % json.dumps(template), 'values={"MEM": 64}')
    assert ("Error running 'drover.ecs_render': ecs_render: placeholders left unfilled: "
            'containerDefinitions[0].image <IMAGE1_NAME> (IMAGE1_NAME)') in str(err.value)
    with open(minion.sls_path('render'), 'w') as handle:
        handle.write('''{%% set td = salt['drover.ecs_render'](%s, values={'MEM': '64'}, images={'web': '%s'}) %%}
render-web:
  drover_task.running:
    - cluster: %s
    - store_path: %s
    - tasks:
      - task_definition: {{ td | json }}
''' % (json.dumps(template), IMAGE, cluster, store_path))
    out = minion.call('state.apply', 'drover_test.render')
    ret = list(out.values())[0]
    assert ret['result'] is True, ret
    info = minion.call('drover.tasks', 'cluster=%s' % cluster, 'store_path=%s' % store_path)
    task = [t for t in info['tasks'] if t['name'] == 'tpl'][0]
    assert task['last_status'] == 'RUNNING', task
