# -*- coding: utf-8 -*-
"""Task health on the real Docker engine: a declared health check makes the task HEALTHY (in the result and in
ecs_task_info), the image's own HEALTHCHECK does not count, an essential container that turns unhealthy stops the
task with `Task failed container health checks` (then the restart policy and its backoff decide), `state: healthy`
waits for HEALTHY and fails with a message when it does not come. Checks use the smallest values the settings
allow (interval 5 s, timeout 2 s, retries 1): each test takes a few seconds to ~15 s."""

from __future__ import absolute_import, division, print_function

import io
import sqlite3
import time

import pytest

from helpers import IMAGE, container, host_snapshot, statuses, store_rows, task_containers, wait_for

CHECK = {'command': ['CMD-SHELL', 'test -e /tmp/ok'], 'interval': 5, 'timeout': 2, 'retries': 1}
SERVE = ['sh', '-c', 'touch /tmp/ok; exec sleep 3600']
# An image whose own HEALTHCHECK fails at once: not a task health check.
IMAGE_CHECKED = 'drover-test/busybox-imagecheck:1'


@pytest.fixture(scope='module')
def image_checked(engine):
    dockerfile = 'FROM %s\nHEALTHCHECK --interval=1s --timeout=1s --retries=1 CMD false\n' % IMAGE
    engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=IMAGE_CHECKED, rm=True)
    return IMAGE_CHECKED


def engine_health(engine, cluster, name):
    """The engine's own view of a container's health check (starting, healthy, unhealthy)."""
    found = engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster, 'name': name})
    state = found[0].attrs['State'] if found else {}
    return (state.get('Health') or {}).get('Status')


def health_of(task):
    return task['health_status'], [(c['name'], c['health_status']) for c in task['containers']]


def test_a_declared_check_makes_the_task_healthy(engine, cluster, converge, module_runner, store_path, image_checked):
    args = dict(name='web', containers=[container('main', SERVE, health_check=CHECK),
                                        container('side', SERVE, essential=False, health_check=CHECK),
                                        container('own', image=image_checked)])
    check = converge(check=True, state='healthy', **args)
    assert check['changed'] and check['task']['last_status'] == 'PENDING' and store_rows(store_path) is None
    assert task_containers(engine, cluster) == []
    began = time.time()
    r = converge(state='healthy', healthy_wait_timeout=20, **args)
    took = time.time() - began
    assert not r.failed, r.get('msg')
    assert r['changed'] and r['task']['last_status'] == 'RUNNING'
    assert 4 <= took < 15, took                  # the first check runs after its interval (5 s)
    # The task's health is its essential checked containers': side (not essential) started after main, so its
    # first check may come after main's (UNKNOWN until then), which the wait does not wait for.
    task_health, containers = health_of(r['task'])
    assert (task_health, containers[0], containers[2]) == ('HEALTHY', ('main', 'HEALTHY'), ('own', 'UNKNOWN'))
    assert containers[1] in (('side', 'HEALTHY'), ('side', 'UNKNOWN')), containers
    assert [e['event'] for e in r['events']] == ['task.running', 'task.healthy']
    inspected = engine.api.inspect_container('web-main')
    assert inspected['State']['Health']['Status'] == 'healthy'
    assert inspected['Config']['Labels']['drover.health-check'] == 'true'
    # The image's own check runs on the engine and fails there: the task neither counts it nor stops.
    wait_for(lambda: engine_health(engine, cluster, 'web-own') == 'unhealthy', timeout=10)
    assert 'drover.health-check' not in engine.api.inspect_container('web-own')['Config']['Labels']
    events = [row[2] for row in store_rows(store_path)['events']]
    assert events == ['task.running', 'task.healthy']
    # ecs_task_info reads the same, from the engine and the labels.
    wait_for(lambda: engine_health(engine, cluster, 'web-side') == 'healthy', timeout=10)
    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    assert not info['changed']
    assert health_of(info['tasks'][0]) == ('HEALTHY', [('main', 'HEALTHY'), ('own', 'UNKNOWN'), ('side', 'HEALTHY')])
    # Nothing changed since: no change and no event, in state running or healthy alike.
    for again in (converge(**args), converge(state='healthy', **args), converge(check=True, state='healthy', **args)):
        assert not again.failed and not again['changed'] and again['events'] == []
        assert again['task']['health_status'] == 'HEALTHY'
    assert [row[2] for row in store_rows(store_path)['events']] == events
    assert statuses(engine, cluster) == {'web-main': 'running', 'web-own': 'running', 'web-side': 'running'}


def test_an_unhealthy_essential_container_stops_the_task(engine, cluster, converge, module_runner, store_path):
    args = dict(name='db', containers=[container('main', SERVE, health_check=CHECK), container('side')])
    first = converge(state='healthy', healthy_wait_timeout=20, **args)
    assert not first.failed and first['task']['health_status'] == 'HEALTHY', first.get('msg')
    engine.containers.get('db-main').exec_run(['rm', '/tmp/ok'])
    wait_for(lambda: engine_health(engine, cluster, 'db-main') == 'unhealthy', timeout=12)
    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    assert health_of(info['tasks'][0]) == ('UNHEALTHY', [('main', 'UNHEALTHY'), ('side', 'UNKNOWN')])
    r = converge(**args)
    assert r['changed'] and r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == 'Task failed container health checks'
    assert [e['event'] for e in r['events']] == ['task.unhealthy', 'task.stopped']
    assert r['events'][0]['containers'] == ['main']
    assert r['events'][1]['reason'] == 'Task failed container health checks'
    assert health_of(r['task']) == ('UNHEALTHY', [('main', 'UNHEALTHY'), ('side', 'UNKNOWN')])
    assert task_containers(engine, cluster) == []
    rows = store_rows(store_path)
    assert [row[2] for row in rows['events']] == ['task.running', 'task.healthy', 'task.unhealthy', 'task.stopped']
    assert rows['tasks'][0][4:6] == ('STOPPED', 'Task failed container health checks')
    # restart never: it stays stopped.
    again = converge(**args)
    assert not again['changed'] and again['events'] == [] and task_containers(engine, cluster) == []
    assert again['task']['health_status'] == 'UNHEALTHY'
    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    assert [(t['last_status'], t['health_status']) for t in info['tasks']] == [('STOPPED', 'UNHEALTHY')]


def test_restart_on_failure_runs_an_unhealthy_task_again_then_holds_it(engine, cluster, converge, store_path):
    # No /tmp/ok: each run turns unhealthy at its first check.
    args = dict(name='svc', restart='on-failure', containers=[container('main', health_check=CHECK)])
    first_id = converge(**args)['task']['containers'][0]['runtime_id']
    wait_for(lambda: engine_health(engine, cluster, 'svc-main') == 'unhealthy', timeout=12)
    r = converge(**args)
    assert [e['event'] for e in r['events']] == ['task.unhealthy', 'task.stopped', 'task.running'], r['events']
    assert r['events'][1]['reason'] == 'Task failed container health checks'
    assert r['task']['last_status'] == 'RUNNING' and r['task']['streak'] == 1 and r['task']['held_until'] is None
    assert r['task']['health_status'] == 'UNKNOWN'
    second_id = r['task']['containers'][0]['runtime_id']
    assert second_id != first_id and [c['Id'] for c in engine.api.containers(
        all=True, filters={'label': 'drover.cluster=%s' % cluster})] == [second_id]
    wait_for(lambda: engine_health(engine, cluster, 'svc-main') == 'unhealthy', timeout=12)
    # It keeps failing its check: held back (the backoff) before its next run.
    second = converge(**args)
    assert [e['event'] for e in second['events']] == ['task.unhealthy', 'task.stopped', 'task.held']
    assert second['task']['streak'] == 2 and second['task']['held_until'] and second['task']['last_status'] == 'STOPPED'
    assert task_containers(engine, cluster) == []
    held = converge(**args)
    assert not held['changed'] and held['events'] == [] and task_containers(engine, cluster) == []
    db = sqlite3.connect(store_path)             # the hold runs out (a real store row, as a later converge finds it)
    db.execute('UPDATE tasks SET hold_until = 0')
    db.commit()
    db.close()
    again = converge(**args)
    assert again['changed'] and [e['event'] for e in again['events']] == ['task.running']
    assert list(statuses(engine, cluster).values()) == ['running']


def test_state_healthy_waits_for_each_of_tasks_and_a_task_definition(engine, cluster, converge):
    td = {'family': 'tdapi', 'containerDefinitions': [
        {'name': 'api', 'image': IMAGE, 'command': SERVE,
         'healthCheck': {'command': CHECK['command'], 'interval': 5, 'timeout': 2, 'retries': 1}}]}
    tasks = [{'name': 'web', 'containers': [container('main', SERVE, health_check=CHECK)]}, {'task_definition': td},
             {'name': 'plain', 'state': 'running', 'containers': [container('main')]}]
    r = converge(state='healthy', healthy_wait_timeout=20, tasks=tasks)
    assert not r.failed, r.get('msg')
    assert [(t['name'], t['health_status']) for t in r['tasks']] == [('web', 'HEALTHY'), ('tdapi', 'HEALTHY'),
                                                                     ('plain', 'UNKNOWN')]
    assert sorted((e['task'], e['event']) for e in r['events']) == [
        ('plain', 'task.running'), ('tdapi', 'task.healthy'), ('tdapi', 'task.running'), ('web', 'task.healthy'),
        ('web', 'task.running')]
    assert engine.api.inspect_container('tdapi-api')['State']['Health']['Status'] == 'healthy'


def test_state_healthy_fails_with_a_message_when_health_does_not_come(engine, cluster, converge):
    args = dict(name='slow', containers=[container('main', SERVE, health_check=CHECK),
                                         container('side', essential=False)])
    began = time.time()
    r = converge(state='healthy', healthy_wait_timeout=2, **args)
    assert r.failed and time.time() - began < 5
    assert r['msg'] == ('task %s/slow is not HEALTHY after 2 s (healthy_wait_timeout): its health is UNKNOWN '
                        '(containers: main UNKNOWN, side UNKNOWN (no health check))' % cluster)
    # The task runs (state healthy is running, then a wait): the result of the failure says so.
    assert r['tasks'][0]['last_status'] == 'RUNNING' and r['tasks'][0]['health_status'] == 'UNKNOWN'
    assert statuses(engine, cluster) == {'slow-main': 'running', 'slow-side': 'running'}
    # A check that fails: the wait ends at the first failure, well before its timeout.
    bad = dict(name='bad', containers=[container('main', health_check=dict(CHECK, command=['CMD', 'false']))])
    began = time.time()
    r = converge(state='healthy', healthy_wait_timeout=30, **bad)
    assert r.failed and time.time() - began < 15
    assert r['msg'] == ('task %s/bad turned UNHEALTHY while state healthy waited for it (containers: main UNHEALTHY); '
                        'the next converge stops it' % cluster)
    stop = converge(**bad)
    assert stop['task']['stopped_reason'] == 'Task failed container health checks'


@pytest.mark.parametrize('args, words', [
    pytest.param(dict(state='healthy', containers=[container('main'), container('side', essential=False,
                                                                                health_check=CHECK)]),
                 'state is healthy: task {cluster}/t has no essential container with a health check', id='no-check'),
    pytest.param(dict(state='healthy', healthy_wait_timeout=-1, containers=[container('main', health_check=CHECK)]),
                 'healthy_wait_timeout must be a number of seconds, 0 or more, got -1', id='negative-timeout'),
])
def test_bad_health_input_changes_nothing(engine, cluster, converge, store_path, args, words):
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    r = converge(name='t', **args)
    assert r.failed and words.format(cluster=cluster) in r['msg'], r['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
