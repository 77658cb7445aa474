# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: metrics - what the metrics file adds to a pools pass of 10 pools.

In one process, on a store in a temporary directory that holds a day of a busy host's events (10 pools, 4 slots
each, 500 runners each started and ended, holds, GitHub errors: about 12,000 events and their counters), the
work a pass with `metrics_path` does on top of one without: the GitHub counters of each pool (20 increments),
reading every counter, the gauges of 10 pools, the text, and the file written whole (flushed and renamed).
Side by side in the same run, the anchor: the same store's pass-end writes that every pass makes anyway (each
pool's row and slots saved, as pools.apply's save does). Reported: medians of `--rounds` in milliseconds, and
their ratio. Nothing is asserted; the target (issue: metrics) is under 10 ms.

    python bench/metrics.py [--rounds 200]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'collection', 'dev'))

from ansible_collections.drover.fleet.plugins.module_utils.host import metrics as _metrics  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store  # noqa: E402

POOLS = 10
SLOTS = 4


def seeded(path):
    store = Store(path)
    at = '2027-01-15T08:00:00Z'
    for p in range(POOLS):
        pool = 'pool%02d' % p
        for r in range(500):
            store.add_event({'event': 'runner.started', 'at': at, 'pool': pool})
            store.add_event({'event': 'runner.ended', 'at': at, 'pool': pool, 'took_job': r % 10 != 0,
                             'result': ('Failed' if r % 7 == 0 else 'Succeeded') if r % 10 else None,
                             'oom_killed': r % 50 == 0})
        for cause in ('no job', 'start'):
            store.add_event({'event': 'pool.held', 'at': at, 'pool': pool, 'cause': cause})
        store.add_event({'event': 'github.error', 'at': at, 'pool': pool})
    return store


def views():
    return [{'name': 'pool%02d' % p, 'queued': p % 3,
             'slots': [{'state': s} for s in ('busy', 'idle', 'starting', 'free')][:SLOTS],
             'hold': {'until': None, 'cause': None}} for p in range(POOLS)]


def with_metrics(store, directory):
    for p in range(POOLS):
        store.bump('drover_github_requests_total', {'pool': 'pool%02d' % p}, 2)
        store.bump('drover_github_not_modified_total', {'pool': 'pool%02d' % p}, 1)
    samples = store.counters() + _metrics.pool_gauges(views(), 0.5, time.time())
    _metrics.write(directory, _metrics.POOLS_FILE, _metrics.render(samples, prefixes=_metrics.POOL_PREFIXES))


def anchor(store):
    now = time.time()
    for p in range(POOLS):
        pool = 'pool%02d' % p
        store.put_pool(pool, 'octo/app', {'failures': 0, 'idle_exits': 0}, now)
        store.set_slots(pool, dict((i, {'runner_name': 'drover-m-small-%d-%d' % (i + 1, int(now)), 'runner_id': i + 1,
                                        'container_id': 'c%d' % i, 'started_at': now}) for i in range(SLOTS)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=200)
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix='drover-bench-metrics-')
    try:
        store = seeded(os.path.join(work, 'state', 'store.db'))
        out = os.path.join(work, 'textfile')
        os.mkdir(out)
        events = store.db.execute('SELECT COUNT(*) FROM events').fetchone()[0]
        series = len(store.counters())
        samples = {'metrics': [], 'anchor': []}
        for n in range(args.rounds):
            for name in (('metrics', 'anchor') if n % 2 else ('anchor', 'metrics')):
                t0 = time.perf_counter()
                if name == 'metrics':
                    with_metrics(store, out)
                else:
                    anchor(store)
                samples[name].append((time.perf_counter() - t0) * 1000)
        store.close()
        med = dict((k, statistics.median(v)) for k, v in samples.items())
        size = os.path.getsize(os.path.join(out, _metrics.POOLS_FILE))
        print('store: %d events, %d counter series; file: %d bytes' % (events, series, size))
        print('medians of %d rounds: metrics %.2f ms, anchor (the pass-end saves) %.2f ms, ratio %.2f'
              % (args.rounds, med['metrics'], med['anchor'], med['metrics'] / med['anchor']))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
