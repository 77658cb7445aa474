# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: services_noop - what placing services adds to a no-op converge of a fleet.

--hosts simulated hosts (tests/fixtures/fleet_engines.py, as bench/fleet.py makes them). Two inventories of the
same fleet, running the same tasks:
- services: no task declared; one service of 5 tasks a host (desired_count 5 x hosts, spread by instanceId),
  placed by drover.fleet.converge (a look at every host, the placement on the controller, each host's share);
- declared (the anchor): each host declares, in drover_tasks, the very instances the placement put there (the
  same names, cluster and declarations), and no service.
After one converge of each (the second must change nothing: the same tasks), --rounds rounds of the no-op
`drover.fleet.converge`, the two alternating, each checked changed=0 on every host. Reported: the medians of the
wall time and the controller's CPU seconds (bench/fleet.py's Runner), and the ratios services / declared.

    python bench/services_noop.py [--hosts 6] [--forks 6] [--rounds 5]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import shutil
import statistics
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fleet as fleet_bench  # noqa: E402  pylint: disable=wrong-import-position
from fleet_engines import FleetEngines  # noqa: E402  pylint: disable=wrong-import-position

PER_HOST = 5
CONTAINERS = [{'name': 'main', 'image': fleet_bench.IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]


def host_vars(engine, work, tasks):
    name = fleet_bench.host_name(engine.index)
    return name, {'ansible_connection': 'local', 'ansible_python_interpreter': fleet_bench.PYTHON,
                  'drover_docker_host': engine.host,
                  'drover_store_path': os.path.join(work, 'hosts', name, 'state', 'store.db'),
                  'drover_tasks_cluster': fleet_bench.CLUSTER, 'drover_tasks': tasks, 'drover_pools': []}


def write(path, engines, work, tasks_of=None, services=None):
    hosts = dict(host_vars(e, work, tasks_of(e) if tasks_of else []) for e in engines)
    doc = {'all': {'hosts': hosts}}
    if services:
        doc['all']['vars'] = {'drover_services': services}
    with open(path, 'w') as handle:
        yaml.safe_dump(doc, handle, default_flow_style=False)
    return path


def placed(engine):
    """The service's instances this engine runs, as the placement declares them (each with its revision)."""
    client = engine.client()
    try:
        found = sorted((b.labels.get('drover.task'), b.labels.get('drover.revision')) for b in client.containers.list(
            filters={'label': 'drover.cluster=%s' % fleet_bench.CLUSTER}))
    finally:
        client.close()
    return [{'name': n, 'cluster': fleet_bench.CLUSTER, 'restart': 'always', 'network_mode': 'none',
             'containers': CONTAINERS, 'revision': r} for n, r in found]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--hosts', type=int, default=6)
    parser.add_argument('--forks', type=int, default=6)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix='drover-bench-services-')
    engines = FleetEngines(args.hosts, image=fleet_bench.IMAGE)
    engines.start()
    try:
        runner = fleet_bench.Runner(work)
        hosts = [fleet_bench.host_name(e.index) for e in engines]
        services = [{'name': 'svc', 'cluster': fleet_bench.CLUSTER, 'desired_count': PER_HOST * args.hosts,
                     'network_mode': 'none', 'containers': CONTAINERS,
                     'placement_strategy': [{'type': 'spread', 'field': 'instanceId'}]}]
        with_services = write(os.path.join(work, 'services.yml'), engines, work, services=services)
        first = runner.run('drover.fleet.converge', with_services, args.forks, 'services-cold')
        fleet_bench.check_recaps(first, hosts, 'services cold')
        share = dict((e.index, placed(e)) for e in engines)
        if sorted(len(s) for s in share.values()) != [PER_HOST] * args.hosts:
            raise RuntimeError('the placement was not %d a host: %r' % (PER_HOST, share))
        declared = write(os.path.join(work, 'declared.yml'), engines, work, tasks_of=lambda e: share[e.index])
        same = runner.run('drover.fleet.converge', declared, args.forks, 'declared-first')
        fleet_bench.check_recaps(same, hosts, 'declared over the placed instances', changed_zero=True)
        rows = {'services': [], 'declared': []}
        for n in range(args.rounds):
            order = (('services', with_services), ('declared', declared))
            for name, inventory in (order if n % 2 == 0 else order[::-1]):
                result = runner.run('drover.fleet.converge', inventory, args.forks, '%s-noop' % name)
                fleet_bench.check_recaps(result, hosts, '%s no-op' % name, changed_zero=True)
                rows[name].append(result)
    finally:
        engines.stop()
        shutil.rmtree(work, ignore_errors=True)
    print('services_noop: %d hosts, %d tasks each, forks %d, %d rounds (medians)' % (
        args.hosts, PER_HOST, args.forks, args.rounds))
    med = dict((k, (statistics.median(r['wall'] for r in v), statistics.median(r['cpu'] for r in v)))
               for k, v in rows.items())
    for name in ('declared', 'services'):
        print('  %-8s wall %.2f s  controller CPU %.2f s' % ((name,) + med[name]))
    print('  ratio services / declared: wall %.2fx, CPU %.2fx' % (med['services'][0] / med['declared'][0],
                                                                  med['services'][1] / med['declared'][1]))


if __name__ == '__main__':
    main()
