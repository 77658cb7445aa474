# -*- coding: utf-8 -*-
"""Services' deployments (services.deploy): pure, on synthetic instances - a rolling replacement kept within the
minimum healthy and maximum percent at every pass, the circuit breaker and the rollback, the records the hosts
keep."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.services import deploy as pd
from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import records_option
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

KEY = ('prod', 'web')
NOW = '2026-12-06T00:00:00Z'
V1 = {'containers': [{'name': 'main', 'image': 'drover.local/web:1'}]}
V2 = {'containers': [{'name': 'main', 'image': 'drover.local/web:2'}]}
R1, R2 = pd.revision_of(V1), pd.revision_of(V2)


def dep(low=50, high=150, **breaker):
    return pd.deployment_spec({'minimum_healthy_percent': low, 'maximum_percent': high,
                               'circuit_breaker': breaker or None})


def steady(count=4, revision=R1, hosts=('h1', 'h2')):
    return [pd.Seen(i, hosts[i % len(hosts)], revision, pd.HEALTHY, 0) for i in range(count)]


def completed(number=1, revision=R1):
    return {revision: {'revision': revision, 'number': number, 'status': pd.COMPLETED, 'rollback_of': None,
                       'declaration': V1}}


def carry_out(step, seen, state_of_new, next_index):
    """The instances after the pass: old ones stopped, the target's kept and `step.count` of them in all (new
    ones started in `state_of_new`)."""
    stopped = set((s.index, s.host) for s in step.stop)
    left = [s for s in seen if (s.index, s.host) not in stopped]
    mine = [s for s in left if s.revision == step.target]
    others = [s for s in left if s.revision != step.target]
    while len(mine) < step.count:
        mine.append(pd.Seen(next_index[0], 'h1', step.target, state_of_new, 0))
        next_index[0] += 1
    return others + mine[:step.count]


def counts(seen):
    return (len([s for s in seen if s.state != pd.STOPPED]), len([s for s in seen if s.state == pd.HEALTHY]))


def test_a_rolling_deployment_keeps_within_its_bounds_and_completes():
    seen, records, events = steady(), completed(), []
    next_index = [4]
    for round_ in range(10):
        step = pd.step(KEY, 4, dep(), R2, V2, records, seen, NOW)
        events += [e['event'] for e in step.events]
        running, healthy = counts(seen)
        # what the hosts do at once: starts before stops (the most running) or stops before starts (the fewest healthy)
        started = step.count - len([s for s in seen if s.revision == R2 and s not in step.stop])
        assert running + max(started, 0) <= 6, round_
        assert healthy - len([s for s in step.stop if s.state == pd.HEALTHY]) >= 2, round_
        records = step.records
        if step.status == pd.COMPLETED:
            break
        seen = carry_out(step, seen, pd.PENDING, next_index)
        seen = [s._replace(state=pd.HEALTHY) if s.state == pd.PENDING and round_ % 2 else s for s in seen]
    assert step.status == pd.COMPLETED and events == ['service.deployment.started', 'service.deployment.completed']
    assert all(s.revision == R2 for s in seen) and len(seen) == 4
    assert records[R2]['status'] == pd.COMPLETED and records[R2]['number'] == 2 and records[R1]['number'] == 1
    # once complete, a pass changes nothing
    again = pd.step(KEY, 4, dep(), R2, V2, records, seen, NOW)
    assert again.count == 4 and not again.stop and not again.events and again.status == pd.COMPLETED


def test_100_200_starts_all_new_before_stopping_any_old():
    step = pd.step(KEY, 4, dep(100, 200), R2, V2, completed(), steady(), NOW)
    assert step.count == 4 and step.stop == [] and len(step.keep_old) == 4
    seen = steady() + [pd.Seen(i, 'h2', R2, pd.PENDING, 0) for i in range(4, 8)]
    step = pd.step(KEY, 4, dep(100, 200), R2, V2, step.records, seen, NOW)
    assert step.stop == [] and step.count == 4                  # none healthy yet: the old ones stay
    seen = steady() + [pd.Seen(i, 'h2', R2, pd.HEALTHY, 0) for i in range(4, 8)]
    step = pd.step(KEY, 4, dep(100, 200), R2, V2, step.records, seen, NOW)
    assert sorted(s.index for s in step.stop) == [0, 1, 2, 3] and not step.keep_old


def test_the_breaker_trips_and_rolls_back_to_the_last_completed_revision():
    records = completed()
    seen = steady(2) + [pd.Seen(i, 'h1', R2, pd.UNHEALTHY, i - 3) for i in range(4, 6)]     # 1 + 2 failed runs
    step = pd.step(KEY, 4, dep(), R2, V2, dict(records, **{R2: {
        'revision': R2, 'number': 2, 'status': pd.IN_PROGRESS, 'rollback_of': None, 'declaration': V2}}), seen, NOW)
    assert step.failures == 3 and step.threshold == 3
    assert [e['event'] for e in step.events] == ['service.deployment.failed', 'service.deployment.rolled_back']
    assert step.events[1]['revision'] == 2 and step.events[1]['to_revision'] == 1
    assert step.target == R1 and step.status == 'rolling_back'
    assert sorted(s.index for s in step.stop) == [4, 5]          # every instance of the bad revision stops
    assert step.records[R2]['status'] == pd.FAILED and step.records[R1]['rollback_of'] == 2
    # the next passes bring revision 1 back to 4, then the rollback completes; the failed one is not retried
    seen = steady(2)
    step = pd.step(KEY, 4, dep(), R2, V2, step.records, seen, NOW)
    assert step.target == R1 and step.count == 4 and not step.stop
    step = pd.step(KEY, 4, dep(), R2, V2, step.records, steady(4), NOW)
    assert step.status == 'rolled_back' and [e['event'] for e in step.events] == ['service.deployment.completed']
    assert step.events[0]['rollback_of'] == 2
    step = pd.step(KEY, 4, dep(), R2, V2, step.records, steady(4), NOW)
    assert step.status == 'rolled_back' and not step.events and step.count == 4


def test_without_rollback_a_failed_revision_keeps_what_runs():
    seen = steady(2) + [pd.Seen(i, 'h1', R2, pd.STOPPED, 2) for i in range(4, 6)]
    records = dict(completed(), **{R2: {'revision': R2, 'number': 2, 'status': pd.IN_PROGRESS, 'rollback_of': None,
                                        'declaration': V2}})
    step = pd.step(KEY, 4, dep(rollback=False), R2, V2, records, seen, NOW)
    assert step.target is None and step.status == pd.FAILED and step.keep_old == seen and not step.stop
    assert [e['event'] for e in step.events] == ['service.deployment.failed']


def test_a_new_revision_during_a_deployment_replaces_it_and_the_records_are_pruned():
    records = completed()
    for n in range(2, 9):
        task = {'containers': [{'name': 'main', 'image': 'drover.local/web:%d' % n}]}
        step = pd.step(KEY, 2, dep(), pd.revision_of(task), task, records, steady(2), NOW)
        records = step.records
    # the latest five, and revision 1: its instances run (and it is the latest that completed)
    assert sorted(r['number'] for r in records.values()) == [1, 4, 5, 6, 7, 8]
    assert [r['status'] for r in sorted(records.values(), key=lambda r: r['number'])] == \
        [pd.COMPLETED] + [pd.REPLACED] * 4 + [pd.IN_PROGRESS]


def test_merge_takes_the_latest_record_then_the_one_furthest_along():
    one = {'revision': R2, 'number': 2, 'status': pd.IN_PROGRESS, 'rollback_of': None, 'declaration': V2,
           'generation': 3}
    two = dict(one, status=pd.FAILED)
    assert pd.merge([one, two])[R2]['status'] == pd.FAILED
    assert pd.merge([two, one])[R2]['status'] == pd.FAILED
    # a host that was down while a rollback began still holds the target as completed: the later record wins
    stale = dict(one, status=pd.COMPLETED, generation=1)
    assert pd.merge([stale, one])[R2]['status'] == pd.IN_PROGRESS


def test_a_revision_declared_again_is_deployed_again_with_its_breaker():
    records = completed()
    step = pd.step(KEY, 4, dep(), R2, V2, records, steady(), NOW)                    # 1 -> 2 begins
    step = pd.step(KEY, 4, dep(), R1, V1, step.records, steady(2) + [
        pd.Seen(i, 'h2', R2, pd.PENDING, 0) for i in range(4, 6)], NOW)            # back to 1 at once
    assert step.records[R2]['status'] == pd.REPLACED and step.records[R1]['status'] == pd.IN_PROGRESS
    assert [e['event'] for e in step.events] == ['service.deployment.started'] and step.target == R1
    assert sorted(s.index for s in step.stop) == [4, 5]                             # revision 2's, not healthy
    # 1 -> 2 -> 3, then 2 again: 2 is deployed again, 3 gives way
    records = pd.step(KEY, 4, dep(), R2, V2, completed(), steady(), NOW).records
    v3 = {'containers': [{'name': 'main', 'image': 'drover.local/web:3'}]}
    records = pd.step(KEY, 4, dep(), pd.revision_of(v3), v3, records, steady(), NOW).records
    step = pd.step(KEY, 4, dep(), R2, V2, records, steady(), NOW)
    assert step.records[R2]['status'] == pd.IN_PROGRESS and step.status == pd.IN_PROGRESS
    assert step.records[pd.revision_of(v3)]['status'] == pd.REPLACED
    failing = steady(2) + [pd.Seen(i, 'h2', R2, pd.UNHEALTHY, 2) for i in range(4, 6)]
    assert pd.step(KEY, 4, dep(), R2, V2, step.records, failing, NOW).records[R2]['status'] == pd.FAILED


def test_instances_without_a_revision_count_for_the_breaker_and_stopped_new_ones_for_the_maximum():
    records = dict(completed(), **{R2: {'revision': R2, 'number': 2, 'status': pd.IN_PROGRESS, 'rollback_of': None,
                                        'declaration': V2}})
    # an image that never came: no container, no revision label, its streak counts
    seen = steady(2) + [pd.Seen(i, 'h2', None, pd.STOPPED, 2) for i in range(4, 6)]
    assert pd.step(KEY, 4, dep(), R2, V2, records, seen, NOW).records[R2]['status'] == pd.FAILED
    # desired 4 at 75 % / 125 %: 3 old running and 2 new stopped (held, they come back) leave no room to start
    seen = steady(3) + [pd.Seen(i, 'h2', R2, pd.STOPPED, 0) for i in range(4, 6)]
    step = pd.step(KEY, 4, dep(75, 125, enable=False), R2, V2, records, seen, NOW)
    assert step.count == 2


def test_revision_leaves_the_registry_password_out():
    task = dict(V1, registry_auth={'registry': 'r.example', 'username': 'u', 'password': 'one'})
    assert pd.revision_of(task) == pd.revision_of(dict(task, registry_auth=dict(task['registry_auth'], password='x')))
    assert 'password' not in pd.stored_declaration(task)['registry_auth']
    assert task['registry_auth']['password'] == 'one'


@pytest.mark.parametrize('desired,expected', [(1, 3), (4, 3), (9, 5), (1000, 200)])
def test_threshold(desired, expected):
    assert pd.threshold(desired) == expected


@pytest.mark.parametrize('raw,error', [
    ({'minimum_healthy_percent': 120}, 'service.deployment.minimum_healthy_percent must be a whole number from 0 to '
                                       '100, got 120'),
    ({'maximum_percent': 90}, 'service.deployment.maximum_percent must be a whole number of at least 100, got 90'),
    ({'circuit_breaker': {'enable': 'yes'}}, 'service.deployment.circuit_breaker.enable must be true or false'),
    ({'max_parallel': 1}, 'service.deployment has unsupported keys: max_parallel'),
])
def test_bad_deployment(raw, error):
    with pytest.raises(SpecError) as err:
        pd.deployment_spec(raw)
    assert error in str(err.value)


def test_a_deployment_that_could_never_move_is_refused():
    with pytest.raises(SpecError) as err:
        pd.check_room(1, dep(50, 150))
    assert 'with desired_count 1, minimum_healthy_percent 50 keeps 1 healthy and maximum_percent 150 lets 1 run' \
        in str(err.value)
    pd.check_room(1, dep(0, 100))


def record(**change):
    return dict({'cluster': 'prod', 'service': 'web', 'revision': R1, 'number': 1, 'status': pd.COMPLETED,
                 'rollback_of': None, 'generation': 2, 'declaration': dict(V1, cpu=None)}, **change)


def test_records_handed_to_a_host_are_checked_and_kept_without_nulls():
    assert records_option(None) is None
    assert records_option([record()]) == [dict(record(), declaration=V1, seal=None)]
    assert records_option([record(seal='ab' * 32)])[0]['seal'] == 'ab' * 32
    assert records_option([record(generation=None)])[0]['generation'] == 0


@pytest.mark.parametrize('change, error', [
    ({'service': ''}, 'service_revisions[0].service must be a non-empty string'),
    ({'number': 0}, 'service_revisions[0].number must be a whole number of at least 1'),
    ({'number': True}, 'service_revisions[0].number must be a whole number of at least 1'),
    ({'status': 'done'}, 'service_revisions[0].status must be one of in_progress, completed, failed, replaced'),
    ({'rollback_of': '1'}, 'service_revisions[0].rollback_of must be a revision number or null'),
    ({'generation': -1}, 'service_revisions[0].generation must be a whole number'),
    # bounded, so that the next generation (the highest + 1) always fits the store's INTEGER
    ({'generation': 2 ** 63 - 1}, 'service_revisions[0].generation must be a whole number of at least 0 and below '
                                  '2147483648, got 9223372036854775807'),
    ({'number': 2 ** 31}, 'service_revisions[0].number must be a whole number of at least 1 and below 2147483648'),
    ({'rollback_of': 2 ** 31}, 'service_revisions[0].rollback_of must be a revision number or null'),
    ({'seal': 7}, 'service_revisions[0].seal must be a string or null'),
    ({'declaration': []}, 'service_revisions[0].declaration must be a mapping'),
    ({'declaration': dict(V1, registry_auth={'username': 'u', 'password': 'p'})},
     'service_revisions[0].declaration.registry_auth.password: a registry password is never stored'),
])
def test_bad_records_are_refused_naming_the_field(change, error):
    with pytest.raises(SpecError) as exc:
        records_option([record(**change)])
    assert error in str(exc.value)


VIEW = {'name': 'web', 'healthy': 2, 'desired_count': 3, 'revision': 2, 'declared_revision': 3, 'running': 4,
        'placed': 3, 'older': 1, 'unplaced': None, 'failures': 3, 'failure_threshold': 3}


@pytest.mark.parametrize('state, short, detail', [
    (pd.COMPLETED, 'web: 2/3 healthy, revision 2', 'web: 2/3 healthy, revision 2, 3/3 placed (and 1 of an older '
     'revision)'),
    (pd.IN_PROGRESS, 'web: 2/3 healthy, revision 2, deploying', 'web: 2/3 healthy, revision 2, deploying (4 running), '
     '3/3 placed (and 1 of an older revision)'),
    ('rolling_back', 'web: 2/3 healthy, revision 2, rolling back: revision 3 failed', None),
    (pd.FAILED, 'web: 2/3 healthy, revision 2, deployment failed (revision 3)', 'web: 2/3 healthy, revision 2, '
     'deployment failed (revision 3, circuit breaker: 3/3), 3/3 placed (and 1 of an older revision)'),
])
def test_one_line_a_service_for_the_report_and_the_recap(state, short, detail):
    view = dict(VIEW, deployment=state)
    assert pd.service_line(view) == short
    if detail:
        assert pd.service_line(view, detail=True) == detail
    assert pd.service_line(dict(view, revision=None, older=0, unplaced={'count': 2}), detail=True).endswith(
        ', 3/3 placed, 2 unplaced')


@pytest.mark.parametrize('state, line', [
    (pd.COMPLETED, None),
    (pd.IN_PROGRESS, None),
    ('rolled_back', 'web: revision 3 failed (circuit breaker: 3/3); rolled back, runs 2/3 healthy on revision 2'),
    ('rolling_back', 'web: revision 3 failed (circuit breaker: 3/3); rolling back to revision 2, 2/3 healthy on '
     'revision 2 so far'),
    (pd.FAILED, 'web: revision 3 failed (circuit breaker: 3/3); no rollback (circuit_breaker.rollback is off, or no '
     'earlier revision completed): its instances stay as they run (4 running)'),
])
def test_a_deployment_that_did_not_complete_says_which_revision_failed_and_where_the_service_stands(state, line):
    assert pd.failure_line(dict(VIEW, deployment=state)) == line


def test_a_service_scaled_to_0_completes_in_the_pass_that_stops_its_instances():
    """A declaration of desired_count 0 (a new revision when its task changes too, as a teardown declares it): the
    pass stops every instance it saw and the deployment is completed there, not `deploying` until the next pass;
    an instance a host failed to stop, seen at the next pass, is stopped again."""
    records = completed()
    step = pd.step(KEY, 0, dep(100, 200), R2, V2, records, steady(2), NOW)
    assert step.status == pd.COMPLETED and step.count == 0 and not step.keep_old
    assert sorted((s.index, s.host) for s in step.stop) == [(0, 'h1'), (1, 'h2')]
    assert [e['event'] for e in step.events] == ['service.deployment.started', 'service.deployment.completed']
    left = pd.step(KEY, 0, dep(100, 200), R2, V2, step.records, steady(1), NOW)
    assert left.status == pd.COMPLETED and [s.index for s in left.stop] == [0] and not left.events
    gone = pd.step(KEY, 0, dep(100, 200), R2, V2, left.records, [], NOW)
    assert gone.status == pd.COMPLETED and not gone.stop
    # the same count on the same task (a scale-in, not a new revision) stays completed
    assert pd.step(KEY, 0, dep(), R1, V1, completed(), steady(2), NOW).status == pd.COMPLETED
