# -*- coding: utf-8 -*-
"""bench: load - 200 tasks and 10 runner pools of 4 slots on one host.

Each measurement is one module process, run as Ansible runs it (its arguments in a file), timed with
time.perf_counter, its peak resident memory read from the kernel (its VmHWM, polled every 20 ms):

- tasks_cold: ecs_task converging 200 single-container tasks (cluster `load`, purge) from nothing;
- tasks_noop: the same again, nothing to do, through a proxy that counts the engine API calls;
- tasks_reconcile: the same after 50 of the containers were killed (restart: always - each is reported
  stopped and started again in the same pass);
- pools_cold: gh_runner_slot with `pools:` over 10 pools of 4 slots (scale fixed) against the GitHub stand-in;
- pools_noop: the same again once every runner is online, nothing to do, through the counting proxy.

Everything is removed at the end (purge; pools drained with kill_busy).

    python bench/load.py [--tasks 200] [--pools 10] [--slots 4] [--kill 50] [--json out.json]
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEV = os.path.join(ROOT, 'collection', 'dev')
IMAGE = 'drover.local/busybox:1'
RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = 'ghp_loadbench_%d' % os.getpid()


def run_module(name, args, work, tag):
    """(seconds, peak RSS in MiB, result) of one module process."""
    path = os.path.join(work, 'args-%s.json' % tag)
    with open(path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=False, _ansible_diff=False)}, handle)
    out_path = os.path.join(work, 'out-%s.json' % tag)
    env = dict(os.environ, PYTHONPATH=DEV)
    start = time.perf_counter()
    peak = 0
    with open(out_path, 'w') as out:
        proc = subprocess.Popen([sys.executable, '-m', 'ansible_collections.drover.fleet.plugins.modules.%s' % name, path],
                                stdout=out, stderr=subprocess.DEVNULL, env=env)
        # The module's own high-water mark (VmHWM, reset by its exec), read until it exits. ru_maxrss from
        # wait4 would not do: Linux keeps it across execve, so it starts at this (larger) process's size.
        while proc.poll() is None:
            try:
                with open('/proc/%d/status' % proc.pid) as status:
                    for line in status:
                        if line.startswith('VmHWM:'):
                            peak = max(peak, int(line.split()[1]))
            except (IOError, ValueError):
                pass
            time.sleep(0.02)
    seconds = time.perf_counter() - start
    with open(out_path) as handle:
        text = handle.read()
    result = json.loads(text[text.index('{'):])
    if result.get('failed'):
        raise RuntimeError('%s %s failed: %s' % (name, tag, result.get('msg')))
    return seconds, peak / 1024.0, result


def rounds_args(doc, argv=None, tasks=20, rounds=7):
    """The options of a side-by-side bench of `rounds` rounds over `tasks` tasks (--tasks, --rounds, --json), its
    description the first paragraph of `doc`."""
    parser = argparse.ArgumentParser(description=doc.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--tasks', type=int, default=tasks)
    parser.add_argument('--rounds', type=int, default=rounds)
    parser.add_argument('--json', default=None)
    return parser.parse_args(argv)


def report(out, path):
    """Print the figures, and write them to `path` (JSON) when one is given."""
    print(json.dumps(out, indent=2))
    if path:
        with open(path, 'w') as handle:
            json.dump(out, handle, indent=2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--tasks', type=int, default=200)
    parser.add_argument('--pools', type=int, default=10)
    parser.add_argument('--slots', type=int, default=4)
    parser.add_argument('--kill', type=int, default=50)
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)

    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))
    import docker
    from apiproxy import CountingProxy
    from github_standin.server import StandIn

    client = docker.from_env()
    work = tempfile.mkdtemp(prefix='drover-bench-load.')
    store = os.path.join(work, 'state', 'store.db')
    proxy = CountingProxy(os.path.join(work, 'docker.sock')).start()
    counted = 'unix://' + proxy.listen
    standin = StandIn(token=TOKEN).start()
    repos = ['load/r%02d' % i for i in range(args.pools)]
    for repo in repos:
        standin.add_repo(repo)
    out = {'tasks': args.tasks, 'pools': args.pools, 'slots': args.slots, 'killed': args.kill}
    tasks = [{'name': 'load-%03d' % i, 'restart': 'always',
              'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}
             for i in range(args.tasks)]
    ecs = {'cluster': 'load', 'purge': True, 'store_path': store, 'tasks': tasks}
    pools = {'store_path': store, 'api_url': standin.url, 'token': TOKEN, 'machine_id': 'loadbench',
             'labels': ['self-hosted', 'linux'], 'scale': 'fixed', 'allow_host_network': True,
             'pools': [{'pool': 'load-p%02d' % i, 'repository': repos[i],
                        'profile': {'name': 'p%02d' % i, 'image': RUNNER_IMAGE, 'slots': args.slots,
                                    'network_mode': 'host', 'memory': 64,
                                    'environment': {'DROVER_POLL_SECONDS': '30'}}} for i in range(args.pools)]}

    def record(key, measured, calls=None):
        seconds, rss, result = measured
        out[key] = {'seconds': round(seconds, 2), 'peak_rss_mib': round(rss, 1), 'changed': result.get('changed')}
        if calls is not None:
            out[key]['engine_calls'] = calls
        extra = '  engine calls %s' % calls if calls else ''
        print('%-16s %7.2f s  %6.1f MiB  changed=%s%s' % (key, seconds, rss, result.get('changed'), extra), flush=True)
        return result

    def calls_of(snapshot):
        counts = {}
        for dummy, method, target in snapshot['calls']:
            key = '%s %s' % (method, target.split('?')[0])
            counts[key] = counts.get(key, 0) + 1
        return counts

    try:
        record('tasks_cold', run_module('ecs_task', ecs, work, 'cold'))
        proxy.reset()
        record('tasks_noop', run_module('ecs_task', dict(ecs, docker_host=counted), work, 'noop'),
               calls_of(proxy.snapshot()))
        boxes = client.containers.list(filters={'label': 'drover.cluster=load'})
        victims = random.Random(20261202).sample(boxes, args.kill)
        for box in victims:
            box.kill()
        deadline = time.time() + 60
        while time.time() < deadline and any(c.status == 'running' for c in client.containers.list(
                all=True, filters={'label': 'drover.cluster=load', 'status': 'running'}) if c.id in set(v.id for v in victims)):
            time.sleep(0.5)
        result = record('tasks_reconcile', run_module('ecs_task', ecs, work, 'reconcile'))
        events = [e['event'] for e in result['events']]
        out['tasks_reconcile'].update(stopped=events.count('task.stopped'), restarted=events.count('task.running'))
        counts = (events.count('task.stopped'), events.count('task.running'))
        print('  reconcile: %d task.stopped, %d task.running' % counts, flush=True)

        record('pools_cold', run_module('gh_runner_slot', pools, work, 'pools-cold'))
        want = args.pools * args.slots
        deadline = time.time() + 120
        while time.time() < deadline and sum(1 for r in standin.state()['runners'] if r['status'] == 'online') < want:
            time.sleep(0.5)
        proxy.reset()
        record('pools_noop', run_module('gh_runner_slot', dict(pools, docker_host=counted), work, 'pools-noop'),
               calls_of(proxy.snapshot()))
    finally:
        try:
            run_module('ecs_task', dict(ecs, tasks=[]), work, 'purge')
            run_module('gh_runner_slot', dict(pools, pools=[], purge=True, kill_busy=True), work, 'drain')
        finally:
            for c in client.containers.list(all=True, filters={'label': 'drover.cluster=load'}):
                c.remove(force=True)
            for c in client.containers.list(all=True, filters={'label': 'drover.role=runner'}):
                if c.labels.get('drover.pool', '').startswith('load-p'):
                    c.remove(force=True)
            standin.stop()
            proxy.stop()
            client.close()
            shutil.rmtree(work, ignore_errors=True)
    report(out, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
