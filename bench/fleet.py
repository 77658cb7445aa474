# -*- coding: utf-8 -*-
"""bench: fleet - what each host costs the controller, over N simulated hosts.

N simulated hosts are N Docker engines on this machine (tests/fixtures/fleet_engines.py: one `dockerd` each,
with its own data root, exec root, pid file, unix socket under /run/drover-fleet/<tag>/, no bridge and no
iptables rules), the test image loaded into each (docker save from the machine's engine, docker load). The
inventory has one host per engine (ansible_connection local, its own drover_docker_host and drover_store_path),
5 tasks each (one busybox container, network_mode none, restart always). Per N and forks, one round is:

- cold: drover.fleet.converge from nothing (every engine emptied, every store deleted before it);
- noop: drover.fleet.converge again: nothing to do (the PLAY RECAP must say changed=0 for every host);
- reconcile: drover.fleet.reconcile after one container per host was killed (every host must have its 5
  containers running again after it, and report one task.stopped).

Each is one `ansible-playbook` process with the drover.fleet.events callback; its events recap must name all N
hosts. Measured: wall time; the controller's CPU seconds (user + sys of the ansible-playbook process tree:
the RUSAGE_CHILDREN delta around the run, which, with the local connection, includes the module processes run
for every host; the engines' own work is not in it); the peak resident memory of that tree (the sum of its
processes' RSS, sampled every 0.1 s). Reported: medians per (N, forks), CPU seconds per host, ratios.

The anchor (one host, the issue's "a playbook holding only the module calls"): the same ecs_task call the
tasks role makes, for the same 5 tasks, in a playbook of its own, nothing to do, alternating with the
converge no-op of the same host (--anchor-rounds rounds).

At the largest N, once more with `strategy: free` (one round from nothing), and with --poll-rounds R, R rounds
of the controller's internal_poll_interval at 0.05 s alternating with the default.

--profile: instead of the above, one host's no-op converge and reconcile, profiled per role task: the time of
each task from the controller's view (a callback in bench/callback_plugins) and the module processes it ran
(the module interpreter wrapped in bench/timed_python.sh, which logs each module run's wall and CPU time).

    python bench/fleet.py [--hosts 1,10,20] [--forks 1,5,20] [--rounds 3,2,1] [--anchor-rounds 5] [--poll-rounds 0] [--json out]
    python bench/fleet.py --profile [--rounds 3] [--json out]

Everything it starts is stopped, and its directories removed, at the end (on failure and Ctrl-C too).
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))

from fleet_engines import FleetEngines  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = os.environ.get('BENCH_IMAGE', 'drover.local/busybox:1')
VENV = os.path.abspath(os.environ.get('VENV') or os.path.join(ROOT, '.venv'))
PYTHON = os.path.join(VENV, 'bin', 'python')
ANSIBLE_PLAYBOOK = os.path.join(VENV, 'bin', 'ansible-playbook')
COLLECTIONS = os.environ.get('ANSIBLE_COLLECTIONS_PATH') or os.path.join(ROOT, 'collection', 'dev')
CLUSTER = 'fleetbench'
TASKS_PER_HOST = 5
PLAY_RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)
FLEET_RECAP_LINE = re.compile(r'^(\S+)\s+: events=(\d+)', re.M)


def host_name(index):
    return 'fleet%02d' % index


def tasks_of_host():
    return [{'name': 'fleet-t%d' % i, 'restart': 'always', 'network_mode': 'none',
             'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}
            for i in range(1, TASKS_PER_HOST + 1)]


def write_inventory(path, engines, work, interpreter=PYTHON):
    hosts = {}
    for engine in engines:
        name = host_name(engine.index)
        hosts[name] = {
            'ansible_connection': 'local',
            'ansible_python_interpreter': interpreter,
            'drover_docker_host': engine.host,
            'drover_store_path': os.path.join(work, 'hosts', name, 'state', 'store.db'),
            'drover_tasks_cluster': CLUSTER,
            'drover_tasks': tasks_of_host(),
            'drover_pools': [],
        }
    with open(path, 'w') as handle:
        yaml.safe_dump({'all': {'hosts': hosts}}, handle, default_flow_style=False)
    return path


def write_anchor(path):
    """The tasks role's ecs_task call, alone: the same arguments, for the same tasks (the role's defaults)."""
    play = [{
        'name': 'The module call alone',
        'hosts': 'all',
        'gather_facts': False,
        'tasks': [{
            'name': 'Converge the tasks',
            'drover.fleet.ecs_task': {
                'cluster': '{{ drover_tasks_cluster }}', 'purge': True, 'tasks': '{{ drover_tasks }}',
                'store_path': '{{ drover_store_path }}', 'docker_host': '{{ drover_docker_host }}',
                'timeout': 60, 'lock_timeout': 60, 'gpu_discovery': 'auto', 'gpu_delivery': 'device-request',
                'gpu_strict': False, 'allow_host_network': False, 'allow_privileged': False,
                'allow_host_namespaces': False,
                'log_drivers': ['json-file', 'local', 'syslog', 'journald', 'gelf', 'fluentd', 'none'],
            },
        }],
    }]
    with open(path, 'w') as handle:
        yaml.safe_dump(play, handle, default_flow_style=False, sort_keys=False)
    return path


def tree_rss_kib(root):
    """The summed VmRSS of a process and all its descendants, in KiB."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open('/proc/%d/status' % pid) as handle:
                for line in handle:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1])
                        break
            for task in os.listdir('/proc/%d/task' % pid):
                with open('/proc/%d/task/%s/children' % (pid, task)) as handle:
                    todo.extend(int(p) for p in handle.read().split())
        except (IOError, OSError, ValueError):
            continue
    return total


class Runner(object):
    """Runs ansible-playbook and measures it."""

    def __init__(self, work, env_extra=None):
        self.work = work
        self.logs = os.path.join(work, 'logs')
        os.makedirs(self.logs, exist_ok=True)
        self.count = 0
        self.env = dict((k, v) for k, v in os.environ.items() if not k.startswith(('DROVER_EVENTS_', 'ANSIBLE_')))
        self.env.update(
            ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
            ANSIBLE_HOME=os.path.join(work, 'ansible-home'),
            ANSIBLE_LOCAL_TEMP=os.path.join(work, 'ansible-tmp'),
            ANSIBLE_NOCOLOR='1',
            ANSIBLE_HOST_KEY_CHECKING='false',
            ANSIBLE_RETRY_FILES_ENABLED='false',
            ANSIBLE_CALLBACKS_ENABLED='drover.fleet.events',
            DROVER_EVENTS_LOG_PATH=os.path.join(work, 'events', 'events.jsonl'),
            DROVER_EVENTS_FLEET_STATE_PATH=os.path.join(work, 'controller', 'fleet-holds.json'),
        )
        self.env.update(env_extra or {})

    def run(self, playbook, inventory, forks, tag):
        """{wall, cpu, peak_rss_mib, output, rc} of one ansible-playbook run."""
        self.count += 1
        log = os.path.join(self.logs, '%03d-%s.log' % (self.count, tag))
        argv = [ANSIBLE_PLAYBOOK, '-i', inventory, '-f', str(forks), playbook]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = 0
        started_at = time.time()
        start = time.perf_counter()
        with open(log, 'w') as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.work)
            while proc.poll() is None:
                peak = max(peak, tree_rss_kib(proc.pid))
                time.sleep(0.1)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        with open(log) as handle:
            output = handle.read()
        return {'wall': wall, 'cpu': cpu, 'peak_rss_mib': peak / 1024.0, 'output': output, 'rc': proc.returncode,
                'log': log, 'started_at': started_at, 'ended_at': started_at + wall}


def check_recaps(result, hosts, what, changed_zero=False):
    """Every host in the PLAY RECAP without failure (and changed=0 when asked), and in the events recap."""
    out = result['output']
    if result['rc'] != 0:
        raise RuntimeError('%s: ansible-playbook exited %d (%s)' % (what, result['rc'], result['log']))
    recap = dict((m[0], tuple(int(n) for n in m[1:])) for m in PLAY_RECAP.findall(out))
    missing = [h for h in hosts if h not in recap]
    if missing:
        raise RuntimeError('%s: hosts missing from the PLAY RECAP: %s (%s)' % (what, missing, result['log']))
    bad = [h for h in hosts if recap[h][2] or recap[h][3]]
    if bad:
        raise RuntimeError('%s: hosts failed or unreachable: %s (%s)' % (what, bad, result['log']))
    if changed_zero:
        changed = [h for h in hosts if recap[h][1]]
        if changed:
            raise RuntimeError('%s: not a no-op on %s (%s)' % (what, changed, result['log']))
    if 'DROVER FLEET RECAP' not in out:
        raise RuntimeError('%s: no events recap (%s)' % (what, result['log']))
    fleet = out[out.rindex('DROVER FLEET RECAP'):]
    named = set(m[0] for m in FLEET_RECAP_LINE.findall(fleet))
    if set(hosts) - named:
        raise RuntimeError('%s: the events recap does not name %s (%s)' % (what, sorted(set(hosts) - named),
                                                                           result['log']))
    return recap


def check_running(engines, what):
    """Every engine runs exactly its 5 task containers."""
    for engine in engines:
        client = engine.client()
        try:
            boxes = client.containers.list(all=True, filters={'label': 'drover.cluster=%s' % CLUSTER})
            running = sorted(b.name for b in boxes if b.status == 'running')
        finally:
            client.close()
        if len(running) != TASKS_PER_HOST or len(boxes) != TASKS_PER_HOST:
            raise RuntimeError('%s: engine %s runs %s of %d containers' % (what, engine.name, running, len(boxes)))


def kill_one_each(engines, victim='fleet-t3-main'):
    """Kill one task container on every engine and wait until each has exited."""
    for engine in engines:
        client = engine.client()
        try:
            client.containers.get(victim).kill()
            deadline = time.time() + 30
            while client.containers.get(victim).status == 'running':
                if time.time() > deadline:
                    raise RuntimeError('%s on %s still running 30 s after the kill' % (victim, engine.name))
                time.sleep(0.1)
        finally:
            client.close()


def reset(fleet, engines, work):
    """From nothing: no container on the engines, no store of the hosts."""
    for engine in engines:
        fleet.clear(engine)
    shutil.rmtree(os.path.join(work, 'hosts'), ignore_errors=True)


def converge_play():
    return 'drover.fleet.converge'


def measure_fleet(args, fleet, work):
    runner = Runner(work)
    anchor = write_anchor(os.path.join(work, 'anchor.yml'))
    rounds = dict(zip(args.hosts, args.rounds))
    out = {'runs': []}
    for n in args.hosts:
        engines = fleet.engines[:n]
        hosts = [host_name(e.index) for e in engines]
        inventory = write_inventory(os.path.join(work, 'inventory-%d.yml' % n), engines, work)
        for forks in args.forks:
            if any(f < forks and f >= n for f in args.forks):
                continue                # a smaller forks value already runs every host at once: the same run
            for r in range(rounds[n]):
                reset(fleet, engines, work)
                row = {'hosts': n, 'forks': forks, 'round': r + 1}
                cold = runner.run(converge_play(), inventory, forks, 'n%d-f%d-cold' % (n, forks))
                check_recaps(cold, hosts, 'cold converge N=%d' % n)
                check_running(engines, 'cold converge N=%d' % n)
                noop = runner.run(converge_play(), inventory, forks, 'n%d-f%d-noop' % (n, forks))
                check_recaps(noop, hosts, 'no-op converge N=%d' % n, changed_zero=True)
                check_running(engines, 'no-op converge N=%d' % n)
                kill_one_each(engines)
                rec = runner.run('drover.fleet.reconcile', inventory, forks, 'n%d-f%d-reconcile' % (n, forks))
                check_recaps(rec, hosts, 'reconcile N=%d' % n)
                check_running(engines, 'reconcile N=%d' % n)
                fleet_recap = rec['output'][rec['output'].rindex('DROVER FLEET RECAP'):]
                stopped = fleet_recap.count('task %s/fleet-t3 stopped:' % CLUSTER)
                if stopped != n:
                    raise RuntimeError('reconcile N=%d: %d stopped tasks in the events recap (%s)'
                                       % (n, stopped, rec['log']))
                for key, res in (('cold', cold), ('noop', noop), ('reconcile', rec)):
                    row[key] = {'wall_s': round(res['wall'], 2), 'cpu_s': round(res['cpu'], 2),
                                'cpu_per_host_s': round(res['cpu'] / n, 2),
                                'peak_rss_mib': round(res['peak_rss_mib'], 1)}
                row['reconcile']['stopped_in_recap'] = stopped
                out['runs'].append(row)
                peak = max(cold['peak_rss_mib'], noop['peak_rss_mib'], rec['peak_rss_mib'])
                figures = (n, forks, r + 1, cold['wall'], cold['cpu'], noop['wall'], noop['cpu'], rec['wall'],
                           rec['cpu'], peak)
                print('N=%-2d forks=%-2d round %d  cold %6.1fs %6.1f cpu  noop %6.1fs %6.1f cpu  reconcile %6.1fs '
                      '%6.1f cpu  peak %5.0f MiB' % figures, flush=True)
        if n == 1 and args.anchor_rounds:
            out['anchor'] = measure_anchor(runner, inventory, anchor, hosts, engines, args.anchor_rounds)
        if n == max(args.hosts) and n > 1:
            out['free'] = measure_free(fleet, work, inventory, hosts, engines, max(args.forks))
            if args.poll_rounds:
                out['poll'] = measure_poll(fleet, work, inventory, hosts, engines, max(args.forks), args.poll_rounds)
    out['summary'] = summarize(out['runs'])
    if 'anchor' in out:
        out['summary']['anchor'] = out['anchor']['summary']
    if 'free' in out:
        out['summary']['free'] = out['free']
    if 'poll' in out:
        out['summary']['poll'] = out['poll']['summary']
    return out


POLL_INTERVAL = 0.05


def measure_poll(fleet, work, inventory, hosts, engines, forks, rounds):
    """The largest N with the controller's internal_poll_interval at POLL_INTERVAL (ansible.cfg; Ansible's
    default 0.001 s has the controller poll its workers a thousand times a second while it waits), alternating
    with the default: the no-op converge and the reconcile with nothing to do, `rounds` times each."""
    cfg = os.path.join(work, 'poll.cfg')
    with open(cfg, 'w') as handle:
        handle.write('[defaults]\ninternal_poll_interval = %s\n' % POLL_INTERVAL)
    runners = {'default': Runner(work), 'poll': Runner(work, env_extra={'ANSIBLE_CONFIG': cfg})}
    n = len(hosts)
    reset(fleet, engines, work)
    check_recaps(runners['default'].run(converge_play(), inventory, forks, 'poll-cold'), hosts, 'poll cold')
    samples = {}
    for r in range(rounds):
        for name in (('default', 'poll') if r % 2 == 0 else ('poll', 'default')):
            for key, play in (('noop', converge_play()), ('reconcile', 'drover.fleet.reconcile')):
                res = runners[name].run(play, inventory, forks, 'poll-%s-%s' % (name, key))
                check_recaps(res, hosts, 'poll %s %s' % (name, key), changed_zero=True)
                samples.setdefault('%s_%s' % (name, key), []).append(round(res['cpu'] / n, 3))
                print('poll round %d %-7s %-9s %6.1fs wall %5.2f cpu/host' % (r + 1, name, key, res['wall'], res['cpu'] / n),
                      flush=True)
    check_running(engines, 'after the poll rounds')
    summary = dict((k, round(statistics.median(v), 2)) for k, v in samples.items())
    summary.update(hosts=n, forks=forks, rounds=rounds, interval=POLL_INTERVAL)
    return {'samples': samples, 'summary': summary}


def measure_free(fleet, work, inventory, hosts, engines, forks):
    """The largest N once more with `strategy: free` (ANSIBLE_STRATEGY=free): the no-op converge and the
    reconcile after a kill, against the linear strategy's figures of the same N and forks. From nothing, as
    every round: a second kill in the same streak would be held back, not restarted."""
    runner = Runner(work, env_extra={'ANSIBLE_STRATEGY': 'free'})
    n = len(hosts)
    reset(fleet, engines, work)
    check_recaps(runner.run(converge_play(), inventory, forks, 'free-n%d-f%d-cold' % (n, forks)), hosts,
                 'free cold converge N=%d' % n)
    check_running(engines, 'before the free strategy round')
    noop = runner.run(converge_play(), inventory, forks, 'free-n%d-f%d-noop' % (n, forks))
    check_recaps(noop, hosts, 'free no-op N=%d' % n, changed_zero=True)
    kill_one_each(engines)
    rec = runner.run('drover.fleet.reconcile', inventory, forks, 'free-n%d-f%d-reconcile' % (n, forks))
    check_recaps(rec, hosts, 'free reconcile N=%d' % n)
    check_running(engines, 'free reconcile N=%d' % n)
    out = {'hosts': n, 'forks': forks}
    for key, res in (('noop', noop), ('reconcile', rec)):
        out[key] = {'wall_s': round(res['wall'], 2), 'cpu_s': round(res['cpu'], 2),
                    'cpu_per_host_s': round(res['cpu'] / n, 2)}
    print('strategy free N=%d forks=%d  noop %6.1fs %6.2f cpu/host  reconcile %6.1fs %6.2f cpu/host' % (
        n, forks, noop['wall'], noop['cpu'] / n, rec['wall'], rec['cpu'] / n), flush=True)
    return out


def measure_anchor(runner, inventory, anchor, hosts, engines, rounds):
    """One host, nothing to do: the converge against the module call alone, alternating."""
    samples = {'converge_noop': [], 'module_only_noop': []}
    check_running(engines, 'before the anchor rounds')
    for r in range(rounds):
        order = (('converge_noop', converge_play()), ('module_only_noop', anchor))
        for key, play in (order if r % 2 == 0 else order[::-1]):
            res = runner.run(play, inventory, 1, 'anchor-%s' % key)
            check_recaps(res, hosts, key, changed_zero=True)
            samples[key].append({'wall_s': round(res['wall'], 3), 'cpu_s': round(res['cpu'], 3)})
            print('anchor round %d %-17s %6.2fs wall %6.2fs cpu' % (r + 1, key, res['wall'], res['cpu']), flush=True)
    check_running(engines, 'after the anchor rounds')
    summary = {}
    for key, values in samples.items():
        summary[key] = {'wall_s': round(statistics.median(v['wall_s'] for v in values), 2),
                        'cpu_s': round(statistics.median(v['cpu_s'] for v in values), 2)}
    summary['ratio_wall'] = round(summary['converge_noop']['wall_s'] / summary['module_only_noop']['wall_s'], 2)
    summary['ratio_cpu'] = round(summary['converge_noop']['cpu_s'] / summary['module_only_noop']['cpu_s'], 2)
    return {'samples': samples, 'summary': summary}


def summarize(runs):
    table = []
    keys = sorted(set((r['hosts'], r['forks']) for r in runs))
    for n, forks in keys:
        mine = [r for r in runs if (r['hosts'], r['forks']) == (n, forks)]
        row = {'hosts': n, 'forks': forks, 'rounds': len(mine)}
        for phase in ('cold', 'noop', 'reconcile'):
            row[phase] = dict((field, round(statistics.median(r[phase][field] for r in mine), 2))
                              for field in ('wall_s', 'cpu_s', 'cpu_per_host_s', 'peak_rss_mib'))
        table.append(row)
    by_key = dict(((r['hosts'], r['forks']), r) for r in table)
    ratios = []
    one = by_key.get((1, 1))
    for row in table:
        if one is None or row['hosts'] == 1:
            continue
        for phase in ('noop', 'reconcile', 'cold'):
            # The CPU-bound ideal: N x one host's CPU seconds over the machine's cores, or serial at forks 1.
            ideal = row['hosts'] * one[phase]['cpu_s'] / min(os.cpu_count() or 1, row['forks'])
            ratios.append({'hosts': row['hosts'], 'forks': row['forks'], 'phase': phase,
                           'wall_over_cpu_bound_ideal': round(row[phase]['wall_s'] / ideal, 2),
                           'cpu_per_host_over_one_host': round(row[phase]['cpu_per_host_s'] / one[phase]['cpu_s'], 2)})
    return {'table': table, 'ratios': ratios}


def print_table(summary):
    print('\n| N | forks | rounds | cold wall | cold CPU/host | no-op wall | no-op CPU/host | reconcile wall | '
          'reconcile CPU/host | peak RSS MiB (cold/no-op/reconcile) |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
    for row in summary['table']:
        print('| %d | %d | %d | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f | %.0f / %.0f / %.0f |' % (
            row['hosts'], row['forks'], row['rounds'], row['cold']['wall_s'], row['cold']['cpu_per_host_s'],
            row['noop']['wall_s'], row['noop']['cpu_per_host_s'], row['reconcile']['wall_s'],
            row['reconcile']['cpu_per_host_s'], row['cold']['peak_rss_mib'], row['noop']['peak_rss_mib'],
            row['reconcile']['peak_rss_mib']))
    if summary.get('ratios'):
        print('\n| N | forks | phase | wall / CPU-bound ideal | CPU per host / one host\'s |')
        print('| ---: | ---: | --- | ---: | ---: |')
        for r in summary['ratios']:
            print('| %d | %d | %s | %.2f | %.2f |' % (r['hosts'], r['forks'], r['phase'],
                                                      r['wall_over_cpu_bound_ideal'], r['cpu_per_host_over_one_host']))
    if 'free' in summary:
        f = summary['free']
        print('\nstrategy free, N=%d forks=%d: no-op %.1f s wall, %.2f CPU s/host; reconcile %.1f s wall, %.2f CPU s/host'
              % (f['hosts'], f['forks'], f['noop']['wall_s'], f['noop']['cpu_per_host_s'], f['reconcile']['wall_s'],
                 f['reconcile']['cpu_per_host_s']))
    if 'poll' in summary:
        p = summary['poll']
        print('\ninternal_poll_interval %s against the default, N=%d forks=%d, medians of %d: no-op %.2f against %.2f CPU s/host, '
              'reconcile (nothing to do) %.2f against %.2f' % (p['interval'], p['hosts'], p['forks'], p['rounds'], p['poll_noop'],
                                                               p['default_noop'], p['poll_reconcile'], p['default_reconcile']))
    if 'anchor' in summary:
        a = summary['anchor']
        print('\none host, nothing to do: converge %.2f s wall / %.2f s CPU, module call alone %.2f s / %.2f s: '
              'ratio %.2f wall, %.2f CPU' % (a['converge_noop']['wall_s'], a['converge_noop']['cpu_s'],
                                             a['module_only_noop']['wall_s'], a['module_only_noop']['cpu_s'],
                                             a['ratio_wall'], a['ratio_cpu']))


# --- the profile --------------------------------------------------------------------------------------------

def profile(args, fleet, work):
    """One host: the no-op converge and the reconcile after a kill, per role task, args.rounds times each."""
    engines = fleet.engines[:1]
    hosts = [host_name(1)]
    modlog = os.path.join(work, 'modules.log')
    tasklog = os.path.join(work, 'tasks.jsonl')
    wrapper = os.path.join(HERE, 'timed_python.sh')
    runner = Runner(work, env_extra={
        'ANSIBLE_CALLBACK_PLUGINS': os.path.join(HERE, 'callback_plugins'),
        'ANSIBLE_CALLBACKS_ENABLED': 'drover.fleet.events,fleet_task_times',
        'DROVER_BENCH_TASK_LOG': tasklog,
        'DROVER_BENCH_MODULE_LOG': modlog,
        'DROVER_BENCH_PYTHON': PYTHON,
    })
    inventory = write_inventory(os.path.join(work, 'inventory-profile.yml'), engines, work, interpreter=wrapper)
    passes = {'noop': [], 'reconcile': []}
    for r in range(args.rounds[0]):
        # From nothing each round: a second kill in the same streak would be held back (30 s), not restarted.
        reset(fleet, engines, work)
        check_recaps(runner.run(converge_play(), inventory, 1, 'profile-cold'), hosts, 'cold converge')
        for key in ('noop', 'reconcile'):
            if key == 'reconcile':
                kill_one_each(engines)
            for path in (modlog, tasklog):
                if os.path.exists(path):
                    os.unlink(path)
            play = converge_play() if key == 'noop' else 'drover.fleet.reconcile'
            res = runner.run(play, inventory, 1, 'profile-%s' % key)
            check_recaps(res, hosts, 'profile %s' % key, changed_zero=(key == 'noop'))
            check_running(engines, 'profile %s' % key)
            passes[key].append(attribute(res, tasklog, modlog))
            print('profile round %d %-9s %6.2fs wall %6.2fs cpu' % (r + 1, key, res['wall'], res['cpu']), flush=True)
    return dict((key, merge_passes(values)) for key, values in passes.items())


def _seconds(text):
    minutes, seconds = text.rstrip('s').split('m')
    return int(minutes) * 60 + float(seconds)


def read_module_log(path):
    """The module runs bench/timed_python.sh logged: start, end, CPU seconds (user + sys), module file."""
    modules = []
    if not os.path.exists(path):
        return modules
    with open(path) as handle:
        lines = handle.read().splitlines()
    for i, line in enumerate(lines):
        if not line.startswith('M '):
            continue
        dummy, start, end, name = line.split(None, 3)
        user, system = lines[i + 2].split()          # `times`: the shell's own line, then its children's
        modules.append({'start': float(start), 'end': float(end), 'cpu': _seconds(user) + _seconds(system),
                        'name': name.strip()})
    return modules


def attribute(res, tasklog, modlog):
    """Per task: its wall time on the controller, the module runs inside it, their wall and CPU time."""
    tasks = []
    with open(tasklog) as handle:
        for line in handle:
            tasks.append(json.loads(line))
    modules = read_module_log(modlog)
    rows = []
    for task in tasks:
        inside = [m for m in modules if m['start'] >= task['start'] - 0.001 and m['end'] <= task['end'] + 0.001]
        rows.append({'task': task['name'], 'action': task['action'], 'status': task['status'],
                     'wall_s': task['end'] - task['start'], 'modules': len(inside),
                     'module_names': sorted(set(m['name'] for m in inside)),
                     'module_wall_s': sum(m['end'] - m['start'] for m in inside),
                     'module_cpu_s': sum(m['cpu'] for m in inside)})
    return {'wall_s': res['wall'], 'cpu_s': res['cpu'], 'tasks': rows,
            'before_first_task_s': tasks[0]['start'] - res['started_at'],
            'after_last_task_s': res['ended_at'] - tasks[-1]['end'],
            'between_tasks_s': (tasks[-1]['end'] - tasks[0]['start']) - sum(t['end'] - t['start'] for t in tasks)}


def merge_passes(passes):
    """Medians over the rounds, task by task (the same tasks in the same order in every pass)."""
    first = passes[0]
    rows = []
    for i, row in enumerate(first['tasks']):
        same = [p['tasks'][i] for p in passes if len(p['tasks']) > i and p['tasks'][i]['task'] == row['task']]
        rows.append(dict(row, **dict((k, round(statistics.median(s[k] for s in same), 3))
                                     for k in ('wall_s', 'module_wall_s', 'module_cpu_s'))))
    return {'wall_s': round(statistics.median(p['wall_s'] for p in passes), 2),
            'cpu_s': round(statistics.median(p['cpu_s'] for p in passes), 2),
            'before_first_task_s': round(statistics.median(p['before_first_task_s'] for p in passes), 2),
            'after_last_task_s': round(statistics.median(p['after_last_task_s'] for p in passes), 2),
            'between_tasks_s': round(statistics.median(p['between_tasks_s'] for p in passes), 2),
            'tasks': rows}


def print_profile(prof):
    for key, data in prof.items():
        tasks = data['tasks']
        ran = [t for t in tasks if t['status'] != 'skipped']
        print('\n%s: %.2f s wall, %.2f s CPU (ansible-playbook tree); %.2f s before the first task, %.2f s between '
              'tasks, %.2f s after the last; %d task results (%d skipped), %d module runs, %.2f s in tasks, %.2f s in '
              'module processes (%.2f s CPU)' % (
                  key, data['wall_s'], data['cpu_s'], data['before_first_task_s'], data['between_tasks_s'],
                  data['after_last_task_s'], len(tasks),
                  len(tasks) - len(ran), sum(t['modules'] for t in tasks), sum(t['wall_s'] for t in tasks),
                  sum(t['module_wall_s'] for t in tasks), sum(t['module_cpu_s'] for t in tasks)))
        print('| task | action | status | wall s | module runs | module wall s | module CPU s | controller s |')
        print('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |')
        for t in tasks:
            print('| %s | %s | %s | %.3f | %d | %.3f | %.3f | %.3f |' % (
                t['task'], t['action'], t['status'], t['wall_s'], t['modules'], t['module_wall_s'],
                t['module_cpu_s'], t['wall_s'] - t['module_wall_s']))


def parse_list(text):
    return [int(v) for v in text.replace(',', ' ').split()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--hosts', type=parse_list, default=parse_list(os.environ.get('BENCH_FLEET_HOSTS') or '1,10,20'))
    parser.add_argument('--forks', type=parse_list, default=parse_list(os.environ.get('BENCH_FLEET_FORKS') or '1,5,20'))
    parser.add_argument('--rounds', type=parse_list, default=parse_list(os.environ.get('BENCH_FLEET_ROUNDS') or '3,2,1'),
                        help='rounds for each --hosts value (the last one repeats)')
    parser.add_argument('--anchor-rounds', type=int, default=int(os.environ.get('BENCH_FLEET_ANCHOR_ROUNDS') or 5))
    parser.add_argument('--poll-rounds', type=int, default=int(os.environ.get('BENCH_FLEET_POLL_ROUNDS') or 0),
                        help='rounds of the internal_poll_interval comparison at the largest N (0, the default: none)')
    parser.add_argument('--profile', action='store_true')
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    if args.profile:
        args.hosts = [1]
    args.rounds = (args.rounds + [args.rounds[-1]] * len(args.hosts))[:len(args.hosts)]

    work = tempfile.mkdtemp(prefix='drover-bench-fleet.')
    os.chmod(work, 0o700)
    started = datetime.datetime.now(datetime.timezone.utc)
    out = {'started': started.strftime('%Y-%m-%dT%H:%M:%SZ'), 'hosts': args.hosts, 'forks': args.forks,
           'rounds': args.rounds, 'cpus': os.cpu_count(), 'tasks_per_host': TASKS_PER_HOST,
           'load_before': os.getloadavg()[0]}
    fleet = FleetEngines(max(args.hosts), image=IMAGE)
    t0 = time.perf_counter()
    try:
        fleet.start()
        out['engines_up_s'] = round(time.perf_counter() - t0, 1)
        print('%d engines up in %.1f s (%s)' % (len(fleet), out['engines_up_s'], fleet.run_root), flush=True)
        if args.profile:
            out['profile'] = profile(args, fleet, work)
        else:
            out.update(measure_fleet(args, fleet, work))
    finally:
        fleet.stop()
        out['load_after'] = os.getloadavg()[0]
        out['total_s'] = round(time.perf_counter() - t0, 1)
        keep = os.environ.get('BENCH_FLEET_KEEP_WORK') == '1'
        if keep:
            print('work directory kept: %s' % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(out, handle, indent=2)
    if args.profile:
        print_profile(out['profile'])
    else:
        print_table(out['summary'])
    print('\ntotal %.0f s, load average %.2f before, %.2f after' % (out['total_s'], out['load_before'], out['load_after']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
