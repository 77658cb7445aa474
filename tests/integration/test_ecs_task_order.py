# -*- coding: utf-8 -*-
"""Container order (ECS dependsOn) on the real Docker engine.

Each condition (START, COMPLETE, SUCCESS, HEALTHY), in both forms (`containers` and an ECS task definition):
met, the containers start in order and a container that ran to its end stays exited (the next passes leave it
alone); failed (a non-zero exit for SUCCESS, a start timeout for COMPLETE and HEALTHY, a dependency that
cannot start for START), the task stops with a reason that names the container and the condition, and the
container that waited never started. The refusals (an unknown name, a cycle, COMPLETE/SUCCESS on an essential
container, HEALTHY on one without a health check) change nothing. A module killed while it waits for a
dependency, then a converge: the order is kept and no container starts twice. A pass whose time to wait runs
out leaves the task PENDING and the next one goes on with it."""

from __future__ import absolute_import, division, print_function

import time

import docker
import pytest

from helpers import (IMAGE, host_snapshot, kill_when, module_process, store_rows, task_containers, wait_for,
                     warnings_of)

from ansible_collections.drover.fleet.plugins.module_utils.tasks.order import epoch

SLEEP = ['sleep', '3600']
HEALTH = {'command': ['CMD-SHELL', 'true'], 'interval': 5, 'retries': 1}
HEALTH_ECS = {'command': ['CMD-SHELL', 'true'], 'interval': 5, 'retries': 1}


def scope(cluster):
    return 'drover.cluster=%s' % cluster


def ids_of(result):
    return dict((c['name'], c['runtime_id']) for c in result['task']['containers'])


def state(engine, cid):
    return engine.api.inspect_container(cid)['State']


def starts(engine, cluster, since):
    """The names of the cluster's containers the engine started since `since` (seconds, with a fraction), in the
    order it did."""
    events = engine.api.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                               filters={'event': 'start', 'label': scope(cluster)})
    return [e['Actor']['Attributes']['drover.container'] for e in sorted(events, key=lambda e: e['timeNano'])
            if e['timeNano'] >= since * 1e9]


def dep_container(condition, form, command=None, **more):
    """The container the other one waits for, as each condition wants it."""
    native = {'name': 'dep', 'image': IMAGE, 'command': command or SLEEP}
    if condition in ('COMPLETE', 'SUCCESS'):
        native['essential'] = False
    if condition == 'HEALTHY':
        native['health_check'] = dict(HEALTH)
    native.update(more)
    if form == 'native':
        return native
    ecs = dict(native)
    for option, name in (('health_check', 'healthCheck'), ('start_timeout', 'startTimeout')):
        if option in ecs:
            ecs[name] = ecs.pop(option)
    return ecs


def task_args(cluster, form, dep, condition):
    if form == 'native':
        app = {'name': 'app', 'image': IMAGE, 'command': SLEEP,
               'depends_on': [{'container_name': 'dep', 'condition': condition}]}
        return {'name': cluster, 'containers': [app, dep]}
    app = {'name': 'app', 'image': IMAGE, 'command': SLEEP,
           'dependsOn': [{'containerName': 'dep', 'condition': condition}]}
    return {'task_definition': {'family': cluster, 'containerDefinitions': [app, dep]}}


# What the dependency runs for each condition met: COMPLETE takes any exit code.
MET = {'START': None, 'COMPLETE': ['sh', '-c', 'sleep 1; exit 3'], 'SUCCESS': ['sh', '-c', 'sleep 1; exit 0'],
       'HEALTHY': None}


@pytest.mark.parametrize('form', ['native', 'ecs'])
@pytest.mark.parametrize('condition', ['START', 'COMPLETE', 'SUCCESS', 'HEALTHY'])
def test_a_condition_met_starts_the_container_after_it(engine, cluster, converge, form, condition):
    args = task_args(cluster, form, dep_container(condition, form, MET[condition]), condition)
    since = time.time()
    results = [converge(check=check, **args) for check in (True, False, False, True)]
    assert [r['changed'] for r in results] == [True, True, False, False], [r.get('msg') for r in results]
    apply = results[1]
    assert apply['task']['last_status'] == 'RUNNING', apply['task']['stopped_reason']
    assert [r['task']['last_status'] for r in results[2:]] == ['RUNNING', 'RUNNING']
    ids = ids_of(apply)
    dep, app = state(engine, ids['dep']), state(engine, ids['app'])
    if condition == 'START':
        when = epoch(dep['StartedAt'])
    elif condition == 'HEALTHY':
        passed = [epoch(h['End']) for h in dep['Health']['Log'] if h['ExitCode'] == 0]
        when = min(passed)
    else:
        when = epoch(dep['FinishedAt'])
        assert dep['Status'] == 'exited' and dep['ExitCode'] == (3 if condition == 'COMPLETE' else 0)
        views = dict((c['name'], c) for c in results[2]['task']['containers'])
        assert views['dep']['last_status'] == 'STOPPED' and views['dep']['exit_code'] == dep['ExitCode']
    assert epoch(app['StartedAt']) >= when, (app['StartedAt'], when)
    assert app['Status'] == 'running'
    # Each container started once: the exited one was left alone by the passes after it (same container,
    # not started again), and its exit did not stop the task.
    assert starts(engine, cluster, since) == ['dep', 'app']
    assert ids_of(results[2]) == ids
    assert state(engine, ids['dep'])['StartedAt'] == dep['StartedAt']


# condition, what the dependency runs and declares, the reason's words after the condition.
FAILS = [
    pytest.param('SUCCESS', ['sh', '-c', 'sleep 1; exit 3'], {}, '(it exited (3))', id='SUCCESS-exit-3'),
    pytest.param('COMPLETE', SLEEP, {'start_timeout': 2}, '(not within 2 s of its start)', id='COMPLETE-timeout'),
    pytest.param('HEALTHY', SLEEP, {'start_timeout': 3, 'health_check': {'command': ['CMD', 'false'], 'interval': 5}},
                 '(not within 3 s of its start)', id='HEALTHY-timeout'),
    pytest.param('HEALTHY', ['sh', '-c', 'exit 4'], {'start_timeout': 20}, '(it exited (4) before its health check passed)',
                 id='HEALTHY-exited'),
]


@pytest.mark.parametrize('form', ['native', 'ecs'])
@pytest.mark.parametrize('condition,command,more,why', FAILS)
def test_a_dependency_that_fails_stops_the_task_naming_it(engine, cluster, converge, store_path, form, condition,
                                                          command, more, why):
    args = task_args(cluster, form, dep_container(condition, form, command, **more), condition)
    since = time.time()
    started = time.time()
    r = converge(**args)
    took = time.time() - started
    assert not r.failed, r.get('msg')
    assert r['changed'] and r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == 'container dep did not reach %s %s: container app depends on it' % (
        condition, why)
    assert [e['event'] for e in r['events']] == ['task.stopped']
    assert r['events'][0]['reason'] == r['task']['stopped_reason']
    # The container that waited never started; nothing of the run is left.
    assert starts(engine, cluster, since) == ['dep']
    assert task_containers(engine, cluster) == []
    if 'start_timeout' in more:
        assert took < more['start_timeout'] + 5, took
    # The task stays stopped (restart never): the next pass changes nothing.
    again = converge(**args)
    assert not again['changed'] and again['task']['stopped_reason'] == r['task']['stopped_reason']
    assert starts(engine, cluster, since) == ['dep']


@pytest.mark.parametrize('form', ['native', 'ecs'])
def test_a_dependency_that_cannot_start_stops_the_task(engine, cluster, converge, form):
    args = task_args(cluster, form, dep_container('START', form, ['/no/such/program']), 'START')
    since = time.time()
    r = converge(**args)
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('container start failed: ')
    assert starts(engine, cluster, since) == [] and task_containers(engine, cluster) == []


# --- refusals ---------------------------------------------------------------------------------------------

def _box(name, **kw):
    return dict({'name': name, 'image': IMAGE, 'command': SLEEP}, **kw)


REFUSALS = [
    pytest.param([_box('app', depends_on=[{'container_name': 'nope', 'condition': 'START'}])],
                 "containers[0].depends_on[0].container_name 'nope' is not another container of the task",
                 id='unknown'),
    pytest.param([_box('app', depends_on=[{'container_name': 'app', 'condition': 'START'}])],
                 "containers[0].depends_on[0].container_name 'app' is not another container of the task",
                 id='itself'),
    pytest.param([_box('a', depends_on=[{'container_name': 'b', 'condition': 'START'}]),
                  _box('b', essential=False, depends_on=[{'container_name': 'a', 'condition': 'START'}])],
                 'containers[0].depends_on goes round in a cycle (a -> b -> a)', id='cycle'),
    pytest.param([_box('a', links=['b']),
                  _box('b', essential=False, depends_on=[{'container_name': 'a', 'condition': 'START'}])],
                 'containers[1].depends_on goes round in a cycle (a -> b -> a)', id='cycle-with-links'),
    pytest.param([_box('app', depends_on=[{'container_name': 'db', 'condition': 'SUCCESS'}]), _box('db')],
                 'containers[0].depends_on[0].condition SUCCESS: container db is essential', id='essential-success'),
    pytest.param([_box('app', depends_on=[{'container_name': 'db', 'condition': 'COMPLETE'}]), _box('db')],
                 'containers[0].depends_on[0].condition COMPLETE: container db is essential', id='essential-complete'),
    pytest.param([_box('app', depends_on=[{'container_name': 'db', 'condition': 'HEALTHY'}]), _box('db')],
                 'containers[0].depends_on[0].condition HEALTHY: container db has no health check '
                 '(containers[1].health_check)', id='healthy-without-check'),
    pytest.param([_box('app', depends_on=[{'container_name': 'db', 'condition': 'READY'}]), _box('db')],
                 'depends_on', id='unknown-condition'),
]


@pytest.mark.parametrize('containers,words', REFUSALS)
def test_a_bad_order_is_refused_and_nothing_changes(engine, cluster, converge, store_path, containers, words):
    before = host_snapshot(engine, store_path, scope(cluster))
    for check in (True, False):
        r = converge(check=check, name=cluster, containers=containers)
        assert r.failed and words in r['msg'], r.get('msg')
        assert host_snapshot(engine, store_path, scope(cluster)) == before == {'containers': [], 'store': None}


def test_a_bad_order_in_a_task_definition_names_ecs_fields(engine, cluster, converge, store_path):
    cases = [
        ([_box('app', dependsOn=[{'containerName': 'nope', 'condition': 'START'}])],
         "task_definition.containerDefinitions[0].dependsOn[0].containerName 'nope' is not another container"),
        ([_box('a', dependsOn=[{'containerName': 'b', 'condition': 'START'}]),
          _box('b', essential=False, dependsOn=[{'containerName': 'a', 'condition': 'START'}])],
         'task_definition.containerDefinitions[0].dependsOn goes round in a cycle (a -> b -> a)'),
        ([_box('app', dependsOn=[{'containerName': 'db', 'condition': 'SUCCESS'}]), _box('db', essential=True)],
         'task_definition.containerDefinitions[0].dependsOn[0].condition SUCCESS: container db is essential'),
        ([_box('app', dependsOn=[{'containerName': 'db', 'condition': 'COMPLETE'}]), _box('db')],
         'task_definition.containerDefinitions[0].dependsOn[0].condition COMPLETE: container db is essential'),
    ]
    for defs, words in cases:
        for check in (True, False):
            r = converge(check=check, task_definition={'family': cluster, 'containerDefinitions': defs})
            assert r.failed and words in r['msg'], r.get('msg')
            assert host_snapshot(engine, store_path, scope(cluster)) == {'containers': [], 'store': None}


# --- a module killed while it waits, and a pass that runs out of time -----------------------------------

def _running(engine, cluster, name):
    """The ID of the cluster's container `name` once it runs or ran (a listing that races its removal: None)."""
    try:
        listed = engine.containers.list(all=True, filters={'label': [scope(cluster), 'drover.container=%s' % name]})
    except docker.errors.NotFound:
        return None
    for c in listed:
        if c.status in ('running', 'exited'):
            return c.id
    return None


def test_a_module_killed_while_it_waits_is_taken_up_by_the_next_converge(engine, cluster, converge, store_path,
                                                                         module_runner):
    """init (not essential) runs 4 s and exits 0; app waits for its SUCCESS; side waits for app's START. The
    module is killed while it waits for init: the next converge keeps init (never started twice) and starts
    app after init's end, then side."""
    args = {'name': cluster, 'store_path': store_path, 'cluster': cluster, 'containers': [
        {'name': 'side', 'image': IMAGE, 'command': SLEEP, 'essential': False,
         'depends_on': [{'container_name': 'app', 'condition': 'START'}]},
        {'name': 'app', 'image': IMAGE, 'command': SLEEP,
         'depends_on': [{'container_name': 'init', 'condition': 'SUCCESS'}]},
        {'name': 'init', 'image': IMAGE, 'command': ['sh', '-c', 'sleep 4; exit 0'], 'essential': False,
         'start_timeout': 60}]}
    since = time.time()
    init_id = kill_when(module_process(args), lambda: _running(engine, cluster, 'init'))   # while it waits for init
    init_started = state(engine, init_id)['StartedAt']
    assert sorted(n for n, _s, _l in task_containers(engine, cluster)) == ['%s-init' % cluster]
    rows = store_rows(store_path)['tasks']
    assert len(rows) == 1 and 'PENDING' in rows[0], rows           # the store knows the start was cut short
    wait_for(lambda: state(engine, init_id)['Status'] == 'exited', timeout=30)
    listed = module_runner('ecs_task_info', {'store_path': store_path, 'cluster': cluster})['tasks']
    assert [(t['name'], t['last_status']) for t in listed] == [(cluster, 'PENDING')]

    r = converge(name=cluster, containers=args['containers'])
    assert not r.failed and r['task']['last_status'] == 'RUNNING', r.get('msg') or r['task']['stopped_reason']
    ids = ids_of(r)
    assert ids['init'] == init_id                                  # kept, not made again
    init = state(engine, init_id)
    assert init['StartedAt'] == init_started and init['Status'] == 'exited' and init['ExitCode'] == 0
    assert epoch(state(engine, ids['app'])['StartedAt']) >= epoch(init['FinishedAt'])
    assert epoch(state(engine, ids['side'])['StartedAt']) >= epoch(state(engine, ids['app'])['StartedAt'])
    assert starts(engine, cluster, since) == ['init', 'app', 'side']     # each once, in order
    again = converge(name=cluster, containers=args['containers'])
    assert not again['changed'] and ids_of(again) == ids
    assert starts(engine, cluster, since) == ['init', 'app', 'side']


def test_a_pass_that_runs_out_of_time_leaves_the_task_to_the_next(engine, cluster, converge, store_path):
    """Two tasks in one pass: the pass waits, all together, at most the longest start timeout it needs (7 s). The
    first task waits 4 s for its dependency; the second's starts after that and ends 5 s later, within its own
    7 s, but after the pass's 7 s of waiting: the second task stays PENDING (a warning says why) and the next
    converge goes on with it."""
    def task(name, seconds, timeout):
        return {'name': name, 'containers': [
            {'name': 'app', 'image': IMAGE, 'command': SLEEP,
             'depends_on': [{'container_name': 'job', 'condition': 'SUCCESS'}]},
            {'name': 'job', 'image': IMAGE, 'command': ['sh', '-c', 'sleep %d' % seconds], 'essential': False,
             'start_timeout': timeout}]}
    first, second = task('%s-a' % cluster, 4, 5), task('%s-b' % cluster, 5, 7)
    since = time.time()
    started = time.time()
    r = converge(tasks=[first, second])
    took = time.time() - started
    assert not r.failed, r.get('msg')
    views = dict((t['name'], t) for t in r['tasks'])
    assert views[first['name']]['last_status'] == 'RUNNING'
    assert views[second['name']]['last_status'] == 'PENDING'
    assert any('%s/%s' % (cluster, second['name']) in w and 'app waits for job (SUCCESS)' in w
               for w in warnings_of(r)), warnings_of(r)
    assert took < 7 + 3, took                  # the longest start timeout it needs (7 s), not both in a row
    job_id = [c['runtime_id'] for c in views[second['name']]['containers'] if c['name'] == 'job'][0]
    nxt = converge(tasks=[first, second])
    views = dict((t['name'], t) for t in nxt['tasks'])
    assert views[second['name']]['last_status'] == 'RUNNING', views[second['name']]['stopped_reason']
    assert views[first['name']]['last_status'] == 'RUNNING'
    assert [c['runtime_id'] for c in views[second['name']]['containers'] if c['name'] == 'job'] == [job_id]
    assert sorted(starts(engine, cluster, since)) == ['app', 'app', 'job', 'job']
    assert not converge(tasks=[first, second])['changed']


# --- check and diff mode, a changed order, the stop ---------------------------------------------------------

TRAPS_TERM = ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']


def test_check_and_diff_mode_a_changed_order_replaces_the_task_and_the_stop_goes_in_reverse(engine, cluster,
                                                                                            converge, store_path):
    def containers(condition):
        return [{'name': 'app', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3,
                 'depends_on': [{'container_name': 'db', 'condition': condition}]},
                {'name': 'db', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3, 'essential': False,
                 'health_check': {'command': ['CMD-SHELL', 'true'], 'interval': 5, 'retries': 1}},
                {'name': 'side', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3, 'essential': False,
                 'depends_on': [{'container_name': 'app', 'condition': 'START'}]}]
    before = host_snapshot(engine, store_path, scope(cluster))
    planned = converge(check=True, diff=True, name=cluster, containers=containers('START'))
    assert planned['changed'] and planned['task']['last_status'] == 'PENDING'
    key = '%s/%s' % (cluster, cluster)
    assert planned['diff']['before'][key] is None
    assert [c['name'] for c in planned['diff']['after'][key]['containers']] == ['app', 'db', 'side']
    assert host_snapshot(engine, store_path, scope(cluster)) == before        # check mode touched nothing
    since = time.time()
    first = converge(diff=True, name=cluster, containers=containers('START'))
    assert first['task']['last_status'] == 'RUNNING' and starts(engine, cluster, since) == ['db', 'app', 'side']
    assert not converge(check=True, diff=True, name=cluster, containers=containers('START'))['changed']
    # The order is part of the spec: a changed condition replaces the containers (in check mode: planned only).
    planned = converge(check=True, diff=True, name=cluster, containers=containers('HEALTHY'))
    assert planned['changed'] and ids_of(planned) != ids_of(first)
    assert ids_of(converge(check=True, name=cluster, containers=containers('START'))) == ids_of(first)
    since = time.time()
    second = converge(diff=True, name=cluster, containers=containers('HEALTHY'))
    assert second['changed'] and second['task']['last_status'] == 'RUNNING'
    assert second['task']['changed_fields'] == ['containers[app].depends_on']
    assert second['diff']['after'][key]['changed_fields'] == ['containers[app].depends_on']
    assert set(ids_of(second).values()).isdisjoint(ids_of(first).values())
    assert starts(engine, cluster, since) == ['db', 'app', 'side']
    db = state(engine, ids_of(second)['db'])
    assert epoch(state(engine, ids_of(second)['app'])['StartedAt']) >= \
        min(epoch(h['End']) for h in db['Health']['Log'] if h['ExitCode'] == 0)
    # The stop goes in the reverse order of the start, each container given its stop timeout.
    time.sleep(0.5)
    since = time.time()
    assert converge(name=cluster, state='stopped')['task']['last_status'] == 'STOPPED'
    events = engine.api.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                               filters={'event': 'die', 'label': scope(cluster)})
    died = sorted((e for e in events if e['timeNano'] >= since * 1e9), key=lambda e: e['timeNano'])
    assert [e['Actor']['Attributes']['drover.container'] for e in died] == ['side', 'app', 'db']
    assert [e['Actor']['Attributes']['exitCode'] for e in died] == ['0', '0', '0']     # TERM, not the kill
