# -*- coding: utf-8 -*-
"""ecs_task with GPUs from a static list of fake UUIDs (no GPU here): pinned before start, handed over,
reported, released on every stop path, re-pinned on adoption, never twice."""

from __future__ import absolute_import, division, print_function

import pytest

from helpers import IMAGE, container, host_snapshot, statuses, store_rows, wait_for, warnings_of

GPUS = ['GPU-00000000-0000-0000-0000-0000000000%02d' % i for i in range(1, 3)]


def gpu_args(**kw):
    args = dict(gpu_discovery='static', gpu_devices=GPUS, gpu_delivery='env')
    args.update(kw)
    return args


def env_of(engine, runtime_id):
    return dict(e.split('=', 1) for e in engine.api.inspect_container(runtime_id)['Config']['Env'])


def pins(path):
    return sorted((row[0], row[1]) for row in store_rows(path)['gpu_pins'])


def test_pin_deliver_report_release(engine, cluster, converge, store_path):
    args = gpu_args(name='train', containers=[container('main', gpu=1), container('side')])
    check = converge(check=True, **args)
    assert check['changed'] and check['task']['containers'][0]['gpu_ids'] == [GPUS[0]]
    assert store_rows(store_path) is None
    r = converge(**args)
    main = r['task']['containers'][0]
    assert main['gpu_ids'] == [GPUS[0]] and r['task']['containers'][1]['gpu_ids'] == []
    assert env_of(engine, main['runtime_id'])['NVIDIA_VISIBLE_DEVICES'] == GPUS[0]
    assert 'NVIDIA_VISIBLE_DEVICES' not in env_of(engine, r['task']['containers'][1]['runtime_id'])
    assert pins(store_path) == [(GPUS[0], '%s:train/main' % cluster)]
    again = converge(**args)
    assert not again['changed'] and again['task']['containers'][0]['gpu_ids'] == [GPUS[0]]
    stopped = converge(name='train', state='stopped')
    assert stopped['changed'] and pins(store_path) == []


def test_short_ledger_best_effort_and_strict(engine, cluster, converge, store_path):
    converge(**gpu_args(name='a', containers=[container('main', gpu=1)]))
    best = converge(**gpu_args(name='b', containers=[container('main', gpu=2)]))
    assert best['task']['last_status'] == 'RUNNING' and best['task']['containers'][0]['gpu_ids'] == []
    assert any('containers[0].gpu asks for 2 GPUs; this host has 2 GPUs, 1 free' in w for w in warnings_of(best)), \
        warnings_of(best)
    assert 'NVIDIA_VISIBLE_DEVICES' not in env_of(engine, best['task']['containers'][0]['runtime_id'])
    strict = converge(**gpu_args(name='c', gpu_strict=True, containers=[container('ok'), container('main', gpu=2)]))
    assert strict['task']['last_status'] == 'STOPPED'
    assert strict['task']['stopped_reason'] == \
        'container start failed: containers[1].gpu asks for 2 GPUs; this host has 2 GPUs, 1 free'
    assert list(statuses(engine, cluster)) == ['a-main', 'b-main']
    assert pins(store_path) == [(GPUS[0], '%s:a/main' % cluster)]


def gpu_definition(family):
    """A task definition whose second container asks for 2 GPUs (ECS's resourceRequirements)."""
    return {'family': family, 'networkMode': 'bridge', 'containerDefinitions': [
        {'name': 'side', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16},
        {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
         'resourceRequirements': [{'type': 'GPU', 'value': '2'}]}]}


@pytest.mark.parametrize('form,field', [
    ('containers', 'containers[1].gpu'),
    ('task_definition', 'task_definition.containerDefinitions[1].resourceRequirements'),
    ('tasks', 'tasks[1].task_definition.containerDefinitions[1].resourceRequirements'),
])
def test_short_ledger_names_the_field_and_the_hosts_gpus(engine, cluster, converge, store_path, form, field):
    """Fewer free GPUs than a container asks for: the refusal (gpu_strict) and the warning (best effort) name the
    field as the declaration names it, and the GPUs the host has and how many are free."""
    converge(**gpu_args(name='a', containers=[container('main', gpu=1)]))
    said = '%s asks for 2 GPUs; this host has 2 GPUs, 1 free' % field
    for strict in (True, False):
        family = 'gs' if strict else 'gb'
        decl = {'containers': dict(name=family, containers=[container('side'), container('main', gpu=2)]),
                'task_definition': dict(task_definition=gpu_definition(family)),
                'tasks': dict(tasks=[{'name': 'a', 'containers': [container('main', gpu=1)]},
                                     {'task_definition': gpu_definition(family)}])}[form]
        r = converge(**gpu_args(gpu_strict=strict, **decl))
        assert not r.failed, r.get('msg')
        view = [t for t in r.get('tasks') or [r['task']] if t['name'] == family][0]
        if strict:
            assert view['last_status'] == 'STOPPED' and view['stopped_reason'] == 'container start failed: ' + said
            assert '%s-main' % family not in statuses(engine, cluster)
        else:
            assert view['last_status'] == 'RUNNING' and view['containers'][1]['gpu_ids'] == []
            assert any(w.startswith(said + '; container main of task %s/%s runs without GPUs' % (cluster, family))
                       for w in warnings_of(r)), warnings_of(r)
    assert pins(store_path) == [(GPUS[0], '%s:a/main' % cluster)]


def test_exit_releases_and_adoption_repins(engine, cluster, converge, store_path, tmp_path):
    one = gpu_args(name='one', containers=[container('main', gpu=1)])
    two = gpu_args(name='two', containers=[container('main', ['sh', '-c', 'sleep 0.5; exit 2'], gpu=1)])
    first = converge(**one)
    second = converge(**two)
    assert second['task']['containers'][0]['gpu_ids'] == [GPUS[1]]
    wait_for(lambda: statuses(engine, cluster).get('two-main') == 'exited')
    converge(**two)
    assert pins(store_path) == [(GPUS[0], '%s:one/main' % cluster)]
    # Store lost: the running task's pin comes back from its label; a new task never gets that GPU.
    fresh = str(tmp_path / 'fresh' / 'store.db')
    adopted = converge(store_path=fresh, **one)
    assert not adopted['changed'] and adopted['task']['containers'][0]['gpu_ids'] == first['task']['containers'][0]['gpu_ids']
    assert pins(fresh) == [(GPUS[0], '%s:one/main' % cluster)]
    new = converge(store_path=fresh, **gpu_args(name='three', containers=[container('main', gpu=1)]))
    assert new['task']['containers'][0]['gpu_ids'] == [GPUS[1]]


def test_device_request_delivery(engine, cluster, converge):
    r = converge(**gpu_args(name='dr', gpu_delivery='device-request', containers=[container('main', gpu=1)]))
    # This host has no NVIDIA runtime: the engine refuses the request, the run stops, the pin goes.
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('container start failed: ')
    assert 'nvidia' in r['task']['stopped_reason']
    assert statuses(engine, cluster) == {}


def test_cdi_refused_on_this_engine(engine, cluster, converge, store_path):
    converge(name='keep', containers=[container('main')])
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    r = converge(**gpu_args(name='cdi', gpu_delivery='cdi', containers=[container('main', gpu=1)]))
    assert r.failed and 'gpu_delivery cdi needs a Docker engine with CDI support' in r['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_static_discovery_needs_devices(converge):
    r = converge(name='x', gpu_discovery='static', containers=[container('main', gpu=1)])
    assert r.failed and 'gpu_devices' in r['msg']
