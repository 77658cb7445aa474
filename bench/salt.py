# -*- coding: utf-8 -*-
"""bench: salt - what a no-op `salt-call --local state.apply drover` of 20 tasks costs, against the fixed cost of
any masterless Salt run.

A masterless minion of the bench's own (hack/salt_minion.py: file_client local, the state salt/examples/drover,
a pillar of 20 single-container tasks in one cluster with purge, a private store), measured side by side in the
same run, the order alternating from round to round:

- apply_noop: `salt-call --local state.apply drover` with the 20 tasks running: nothing to change (checked:
  every state True, no changes);
- ping: `salt-call --local test.ping` (the anchor: Salt's start, its loader and its config, nothing else).

Reported: the medians of wall time and of CPU seconds (user + sys of salt-call and its children), and the ratio
apply_noop / ping (the target: at most 1.5). The tasks are purged at the end and the work directory removed.

    python bench/salt.py [--tasks 20] [--rounds 7] [--json out.json]
"""

from __future__ import absolute_import, division, print_function

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'hack'))

from load import IMAGE, report, rounds_args  # noqa: E402
import salt_minion  # noqa: E402

SALT_VENV = os.environ.get('SALT_VENV', os.path.join(ROOT, '.venv-salt'))


def salt_call(conf, *args):
    """(wall seconds, CPU seconds, the JSON result's `local`) of one salt-call --local."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([os.path.join(SALT_VENV, 'bin', 'salt-call'), '--local', '-c', conf, '--out=json',
                           '--log-level=quiet'] + list(args), capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        out = json.loads(proc.stdout)['local']
    except (ValueError, KeyError):
        raise RuntimeError('salt-call %s: no JSON result: %s %s' % (' '.join(args), proc.stdout[-1000:], proc.stderr[-1000:]))
    return wall, cpu, out


def applied(out, want_changes):
    """Check a state.apply's states: all True, and changes as wanted."""
    if not isinstance(out, dict):
        raise RuntimeError('state.apply: %r' % (out,))
    for sid, ret in out.items():
        if ret.get('result') is not True:
            raise RuntimeError('state %s: %s' % (sid, ret.get('comment')))
        if not want_changes and ret.get('changes'):
            raise RuntimeError('state %s changed something: not a no-op' % sid)


def main(argv=None):
    args = rounds_args(__doc__, argv)
    if not os.path.exists(os.path.join(SALT_VENV, 'bin', 'salt-call')):
        sys.exit('bench salt: no salt-call in %s: run `make salt-venv`' % SALT_VENV)

    work = tempfile.mkdtemp(prefix='drover-bench-salt.')
    os.chmod(work, 0o700)
    conf = salt_minion.write(work, 'drover-bench')
    tasks = {'cluster': 'saltbench', 'purge': True, 'tasks': [
        {'name': 'salt-%02d' % i, 'containers': [{'name': 'app', 'image': IMAGE, 'command': ['sleep', '3600'],
                                                  'memory': 64, 'cpu': 128}]} for i in range(args.tasks)]}
    host = {'store_path': os.path.join(work, 'state', 'store.db')}
    out = {'tasks': args.tasks, 'rounds': args.rounds}
    samples = {'apply_noop': [], 'ping': []}
    try:
        salt_minion.write_pillar(work, {'host': host, 'tasks': tasks})
        applied(salt_call(conf, 'state.apply', 'drover')[2], want_changes=True)
        for n in range(args.rounds + 1):                     # round 0: warm-up, left out
            order = ('apply_noop', 'ping') if n % 2 == 0 else ('ping', 'apply_noop')
            for key in order:
                if key == 'ping':
                    wall, cpu, result = salt_call(conf, 'test.ping')
                    if result is not True:
                        raise RuntimeError('test.ping: %r' % (result,))
                else:
                    wall, cpu, result = salt_call(conf, 'state.apply', 'drover')
                    applied(result, want_changes=False)
                if n:
                    samples[key].append((wall, cpu))
                print('round %d %-10s %6.3f s wall %6.3f s CPU%s' % (n, key, wall, cpu, ' (warm-up)' if not n else ''),
                      flush=True)
    finally:
        try:
            salt_minion.write_pillar(work, {'host': host, 'tasks': dict(tasks, tasks=[])})
            salt_call(conf, 'state.apply', 'drover')
        except RuntimeError as exc:
            print('purge: %s' % exc)
        shutil.rmtree(work, ignore_errors=True)
    for key, values in samples.items():
        out[key] = {'median_s': round(statistics.median(w for w, c in values), 3),
                    'median_cpu_s': round(statistics.median(c for w, c in values), 3),
                    'runs': [round(w, 3) for w, c in values]}
    out['ratio_apply_to_ping'] = round(out['apply_noop']['median_s'] / out['ping']['median_s'], 3)
    out['ratio_apply_to_ping_cpu'] = round(out['apply_noop']['median_cpu_s'] / out['ping']['median_cpu_s'], 3)
    report(out, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
