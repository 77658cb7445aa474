# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.service_placement: the services of a fleet placed on its hosts, once, on the controller.

Reads what the play found on every host (capacity, the tasks it runs, whether its engine answered, the services
it declares) and asks the decider (_plan_service.plan) where each task instance runs; returns each host's share
as task declarations for drover.fleet.tasks. Keeps nothing between runs: where the services stand is read from
the hosts each time, so controllers (AWX jobs, timers) agree. Changes nothing.

A run that does not see every host declaring services (`complete` false: --limit, a subset, a host's own timer)
places nothing: each host keeps the instances it runs. A service it cannot take (bad fields, declared two ways)
is not placed either: its instances stay where they run, and a warning says why.
"""

from __future__ import annotations

import json
import re

from ansible.plugins.action import ActionBase

from ansible_collections.drover.fleet.plugins.module_utils import _plan_service as ps
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

DEFAULT_CLUSTER = 'default'


def _task_name(decl):
    if not isinstance(decl, dict):
        return None
    td = decl.get('task_definition')
    if isinstance(td, dict) and isinstance(td.get('taskDefinition'), dict):
        td = td['taskDefinition']
    return decl.get('name') or (td.get('family') if isinstance(td, dict) else None)


def _index(raw, name, cluster, task_cluster):
    """The index of the instance of service `raw` that a task (name, cluster) is, or None."""
    m = re.match(r'^%s-(\d+)\Z' % re.escape(raw['name']), name or '')
    if m and (cluster or task_cluster) == (raw.get('cluster') or DEFAULT_CLUSTER):
        return int(m.group(1))
    return None


def _services(raw_hosts, warnings):
    """Every service the hosts declare, by name: (its declaration, the hosts that declare it); and those declared
    two ways ({name: {host: its declaration there}}), which are not placed (a warning says so)."""
    out, mixed = {}, {}
    for raw in raw_hosts:
        for i, svc in enumerate(raw.get('services') or []):
            name = svc.get('name') if isinstance(svc, dict) else None
            if not isinstance(name, str):
                warnings.append('host %s: drover_services[%d] has no name: left out' % (raw['name'], i))
                continue
            mixed.setdefault(name, {})[raw['name']] = svc
            if name in out and json.dumps(out[name][0], sort_keys=True) != json.dumps(svc, sort_keys=True):
                out[name] = (out[name][0], out[name][1], 'declared differently on %s and on %s'
                             % (out[name][1][0], raw['name']))
            out.setdefault(name, (svc, [], None))[1].append(raw['name'])
    mixed = dict((name, mixed[name]) for name, (dummy, dummy, why) in out.items() if why)
    for name in sorted(mixed):
        warnings.append('service %s is %s: not placed this pass, its instances stay where they run'
                        % (name, out.pop(name)[2]))
    return dict((name, (svc, hosts)) for name, (svc, hosts, dummy) in out.items()), mixed


def _used(raw, warnings):
    """What the host's declared tasks and its runner pools' slots take: (cpu, memory, gpus); an amount it cannot
    read counts 0 (its own pass refuses that task or pool). A pool's GPUs are out of the look's capacity already."""
    spent = [0, 0, 0]
    for pool in raw.get('pools') or []:
        try:
            if pool.get('state', 'present') == 'present':
                slots = int(pool.get('slots') or 0)
                spent[0] += int(round(slots * float(pool.get('cpus') or 0) * ps.CPU_UNITS))
                spent[1] += slots * int(pool.get('memory') or 0)
        except (TypeError, ValueError):
            warnings.append('host %s: pool %s: its slots, cpus or memory cannot be read (counted as nothing here)'
                            % (raw['name'], pool.get('pool')))
    for i, decl in enumerate(raw.get('declared') or []):
        if not isinstance(decl, dict) or decl.get('state') == 'absent':
            continue
        try:
            amounts = ps.needs(decl, 'drover_tasks[%d]' % i)
        except SpecError as exc:
            warnings.append('host %s: %s (counted as nothing here)' % (raw['name'], exc))
            continue
        for at, amount in enumerate(amounts):
            spent[at] += amount
    return tuple(spent)


def _declaration(raw, index):
    """The task an instance is: the service's task keys, its name and cluster, restarted always (a service keeps
    its count: an instance that stops is started again where it runs, as ECS's service scheduler replaces it)."""
    decl = dict((k, v) for k, v in raw.items() if k in ps.TASK_KEYS)
    decl.update(name=ps.instance_name(raw['name'], index), cluster=raw.get('cluster') or DEFAULT_CLUSTER,
                restart='always')
    return decl


def place(raw_hosts, complete=True):
    """The placement: placement ({host: [task declaration]}), clusters ({host: [cluster]}), services (a view each),
    unplaced, down ({host: why}), warnings, report (lines)."""
    warnings = []
    declared, mixed = _services(raw_hosts, warnings)
    specs, refused = [], {}
    for name, (raw, hosts) in sorted(declared.items()):
        try:
            specs.append(ps.service_spec(raw, 'service %s' % name)._replace(hosts=frozenset(hosts)))
        except SpecError as exc:
            refused[name] = raw
            warnings.append('%s: not placed this pass, its instances stay where they run' % exc)
    host_specs, down = [], {}
    for i, raw in enumerate(raw_hosts):
        try:
            host_specs.append(ps.host_spec(dict(raw.get('capacity') or {}, name=raw.get('name'), up=raw.get('up'),
                                                attributes=raw.get('attributes')), 'hosts[%d]' % i))
        except SpecError as exc:
            host_specs.append(ps.Host(raw['name'], 0, 0, 0, {}, False))
            warnings.append('host %s: %s: it takes no instance' % (raw['name'], exc))
        if not host_specs[-1].up:
            down[raw['name']] = raw.get('down_reason') or 'its engine did not answer'
    up = dict((h.name, h.up) for h in host_specs)
    by_raw = dict((name, raw) for name, (raw, dummy) in declared.items())
    clash = _clashes(raw_hosts, by_raw)
    for name in clash:
        warnings.append(clash[name])
        refused[name] = by_raw[name]
    specs = [s for s in specs if s.name not in clash]
    found, kept = [], dict((h, []) for h in up if up[h])
    for raw in raw_hosts:
        if not up[raw['name']]:
            continue
        # a service declared two ways: its instances here as this host declares it (else as the first host does)
        theirs = dict((name, decls.get(raw['name']) or decls[sorted(decls)[0]]) for name, decls in mixed.items())
        theirs.update(by_raw)
        for task in raw.get('tasks') or []:
            for name, svc in theirs.items():
                index = _index(svc, task.get('name'), task.get('cluster'), DEFAULT_CLUSTER)
                if index is None:
                    continue
                if complete and name not in refused and name not in mixed:
                    found.append(ps.Instance(name, index, raw['name']))
                else:                                   # not placed this pass: it stays where it runs
                    kept[raw['name']].append(_declaration(svc, index))
    placement = dict((h, list(v)) for h, v in kept.items())
    views, unplaced = [], {}
    if complete:
        used = dict((raw['name'], _used(raw, warnings)) for raw in raw_hosts)
        decided = ps.plan(specs, host_specs, found, used)
        unplaced = decided.unplaced
        for inst in list(decided.keep) + list(decided.start):
            placement[inst.host].append(_declaration(by_raw[inst.service], inst.index))
        for svc in specs:
            def mark(insts, name=svc.name):
                return sorted('%s@%s' % (ps.instance_name(i.service, i.index), i.host) for i in insts
                              if i.service == name)
            views.append({'name': svc.name, 'cluster': by_raw[svc.name].get('cluster') or DEFAULT_CLUSTER,
                          'desired_count': svc.desired,
                          'placed': len(mark(list(decided.keep) + list(decided.start))),
                          'started': mark(decided.start), 'stopped': mark(decided.stop),
                          'unplaced': decided.unplaced.get(svc.name)})
    for decls in placement.values():
        decls.sort(key=lambda d: d['name'])
    clusters = sorted(set(raw.get('cluster') or DEFAULT_CLUSTER for raw in list(by_raw.values())
                          + [d for decls in mixed.values() for d in decls.values()]))
    report = ['%s: %d/%d placed%s' % (v['name'], v['placed'], v['desired_count'],
                                      ', %d unplaced' % v['unplaced']['count'] if v['unplaced'] else '')
              for v in views]
    if not complete:
        report.append('this run does not reach every host that declares services: nothing placed, each host keeps '
                      'the instances it runs')
    report += ['%s: down (%s)' % (h, why) for h, why in sorted(down.items())] + warnings
    return {'placement': placement, 'clusters': dict((h, clusters) for h in placement), 'services': views,
            'unplaced': unplaced, 'down': down, 'warnings': warnings, 'report': report}


def _clashes(raw_hosts, by_raw):
    """A declared task with the name of a service's instance would be taken for it: the service is not placed,
    naming both."""
    out = {}
    for raw in raw_hosts:
        for i, decl in enumerate(raw.get('declared') or []):
            task_cluster = (decl.get('cluster') if isinstance(decl, dict) else None) or raw.get('cluster') \
                or DEFAULT_CLUSTER
            for name, svc in sorted(by_raw.items()):
                if name not in out and _index(svc, _task_name(decl), task_cluster, task_cluster) is not None:
                    out[name] = ('host %s: drover_tasks[%d] (%s, cluster %s) has the name of an instance of service %s '
                                 '(<service>-<index>): the service is not placed until the task or the service is '
                                 'renamed' % (raw['name'], i, _task_name(decl), task_cluster, name))
    return out


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        dummy, args = self.validate_argument_spec(argument_spec={
            'hosts': {'type': 'list', 'elements': 'dict', 'required': True},
            'complete': {'type': 'bool', 'default': True},
        })
        result.update(place(args['hosts'], args['complete']))
        result['changed'] = False
        return result
