# -*- coding: utf-8 -*-
"""A container's restart policy (restart_policy, ECS restartPolicy) on the real Docker engine: it joins the task's
restart. The task stops when the container exits; the converge runs it again (the first stop of a streak at once,
then with the backoff) unless the exit code is one of ignored_exit_codes; a policy on a container that is not
essential is refused and changes nothing."""

from __future__ import absolute_import, division, print_function

import sqlite3

from helpers import IMAGE, container, host_snapshot, statuses, store_rows, task_containers, wait_for

EXIT = ['sh', '-c', 'sleep 0.3; exit 3']


def test_the_container_policy_runs_the_task_again_then_holds_it(engine, cluster, converge, store_path):
    policy = {'enabled': True, 'ignored_exit_codes': [0]}
    args = dict(name='svc', containers=[container('main', EXIT, restart_policy=policy),
                                        container('side', essential=False)])
    first = converge(**args)
    assert first['task']['restart'] == 'never'
    first_id = first['task']['containers'][0]['runtime_id']
    wait_for(lambda: statuses(engine, cluster).get('svc-main') == 'exited')
    r = converge(**args)
    assert [e['event'] for e in r['events']] == ['task.stopped', 'task.running'], r['events']
    assert r['events'][0]['reason'] == 'container main exited (3)'
    assert r['task']['last_status'] == 'RUNNING' and r['task']['streak'] == 1 and r['task']['held_until'] is None
    assert r['task']['containers'][0]['runtime_id'] != first_id
    wait_for(lambda: statuses(engine, cluster).get('svc-main') == 'exited')
    second = converge(**args)                        # it ran less than restart_attempt_period (300 s): held back
    assert [e['event'] for e in second['events']] == ['task.stopped', 'task.held']
    assert second['task']['streak'] == 2 and second['task']['last_status'] == 'STOPPED'
    assert task_containers(engine, cluster) == []
    db = sqlite3.connect(store_path)                 # the hold runs out
    db.execute('UPDATE tasks SET hold_until = 0')
    db.commit()
    db.close()
    again = converge(**args)
    assert [e['event'] for e in again['events']] == ['task.running']
    assert sorted(statuses(engine, cluster)) == ['svc-main', 'svc-side']


def test_an_ignored_exit_code_leaves_the_task_stopped(engine, cluster, converge):
    td = {'family': 'job', 'containerDefinitions': [
        {'name': 'main', 'image': IMAGE, 'command': EXIT,
         'restartPolicy': {'enabled': True, 'ignoredExitCodes': [3], 'restartAttemptPeriod': 60}}]}
    converge(task_definition=td)
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited')
    r = converge(task_definition=td)
    assert [e['event'] for e in r['events']] == ['task.stopped']
    assert r['task']['last_status'] == 'STOPPED' and r['task']['stopped_reason'] == 'container main exited (3)'
    assert task_containers(engine, cluster) == []
    again = converge(task_definition=td)
    assert not again['changed'] and task_containers(engine, cluster) == []


def test_a_policy_on_a_container_that_is_not_essential_changes_nothing(engine, cluster, converge, store_path):
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    side = container('side', essential=False, restart_policy={'enabled': True})
    r = converge(name='bad', containers=[container('main'), side])
    assert r.failed and 'containers[1].restart_policy: container side is not essential' in r['msg'], r['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    assert store_rows(store_path) is None
