# -*- coding: utf-8 -*-
"""The order decider (ECS dependsOn): which containers may start, what a pass waits for, the reasons a task stops
with; and the declaration of an order (both forms, the refusals, the spec hash)."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.tasks import order
from ansible_collections.drover.fleet.plugins.module_utils.tasks import plan as p
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IMG = 'drover.local/busybox:1'
T0 = 1_800_000_000.0
HC = {'command': ['CMD-SHELL', 'true']}


def task(*containers):
    return spec.task({'name': 'web', 'containers': list(containers)})


def box(name, *deps, **kw):
    out = dict({'name': name, 'image': IMG}, **kw)
    if deps:
        out['depends_on'] = [{'container_name': n, 'condition': c} for n, c in deps]
    return out


def running(started_at=T0, health=None):
    return {'state': order.RUNNING, 'exit_code': None, 'health': health, 'started_at': started_at}


def exited(code, started_at=T0):
    return {'state': order.EXITED, 'exit_code': code, 'health': None, 'started_at': started_at}


def step(t, started, facts=None, now=T0):
    return order.step(t.containers, set(started), facts or {}, now)


def test_without_an_order_a_container_is_ready_once_the_ones_it_needs_started_and_nothing_is_watched():
    t = task(box('main', links=['db']), box('db'), box('side', essential=False))
    s = step(t, [])
    assert s.ready == ['db', 'side'] and s.failure is None and s.deadline is None and not s.done
    assert step(t, ['db', 'side']).ready == ['main']
    assert not order.ordered(t.containers) and order.watched(t.containers) == set()
    assert order.pass_wait([t.containers]) == 0
    assert step(t, ['db', 'main', 'side']).done


def test_start_is_met_once_the_dependency_started():
    t = task(box('app', ('db', 'START')), box('db'))
    assert step(t, []).ready == ['db']
    s = step(t, ['db'])
    assert s.ready == ['app'] and s.deadline is None
    assert not order.ordered(t.containers)          # START needs no engine view: no wait, no inspection


@pytest.mark.parametrize('condition,fact,met', [
    ('COMPLETE', running(), False), ('COMPLETE', exited(0), True), ('COMPLETE', exited(3), True),
    ('SUCCESS', running(), False), ('SUCCESS', exited(0), True),
    ('HEALTHY', running(health='starting'), False), ('HEALTHY', running(health='unhealthy'), False),
    ('HEALTHY', running(health='healthy'), True),
])
def test_each_condition(condition, fact, met):
    dep = box('dep', health_check=HC, essential=condition == 'HEALTHY')
    t = task(box('app', ('dep', condition)), dep)
    s = step(t, ['dep'], {'dep': fact}, T0 + 1)
    assert s.failure is None
    if met:
        assert s.ready == ['app'] and s.waits == []
    else:
        assert s.ready == [] and s.waits == [('app', 'dep', condition)]
        assert s.deadline == T0 + order.DEFAULT_START_TIMEOUT


@pytest.mark.parametrize('condition,fact,why', [
    ('SUCCESS', exited(3), 'it exited (3)'),
    ('SUCCESS', None, 'it is gone'),
    ('COMPLETE', None, 'it is gone'),
    ('HEALTHY', exited(0), 'it exited (0) before its health check passed'),
])
def test_a_dependency_that_can_never_meet_its_condition_stops_the_task(condition, fact, why):
    t = task(box('app', ('dep', condition)), box('dep', essential=False, health_check=HC))
    s = step(t, ['dep'], {'dep': fact})
    assert s.failure == 'container dep did not reach %s (%s): container app depends on it' % (condition, why)
    assert s.ready == []


@pytest.mark.parametrize('condition', ['COMPLETE', 'SUCCESS', 'HEALTHY'])
def test_the_dependency_start_timeout_bounds_the_wait_from_its_own_start(condition):
    t = task(box('app', ('dep', condition)), box('dep', essential=False, health_check=HC, start_timeout=10))
    fact = running(T0, 'starting')
    assert step(t, ['dep'], {'dep': fact}, T0 + 9.9).deadline == T0 + 10
    s = step(t, ['dep'], {'dep': fact}, T0 + 10)
    assert s.failure == 'container dep did not reach %s (not within 10 s of its start): container app depends ' \
                        'on it' % condition


def test_an_essential_container_that_ends_while_others_wait_stops_the_task():
    t = task(box('web'), box('app', ('job', 'SUCCESS')), box('job', essential=False))
    s = step(t, ['web', 'job'], {'web': exited(1), 'job': running()})
    assert s.failure == p.reason_exited('web', 1) and s.ready == []


def test_a_chain_waits_link_by_link_and_the_deadline_is_the_nearest():
    t = task(box('app', ('migrate', 'SUCCESS'), ('cache', 'HEALTHY')),
             box('migrate', ('db', 'HEALTHY'), essential=False, start_timeout=30),
             box('db', health_check=HC, start_timeout=20), box('cache', health_check=HC, start_timeout=50))
    assert [c.name for c in settings.start_order(t.containers)] == ['db', 'migrate', 'cache', 'app']
    s = step(t, [])
    assert s.ready == ['db', 'cache']
    s = step(t, ['db', 'cache'], {'db': running(T0), 'cache': running(T0 + 1)}, T0 + 2)
    assert s.ready == [] and s.deadline == T0 + 20
    assert sorted(s.waits) == [('app', 'cache', 'HEALTHY'), ('migrate', 'db', 'HEALTHY')]
    s = step(t, ['db', 'cache'], {'db': running(T0, 'healthy'), 'cache': running(T0 + 1)}, T0 + 3)
    assert s.ready == ['migrate']
    s = step(t, ['db', 'cache', 'migrate'],
             {'db': running(T0, 'healthy'), 'cache': running(T0 + 1, 'healthy'), 'migrate': exited(0, T0 + 4)}, T0 + 9)
    assert s.ready == ['app']
    assert order.pass_wait([t.containers]) == 50
    assert order.watched(t.containers) == {'migrate', 'db', 'cache'}


def test_pass_wait_is_the_longest_start_timeout_a_pass_needs():
    a = task(box('app', ('job', 'SUCCESS')), box('job', essential=False, start_timeout=7)).containers
    b = task(box('app', ('job', 'COMPLETE')), box('job', essential=False)).containers
    assert order.pass_wait([a]) == 7
    assert order.pass_wait([a, b]) == order.DEFAULT_START_TIMEOUT


@pytest.mark.parametrize('text,value', [
    ('2026-12-03T19:55:00.5Z', 1796327700.5), ('2026-12-03T19:55:00.123456789Z', 1796327700.123456),
    ('2026-12-03T19:55:00Z', 1796327700.0), ('0001-01-01T00:00:00Z', None), ('', None), (None, None),
])
def test_engine_times(text, value):
    got = order.epoch(text)
    assert got == value if value is None else abs(got - value) < 1e-6


def test_fact_from_inspect():
    assert order.fact(None) is None
    f = order.fact({'status': 'exited', 'exit_code': 2, 'health': None, 'started_at': '2026-12-03T19:55:00Z'})
    assert f == {'state': order.EXITED, 'exit_code': 2, 'health': None, 'started_at': 1796327700.0}
    assert order.fact({'status': 'running', 'health': 'healthy'})['state'] == order.RUNNING


# --- the declaration --------------------------------------------------------------------------------------

def test_both_forms_make_the_same_task():
    native = task(box('app', ('job', 'SUCCESS')), box('job', essential=False, start_timeout=9))
    ecs = spec.task({'task_definition': {'family': 'web', 'containerDefinitions': [
        {'name': 'app', 'image': IMG, 'dependsOn': [{'containerName': 'job', 'condition': 'SUCCESS'}]},
        {'name': 'job', 'image': IMG, 'essential': False, 'startTimeout': 9}]}})
    assert native.containers == ecs.containers and native.spec_hash == ecs.spec_hash
    assert order.deps(native.containers[0]) == [('job', 'SUCCESS')]


def test_the_order_is_part_of_the_spec_and_absent_changes_no_hash():
    plain = task(box('app'), box('job', essential=False))
    ordered = task(box('app', ('job', 'START')), box('job', essential=False))
    other = task(box('app', ('job', 'COMPLETE')), box('job', essential=False))
    assert len(set([plain.spec_hash, ordered.spec_hash, other.spec_hash])) == 3
    assert 'depends_on' not in settings.hashable(plain.containers[0])
    assert task(box('app', depends_on=[]), box('job', essential=False)).spec_hash == plain.spec_hash


@pytest.mark.parametrize('containers,words', [
    ([box('app', ('nope', 'START'))], "containers[0].depends_on[0].container_name 'nope' is not another container"),
    ([box('app', ('app', 'START'))], "containers[0].depends_on[0].container_name 'app' is not another container"),
    ([box('a', ('b', 'START')), box('b', ('a', 'START'))], 'containers[0].depends_on goes round in a cycle (a -> b -> a)'),
    ([box('a', ('b', 'HEALTHY')), box('b', ('c', 'START'), health_check=HC), box('c', ('b', 'START'))],
     'containers[1].depends_on goes round in a cycle (b -> c -> b)'),
    ([box('a', volumes_from=[{'source_container': 'b'}]), box('b', ('a', 'START'))],
     'containers[1].depends_on goes round in a cycle'),
    ([box('app', ('db', 'SUCCESS')), box('db')], 'containers[0].depends_on[0].condition SUCCESS: container db is essential'),
    ([box('app', ('db', 'COMPLETE')), box('db')], 'containers[0].depends_on[0].condition COMPLETE: container db is essential'),
    ([box('app', ('db', 'HEALTHY')), box('db')],
     'containers[0].depends_on[0].condition HEALTHY: container db has no health check (containers[1].health_check)'),
    ([box('app', ('db', 'READY')), box('db')], 'containers[0].depends_on[0].condition must be one of START, COMPLETE'),
    ([box('app', depends_on=[{'condition': 'START'}]), box('db')], 'containers[0].depends_on[0].container_name is required'),
    ([box('app', depends_on=[{'container_name': 'db'}]), box('db')], 'containers[0].depends_on[0].condition is required'),
])
def test_a_bad_order_is_refused_naming_the_field(containers, words):
    with pytest.raises(SpecError) as err:
        task(*containers)
    assert words in str(err.value), str(err.value)


def test_a_bad_order_in_a_task_definition_names_ecs_fields():
    with pytest.raises(SpecError) as err:
        spec.task({'task_definition': {'family': 'web', 'containerDefinitions': [
            {'name': 'app', 'image': IMG, 'dependsOn': [{'containerName': 'db', 'condition': 'SUCCESS'}]},
            {'name': 'db', 'image': IMG}]}})
    assert 'task_definition.containerDefinitions[0].dependsOn[0].condition SUCCESS: container db is essential' \
        in str(err.value)


# --- the task decider, with an order ------------------------------------------------------------------------

def _obs(t, name, state='running', code=None, essential=True):
    return {'id': 'id-' + name, 'name': 'web-' + name, 'state': state, 'image': IMG, 'created': T0, 'exit_code': code,
            'labels': {'drover.role': 'task', 'drover.task': t.name, 'drover.cluster': t.cluster,
                       'drover.container': name, 'drover.spec-hash': t.spec_hash,
                       'drover.essential': 'true' if essential else 'false'}}


def test_a_cut_short_order_keeps_a_container_that_ran_to_its_end():
    t = task(box('app', ('job', 'SUCCESS')), box('job', essential=False))
    pending = p.plan_task(t, [], None, T0).record
    plan = p.plan_task(t, [_obs(t, 'job', 'exited', 0, essential=False)], pending, T0 + 5)
    assert plan.start and plan.remove == [] and [o['id'] for o in plan.resume] == ['id-job']
    # An essential container of the cut-short run that stopped: the run is cleared and started again.
    u = task(box('app', ('job', 'START')), box('job'))
    pending = p.plan_task(u, [], None, T0).record
    plan = p.plan_task(u, [_obs(u, 'job', 'exited', 1)], pending, T0 + 5)
    assert plan.resume == [] and [o['id'] for o in plan.remove] == ['id-job']


def test_a_running_task_whose_dependency_ran_to_its_end_is_left_alone():
    t = task(box('app', ('job', 'SUCCESS')), box('job', essential=False))
    observed = [_obs(t, 'app'), _obs(t, 'job', 'exited', 0, essential=False)]
    record = dict(p.plan_task(t, [], None, T0).record, last_status='RUNNING')
    plan = p.plan_task(t, observed, record, T0 + 60)
    assert not plan.start and plan.remove == [] and plan.events == [] and not plan.changed
    views = dict((c['name'], c) for c in plan.record['containers'])
    assert views['job']['last_status'] == 'STOPPED' and views['job']['exit_code'] == 0
