# -*- coding: utf-8 -*-
"""task_cleanup_wait on the real engine: a task that stopped on its own keeps its stopped containers (and its task
volume) for a while, for a look at what it left, then they go; by default they go when it stops."""

from __future__ import absolute_import, division, print_function

import time

from helpers import container, statuses, wait_for


def volumes_of(engine, cluster):
    return sorted(v.name for v in engine.volumes.list(filters={'label': 'drover.cluster=%s' % cluster}))


def declared(**kw):
    mounts = [{'source_volume': 'scratch', 'container_path': '/scratch'}]
    args = dict(name='job', volumes=[{'name': 'scratch', 'docker_volume_configuration': {'scope': 'task'}}],
                containers=[container('main', ['sh', '-c', 'echo left > /scratch/file; sleep 1; echo boom; exit 3'],
                                      mount_points=mounts),
                            container('side', ['sleep', '3600'], essential=False)])
    args.update(kw)
    return args


def test_a_stopped_task_keeps_its_containers_for_the_wait_then_they_go(engine, cluster, converge, module_runner,
                                                                       store_path):
    args = declared(task_cleanup_wait=5)
    assert converge(**args)['task']['last_status'] == 'RUNNING'
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited', timeout=30)
    stopped = converge(**args)
    assert stopped['changed'] and stopped['task']['last_status'] == 'STOPPED', stopped
    assert stopped['task']['stopped_reason'] == 'container main exited (3)'
    stopped_at = time.time()
    # kept: the essential container as it ended, the other one stopped (not removed), the task volume with them
    assert statuses(engine, cluster) == {'job-main': 'exited', 'job-side': 'exited'}
    assert 'boom' in engine.containers.get('job-main').logs().decode()
    [volume] = volumes_of(engine, cluster)
    assert engine.containers.get('job-main').attrs['Mounts'][0]['Name'] == volume
    again = converge(**args)
    assert not again['changed'] and again['task']['last_status'] == 'STOPPED' and again['events'] == [], again
    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    [main] = [c for c in info['tasks'][0]['containers'] if c['name'] == 'main']
    assert main['exit_code'] == 3 and 'boom' in main['last_output'], main
    # the wait over: the containers and the task volume go, the record stays STOPPED with its reason
    time.sleep(max(0.0, stopped_at + 5.5 - time.time()))
    gone = converge(**args)
    assert gone['changed'] and gone['task']['last_status'] == 'STOPPED' and gone['events'] == [], gone
    assert statuses(engine, cluster) == {} and volumes_of(engine, cluster) == []
    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    [main] = [c for c in info['tasks'][0]['containers'] if c['name'] == 'main']
    assert 'boom' in main['last_output'] and info['tasks'][0]['stopped_reason'] == 'container main exited (3)'
    converge(name='job', state='absent')


def test_by_default_and_when_it_runs_again_kept_containers_go(engine, cluster, converge):
    converge(**declared())
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited', timeout=30)
    assert converge(**declared())['task']['last_status'] == 'STOPPED'
    assert statuses(engine, cluster) == {} and volumes_of(engine, cluster) == []      # no wait: gone at once
    # a new run (declared stopped, then running again), kept, then declared stopped: they go
    converge(name='job', state='stopped')
    assert converge(**declared(task_cleanup_wait=600))['task']['last_status'] == 'RUNNING'
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited', timeout=30)
    converge(**declared(task_cleanup_wait=600))
    assert sorted(statuses(engine, cluster)) == ['job-main', 'job-side']
    bad = converge(**declared(task_cleanup_wait=-1))
    assert bad.failed and bad['msg'] == 'task_cleanup_wait must be a number of seconds, 0 or more, got -1'
    assert sorted(statuses(engine, cluster)) == ['job-main', 'job-side']
    converge(name='job', state='stopped', task_cleanup_wait=600)
    assert statuses(engine, cluster) == {} and volumes_of(engine, cluster) == []
    converge(name='job', state='absent')
