# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus metrics of a host: what a pass counts, and the text file node_exporter's textfile collector reads.

Owns: which counter each event adds to (so that the store's counters equal its events by construction), the
gauges of a pools pass, and the text exposition format (names, HELP and TYPE lines, escaped label values).
The file is written whole or not at all (a temporary file renamed over it): a crash mid-write leaves the
previous file. Must not: hold a secret (pool, cluster and task names, causes and results only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import NAME_RE

# name -> (type, help)
FAMILIES = {
    'drover_events_total': ('counter', 'Events the host reported, by kind.'),
    'drover_runners_started_total': ('counter', 'Runners started.'),
    'drover_runners_ended_total': ('counter', 'Runners ended, by the result of their job (no_job: they took none; '
                                              'unknown: no log).'),
    'drover_runners_oom_killed_total': ('counter', 'Runners the kernel killed for memory.'),
    'drover_runner_faults_total': ('counter', 'Runners that ended with a runner fault, by fault.'),
    'drover_pool_holds_total': ('counter', 'Holds of a pool, by cause.'),
    'drover_pool_pickups_total': ('counter', 'Runners started for a queued job of the pool.'),
    'drover_pool_pickup_seconds_total': ('counter', 'Seconds from a job queued to the runner started for it, summed '
                                                    '(over drover_pool_pickups_total: the mean pickup time).'),
    'drover_job_pickup_seconds': ('histogram', 'Seconds from a job queued (the oldest that matches the pool) to the '
                                               'runner started for it.'),
    'drover_job_duration_seconds': ('histogram', 'Seconds from a runner\'s `Running job:` line to its end, by the '
                                                 'job\'s result.'),
    'drover_github_requests_total': ('counter', 'Requests made to GitHub.'),
    'drover_github_not_modified_total': ('counter', 'GitHub answers 304 Not Modified (not counted by its rate limit).'),
    'drover_github_rate_limited_total': ('counter', 'Times GitHub asked for no requests until a reset.'),
    'drover_github_errors_total': ('counter', 'GitHub requests that failed otherwise.'),
    'drover_task_runs_total': ('counter', 'Task runs that started.'),
    'drover_task_stops_total': ('counter', 'Task runs that stopped.'),
    'drover_task_holds_total': ('counter', 'Times a task that keeps stopping was held back before its next run.'),
    'drover_pool_slots': ('gauge', 'Slots of a pool by state (busy, idle, starting, free).'),
    'drover_pool_queued_jobs': ('gauge', 'Queued jobs that match the pool (absent when the listing was not read).'),
    'drover_pool_held': ('gauge', '1 while the pool is held, with the cause.'),
    'drover_pool_cache_bytes': ('gauge', 'Bytes of the files of a cache: a slot\'s own volume (slot) or a snapshot '
                                         'generation (snapshot).'),
    'drover_pools_pass_seconds': ('gauge', 'How long the last pools pass took.'),
    'drover_pools_pass_timestamp_seconds': ('gauge', 'When the last pools pass ended (Unix time).'),
    'drover_tasks': ('gauge', 'Tasks by last status and health.'),
    'drover_tasks_held': ('gauge', 'Stopped tasks held back before their next run.'),
    'drover_tasks_pass_seconds': ('gauge', 'How long the last tasks pass took.'),
    'drover_tasks_pass_timestamp_seconds': ('gauge', 'When the last tasks pass ended (Unix time).'),
}
SLOT_STATES = ('busy', 'idle', 'starting', 'free')
RESULTS = ('succeeded', 'failed', 'canceled')
# A histogram's upper bounds (seconds; +Inf follows): a pickup as the hosted runners' (seconds to minutes), a job's
# duration up to the 6 hours GitHub lets a job run.
BUCKETS = {
    'drover_job_pickup_seconds': (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600),
    'drover_job_duration_seconds': (10, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 14400, 21600),
}
HISTOGRAM_SUFFIXES = ('_bucket', '_sum', '_count')
POOLS_FILE = 'drover_pools.prom'
# What each file carries: the pools' and the tasks' families (the events' counts go with the pools).
POOL_PREFIXES = ('drover_events_', 'drover_runner', 'drover_pool', 'drover_job_', 'drover_github_')
TASK_PREFIXES = ('drover_task',)


def _result(event):
    """An ended runner's result as a label: the runner's own results in lower case (a job could print a result
    line: any other word is `other`), else no_job, unknown (no log) or no_result."""
    took = event.get('took_job')
    result = (event.get('result') or '').lower()
    if result and result not in RESULTS:
        result = 'other'
    return result or ('no_job' if took is False else 'unknown' if took is None else 'no_result')


def event_observations(event):
    """What one event observes in a histogram: [(family, labels, seconds)]. A runner started for a queued job
    observes its pickup; a runner that took a job, the job's duration (labelled by its result). The repository is
    the pool's (an organization's pool: the organization)."""
    kind, pool = event.get('event'), event.get('pool')
    if pool is None:
        return []
    labels = {'pool': pool, 'repository': event.get('repository') or ''}
    seconds = event.get('pickup_seconds') if kind == 'runner.started' else \
        event.get('job_seconds') if kind == 'runner.ended' and event.get('took_job') else None
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        return []
    if kind == 'runner.started':
        return [('drover_job_pickup_seconds', labels, seconds)]
    return [('drover_job_duration_seconds', dict(labels, result=_result(event)), seconds)]


def histogram_counters(family, labels, seconds):
    """The counters one observation adds to: [(name, labels, by)]: every bucket (cumulative, as Prometheus reads
    them: 1 to each bound the value does not pass, 0 to the others, so that a series has all its buckets from its
    first observation), +Inf, the sum and the count."""
    out = [('%s_bucket' % family, dict(labels, le=repr(float(bound))), 1 if seconds <= bound else 0)
           for bound in BUCKETS[family]]
    out.append(('%s_bucket' % family, dict(labels, le='+Inf'), 1))
    out.append(('%s_sum' % family, labels, seconds))
    out.append(('%s_count' % family, labels, 1))
    return out


def event_counters(event):
    """The counters (name, labels) one event adds 1 to (the histograms' are event_observations')."""
    kind = event.get('event')
    out = [('drover_events_total', {'event': kind})]
    pool = {'pool': event.get('pool')} if event.get('pool') is not None else None
    if kind == 'runner.started' and pool:
        out.append(('drover_runners_started_total', pool))
    elif kind == 'runner.ended' and pool:
        out.append(('drover_runners_ended_total', dict(pool, result=_result(event))))
        if event.get('oom_killed'):
            out.append(('drover_runners_oom_killed_total', pool))
        if event.get('runner_fault'):
            out.append(('drover_runner_faults_total', dict(pool, fault=event['runner_fault'])))
    elif kind == 'pool.held' and pool:
        out.append(('drover_pool_holds_total', dict(pool, cause=(event.get('cause') or '').split(':')[0])))
    elif kind == 'github.rate_limited' and pool:
        out.append(('drover_github_rate_limited_total', pool))
    elif kind == 'github.error' and pool:
        out.append(('drover_github_errors_total', pool))
    elif kind in ('task.running', 'task.stopped', 'task.held') and event.get('task') is not None:
        name = {'task.running': 'drover_task_runs_total', 'task.stopped': 'drover_task_stops_total',
                'task.held': 'drover_task_holds_total'}[kind]
        out.append((name, {'cluster': event.get('cluster'), 'task': event.get('task')}))
    return out


def pool_gauges(pools, seconds, now):
    """The gauges of a pools pass: `pools`, the pass's views of its pools ({'name', 'slots': [{'state'}],
    'hold': {'until', 'cause'}, 'queued', 'caches': gh_runner_info's views}). [(name, labels, value)]."""
    out = []
    for pool in pools:
        states = dict((s, 0) for s in SLOT_STATES)
        for slot in pool.get('slots') or ():
            if slot.get('state') in states:
                states[slot['state']] += 1
        for state in SLOT_STATES:
            out.append(('drover_pool_slots', {'pool': pool['name'], 'state': state}, states[state]))
        if pool.get('queued') is not None:
            out.append(('drover_pool_queued_jobs', {'pool': pool['name']}, pool['queued']))
        hold = pool.get('hold') or {}
        cause = (hold.get('cause') or '').split(':')[0]
        out.append(('drover_pool_held', {'pool': pool['name'], 'cause': cause}, 1 if hold.get('until') else 0))
        for cache in pool.get('caches') or ():
            if cache.get('size') is not None:
                where = {'slot': str(cache['slot'])} if cache.get('slot') else {'snapshot': str(cache.get('snapshot'))}
                out.append(('drover_pool_cache_bytes', dict(where, pool=pool['name'], cache=cache['name']),
                            cache['size']))
    out.append(('drover_pools_pass_seconds', {}, round(seconds, 6)))
    out.append(('drover_pools_pass_timestamp_seconds', {}, int(now)))
    return out


def task_gauges(tasks, seconds, now, cluster=None):
    """The gauges of a tasks pass: `tasks`, the task views ({'cluster', 'last_status', 'health_status',
    'held_until'}); `cluster`: the pass's cluster, which labels its time (each cluster's file carries its own,
    never the same series as another file). [(name, labels, value)]."""
    counts, held = {}, {}
    for task in tasks:
        key = (task['cluster'], task['last_status'], task.get('health_status') or 'UNKNOWN')
        counts[key] = counts.get(key, 0) + 1
        held.setdefault(task['cluster'], 0)
        if task.get('held_until'):
            held[task['cluster']] += 1
    if cluster is not None:
        held.setdefault(cluster, 0)
        out_labels = {'cluster': cluster}
    else:
        out_labels = {}
    out = [('drover_tasks', {'cluster': c, 'status': s, 'health': h}, n) for (c, s, h), n in sorted(counts.items())]
    out += [('drover_tasks_held', {'cluster': c}, n) for c, n in sorted(held.items())]
    out.append(('drover_tasks_pass_seconds', out_labels, round(seconds, 6)))
    out.append(('drover_tasks_pass_timestamp_seconds', out_labels, int(now)))
    return out


def tasks_file(cluster):
    """The tasks' file of a cluster (an ecs_task call converges one cluster): drover_tasks_<cluster>.prom."""
    return 'drover_tasks_%s.prom' % cluster


def of_cluster(samples, cluster):
    """The samples that belong in a cluster's file: those labelled with the cluster, and those of no cluster
    (the pass's own)."""
    return [(n, l, v) for n, l, v in samples if l.get('cluster', cluster) == cluster]


def _escape(value):
    return str(value).replace('\\', '\\\\').replace('\n', '\\n').replace('"', '\\"')


def _number(value):
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def render(samples, prefixes=None):
    """The text exposition of `samples` [(name, labels, value)], grouped by family in FAMILIES' order; with
    `prefixes`, only the families whose names start with one of them (a pools file does not carry the tasks')."""
    by_name = {}
    for name, labels, value in samples:
        by_name.setdefault(name, []).append((labels, value))
    lines = []
    for family, (kind, text) in FAMILIES.items():
        names = [family + suffix for suffix in HISTOGRAM_SUFFIXES] if kind == 'histogram' else [family]
        if not any(n in by_name for n in names) or (prefixes and not family.startswith(tuple(prefixes))):
            continue
        lines.append('# HELP %s %s' % (family, text))
        lines.append('# TYPE %s %s' % (family, kind))
        rows = [(name, labels, value) for name in names for labels, value in by_name.get(name, ())]
        # a histogram's series together, its buckets in the order of their bounds, then its sum and count
        for name, labels, value in sorted(rows, key=lambda r: _series_order(r, names)):
            inner = ','.join('%s="%s"' % (k, _escape(v)) for k, v in sorted(labels.items()))
            lines.append('%s%s %s' % (name, '{%s}' % inner if inner else '', _number(value)))
    return '\n'.join(lines) + '\n'


def _series_order(row, names):
    name, labels, dummy = row
    series = sorted((k, str(v)) for k, v in labels.items() if k != 'le')
    bound = labels.get('le')
    return series, names.index(name), float(bound) if bound is not None else 0.0


def write(directory, file_name, text):
    """Write the file whole in `directory` (a temporary file, flushed to disk, renamed over the old one; mode 0644,
    for node_exporter's user). A crash mid-write leaves the previous file."""
    return _files.write_whole(os.path.join(directory, file_name), text, mode=0o644, sync=True)


def _written(directory, file_name, samples, prefixes, what):
    """Write one file; [] or [the warning that says it could not be] (the pass is done all the same)."""
    try:
        write(directory, file_name, render(samples, prefixes=prefixes))
    except (IOError, OSError) as exc:
        return ['%s could not be written in %s: %s' % (what, directory, exc)]
    return []


def write_pools_file(directory, counters, pools, seconds, now):
    """drover_pools.prom: the store's `counters` and the gauges of a pools pass. [warnings]."""
    return _written(directory, POOLS_FILE, counters + pool_gauges(pools, seconds, now), POOL_PREFIXES,
                    'the metrics file')


def write_tasks_files(directory, counters, cluster, views, seconds, now):
    """drover_tasks_<cluster>.prom, one a cluster (the call's own, and each cluster of its tasks `views`): its
    tasks' gauges and the store's counters of the cluster. [warnings]."""
    # The call's cluster names a file only when it is a name (it is checked only where a task falls back to it).
    clusters = sorted(set([cluster] if cluster and NAME_RE.match(cluster) else []) | set(v['cluster'] for v in views))
    warnings = []
    for name in clusters:
        samples = of_cluster(counters, name) + task_gauges([v for v in views if v['cluster'] == name], seconds, now,
                                                           cluster=name)
        warnings += _written(directory, tasks_file(name), samples, TASK_PREFIXES,
                             'the metrics file of cluster %s' % name)
    return warnings
