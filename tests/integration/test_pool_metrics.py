# -*- coding: utf-8 -*-
"""The pools' metrics file (gh_runner_slot's metrics_path) on the real engine, against the GitHub stand-in: three
pools in one call, three jobs queued, one runner's job fails and one runner is OOM-killed. After each of three
passes the file parses with Prometheus' own parser, every gauge agrees with gh_runner_info, every counter and
histogram (pickups, jobs' durations) equals the events in the store, and no counter goes down."""

from __future__ import absolute_import, division, print_function

import json
import os
import sqlite3
import uuid

from prometheus_client.parser import text_string_to_metric_families

from helpers import wait_for
from sweep import register

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'


def read_metrics(path):
    """{(name, labels as a sorted tuple): value}, and the families' types, as Prometheus reads the file."""
    with open(path) as handle:
        text = handle.read()
    values, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values, types


def test_three_passes_gauges_agree_with_info_and_counters_with_the_store(
        engine, standin, module_runner, store_path, pool_name, tmp_path):
    metrics = tmp_path / 'textfile'
    metrics.mkdir()
    names = dict((kind, '%s%s' % (pool_name, kind)) for kind in ('ok', 'fail', 'oom'))
    modes = {'ok': {}, 'fail': {'DROVER_RUNNER_MODE': 'fail-job'},
             'oom': {'DROVER_RUNNER_MODE': 'oom', 'DROVER_OOM_DELAY_SECONDS': '0.5'}}
    for kind, name in names.items():
        standin.queue_job(REPO, ['self-hosted', name], name='job-%s' % kind)

    def run(check=False):
        pools = [dict(pool=name, labels=['self-hosted', name], profile=dict(
            name=kind, image=RUNNER_IMAGE, slots=2, network_mode='host', memory=8 if kind == 'oom' else 64,
            environment=dict({'DROVER_JOB_SECONDS': '0.2'}, **modes[kind]),
            caches=[{'name': 'deps', 'path': '/cache'}] if kind == 'ok' else None)) for kind, name in names.items()]
        return module_runner('gh_runner_slot', dict(
            pools=pools, repository=REPO, token=TOKEN, api_url=standin.url, store_path=store_path,
            machine_id='mid' + pool_name, warm=0, allow_host_network=True, metrics_path=str(metrics)), check=check)

    def check_file(result):
        values, types = read_metrics(str(metrics / 'drover_pools.prom'))
        assert types['drover_runners_started'] == 'counter' and types['drover_pool_slots'] == 'gauge'
        info = module_runner('gh_runner_info', dict(store_path=store_path))
        shown = dict((p['name'], p) for p in info['pools'] if p['name'] in names.values())
        for view in result['pools']:
            name = view['name']
            states = dict((s, values[('drover_pool_slots', (('pool', name), ('state', s)))])
                          for s in ('busy', 'idle', 'starting', 'free'))
            # the gauges are the pass's view, and agree with gh_runner_info's
            assert states == dict((s, sum(1 for slot in view['slots'] if slot['state'] == s)) for s in states), name
            assert states['busy'] + states['idle'] + states['starting'] == len(shown[name]['slots'])
            assert states['busy'] == sum(1 for slot in shown[name]['slots'] if slot['busy'])
            cause = (shown[name]['hold']['cause'] or '').split(':')[0]
            assert values[('drover_pool_held', (('cause', cause), ('pool', name)))] == (
                1 if shown[name]['hold']['until'] else 0)
            assert values[('drover_pool_queued_jobs', (('pool', name),))] == view['queued']
            for cache in shown[name]['caches']:         # the 'ok' pool's cache of slot 1
                assert values[('drover_pool_cache_bytes', (('cache', 'deps'), ('pool', name),
                                                           ('slot', str(cache['slot']))))] == cache['size']
            assert len(shown[name]['caches']) == (1 if name == names['ok'] else 0), shown[name]['caches']
        # the counters are the store's events
        db = sqlite3.connect(store_path)
        events = [json.loads(row[0]) for row in db.execute('SELECT data FROM events')]
        db.close()
        kinds = {}
        for event in events:
            kinds[event['event']] = kinds.get(event['event'], 0) + 1
        assert dict((k[1][0][1], v) for k, v in values.items() if k[0] == 'drover_events_total') == kinds
        for name in names.values():
            ended = [e for e in events if e['event'] == 'runner.ended' and e['pool'] == name]
            started = [e for e in events if e['event'] == 'runner.started' and e['pool'] == name]
            assert values.get(('drover_runners_started_total', (('pool', name),)), 0) == len(started)
            # pickup: from the job queued to the runner started for it, one a runner that started for a job
            picked = [e['pickup_seconds'] for e in started if e.get('pickup_seconds') is not None]
            assert len(picked) == len(started) and all(0 <= p < 60 for p in picked), started
            assert values.get(('drover_pool_pickups_total', (('pool', name),)), 0) == len(picked)
            assert values.get(('drover_pool_pickup_seconds_total', (('pool', name),)), 0) == sum(picked)
            assert sum(v for k, v in values.items() if k[0] == 'drover_runners_ended_total'
                       and ('pool', name) in k[1]) == len(ended)
            # the histograms: pickups by pool and repository, jobs' durations by result too, as the events say
            series = (('pool', name), ('repository', REPO))
            if picked:
                assert types['drover_job_pickup_seconds'] == 'histogram'
                assert values[('drover_job_pickup_seconds_count', series)] == len(picked)
                assert values[('drover_job_pickup_seconds_sum', series)] == sum(picked)
                assert values[('drover_job_pickup_seconds_bucket', tuple(sorted(series + (('le', '+Inf'),))))] == len(picked)
            jobs = [e for e in ended if e.get('job_seconds') is not None]
            assert len(jobs) == sum(1 for e in ended if e['took_job']), ended
            assert all(0 <= e['job_seconds'] <= 30 for e in jobs), jobs
            for result in set(e['result'].lower() for e in jobs):
                mine = [e['job_seconds'] for e in jobs if e['result'].lower() == result]
                labelled = tuple(sorted(series + (('result', result),)))
                assert values[('drover_job_duration_seconds_count', labelled)] == len(mine)
                assert values[('drover_job_duration_seconds_sum', labelled)] == sum(mine)
                assert values[('drover_job_duration_seconds_bucket', tuple(sorted(
                    labelled + (('le', '10.0'),))))] == sum(1 for v in mine if v <= 10)
        return values

    try:
        _passes(engine, names, run, check_file, metrics)
    finally:
        for name in names.values():
            for box in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % name}):
                box.remove(force=True)
            for volume in engine.volumes.list(filters={'label': 'drover.pool=%s' % name}):
                volume.remove(force=True)


def _passes(engine, names, run, check_file, metrics):
    passes = []
    first = run()
    assert sorted(first['started']) and len(first['started']) == 3, first['started']
    passes.append(check_file(first))
    for kind in ('ok', 'fail', 'oom'):
        wait_for(lambda k=kind: all(c.status == 'exited' for c in engine.containers.list(
            all=True, filters={'label': 'drover.pool=%s' % names[k]})), timeout=60)
    second = run()
    assert sorted(second['released']) == sorted(first['started']), second['released']
    passes.append(check_file(second))
    values = passes[-1]
    assert values[('drover_runners_ended_total', (('pool', names['ok']), ('result', 'succeeded')))] == 1
    assert values[('drover_runners_ended_total', (('pool', names['fail']), ('result', 'failed')))] == 1
    assert values[('drover_runners_ended_total', (('pool', names['oom']), ('result', 'no_job')))] == 1
    assert values[('drover_runners_oom_killed_total', (('pool', names['oom']),))] == 1
    # one job's duration each in the pools whose runner took one; none where the runner was killed before a job
    for kind, result in (('ok', 'succeeded'), ('fail', 'failed')):
        assert values[('drover_job_duration_seconds_count', (('pool', names[kind]), ('repository', REPO),
                                                             ('result', result)))] == 1
    assert not [k for k in values if k[0].startswith('drover_job_duration') and ('pool', names['oom']) in k[1]]
    assert values[('drover_pool_holds_total', (('cause', 'no job'), ('pool', names['oom'])))] == 1
    assert values[('drover_pool_held', (('cause', 'no job'), ('pool', names['oom'])))] == 1
    assert values[('drover_github_requests_total', (('pool', names['ok']),))] >= 4

    # check mode writes nothing
    stamp = os.stat(str(metrics / 'drover_pools.prom')).st_mtime_ns
    run(check=True)
    assert os.stat(str(metrics / 'drover_pools.prom')).st_mtime_ns == stamp
    passes.append(check_file(run()))
    # no counter ever goes down from one pass to the next
    for before, after in zip(passes, passes[1:]):
        for key, value in before.items():
            if key[0].endswith('_total'):
                assert after.get(key, 0) >= value, key
    assert sorted(os.listdir(str(metrics))) == ['drover_pools.prom']


def test_a_cluster_s_tasks_file_counts_runs_stops_and_statuses(engine, cluster, converge, tmp_path, store_path):
    from helpers import container, statuses
    metrics = tmp_path / 'textfile'
    metrics.mkdir()
    tasks = [{'name': 'web', 'containers': [container('main')]},
             {'name': 'job', 'containers': [container('main', ['sh', '-c', 'sleep 0.5; exit 3'])], 'restart': 'never'}]
    first = converge(tasks=tasks, purge=True, metrics_path=str(metrics))
    assert [t['last_status'] for t in first['tasks']] == ['RUNNING', 'RUNNING']
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited', timeout=30)
    converge(tasks=tasks, purge=True, metrics_path=str(metrics))
    values, types = read_metrics(str(metrics / ('drover_tasks_%s.prom' % cluster)))
    assert types['drover_tasks'] == 'gauge' and types['drover_task_stops'] == 'counter'
    assert values[('drover_tasks', (('cluster', cluster), ('health', 'UNKNOWN'), ('status', 'RUNNING')))] == 1
    assert values[('drover_tasks', (('cluster', cluster), ('health', 'UNKNOWN'), ('status', 'STOPPED')))] == 1
    assert values[('drover_task_runs_total', (('cluster', cluster), ('task', 'job')))] == 1
    assert values[('drover_task_stops_total', (('cluster', cluster), ('task', 'job')))] == 1
    assert values[('drover_tasks_held', (('cluster', cluster),))] == 0
    # only this cluster's series: another cluster's file is its own
    assert all(dict(k[1]).get('cluster', cluster) == cluster for k in values)
    assert os.listdir(str(metrics)) == ['drover_tasks_%s.prom' % cluster]
