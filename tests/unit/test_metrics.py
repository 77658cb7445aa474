# -*- coding: utf-8 -*-
"""The metrics file: the counters each event adds to, the gauges of a pass, the text format as Prometheus reads
it, and a file that is written whole or not at all."""

from __future__ import absolute_import, division, print_function

import os
import stat

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.drover.fleet.plugins.module_utils.host import metrics as m
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store

T0 = 1_800_000_000.0


def parsed(text):
    """{(sample name, frozenset(labels)): value} as Prometheus' own parser reads the text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def test_each_event_adds_to_its_counters():
    ended = {'event': 'runner.ended', 'pool': 'ci', 'took_job': True, 'result': 'Failed', 'oom_killed': True,
             'runner_fault': 'deprecated'}
    assert m.event_counters(ended) == [
        ('drover_events_total', {'event': 'runner.ended'}),
        ('drover_runners_ended_total', {'pool': 'ci', 'result': 'failed'}),
        ('drover_runners_oom_killed_total', {'pool': 'ci'}),
        ('drover_runner_faults_total', {'pool': 'ci', 'fault': 'deprecated'})]
    no_job = dict(ended, took_job=False, result=None, oom_killed=False, runner_fault=None)
    assert m.event_counters(no_job)[1] == ('drover_runners_ended_total', {'pool': 'ci', 'result': 'no_job'})
    held = {'event': 'pool.held', 'pool': 'ci', 'cause': 'runner fault: version 2.316.1 deprecated'}
    assert m.event_counters(held)[1] == ('drover_pool_holds_total', {'pool': 'ci', 'cause': 'runner fault'})
    stopped = {'event': 'task.stopped', 'cluster': 'prod', 'task': 'web'}
    assert m.event_counters(stopped)[1] == ('drover_task_stops_total', {'cluster': 'prod', 'task': 'web'})


def test_the_store_s_counters_equal_its_events_and_only_go_up(tmp_path):
    store = Store(str(tmp_path / 'store.db'))
    events = [{'event': 'runner.started', 'at': '2027-01-15T08:00:00Z', 'pool': 'ci'},
              {'event': 'runner.ended', 'at': '2027-01-15T08:01:00Z', 'pool': 'ci', 'took_job': True,
               'result': 'Succeeded'},
              {'event': 'runner.started', 'at': '2027-01-15T08:02:00Z', 'pool': 'ci'}]
    for event in events:
        store.add_event(event)
    store.bump('drover_github_requests_total', {'pool': 'ci'}, 4)
    store.bump('drover_github_requests_total', {'pool': 'ci'}, -3)          # never down
    counters = dict(((n, tuple(sorted(l.items()))), v) for n, l, v in store.counters())
    assert counters[('drover_runners_started_total', (('pool', 'ci'),))] == 2
    assert counters[('drover_runners_ended_total', (('pool', 'ci'), ('result', 'succeeded')))] == 1
    assert counters[('drover_events_total', (('event', 'runner.started'),))] == 2
    assert counters[('drover_github_requests_total', (('pool', 'ci'),))] == 4
    stored = store.db.execute('SELECT COUNT(*) FROM events').fetchone()[0]
    assert sum(v for (n, l), v in counters.items() if n == 'drover_events_total') == stored == 3
    store.close()


def test_the_text_as_prometheus_reads_it_with_escaped_labels():
    pools = [{'name': 'ci', 'slots': [{'state': 'busy'}, {'state': 'idle'}, {'state': 'free'}, {'state': 'free'}],
              'hold': {'until': '2027-01-15T08:30:00Z', 'cause': 'runner fault: version 2.316.1 deprecated'},
              'queued': 3},
             {'name': 'odd"\\\nname', 'slots': [], 'hold': {'until': None, 'cause': None}, 'queued': None}]
    samples = [('drover_runners_started_total', {'pool': 'ci'}, 7.0)] + m.pool_gauges(pools, 0.25, T0)
    text = m.render(samples, prefixes=m.POOL_PREFIXES)
    got = parsed(text)
    assert got[('drover_runners_started_total', frozenset({'pool': 'ci'}.items()))] == 7
    assert got[('drover_pool_slots', frozenset({'pool': 'ci', 'state': 'free'}.items()))] == 2
    assert got[('drover_pool_slots', frozenset({'pool': 'ci', 'state': 'starting'}.items()))] == 0
    assert got[('drover_pool_held', frozenset({'pool': 'ci', 'cause': 'runner fault'}.items()))] == 1
    assert got[('drover_pool_queued_jobs', frozenset({'pool': 'ci'}.items()))] == 3
    assert got[('drover_pool_held', frozenset({'pool': 'odd"\\\nname', 'cause': ''}.items()))] == 0
    assert ('drover_pool_queued_jobs', frozenset({'pool': 'odd"\\\nname'}.items())) not in got
    assert got[('drover_pools_pass_seconds', frozenset())] == 0.25
    assert '# TYPE drover_runners_started_total counter' in text and '# TYPE drover_pool_slots gauge' in text
    # a pools file carries no task family, nor a tasks file a pool's
    tasks = m.task_gauges([{'cluster': 'prod', 'last_status': 'RUNNING', 'health_status': 'HEALTHY', 'held_until': None},
                           {'cluster': 'prod', 'last_status': 'STOPPED', 'health_status': 'UNKNOWN',
                            'held_until': '2027-01-15T08:30:00Z'}], 0.1, T0)
    both = m.render(samples + tasks, prefixes=m.POOL_PREFIXES)
    assert 'drover_tasks' not in both
    only_tasks = parsed(m.render(samples + tasks, prefixes=m.TASK_PREFIXES))
    assert only_tasks[('drover_tasks_held', frozenset({'cluster': 'prod'}.items()))] == 1
    assert not any(name.startswith('drover_pool') for name, dummy in only_tasks)


def test_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = m.write(str(tmp_path), m.POOLS_FILE, 'first 1\n')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644

    def crash(fd):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(os, 'fsync', crash)
    with pytest.raises(OSError):
        m.write(str(tmp_path), m.POOLS_FILE, 'second 2\n')
    with open(path) as handle:
        assert handle.read() == 'first 1\n'                      # the previous file, whole
    assert sorted(os.listdir(str(tmp_path))) == [m.POOLS_FILE]  # no temporary file left


def test_a_result_no_runner_prints_is_not_a_label_of_its_own():
    forged = {'event': 'runner.ended', 'pool': 'ci', 'took_job': True, 'result': 'Pwned'}
    assert m.event_counters(forged)[1] == ('drover_runners_ended_total', {'pool': 'ci', 'result': 'other'})


def test_each_cluster_s_file_has_its_own_pass_series():
    one = m.task_gauges([], 0.1, T0, cluster='a')
    two = m.task_gauges([], 0.1, T0, cluster='b')
    assert ('drover_tasks_pass_seconds', {'cluster': 'a'}, 0.1) in one
    assert ('drover_tasks_held', {'cluster': 'a'}, 0) in one
    series = set((n, tuple(sorted(l.items()))) for n, l, v in one)
    assert not series & set((n, tuple(sorted(l.items()))) for n, l, v in two)


def test_a_temporary_file_left_by_a_dead_process_is_replaced(tmp_path):
    (tmp_path / ('.%s.%d.tmp' % (m.POOLS_FILE, os.getpid()))).write_text('half')
    m.write(str(tmp_path), m.POOLS_FILE, 'whole 1\n')
    assert sorted(os.listdir(str(tmp_path))) == [m.POOLS_FILE]


def test_pickups_and_job_durations_are_histograms_prometheus_reads(tmp_path):
    store = Store(str(tmp_path / 'store.db'))
    at = '2027-01-15T08:00:00Z'
    events = [{'event': 'runner.started', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'pickup_seconds': 3},
              {'event': 'runner.started', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'pickup_seconds': 40},
              {'event': 'runner.started', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'pickup_seconds': None},
              {'event': 'runner.ended', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'took_job': True,
               'result': 'Succeeded', 'job_seconds': 95},
              {'event': 'runner.ended', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'took_job': True,
               'result': 'Failed', 'job_seconds': 5},
              {'event': 'runner.ended', 'at': at, 'pool': 'ci', 'repository': 'acme/web', 'took_job': False,
               'result': None, 'job_seconds': None}]
    for event in events:
        store.add_event(event)
    text = m.render(store.counters(), prefixes=m.POOL_PREFIXES)
    store.close()
    families = dict((f.name, f) for f in text_string_to_metric_families(text))
    assert families['drover_job_pickup_seconds'].type == 'histogram'
    assert families['drover_job_duration_seconds'].type == 'histogram'
    got = parsed(text)
    web = {'pool': 'ci', 'repository': 'acme/web'}

    def sample(name, labels, **more):
        return got[(name, frozenset(dict(labels, **more).items()))]

    # two pickups (the start with no queued job observes none): 3 s and 40 s, cumulative buckets
    assert sample('drover_job_pickup_seconds_count', web) == 2
    assert sample('drover_job_pickup_seconds_sum', web) == 43
    assert sample('drover_job_pickup_seconds_bucket', web, le='2.0') == 0
    assert sample('drover_job_pickup_seconds_bucket', web, le='5.0') == 1
    assert sample('drover_job_pickup_seconds_bucket', web, le='30.0') == 1
    assert sample('drover_job_pickup_seconds_bucket', web, le='60.0') == 2
    assert sample('drover_job_pickup_seconds_bucket', web, le='+Inf') == 2
    # a job's duration by its result; a runner that took no job observes nothing
    ok, failed = dict(web, result='succeeded'), dict(web, result='failed')
    assert sample('drover_job_duration_seconds_count', ok) == 1
    assert sample('drover_job_duration_seconds_sum', ok) == 95
    assert sample('drover_job_duration_seconds_bucket', ok, le='60.0') == 0
    assert sample('drover_job_duration_seconds_bucket', ok, le='120.0') == 1
    assert sample('drover_job_duration_seconds_bucket', failed, le='10.0') == 1
    assert not [k for k in got if k[0].startswith('drover_job_duration') and ('result', 'no_job') in k[1]]
    # every bound of a series is there from its first observation, in order
    bounds = [float(s.labels['le']) for s in families['drover_job_pickup_seconds'].samples
              if s.name.endswith('_bucket')]
    assert bounds == sorted(bounds) and len(bounds) == len(m.BUCKETS['drover_job_pickup_seconds']) + 1


def test_a_job_s_duration_runs_from_its_running_line_to_the_runner_s_end():
    from ansible_collections.drover.fleet.plugins.module_utils.pools import plan
    logs = ('\u221a Connected to GitHub\n\n2027-01-15 08:00:00Z: Listening for Jobs\n'
            '2027-01-15 08:00:10Z: Running job: build\n'
            '2027-01-15 08:01:40Z: Job build completed with result: Succeeded\n')
    read = plan.read_runner_log(logs)
    t0 = 1_800_000_000 - (1_800_000_000 % 86400)
    assert read['job_started'] == plan.calendar.timegm((2027, 1, 15, 8, 0, 10, 0, 0, 0))
    start = read['job_started'] - 10
    assert plan.job_seconds(read, start, start + 102) == 92
    # a time outside the runner's life (a job's forged line, a skewed clock) counts the runner's whole life
    assert plan.job_seconds(dict(read, job_started=start + 500), start, start + 102) == 102
    # no time on the line: the runner's life; no job: nothing
    assert plan.read_runner_log('Running job: build\n')['job_started'] is None
    assert plan.job_seconds(dict(read, job_started=None), t0, t0 + 7) == 7
    assert plan.job_seconds(dict(read, took=False), t0, t0 + 7) is None
