# -*- coding: utf-8 -*-
"""bench: td - what checking task definitions by AWS's model costs a pass.

Two sets of 20 tasks on one host, each converged by one ecs_task module process (`tasks:` with purge, as the
tasks role calls it), measured side by side in the same run, the order alternating from round to round:

- plain_noop: 20 single-container tasks declared in the `containers` form with 4 settings each, nothing to do;
- td_noop: 20 tasks declared as ECS task definitions (`task_definition`: checked by botocore's model, then by
  the table of container settings), with about 15 fields each (task cpu/memory when the host takes them,
  cpu, memory, memoryReservation, portMappings, environment, command, essential, ulimits, user,
  workingDirectory, dockerLabels, healthCheck, stopTimeout, logConfiguration, linuxParameters), nothing to do.

Reported: the median of each, and the ratio td_noop / plain_noop (the target: at most 1.2).
Everything is removed at the end (purge).

    python bench/td.py [--tasks 20] [--rounds 7] [--json out.json]
"""

from __future__ import absolute_import, division, print_function

import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from load import IMAGE, report, rounds_args, run_module  # noqa: E402


def task_definition(i, task_size=True):
    """A task definition of the kind ECS users keep next to their code: one container, ~15 fields."""
    td = {
        'family': 'tdb-%02d' % i,
        'networkMode': 'bridge',
        'requiresCompatibilities': ['EC2'],
        'containerDefinitions': [{
            'name': 'app',
            'image': IMAGE,
            'essential': True,
            'command': ['sleep', '3600'],
            'cpu': 128,
            'memory': 64,
            'memoryReservation': 32,
            'portMappings': [{'containerPort': 8080, 'hostPort': 0, 'protocol': 'tcp'}],
            'environment': [{'name': 'APP_ENV', 'value': 'bench'}, {'name': 'APP_INDEX', 'value': str(i)}],
            'ulimits': [{'name': 'nofile', 'softLimit': 1024, 'hardLimit': 4096}],
            'user': '0',
            'workingDirectory': '/tmp',
            'dockerLabels': {'team': 'bench'},
            'healthCheck': {'command': ['CMD-SHELL', 'true'], 'interval': 30, 'retries': 3},
            'stopTimeout': 5,
            'logConfiguration': {'logDriver': 'json-file', 'options': {'max-size': '1m'}},
            'linuxParameters': {'initProcessEnabled': True},
        }],
    }
    if task_size:
        td.update(cpu='256', memory='128')
    return td


def main(argv=None):
    args = rounds_args(__doc__, argv)

    work = tempfile.mkdtemp(prefix='drover-bench-td.')
    os.chmod(work, 0o700)
    store = os.path.join(work, 'state', 'store.db')
    plain = {'cluster': 'tdbench-plain', 'purge': True, 'store_path': store, 'tasks': [
        {'name': 'plain-%02d' % i, 'containers': [{'name': 'app', 'image': IMAGE, 'command': ['sleep', '3600'],
                                                   'memory': 64, 'cpu': 128}]} for i in range(args.tasks)]}
    td = {'cluster': 'tdbench-td', 'purge': True, 'store_path': store,
          'tasks': [{'task_definition': task_definition(i)} for i in range(args.tasks)]}
    out = {'tasks': args.tasks, 'rounds': args.rounds}
    times = {'plain_noop': [], 'td_noop': []}
    try:
        run_module('ecs_task', plain, work, 'plain-cold')
        try:
            run_module('ecs_task', td, work, 'td-cold')
        except RuntimeError as exc:              # a host without task-size support: container fields only
            if 'cpu' not in str(exc) and 'memory' not in str(exc):
                raise
            td['tasks'] = [{'task_definition': task_definition(i, task_size=False)} for i in range(args.tasks)]
            out['task_size'] = False
            run_module('ecs_task', td, work, 'td-cold')
        for n in range(args.rounds):
            order = (('plain_noop', plain), ('td_noop', td)) if n % 2 == 0 else (('td_noop', td), ('plain_noop', plain))
            for key, params in order:
                seconds, rss, result = run_module('ecs_task', params, work, key)
                if result.get('changed'):
                    raise RuntimeError('%s changed something: not a no-op' % key)
                times[key].append(seconds)
                print('round %d %-10s %6.3f s  %5.1f MiB' % (n + 1, key, seconds, rss), flush=True)
    finally:
        for params, tag in ((plain, 'plain'), (td, 'td')):
            try:
                run_module('ecs_task', dict(params, tasks=[]), work, 'purge-' + tag)
            except RuntimeError as exc:
                print('purge of %s: %s' % (tag, exc))
        shutil.rmtree(work, ignore_errors=True)
    for key, values in times.items():
        out[key] = {'median_s': round(statistics.median(values), 3), 'runs': [round(v, 3) for v in values]}
    out['ratio_td_to_plain'] = round(out['td_noop']['median_s'] / out['plain_noop']['median_s'], 3)
    report(out, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
