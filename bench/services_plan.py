# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: placing services on the controller (services.plan.plan), on synthetic facts.

--hosts hosts in 4 zones (16 cores, 64 GiB, a GPU on every tenth), 20 % of their memory spent by declared tasks;
--services services of --tasks tasks in all, in three kinds: spread by zone then binpack memory, distinctInstance
with spread by instanceId, and memberOf a zone with random. Timed: `cold`, the plan from nothing (every task
placed); `noop`, the plan again over what the first placed (nothing to do); `heal`, the plan with one host in ten
down (its tasks placed again). Each the median of --rounds, in seconds, with the anchor in the same run: the same
number of tasks placed by a loop that takes the first host with room (no constraints, no strategies).

    python bench/services_plan.py [--hosts 200] [--services 100] [--tasks 1000] [--rounds 7]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'collection', 'dev'))

from ansible_collections.drover.fleet.plugins.module_utils.services import plan as ps  # noqa: E402

ZONES = ('a', 'b', 'c', 'd')


def facts(n_hosts, n_services, n_tasks):
    hosts = []
    for i in range(n_hosts):
        hosts.append(ps.host_spec({'name': 'h%03d' % i, 'cpu': 16 * 1024, 'memory': 65536,
                                   'gpus': 1 if i % 10 == 0 else 0,
                                   'attributes': {'zone': ZONES[i % len(ZONES)], 'rack': 'r%d' % (i // 8)}}))
    used = dict((h.name, (1024, 65536 // 5, 0)) for h in hosts)
    each, extra = divmod(n_tasks, n_services)
    services = []
    for i in range(n_services):
        raw = {'name': 'svc%03d' % i, 'desired_count': each + (1 if i < extra else 0), 'cpu': 128, 'memory': 256}
        if i % 3 == 0:
            raw['placement_strategy'] = [{'type': 'spread', 'field': 'attribute:zone'},
                                         {'type': 'binpack', 'field': 'memory'}]
        elif i % 3 == 1:
            raw['placement_constraints'] = [{'type': 'distinctInstance'}]
            raw['placement_strategy'] = [{'type': 'spread', 'field': 'instanceId'}]
        else:
            raw['placement_constraints'] = [{'type': 'memberOf', 'expression': 'attribute:zone in [a, b]'}]
            raw['placement_strategy'] = [{'type': 'random'}]
        services.append(ps.service_spec(raw))
    return hosts, used, services


def first_fit(hosts, used, services):
    free = dict((h.name, [h.cpu - used[h.name][0], h.memory - used[h.name][1]]) for h in hosts)
    placed = []
    for svc in services:
        for index in range(svc.desired):
            for h in hosts:
                room = free[h.name]
                if room[0] >= svc.cpu and room[1] >= svc.memory:
                    room[0] -= svc.cpu
                    room[1] -= svc.memory
                    placed.append((svc.name, index, h.name))
                    break
    return placed


def timed(call):
    began = time.perf_counter()
    result = call()
    return time.perf_counter() - began, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--hosts', type=int, default=200)
    parser.add_argument('--services', type=int, default=100)
    parser.add_argument('--tasks', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=7)
    args = parser.parse_args()
    hosts, used, services = facts(args.hosts, args.services, args.tasks)
    down = [h._replace(up=False) if i % 10 == 5 else h for i, h in enumerate(hosts)]
    rows = {'anchor': [], 'cold': [], 'noop': [], 'heal': []}
    for dummy in range(args.rounds):
        rows['anchor'].append(timed(lambda: first_fit(hosts, used, services))[0])
        seconds, cold = timed(lambda: ps.plan(services, hosts, [], used))
        rows['cold'].append(seconds)
        running = list(cold.keep) + list(cold.start)
        seconds, noop = timed(lambda r=running: ps.plan(services, hosts, r, used))
        assert not noop.start and not noop.stop
        rows['noop'].append(seconds)
        rows['heal'].append(timed(lambda r=running: ps.plan(services, down, r, used))[0])
    placed = len(cold.start)
    unplaced = sum(u['count'] for u in cold.unplaced.values())
    base = statistics.median(rows['anchor'])
    print('services_plan: %d services, %d tasks, %d hosts; %d placed, %d unplaced; %d rounds (medians, seconds)'
          % (args.services, args.tasks, args.hosts, placed, unplaced, args.rounds))
    print('  anchor (first fit, no constraints or strategies) %.4f s' % base)
    for name in ('cold', 'noop', 'heal'):
        value = statistics.median(rows[name])
        print('  %-5s %.4f s  %.1fx the anchor' % (name, value, value / base))


if __name__ == '__main__':
    main()
