# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.service_placement: the services of a fleet placed on its hosts, once, on the controller.

Reads what the play found on every host (capacity, the tasks it runs, whether its engine answered, the services
it declares) and asks the decider (services.plan.plan) where each task instance runs; returns each host's share
as task declarations for drover.fleet.tasks. Keeps nothing between runs (but the records key, _records_key's):
where the services stand is read from the hosts each time, so controllers (AWX jobs, timers) holding the same
key agree. Changes nothing.

A run that does not see every host declaring services (`complete` false: --limit, a subset, a host's own timer)
places nothing: each host keeps the instances it runs. A service it cannot take (bad fields, declared two ways)
is not placed either: its instances stay where they run, and a warning says why.

The revision records the hosts keep are taken only from the hosts that declare the service, and only where the
controller sealed them (records_key, else the key file of _records_key) and their revision is the digest of their
declaration: a host may write anything into its own store, but never a record that decides what another runs.
Must not: return, log or hand a host the records key.
"""

from __future__ import annotations

import collections
import json
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.drover.fleet.plugins.module_utils.services import deploy as pd
from ansible_collections.drover.fleet.plugins.module_utils.services import plan as ps
from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import (
    DEFAULT_CLUSTER, RECORD_KEYS, instance_index)
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
from ansible_collections.drover.fleet.plugins.plugin_utils._records_key import RecordsKeyError, records_key

# What a placement tells without its declarations (which may hold registry passwords): the events and the
# services' views that drover.fleet.events reads, the report and the services whose deployment goes on.
PUBLIC = ('services', 'events', 'report', 'deploying', 'down', 'unplaced', 'warnings')


def _task_name(decl):
    if not isinstance(decl, dict):
        return None
    td = decl.get('task_definition')
    if isinstance(td, dict) and isinstance(td.get('taskDefinition'), dict):
        td = td['taskDefinition']
    return decl.get('name') or (td.get('family') if isinstance(td, dict) else None)


def _index(raw, name, cluster, task_cluster):
    """The index of the instance of service `raw` that a task (name, cluster) is, or None."""
    index = instance_index(name, raw['name'])
    if index is not None and (cluster or task_cluster) == (raw.get('cluster') or DEFAULT_CLUSTER):
        return index
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


def _task(raw):
    """The task a service declares (its task keys)."""
    return dict((k, v) for k, v in raw.items() if k in ps.TASK_KEYS)


def _declaration(task, raw, index, revision):
    """The task an instance is: the revision's task, its name, cluster and revision, restarted always (a service
    keeps its count: an instance that stops is started again where it runs, as ECS's service scheduler replaces
    it). A stored revision has no registry password: the declared service's registry_auth (`raw`) is its own."""
    decl = dict(task)
    kept = decl.get('registry_auth')
    if isinstance(kept, dict) and not kept.get('password') and not kept.get('ecr'):
        # A stored revision: the declared service's password where it names the same registry and user; else none
        # (its image is on the hosts that ran it; a host that never pulled it cannot, and says so)
        mine = raw.get('registry_auth') if isinstance(raw.get('registry_auth'), dict) else {}
        if (mine.get('registry'), mine.get('username')) == (kept.get('registry'), kept.get('username')):
            decl['registry_auth'] = mine
        else:
            del decl['registry_auth']
    decl.update(name=ps.instance_name(raw['name'], index), cluster=raw.get('cluster') or DEFAULT_CLUSTER,
                restart='always', revision=revision)
    return decl


def _state(task):
    """What a deployment reads of an instance (the look's view): (state, failed runs)."""
    status, health = task.get('last_status'), task.get('health_status')
    if status == 'RUNNING':
        state = pd.HEALTHY if not task.get('health_checked') else {
            'HEALTHY': pd.HEALTHY, 'UNHEALTHY': pd.UNHEALTHY}.get(health, pd.PENDING)
    else:
        state = pd.PENDING if status == 'PENDING' else pd.STOPPED
    # its restart streak counts the stops that its host's converge saw; one it has not seen yet counts too
    failed = int(task.get('streak') or 0) + (state == pd.UNHEALTHY or (state == pd.STOPPED and not task.get(
        'held_until')))
    return state, failed


def _held(records, services):
    """Of revision records (as a host's look tells them), those of `services` ({(cluster, name)})."""
    return [r for r in records or () if isinstance(r, dict) and isinstance(r.get('cluster'), str)
            and isinstance(r.get('service'), str) and (r['cluster'], r['service']) in services]


class _Histories(dict):
    """The revision records the hosts keep of each service (cluster, name), merged, on first use: those of the hosts
    that declare the service alone, sealed under `seal_key`, their revision the digest of their declaration, their
    numbers within bounds (others are dropped, a warning a host and service)."""

    def __init__(self, raw_hosts, seal_key, warnings):
        dict.__init__(self)
        self.raw_hosts, self.seal_key, self.warnings = raw_hosts, seal_key, warnings
        self.owners = {}
        for raw in raw_hosts:
            for svc in raw.get('services') or ():
                if isinstance(svc, dict) and isinstance(svc.get('name'), str):
                    self.owners.setdefault((svc.get('cluster') or DEFAULT_CLUSTER, svc['name']), set()).add(
                        raw['name'])

    def __missing__(self, key):
        taken = []
        for raw in self.raw_hosts:
            held = _held(raw.get('revisions'), set([key]))
            if raw['name'] in self.owners.get(key, ()):
                reasons = [pd.untrusted(self.seal_key, r, key) for r in held]
            else:
                reasons = ['its host does not declare the service'] * len(held)
            taken.extend(r for r, why in zip(held, reasons) if why is None)
            dropped = [why for why in reasons if why is not None]
            if dropped:
                self.warnings.append('host %s: %d revision record%s of service %s (cluster %s) not taken: %s'
                                     % (raw['name'], len(dropped), '' if len(dropped) == 1 else 's', key[1], key[0],
                                        ', '.join(sorted(set(dropped)))))
        self[key] = pd.merge(taken)
        return self[key]


def _own(raw, key):
    """The records a host holds of service `key` ((cluster, name)) whose revision is the digest of their declaration,
    sealed or not, by revision: what keeps its own instances that are not placed this pass as they run, where the
    sealed history lacks their revision (a run without the records key: a host's own timer). A host's records never
    decide what another runs."""
    return dict((r['revision'], r) for r in _held(raw.get('revisions'), set([key]))
                if isinstance(r.get('declaration'), dict) and r.get('revision') == pd.revision_of(r['declaration']))


def _as_kept(raw, history, index, revision):
    """An instance kept as it runs: its revision's stored task where the hosts know it, else the declared one."""
    if revision in history:
        return _declaration(history[revision]['declaration'], raw, index, revision)
    return _declaration(_task(raw), raw, index, pd.revision_of(_task(raw)))


def _deploy(specs, by_raw, histories, found, now):
    """Each service's deployment pass: the specs and instances to place (only the target revision's), the indexes
    and capacity that other revisions keep, each service's step, and how each instance to place stands
    (services.plan.STANDING: of two copies of an index, the healthy one is kept)."""
    steps, placed_specs, placed_found, reserved, extra, standing = {}, [], [], {}, {}, {}
    for svc in specs:
        raw = by_raw[svc.name]
        key = (raw.get('cluster') or DEFAULT_CLUSTER, svc.name)
        task = _task(raw)
        seen = [s for s in found if s[0] == svc.name]
        step = pd.step(key, svc.desired, svc.deployment, pd.revision_of(task), pd.stored_declaration(task),
                       histories[key], [s[1] for s in seen], now)
        steps[svc.name] = step
        others = list(step.keep_old) + list(step.stop)
        reserved[svc.name] = set(s.index for s in others)
        if step.target is None:
            continue
        placed_specs.append(svc._replace(desired=step.count))
        for dummy, s in seen:
            if s not in others:
                placed_found.append(ps.Instance(svc.name, s.index, s.host))
                standing[placed_found[-1]] = ps.STANDING.get(s.state, 0)
        for s in step.keep_old:
            amounts = ps.needs(step.records[s.revision]['declaration']) if s.revision in step.records \
                else (svc.cpu, svc.memory, svc.gpus)
            spent = extra.setdefault(s.host, [0, 0, 0])
            for at, amount in enumerate(amounts):
                spent[at] += amount
    return steps, placed_specs, placed_found, reserved, extra, standing


def _target_task(raw, step):
    if step.target == step.declared:
        return _task(raw)
    return step.records[step.target]['declaration']


def _view(svc, raw, step, decided, seen):
    def mark(insts, name=svc.name):
        return sorted('%s@%s' % (ps.instance_name(i.service, i.index), i.host) for i in insts if i.service == name)
    target = step.records.get(step.target) if step.target else None
    declared = step.records.get(step.declared)
    mine = [s for s in seen if target is not None and s.revision == step.target]
    view = {'name': svc.name, 'cluster': raw.get('cluster') or DEFAULT_CLUSTER, 'desired_count': svc.desired,
            'placed': len(mark(list(decided.keep) + list(decided.start))), 'older': len(step.keep_old),
            'healthy': len([s for s in mine if s.state == pd.HEALTHY]), 'running': len([
                s for s in seen if s.state != pd.STOPPED]),
            'revision': target['number'] if target else None,
            'declared_revision': declared['number'] if declared else None,
            'deployment': step.status, 'failures': step.failures, 'failure_threshold': step.threshold,
            'started': mark(decided.start), 'stopped': sorted(mark(decided.stop) + [
                '%s@%s' % (ps.instance_name(svc.name, s.index), s.host) for s in step.stop]),
            'unplaced': decided.unplaced.get(svc.name)}
    view['failure'] = pd.failure_line(view)
    return view


def _records(steps, by_raw, specs, seal_key):
    """{host: the revision records it keeps}, for every host of each service (its converge writes them), each
    sealed under `seal_key`."""
    out = {}
    for svc in specs:
        cluster = by_raw[svc.name].get('cluster') or DEFAULT_CLUSTER
        recs = [pd.sealed(seal_key, dict(r, cluster=cluster, service=svc.name))
                for dummy, r in sorted(steps[svc.name].records.items())]
        for host in sorted(svc.hosts or ()):
            out.setdefault(host, []).extend(recs)
    return out


def offered(raw):
    """A host as the placement takes it, from what the services' tasks tell of it (playbooks/tasks/services.yml):
    with its `look` (ecs_task_info's result, failed or unreachable where the host is down, or the first tasks pass's
    look), whether it is up and why not, its capacity (the look's, under the inventory's `capacity`), the tasks it
    runs and the revision records it keeps. An entry without a look is taken as it is (a host with no fact)."""
    if 'look' not in raw:
        return raw
    look = raw['look'] if isinstance(raw['look'], dict) else {}
    out = dict((k, v) for k, v in raw.items() if k != 'look')
    out['up'] = look.get('tasks') is not None and not look.get('failed') and not look.get('unreachable')
    out['down_reason'] = look.get('msg') or ''
    out['capacity'] = dict(look.get('capacity') or {})
    out['capacity'].update(raw.get('capacity') or {})
    out['tasks'] = look.get('tasks') or []
    out['revisions'] = look.get('service_revisions') or []
    return out


def place(raw_hosts, complete=True, now=None, *, seal_key):
    """The placement: placement ({host: [task declaration]}), clusters ({host: [cluster]}), revisions ({host: [the
    revision records it keeps]}, sealed under `seal_key`, the records key: bytes; None only where not `complete`,
    which writes no records), services (a view each), deploying (the services whose deployment is under way), events,
    unplaced, down ({host: why}), warnings, report (lines)."""
    if complete and not seal_key:
        raise ValueError('a placement seals the records it hands the hosts: it needs the records key')
    now = now or time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
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
                                                attributes=raw.get('attributes'), state=raw.get('state')),
                                           'hosts[%d]' % i))
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
    histories = _Histories(raw_hosts, seal_key, warnings)
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
                    state, failed = _state(task)
                    found.append((name, pd.Seen(index, raw['name'], task.get('revision'), state, failed)))
                else:                                   # not placed this pass: it stays where it runs
                    key = (svc.get('cluster') or DEFAULT_CLUSTER, name)
                    history = _own(raw, key)
                    if seal_key:
                        history.update(histories[key])
                    kept[raw['name']].append(_as_kept(svc, history, index, task.get('revision')))
    placement = dict((h, list(v)) for h, v in kept.items())
    views, unplaced, events, revisions, staying = [], {}, [], {}, collections.Counter()
    if complete:
        used = dict((raw['name'], _used(raw, warnings)) for raw in raw_hosts)
        steps, placed_specs, placed_found, reserved, extra, standing = _deploy(specs, by_raw, histories, found, now)
        for host, amounts in extra.items():
            used[host] = tuple(a + b for a, b in zip(used.get(host, (0, 0, 0)), amounts))
        decided = ps.plan(placed_specs, host_specs, placed_found, used, reserved, standing)
        unplaced = decided.unplaced
        staying.update(i.host for i in decided.keep)
        for inst in list(decided.keep) + list(decided.start):
            step = steps[inst.service]
            raw = by_raw[inst.service]
            placement[inst.host].append(_declaration(_target_task(raw, step), raw, inst.index, step.target))
        for svc in specs:
            step = steps[svc.name]
            for s in step.keep_old:
                placement[s.host].append(_as_kept(by_raw[svc.name], step.records, s.index, s.revision))
            views.append(_view(svc, by_raw[svc.name], step, decided, [s for n, s in found if n == svc.name]))
            events.extend(step.events)
        revisions = _records(steps, by_raw, specs, seal_key)
    for decls in placement.values():
        decls.sort(key=lambda d: d['name'])
    clusters = sorted(set(raw.get('cluster') or DEFAULT_CLUSTER for raw in list(by_raw.values())
                          + [d for decls in mixed.values() for d in decls.values()]))
    report = [pd.service_line(v, detail=True) for v in views]
    if not complete:
        report.append('this run does not reach every host that declares services: nothing placed, each host keeps '
                      'the instances it runs')
    report += ['%s: down (%s)' % (h, why) for h, why in sorted(down.items())]
    # (a draining host's instances stop once their replacements run healthy: what is left of them)
    report += ['%s: draining, %d instance%s of services left'
               % (h.name, staying[h.name], '' if staying[h.name] == 1 else 's')
               for h in host_specs if h.draining and h.up and complete] + warnings
    deploying = sorted(v['name'] for v in views if v['deployment'] in (pd.IN_PROGRESS, pd.ROLLING_BACK))
    placed = set((by_raw[svc.name].get('cluster') or DEFAULT_CLUSTER, svc.name) for svc in specs)
    second = dict((raw['name'], _second_pass(raw, placement[raw['name']], clusters, placed,
                                             revisions.get(raw['name'], []), complete))
                  for raw in raw_hosts if raw['name'] in placement)
    return {'placement': placement, 'clusters': dict((h, clusters) for h in placement), 'services': views,
            'second_pass': second,
            'revisions': dict((h, revisions.get(h, [])) for h in placement), 'deploying': deploying,
            'events': events, 'unplaced': unplaced, 'down': down, 'warnings': warnings, 'report': report}


def _records_of(records, services):
    """Revision records as comparable text, those of `services` ({(cluster, name)}) alone."""
    return sorted(json.dumps(dict(dict((k, r.get(k)) for k in RECORD_KEYS), generation=r.get('generation') or 0),
                             sort_keys=True)
                  for r in _held(records, services))


def _second_pass(raw, share, clusters, placed, records, complete):
    """Whether a host's tasks pass must run again with its share: the first pass (drover.fleet.converge's, which
    left the services' clusters as they were) found something its share changes - an instance to start, to stop,
    of another revision, not running or unhealthy, or one that the host's settings now make otherwise (`restated`:
    a log driver mapped anew, a policy changed); a task of a service's cluster (`clusters`) that neither the host
    nor its share declares (the second pass purges it: an instance of a service no longer declared, a task dropped
    from drover_tasks); or revision records to write for the services placed (`placed`: {(cluster, name)})."""
    found = dict(((t.get('cluster') or DEFAULT_CLUSTER, t.get('name')), t) for t in raw.get('tasks') or ())
    mine = set()
    for decl in share:
        key = (decl.get('cluster') or DEFAULT_CLUSTER, decl['name'])
        mine.add(key)
        task = found.get(key)
        if task is None or task.get('revision') != decl.get('revision') or task.get('last_status') != 'RUNNING' \
                or task.get('health_status') == 'UNHEALTHY' or task.get('restated') is not None:
            return True
    own_cluster = raw.get('cluster') or DEFAULT_CLUSTER
    declared = set(((d.get('cluster') or own_cluster) if isinstance(d, dict) else None, _task_name(d))
                   for d in raw.get('declared') or ())
    if any(key[0] in clusters and key not in mine and key not in declared for key in found):
        return True
    if not complete:
        return False
    its_services = set((s.get('cluster') or DEFAULT_CLUSTER, s.get('name')) for s in raw.get('services') or ()
                       if isinstance(s, dict))
    services = set(svc for svc in placed if svc in its_services)
    return _records_of(raw.get('revisions') or (), services) != _records_of(records, services)


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
            'hosts': {'type': 'list', 'elements': 'dict'},
            'complete': {'type': 'bool', 'default': True},
            'report': {'type': 'dict'},
            'records_key': {'type': 'str', 'no_log': True},
        }, mutually_exclusive=[('hosts', 'report')], required_one_of=[('hosts', 'report')])
        if args['report'] is not None:
            # A placement's public part (no declaration, no secret), for the events and the recap.
            result.update((k, args['report'].get(k)) for k in PUBLIC)
        else:
            try:
                # (a run that places nothing writes no records: it makes no key, on a host's own timer above all)
                seal_key = records_key(args['records_key'], create=args['complete'])
            except RecordsKeyError as exc:
                raise AnsibleActionFail(str(exc))
            raw_hosts = [offered(raw) for raw in args['hosts']]
            placed = place(raw_hosts, args['complete'], seal_key=seal_key)
            placed['public'] = dict((k, placed[k]) for k in PUBLIC)
            result.update(placed)
            # the hosts whose look answered: each converges its tasks with its share
            result['answered'] = [raw['name'] for raw in raw_hosts if raw.get('up')]
        result['changed'] = False
        return result
