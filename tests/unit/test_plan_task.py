# -*- coding: utf-8 -*-
"""The task decider: pure, the clock an argument."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks import plan as p
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec

IMG = 'drover.local/busybox:1'
T0 = 1_800_000_000.0


def decl(restart='never', state='running', stop_reason=None, containers=None):
    containers = containers or [{'name': 'main', 'image': IMG}, {'name': 'side', 'image': IMG, 'essential': False}]
    raw = {'name': 'web', 'restart': restart, 'state': state, 'stop_reason': stop_reason}
    if state == 'running':
        raw['containers'] = containers
    return spec.task(raw)


def obs(d, name, state='running', code=None, spec_hash=None):
    return {'id': 'id-' + name, 'name': 'web-' + name, 'state': state, 'image': IMG, 'created': T0,
            'exit_code': code,
            'labels': {'drover.role': 'task', 'drover.task': d.name, 'drover.cluster': d.cluster,
                       'drover.container': name, 'drover.spec-hash': spec_hash or d.spec_hash}}


def both(d, main='running', side='running', code=None):
    return [obs(d, 'main', main, code), obs(d, 'side', side)]


def run(d, observed, stored, now=T0):
    plan = p.plan_task(d, observed, stored, now)
    return plan


def settle(d, plan, now):
    """What the applier records after a successful start."""
    return dict(plan.record, last_status='RUNNING', started_at=now)


def test_backoff_sequence():
    assert [p.backoff(n) for n in range(1, 9)] == [30, 60, 120, 240, 480, 600, 600, 600]


def test_new_task_starts():
    d = decl()
    plan = run(d, [], None)
    assert plan.start and plan.changed and not plan.remove
    assert plan.record['last_status'] == 'PENDING' and plan.record['desired_status'] == 'RUNNING'


def test_running_task_is_left_alone():
    d = decl()
    first = run(d, [], None)
    stored = dict(settle(d, first, T0), containers=[])
    plan = run(d, both(d), stored, T0 + 5)
    assert not plan.changed and not plan.start and not plan.remove and not plan.events


def test_adoption_without_store_changes_nothing_on_the_host():
    d = decl()
    plan = run(d, both(d), None, T0 + 50)
    assert not plan.changed and not plan.start and not plan.remove
    assert plan.write and plan.record['last_status'] == 'RUNNING' and plan.record['started_at'] == T0


def test_essential_exit_stops_whole_task_and_keeps_code():
    d = decl()
    plan = run(d, both(d, main='exited', code=3), None, T0 + 10)
    assert plan.changed and not plan.start
    assert sorted(o['id'] for o in plan.remove) == ['id-main', 'id-side']
    assert plan.record['last_status'] == 'STOPPED'
    assert plan.record['stopped_reason'] == 'container main exited (3)'
    assert [c['exit_code'] for c in plan.record['containers']] == [3, None]
    assert [e['event'] for e in plan.events] == ['task.stopped']
    assert plan.record['hold_until'] is None


def test_non_essential_exit_keeps_task_running():
    d = decl()
    plan = run(d, both(d, side='exited'), None)
    assert not plan.changed and not plan.remove
    assert plan.record['last_status'] == 'RUNNING'
    assert [c['last_status'] for c in plan.record['containers']] == ['RUNNING', 'STOPPED']


def test_restart_never_stays_stopped():
    d = decl()
    stopped = run(d, both(d, main='exited', code=1), None).record
    for later in (60, 6000, 600000):
        plan = run(d, [], stopped, T0 + later)
        assert not plan.changed and not plan.start and not plan.write


def test_on_failure_does_not_restart_a_clean_exit():
    d = decl(restart='on-failure')
    stopped = run(d, both(d, main='exited', code=0), None).record
    assert stopped['hold_until'] is None
    assert not run(d, [], stopped, T0 + 10000).start


def test_always_restarts_at_once_then_holds_with_backoff():
    d = decl(restart='always')
    now = T0
    stored = None
    holds = []
    for attempt in range(8):
        stop = run(d, both(d, main='exited', code=1), stored, now)
        rec = stop.record
        if attempt == 0:
            # The first stop of a streak: reported, and the next run starts in the same pass.
            assert [e['event'] for e in stop.events] == ['task.stopped']
            assert stop.start and stop.changed and [o['id'] for o in stop.remove] == ['id-main', 'id-side']
            assert rec['streak'] == 1 and rec['hold_until'] is None and rec['last_status'] == 'PENDING'
            holds.append(0)
            now += 1
            stored = settle(d, stop, now)
            continue
        holds.append(rec['hold_until'] - now)
        assert [e['event'] for e in stop.events] == ['task.stopped', 'task.held'] and not stop.start
        held = run(d, [], rec, now + holds[-1] - 1)
        assert not held.start and not held.changed
        again = run(d, [], rec, now + holds[-1])
        assert again.start and again.record['streak'] == rec['streak']
        now = now + holds[-1] + 1
        stored = settle(d, again, now)
    assert attempt == 7 and holds == [0, 30, 60, 120, 240, 480, 600, 600]


def test_a_long_run_starts_a_new_streak():
    d = decl(restart='always')
    stored = {'cluster': 'default', 'name': 'web', 'spec_hash': d.spec_hash, 'desired_status': 'RUNNING',
              'last_status': 'RUNNING', 'stopped_reason': None, 'restart': 'always', 'started_at': T0,
              'stopped_at': None, 'streak': 5, 'hold_until': None, 'containers': []}
    plan = run(d, both(d, main='exited', code=1), stored, T0 + 601)
    assert plan.record['streak'] == 1 and plan.record['hold_until'] is None and plan.start
    plan = run(d, both(d, main='exited', code=1), stored, T0 + 20)
    assert plan.record['streak'] == 6 and plan.record['hold_until'] == T0 + 20 + 480 and not plan.start


def test_changed_spec_replaces_containers_and_resets_streak():
    d = decl(restart='always')
    old = spec.task({'name': 'web', 'containers': [{'name': 'main', 'image': IMG, 'command': ['sleep', '1']}]})
    stored = {'cluster': 'default', 'name': 'web', 'spec_hash': old.spec_hash, 'desired_status': 'RUNNING',
              'last_status': 'RUNNING', 'stopped_reason': None, 'restart': 'always', 'started_at': T0,
              'stopped_at': None, 'streak': 4, 'hold_until': None, 'containers': []}
    plan = run(d, [obs(old, 'main')], stored, T0 + 5)
    assert plan.start and [o['id'] for o in plan.remove] == ['id-main']
    assert plan.record['streak'] == 0
    assert [e['event'] for e in plan.events] == ['task.stopped']


def test_changed_spec_of_a_stopped_never_task_is_a_new_run():
    d = decl()
    stopped = run(d, both(d, main='exited', code=0), None).record
    d2 = decl(containers=[{'name': 'main', 'image': IMG, 'command': ['true']}])
    assert run(d2, [], stopped, T0 + 1).start


def test_vanished_containers_are_reported():
    d = decl(restart='on-failure')
    stored = dict(run(d, [], None).record, last_status='RUNNING')
    plan = run(d, [], stored, T0 + 9)
    assert plan.changed and plan.start and [e['event'] for e in plan.events] == ['task.stopped']
    assert plan.events[0]['reason'] == p.EXITED_UNSEEN and plan.record['streak'] == 1
    again = run(d, [], dict(stored, streak=1, started_at=T0 + 8), T0 + 9)
    assert not again.start and again.record['stopped_reason'] == p.EXITED_UNSEEN
    assert again.record['hold_until'] == T0 + 9 + 30
    never = run(decl(), [], dict(stored, restart='never'), T0 + 9)
    assert not never.start and never.record['stopped_reason'] == p.EXITED_UNSEEN and never.record['hold_until'] is None


def test_missing_essential_container_stops_the_task():
    d = decl()
    plan = run(d, [obs(d, 'side')], None)
    assert plan.record['stopped_reason'] == p.EXITED_UNSEEN and [o['id'] for o in plan.remove] == ['id-side']


def test_cut_short_start_is_resumed():
    d = decl()
    pending = run(d, [], None).record
    plan = run(d, [obs(d, 'main', 'created')], pending, T0 + 1)
    assert plan.start and plan.remove == [] and [o['id'] for o in plan.resume] == ['id-main']


@pytest.mark.parametrize('reason,expected', [(None, 'Task stopped'), ('maintenance', 'maintenance')])
def test_stop_removes_and_records_reason(reason, expected):
    d = decl()
    stopped = decl(state='stopped', stop_reason=reason)
    stored = dict(run(d, [], None).record, last_status='RUNNING')
    plan = run(stopped, both(d), stored, T0 + 3)
    assert plan.changed and len(plan.remove) == 2 and not plan.start
    assert plan.record['last_status'] == 'STOPPED' and plan.record['desired_status'] == 'STOPPED'
    assert plan.record['stopped_reason'] == expected
    again = run(stopped, [], plan.record, T0 + 4)
    assert not again.changed and not again.write


def test_stop_of_an_unknown_task_changes_nothing():
    plan = run(decl(state='stopped'), [], None)
    assert not plan.changed and not plan.write and not plan.remove


def test_stopped_task_declared_running_again_is_a_new_run():
    d = decl()
    stored = run(decl(state='stopped'), both(d), dict(run(d, [], None).record, last_status='RUNNING')).record
    plan = run(d, [], stored, T0 + 100)
    assert plan.start and plan.changed


def test_absent_removes_everything():
    d = decl()
    stored = dict(run(d, [], None).record, last_status='RUNNING')
    plan = run(decl(state='absent'), both(d), stored, T0 + 1)
    assert plan.delete and plan.changed and len(plan.remove) == 2
    assert [e['event'] for e in plan.events] == ['task.stopped']
    gone = run(decl(state='absent'), [], None, T0 + 2)
    assert not gone.changed and not gone.delete


def test_failed_start_record():
    d = decl(restart='on-failure')
    pending = run(d, [], None).record
    rec = p.stopped_record(pending, p.reason_pull('boom'), T0, d.restart, [])
    assert rec['stopped_reason'] == 'image pull failed: boom' and rec['streak'] == 1 and rec['hold_until'] is None
    second = p.stopped_record(dict(pending, streak=1), p.reason_pull('boom'), T0, d.restart, [])
    assert second['streak'] == 2 and second['hold_until'] == T0 + 30
    never = p.stopped_record(pending, p.reason_start('x'), T0, 'never', [])
    assert never['hold_until'] is None


def test_events_carry_the_subject_and_time():
    d = decl()
    plan = run(d, both(d, main='exited', code=2), None, T0)
    ev = plan.events[0]
    assert ev == {'event': 'task.stopped', 'at': p.iso(T0), 'cluster': 'default', 'task': 'web',
                  'subject': 'task/default/web', 'reason': 'container main exited (2)'}


def test_a_cut_short_start_goes_on_from_where_it_was_cut():
    d = decl(restart='always')
    pending = dict(run(d, [], None).record, streak=2)
    # The killed converge started main and only created side: both are kept, nothing is removed.
    plan = run(d, [obs(d, 'main'), obs(d, 'side', 'created')], pending, T0 + 5)
    assert plan.start and plan.remove == [] and [o['id'] for o in plan.resume] == ['id-main', 'id-side']
    assert plan.record['streak'] == 2 and plan.events == []
    # Only main was made: it is kept, side will be made.
    plan = run(d, [obs(d, 'main')], pending, T0 + 5)
    assert plan.start and plan.remove == [] and [o['id'] for o in plan.resume] == ['id-main']
    # A container of the cut-short run already stopped: the run is cleared and started again.
    plan = run(d, [obs(d, 'main', 'exited', 1), obs(d, 'side')], pending, T0 + 5)
    assert plan.start and plan.resume == [] and [o['id'] for o in plan.remove] == ['id-main', 'id-side']


# --- health -------------------------------------------------------------------------------------

CHECK = {'command': ['CMD-SHELL', 'test -e /tmp/ok'], 'interval': 5, 'timeout': 2, 'retries': 1}


def health_decl(restart='never', side_check=True, state='running'):
    return spec.task({'name': 'web', 'restart': restart, 'state': state, 'containers': [
        {'name': 'main', 'image': IMG, 'health_check': CHECK},
        dict({'name': 'side', 'image': IMG, 'essential': False}, **({'health_check': CHECK} if side_check else {}))]})


def hobs(d, name, health, state='running', declared=True):
    o = obs(d, name, state)
    o['health'] = health
    if declared:
        o['labels']['drover.health-check'] = 'true'
    return o


def running_record(d, plan, views):
    return dict(settle(d, plan, T0), containers=views)


def test_container_health_counts_only_a_declared_check():
    d = health_decl()
    assert p.container_health(hobs(d, 'main', 'healthy')) == p.HEALTHY
    assert p.container_health(hobs(d, 'main', 'unhealthy')) == p.UNHEALTHY
    assert p.container_health(hobs(d, 'main', 'starting')) == p.UNKNOWN
    assert p.container_health(hobs(d, 'main', None)) == p.UNKNOWN
    # the image's own HEALTHCHECK (no drover.health-check label) is not a task health check
    assert p.container_health(hobs(d, 'main', 'unhealthy', declared=False)) == p.UNKNOWN
    # a container that is not running has no health to report
    assert p.container_health(hobs(d, 'main', 'healthy', state='exited')) == p.UNKNOWN


def test_task_health_is_made_of_its_essential_checked_containers():
    d = health_decl()
    assert p.checked(d) == {'main'}                 # side has a check, but is not essential
    assert p.checked(decl()) == set()

    def views(main, side):
        return [{'name': 'main', 'health_status': main}, {'name': 'side', 'health_status': side}]

    assert p.task_health(views('HEALTHY', 'UNHEALTHY'), {'main'}) == p.HEALTHY
    assert p.task_health(views('UNHEALTHY', 'HEALTHY'), {'main'}) == p.UNHEALTHY
    assert p.task_health(views('UNKNOWN', 'HEALTHY'), {'main'}) == p.UNKNOWN
    assert p.task_health(views('HEALTHY', 'HEALTHY'), set()) == p.UNKNOWN    # no check: never HEALTHY
    assert p.task_health(views('HEALTHY', 'UNKNOWN'), {'main', 'side'}) == p.UNKNOWN
    assert p.task_health([], {'main'}) == p.UNKNOWN
    assert p.task_health([{'name': 'main'}], {'main'}) == p.UNKNOWN        # a record from before health


def test_healthy_turn_is_one_event_and_a_record_write_not_a_change():
    d = health_decl()
    first = run(d, [], None)
    stored = running_record(d, first, [p.declared_view(c, 'RUNNING') for c in d.containers])
    starting = run(d, [hobs(d, 'main', 'starting'), hobs(d, 'side', 'starting')], stored, T0 + 2)
    assert not starting.events and not starting.changed
    healthy = run(d, [hobs(d, 'main', 'healthy'), hobs(d, 'side', 'unhealthy')], starting.record, T0 + 6)
    assert [e['event'] for e in healthy.events] == ['task.healthy'] and healthy.write and not healthy.changed
    assert not healthy.remove and not healthy.start
    assert [c['health_status'] for c in healthy.record['containers']] == ['HEALTHY', 'UNHEALTHY']
    # the store knows the task was HEALTHY already: no second event
    again = run(d, [hobs(d, 'main', 'healthy'), hobs(d, 'side', 'unhealthy')], healthy.record, T0 + 12)
    assert not again.events and not again.write and not again.changed


@pytest.mark.parametrize('restart, starts', [('never', False), ('on-failure', True), ('always', True)])
def test_an_unhealthy_essential_container_stops_the_task(restart, starts):
    d = health_decl(restart)
    first = run(d, [], None)
    stored = running_record(d, first, [dict(p.declared_view(c, 'RUNNING'), health_status='HEALTHY')
                                       for c in d.containers])
    observed = [hobs(d, 'main', 'unhealthy'), hobs(d, 'side', 'healthy')]
    plan = run(d, observed, stored, T0 + 60)
    assert plan.changed and plan.remove == observed and plan.start == starts
    kinds = [e['event'] for e in plan.events]
    assert kinds == ['task.unhealthy', 'task.stopped']   # the applier reports the new run's task.running
    assert plan.events[0]['containers'] == ['main']
    assert plan.events[1]['reason'] == p.HEALTH_FAILED == 'Task failed container health checks'
    if starts:
        assert plan.record['last_status'] == 'PENDING'      # the first stop of a streak runs again at once
    else:
        assert plan.record['last_status'] == 'STOPPED' and plan.record['stopped_reason'] == p.HEALTH_FAILED
        assert p.task_health(plan.record['containers'], p.checked(d)) == p.UNHEALTHY


def test_unhealthy_again_is_held_back_by_the_backoff():
    d = health_decl('on-failure')
    first = run(d, [], None)
    stored = dict(running_record(d, first, [p.declared_view(c, 'RUNNING') for c in d.containers]), streak=1)
    plan = run(d, [hobs(d, 'main', 'unhealthy'), hobs(d, 'side', 'starting')], stored, T0 + 10)
    assert [e['event'] for e in plan.events] == ['task.unhealthy', 'task.stopped', 'task.held']
    assert not plan.start and plan.record['hold_until'] == T0 + 10 + p.BACKOFF_BASE
    held = run(d, [], plan.record, T0 + 20)
    assert not held.start
    after = run(d, [], plan.record, T0 + 10 + p.BACKOFF_BASE)
    assert after.start and after.record['streak'] == 2


def test_unhealthy_container_that_is_not_essential_or_not_declared_stops_nothing():
    d = health_decl()
    first = run(d, [], None)
    stored = running_record(d, first, [p.declared_view(c, 'RUNNING') for c in d.containers])
    plan = run(d, [hobs(d, 'main', 'healthy'), hobs(d, 'side', 'unhealthy')], stored, T0 + 5)
    assert not plan.remove and plan.record['last_status'] == 'RUNNING'
    plain = decl()
    stored = running_record(plain, run(plain, [], None), [])
    image_check = [hobs(plain, 'main', 'unhealthy', declared=False), hobs(plain, 'side', None, declared=False)]
    plan = run(plain, image_check, stored, T0 + 5)
    assert not plan.remove and not plan.events and plan.record['containers'][0]['health_status'] == 'UNKNOWN'


def test_an_exit_wins_over_an_unhealthy_container():
    d = health_decl('never')
    first = run(d, [], None)
    stored = running_record(d, first, [p.declared_view(c, 'RUNNING') for c in d.containers])
    plan = run(d, [hobs(d, 'main', 'unhealthy'), dict(hobs(d, 'side', None, state='exited'), exit_code=3)], stored,
               T0 + 5)
    assert plan.record['stopped_reason'] == p.HEALTH_FAILED   # side is not essential: its exit stops nothing
    d2 = spec.task({'name': 'web', 'containers': [{'name': 'main', 'image': IMG, 'health_check': CHECK},
                                                  {'name': 'side', 'image': IMG, 'health_check': CHECK}]})
    stored = running_record(d2, run(d2, [], None), [])
    plan = run(d2, [dict(hobs(d2, 'main', None, state='exited'), exit_code=2), hobs(d2, 'side', 'unhealthy')], stored,
               T0 + 5)
    assert plan.record['stopped_reason'] == 'container main exited (2)'
    assert [e['event'] for e in plan.events] == ['task.unhealthy', 'task.stopped']


def test_state_healthy_is_running_that_waits_and_needs_a_check():
    d = health_decl(state='healthy')
    assert d.state == 'running' and d.wait_healthy and d.spec_hash == health_decl().spec_hash
    assert not health_decl().wait_healthy
    with pytest.raises(spec.SpecError, match=r'state is healthy: task default/web has no essential container with a '
                                             r'health check'):
        spec.task({'name': 'web', 'state': 'healthy', 'containers': [
            {'name': 'main', 'image': IMG},
            {'name': 'side', 'image': IMG, 'essential': False, 'health_check': CHECK}]})


def test_a_check_of_none_is_no_check():
    d = spec.task({'name': 'web', 'containers': [{'name': 'main', 'image': IMG, 'health_check': {'command': ['NONE']}}]})
    assert not p.has_check(d.containers[0]) and p.checked(d) == set()
    with pytest.raises(spec.SpecError, match='has no essential container with a health check'):
        spec.task({'name': 'web', 'state': 'healthy', 'containers': [
            {'name': 'main', 'image': IMG, 'health_check': {'command': ['NONE']}}]})


def test_a_stopped_run_is_unhealthy_only_when_its_checks_stopped_it():
    views = [{'name': 'main', 'health_status': 'UNHEALTHY'}]
    assert p.record_health({'last_status': 'STOPPED', 'stopped_reason': p.HEALTH_FAILED, 'containers': []},
                           set()) == p.UNHEALTHY          # without the declaration too (ecs_task_info of a stopped task)
    assert p.record_health({'last_status': 'STOPPED', 'stopped_reason': 'container main exited (1)',
                            'containers': views}, {'main'}) == p.UNKNOWN
    assert p.record_health({'last_status': 'RUNNING', 'containers': views}, {'main'}) == p.UNHEALTHY
    assert p.record_health({'last_status': 'PENDING', 'containers': []}, {'main'}) == p.UNKNOWN
    # a run adopted after a stopped one starts UNKNOWN: its first failure is an event of its own
    d = health_decl()
    stopped = {'cluster': d.cluster, 'name': d.name, 'last_status': 'STOPPED', 'desired_status': 'RUNNING',
               'stopped_reason': p.HEALTH_FAILED, 'containers': views, 'spec_hash': d.spec_hash}
    plan = run(d, [hobs(d, 'main', 'unhealthy'), hobs(d, 'side', None)], stopped, T0)
    assert [e['event'] for e in plan.events] == ['task.unhealthy', 'task.stopped']


# --- a container's restart policy ------------------------------------------------------------------

def policy_decl(restart='never', **policy):
    return spec.task({'name': 'web', 'restart': restart, 'containers': [
        {'name': 'main', 'image': IMG, 'restart_policy': dict({'enabled': True}, **policy)},
        {'name': 'other', 'image': IMG}]})


def exited(d, name, code, stored_started=T0):
    observed = [obs(d, n, 'exited' if n == name else 'running', code if n == name else None) for n in ('main', 'other')]
    stored = dict(_running(d), started_at=stored_started)
    return observed, stored


def _running(d):
    first = run(d, [], None)
    return dict(settle(d, first, T0), containers=[])


def test_container_restart_policy_runs_the_task_again_with_the_backoff():
    d = policy_decl(ignored_exit_codes=[0, 143])
    observed, stored = exited(d, 'main', 1)
    plan = run(d, observed, stored, T0 + 5)
    assert plan.start and plan.record['streak'] == 1            # restart never, but the container's policy runs it
    assert plan.record['restart'] == 'never'                    # the task's own policy, as reported
    assert [e['event'] for e in plan.events] == ['task.stopped']
    again = dict(plan.record, last_status='RUNNING', started_at=T0 + 5)
    plan = run(d, exited(d, 'main', 2)[0], again, T0 + 10)     # ran 5 s (< 300): held back
    assert not plan.start and plan.record['hold_until'] == T0 + 10 + p.BACKOFF_BASE
    assert [e['event'] for e in plan.events] == ['task.stopped', 'task.held']
    assert not run(d, [], plan.record, T0 + 20).start
    later = run(d, [], plan.record, T0 + 10 + p.BACKOFF_BASE)
    assert later.start and later.record['streak'] == 2


def test_container_restart_policy_ignored_codes_and_other_stops_follow_the_task():
    d = policy_decl(ignored_exit_codes=[0, 143])
    for code in (0, 143):
        plan = run(d, *exited(d, 'main', code), now=T0 + 5)
        assert not plan.start and plan.record['last_status'] == 'STOPPED' and plan.record['hold_until'] is None
    plan = run(d, *exited(d, 'other', 1), now=T0 + 5)
    assert not plan.start                                         # another container's exit: restart never decides
    on_failure = policy_decl('on-failure', ignored_exit_codes=[3])
    plan = run(on_failure, *exited(on_failure, 'main', 3), now=T0 + 5)
    assert plan.start                                             # ignored by the container, on-failure restarts
    disabled = spec.task({'name': 'web', 'containers': [{'name': 'main', 'image': IMG,
                                                         'restart_policy': {'enabled': False}}]})
    assert p.container_policy(disabled, 'container main exited (1)') is None
    assert p.restart_of(d, 'container main exited (unknown)') == ('never', p.STABLE_RUN)
    assert p.restart_of(d, p.HEALTH_FAILED) == ('never', p.STABLE_RUN)


def test_restart_attempt_period_is_the_stable_run():
    d = policy_decl(restart_attempt_period=60)
    assert p.restart_of(d, 'container main exited (1)') == ('always', 60)
    assert p.restart_of(policy_decl(), 'container main exited (1)') == ('always', p.RESTART_ATTEMPT_PERIOD)
    observed, stored = exited(d, 'main', 1)
    stored = dict(stored, streak=3)
    plan = run(d, observed, stored, T0 + 61)                       # ran 61 s >= 60: a new streak, at once
    assert plan.start and plan.record['streak'] == 1
    plan = run(d, observed, stored, T0 + 59)                       # ran 59 s: the streak goes on, held back
    assert not plan.start and plan.record['streak'] == 4 and plan.record['hold_until'] == T0 + 59 + p.backoff(3)


TD = {'family': 'train', 'containerDefinitions': [
    {'name': 'side', 'image': IMG, 'memory': 16},
    {'name': 'main', 'image': IMG, 'memory': 16, 'resourceRequirements': [{'type': 'GPU', 'value': '2'}]}]}


@pytest.mark.parametrize('params,fields', [
    ({'name': 'train', 'containers': [{'name': 'side', 'image': IMG}, {'name': 'main', 'image': IMG, 'gpu': 2}]},
     ['containers[1].gpu']),
    ({'task_definition': TD}, ['task_definition.containerDefinitions[1].resourceRequirements']),
    ({'task_definition': {'taskDefinition': dict(TD, cpu='256')}},
     ['task_definition.containerDefinitions[1].resourceRequirements']),
    ({'tasks': [{'name': 'x', 'containers': [{'name': 'main', 'image': IMG, 'gpu': 1}]},
                {'task_definition': TD, 'cpu': 256}]},
     ['tasks[0].containers[0].gpu', 'tasks[1].task_definition.containerDefinitions[1].resourceRequirements']),
])
def test_gpu_field_is_named_as_the_declaration_names_it(params, fields):
    tasks, _purge = spec.task_set(params)
    assert [p.gpu_field(t, 'main') for t in tasks] == fields


def test_a_stopped_task_keeps_what_its_exited_containers_printed_and_its_event_the_last_lines():
    d = decl(restart='always')
    printed = '\n'.join('line %d' % i for i in range(30)) + '\nboom'
    observed = [dict(obs(d, 'main', 'exited', 3), last_output=printed), obs(d, 'side')]
    plan = run(d, observed, None, T0 + 10)
    # the stopped run's record and its event; the run that starts at once (restart always) begins blank
    [stopped] = [e for e in plan.events if e['event'] == 'task.stopped']
    assert stopped['last_output'] == {'main': '\n'.join('line %d' % i for i in range(11, 30)) + '\nboom'}
    assert plan.start and plan.record['containers'] == []
    never = p.plan_task(decl(), [dict(obs(decl(), 'main', 'exited', 3), last_output=printed),
                                 obs(decl(), 'side')], None, T0 + 10)
    assert [c.get('last_output') for c in never.record['containers']] == [printed, None]
    # a running container's view has none, and a task stopped on purpose carries none where nothing exited
    assert 'last_output' not in p.container_view(dict(obs(d, 'side'), last_output='x'))
    gone = p.plan_task(decl(state='stopped'), both(decl()), {'last_status': 'RUNNING', 'desired_status': 'RUNNING'},
                       T0)
    assert [e for e in gone.events if e['event'] == 'task.stopped'][0].get('last_output') is None


def test_a_stopped_run_keeps_its_containers_for_the_cleanup_wait_then_they_go():
    d = decl()
    stop = p.plan_task(d, both(d, main='exited', code=3), None, T0 + 10, keep=600)
    assert stop.keep and stop.remove == [] and not stop.start and stop.changed
    assert [o['id'] for o in stop.halt] == ['id-side']                 # still running: stopped, kept
    assert stop.record['last_status'] == 'STOPPED' and [e['event'] for e in stop.events] == ['task.stopped']
    kept = both(d, main='exited', side='exited', code=3)
    # within the wait: nothing happens, no second stop is told
    during = p.plan_task(d, kept, stop.record, T0 + 609, keep=600)
    assert during.keep and during.remove == [] and not during.changed and not during.events and not during.write
    # the wait over: they go, the record stays as it was
    after = p.plan_task(d, kept, stop.record, T0 + 610, keep=600)
    assert not after.keep and [o['id'] for o in after.remove] == ['id-main', 'id-side'] and after.changed
    assert after.record['stopped_reason'] == 'container main exited (3)' and not after.start and not after.events
    # without a wait (the default) they go when it stops
    assert [o['id'] for o in p.plan_task(d, both(d, main='exited', code=3), None, T0 + 10).remove] == \
        ['id-main', 'id-side']


def test_kept_containers_go_before_a_restart_a_change_or_a_stop():
    d = decl(restart='on-failure')
    stop = p.plan_task(d, both(d, main='exited', code=3), None, T0, keep=600)
    assert stop.start and not stop.keep and len(stop.remove) == 2        # restarted at once: nothing kept
    held = dict(stop.record, last_status='STOPPED', hold_until=T0 + 30, stopped_at=T0, desired_status='RUNNING')
    kept = both(d, main='exited', side='exited', code=3)
    waiting = p.plan_task(d, kept, held, T0 + 29, keep=600)
    assert waiting.keep and not waiting.start and waiting.remove == []
    due = p.plan_task(d, kept, held, T0 + 30, keep=600)
    assert due.start and len(due.remove) == 2 and not due.keep
    changed = decl(restart='on-failure', containers=[{'name': 'main', 'image': IMG, 'command': ['true']}])
    assert p.plan_task(changed, kept, held, T0 + 1, keep=600).start
    assert len(p.plan_task(changed, kept, held, T0 + 1, keep=600).remove) == 2
    stopped = p.plan_task(decl(state='stopped'), kept, held, T0 + 1, keep=600)
    assert len(stopped.remove) == 2 and not stopped.keep
