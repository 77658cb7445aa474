# -*- coding: utf-8 -*-
"""GPU runners (profile.gpus) from the host's ledger, shared with ecs_task's tasks, with a static list of fake
GPUs (there is no GPU here; gpu_delivery env hands them over as NVIDIA_VISIBLE_DEVICES): a runner and a task never
get the same GPU, a runner that cannot get one waits with cause gpu until one is free, a lost store pins the
runners' GPUs again from their labels, and a runner's GPUs are free once it ended."""

from __future__ import absolute_import, division, print_function

import os
import uuid

from helpers import container, wait_for
from sweep import register

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'
GPUS = ['GPU-00000000-0000-0000-0000-0000000001%02d' % i for i in range(1, 3)]
GPU_ARGS = dict(gpu_discovery='static', gpu_devices=GPUS, gpu_delivery='env')


def env_of(engine, name):
    return dict(e.split('=', 1) for e in engine.api.inspect_container(name)['Config']['Env'])


def test_runners_and_tasks_share_the_ledger_and_a_runner_waits_for_a_gpu(
        engine, standin, module_runner, converge, cluster, store_path, pool_name):
    def run(**kw):
        params = dict(pool=pool_name, labels=['self-hosted', pool_name], token=TOKEN, api_url=standin.url,
                      store_path=store_path, machine_id='mid' + pool_name, warm=0, allow_host_network=True,
                      repository=REPO, profile=dict(name='gpu', image=RUNNER_IMAGE, slots=2, network_mode='host',
                                                    memory=64, gpus=1, environment={'DROVER_JOB_SECONDS': '0.1'}),
                      **GPU_ARGS)
        params.update(kw)
        return module_runner('gh_runner_slot', params)

    def pinned():
        info = module_runner('gpu_info', dict(discovery='static', devices=GPUS, store_path=store_path))
        return info['pinned']

    task = converge(name='train', containers=[container('main', gpu=1)], **GPU_ARGS)
    assert task['task']['containers'][0]['gpu_ids'] == [GPUS[0]], task['task']
    for name in ('one', 'two'):
        standin.queue_job(REPO, ['self-hosted', pool_name], name=name, script='sleep 12')

    first = run()
    assert len(first['started']) == 1, first
    runner1 = first['started'][0]
    assert env_of(engine, runner1)['NVIDIA_VISIBLE_DEVICES'] == GPUS[1]          # not the task's
    assert first['pool']['waiting'] == [{'slot': 2, 'cause': 'gpu'}], first['pool']
    [waiting] = [e for e in first['events'] if e['event'] == 'runner.waiting']
    assert waiting['cause'] == 'gpu' and waiting['slots'] == [2]
    assert 'profile.gpus' in waiting['error'] and '2 GPU' in waiting['error'], waiting
    assert [s['gpu_ids'] for s in first['pool']['slots']] == [[GPUS[1]], []]
    assert pinned() == {'%s:train/main' % cluster: [GPUS[0]], 'pool@%s/slot1' % pool_name: [GPUS[1]]}

    # runner 1 has taken a job (so the pass sees one job queued and no idle runner for it)
    wait_for(lambda: (standin.runner_by_name(runner1) or {}).get('busy'), timeout=60)
    # still no GPU free: no runner starts (the slot waits again whenever the pass wants it), nothing is shared
    again = run()
    assert again['started'] == [] and again['pool']['waiting'] == [{'slot': 2, 'cause': 'gpu'}], again
    assert pinned() == {'%s:train/main' % cluster: [GPUS[0]], 'pool@%s/slot1' % pool_name: [GPUS[1]]}

    # the task ends: its GPU goes to the waiting runner
    converge(name='train', state='stopped', **GPU_ARGS)
    second = run()
    assert len(second['started']) == 1 and second['pool']['waiting'] == [], second
    runner2 = second['started'][0]
    assert env_of(engine, runner2)['NVIDIA_VISIBLE_DEVICES'] == GPUS[0]
    assert pinned() == {'pool@%s/slot1' % pool_name: [GPUS[1]], 'pool@%s/slot2' % pool_name: [GPUS[0]]}

    # the store lost while both run: the next pass pins their GPUs again from their containers' labels
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store_path + suffix):
            os.unlink(store_path + suffix)
    run()
    assert pinned() == {'pool@%s/slot1' % pool_name: [GPUS[1]], 'pool@%s/slot2' % pool_name: [GPUS[0]]}
    # and a task asking for one now finds none free
    short = converge(name='train', containers=[container('main', gpu=1)], gpu_strict=True, **GPU_ARGS)
    assert short['task']['last_status'] == 'STOPPED' and 'gpu' in short['task']['stopped_reason'].lower(), short

    # the runners end: their GPUs are free
    for name in (runner1, runner2):
        wait_for(lambda n=name: engine.containers.get(n).status == 'exited', timeout=60)
    ended = run()
    assert sorted(ended['released']) == sorted([runner1, runner2]), ended
    assert pinned() == {}
    run(state='absent')
    converge(name='train', state='absent')
