# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Services: where each task of a service runs, decided once for the whole fleet.

Owns: the placement of services' task instances on hosts - what stays, what starts where, what stops, and
what cannot be placed with the reason on each host - from the services as declared, every host's capacity,
attributes and reachability, what each host already runs for other reasons (declared tasks), and the
instances the hosts were found running. ECS's model: `desired_count`; constraints `distinctInstance` and
`memberOf` (the cluster query language of tasks.placement); strategies applied in order, each narrowing the hosts
the previous one left - `spread` by `instanceId` or `attribute:<name>`, `binpack` by `cpu` or `memory`,
`random` (seeded by the service and the instance, so that two controllers decide alike).
Must not: read a host, an engine or a store, keep anything between calls, or start anything: the inputs are
arguments and the answer is a value (design.md: a fleet-wide decision is a pure function of the hosts'
observed state, run once on the controller). Deployments (revisions replaced in steps) build on this.

Capacity: `cpu` in CPU units (1,024 a core, as ECS counts), `memory` in MiB, `gpus` whole devices. A host's
free capacity is its own less what it runs for other reasons (`used`) and less the instances kept or placed
here; an instance is placed only where all three fit. A host that is not up runs nothing here: its instances
count as lost and are placed again elsewhere; when it comes back, the excess over `desired_count` stops
(the instances placed in its absence are as good as its own, and the strategies choose).

An instance is `<service>-<index>`: the index is the lowest one that no instance found holds. A host that is
down tells nothing, so an instance placed again may take the name of one it held; when it returns, each index
is kept on one host alone and the others stop: nothing runs twice. What runs healthy is kept before what starts,
what is unhealthy and what is stopped (`standing`), so that a host that returns with a stale copy does not win
over the healthy replacement; among equals, the first host by name. Where a service has too many, the worst
standing stops first.

A host set to draining (`drover_host_state: draining`, as ECS's DRAINING container instances and Nomad's node drain)
takes no new instance; its instances are placed again on the others first (as if lost, within their capacity) and
each stops only once the service has `desired_count` instances running healthy elsewhere: nothing is stopped before
its replacement serves. Set active again, it takes instances as any host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import hashlib

from ansible_collections.drover.fleet.plugins.module_utils.tasks import placement as _placement
from ansible_collections.drover.fleet.plugins.module_utils.services import deploy as _plan_deploy
from ansible_collections.drover.fleet.plugins.module_utils.front.argspecs import TASK_ENTRY_OPTIONS
from ansible_collections.drover.fleet.plugins.module_utils.tasks.settings import whole
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
from ansible_collections.drover.fleet.plugins.module_utils.tasks.level import cpu_units, memory_mib

CPU_UNITS = 1024                            # a core, as ECS counts CPU
STRATEGY_TYPES = ('spread', 'binpack', 'random')
BINPACK_FIELDS = ('cpu', 'memory')
SPREAD_INSTANCE = 'instanceId'
CONSTRAINT_TYPES = ('distinctInstance', 'memberOf')
MAX_DESIRED = 10000
# What a service declaration holds: its own keys, and those of the task its instances are (as drover_tasks takes
# them; a task's own placement_constraints, state, stop_reason and cred_id are not a service's).
SERVICE_OWN = ('name', 'cluster', 'desired_count', 'placement_constraints', 'placement_strategy', 'deployment')
TASK_KEYS = tuple(k for k in TASK_ENTRY_OPTIONS if k not in SERVICE_OWN + ('state', 'stop_reason', 'cred_id', 'revision'))
SERVICE_KEYS = frozenset(SERVICE_OWN + TASK_KEYS)

# hosts: the names of the hosts that declare the service (None: every host)
# deployment: how a new revision replaces the running one (services.deploy.Deployment)
Service = collections.namedtuple('Service', ('name', 'desired', 'cpu', 'memory', 'gpus', 'constraints', 'strategy',
                                             'hosts', 'deployment'))
Service.__new__.__defaults__ = (None, None)
# draining: the host takes no new instance, and its instances move to the others (drover_host_state: draining)
Host = collections.namedtuple('Host', ('name', 'cpu', 'memory', 'gpus', 'attributes', 'up', 'draining'))
Host.__new__.__defaults__ = (False,)
HOST_STATES = ('active', 'draining')
Instance = collections.namedtuple('Instance', ('service', 'index', 'host'))
Plan = collections.namedtuple('Plan', ('keep', 'start', 'stop', 'lost', 'unplaced'))
# How an instance found stands, best first (services.deploy's states): of two copies of one index, the better is kept.
STANDING = {_plan_deploy.HEALTHY: 0, _plan_deploy.PENDING: 1, _plan_deploy.UNHEALTHY: 2, _plan_deploy.STOPPED: 3}


def instance_name(service, index):
    return '%s-%d' % (service, index)


def _whole(value, field, low=0, high=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        raise SpecError('%s must be a whole number%s, got %r' % (
            field, ' from %d to %d' % (low, high) if high is not None else ' of at least %d' % low, value))
    return value


def _typed(raw, key, where, types):
    """The entries of a list of typed mappings (ECS's placement constraints and strategies): (field, type, entry)."""
    entries = raw.get(key) or []
    if not isinstance(entries, list):
        raise SpecError('%s.%s must be a list' % (where, key))
    for i, entry in enumerate(entries):
        field = '%s.%s[%d]' % (where, key, i)
        kind = entry.get('type') if isinstance(entry, dict) else None
        if kind not in types:
            raise SpecError('%s.type must be one of %s, got %r' % (field, ', '.join(types), kind))
        yield field, kind, entry


def service_spec(raw, where='service'):
    """One declared service, checked: a Service. Raises SpecError naming the field."""
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping' % where)
    name = raw.get('name')
    if not isinstance(name, str) or not name or not name.replace('-', '').replace('_', '').isalnum():
        raise SpecError('%s.name must be letters, digits, "-" and "_", got %r' % (where, name))
    unknown = sorted(set(raw) - SERVICE_KEYS)
    if unknown:
        takes = ', '.join(sorted(SERVICE_KEYS))
        raise SpecError('%s has unsupported keys: %s (a service takes %s)' % (where, ', '.join(unknown), takes))
    desired = _whole(raw.get('desired_count', 1), '%s.desired_count' % where, 0, MAX_DESIRED)
    cpu, memory, gpus = needs(raw, where)
    constraints = []
    for field, kind, entry in _typed(raw, 'placement_constraints', where, CONSTRAINT_TYPES):
        if kind == 'distinctInstance':
            constraints.append(('distinctInstance', None))
        else:
            constraints.append(('memberOf', _placement.parse(entry.get('expression'), '%s.expression' % field)))
    strategy = []
    for field, kind, entry in _typed(raw, 'placement_strategy', where, STRATEGY_TYPES):
        on = entry.get('field')
        if kind == 'binpack' and on not in BINPACK_FIELDS:
            raise SpecError('%s.field must be cpu or memory for binpack, got %r' % (field, on))
        if kind == 'spread':
            on = on or SPREAD_INSTANCE
            if on != SPREAD_INSTANCE and (not isinstance(on, str) or not on.startswith('attribute:')
                                          or len(on) == len('attribute:')):
                raise SpecError('%s.field must be instanceId or attribute:<name> for spread, got %r' % (field, on))
        strategy.append((kind, on))
    deployment = _plan_deploy.deployment_spec(raw.get('deployment'), where)
    _plan_deploy.check_room(desired, deployment, where)
    return Service(name, desired, cpu, memory, gpus, tuple(constraints), tuple(strategy), None, deployment)


def host_spec(raw, where='host'):
    """One host's capacity and attributes, checked: a Host."""
    if not isinstance(raw, dict) or not isinstance(raw.get('name'), str) or not raw['name']:
        raise SpecError('%s must be a mapping with a name' % where)
    attributes = dict((str(k), str(v)) for k, v in (raw.get('attributes') or {}).items() if v is not None)
    state = raw.get('state') or 'active'
    if state not in HOST_STATES:
        raise SpecError('%s.state (drover_host_state) must be one of %s, got %r'
                        % (where, ', '.join(HOST_STATES), state))
    return Host(raw['name'], _whole(raw.get('cpu') or 0, '%s.cpu' % where),
                _whole(raw.get('memory') or 0, '%s.memory' % where), _whole(raw.get('gpus') or 0, '%s.gpus' % where),
                attributes, bool(raw.get('up', True)), state == 'draining')


class _Room:
    """The free capacity of every host, spent as instances are kept and placed."""

    def __init__(self, hosts, used):
        self.free = {}
        for host in hosts:
            cpu, memory, gpus = (used or {}).get(host.name, (0, 0, 0))
            self.free[host.name] = [host.cpu - cpu, host.memory - memory, host.gpus - gpus]

    def lacks(self, host, svc):
        """What the host lacks for one more instance of svc ('cpu', 'memory', 'gpus'), or None."""
        free = self.free[host]
        for i, (what, need) in enumerate((('cpu', svc.cpu), ('memory', svc.memory), ('gpus', svc.gpus))):
            if need and free[i] < need:
                return what
        return None

    def take(self, host, svc, sign=1):
        free = self.free[host]
        free[0] -= sign * svc.cpu
        free[1] -= sign * svc.memory
        free[2] -= sign * svc.gpus


def _member(svc, host):
    return all(_placement.holds(node, host.attributes) for kind, node in svc.constraints if kind == 'memberOf')


def _distinct(svc):
    return any(kind == 'distinctInstance' for kind, dummy in svc.constraints)


def _group(host, on):
    return host.name if on == SPREAD_INSTANCE else host.attributes.get(on[len('attribute:'):])


def _draw(svc, index, host):
    return hashlib.sha256(('%s/%d/%s' % (svc.name, index, host)).encode()).hexdigest()


def _choose(svc, index, candidates, by_name, counts, room):
    """The host of a new instance: the strategies narrow the candidates in order; the first by name wins."""
    left = candidates
    for kind, on in svc.strategy:
        if len(left) < 2:
            break
        if kind == 'spread':
            keyed = [(counts[on].get(_group(by_name[h], on), 0), h) for h in left]
        elif kind == 'binpack':
            at = 0 if on == 'cpu' else 1
            keyed = [(room.free[h][at], h) for h in left]
        else:
            keyed = [(_draw(svc, index, h), h) for h in left]
        best = min(k for k, dummy in keyed)
        left = [h for k, h in keyed if k == best]
    return min(left)


def _victim(svc, mine, by_name, counts, room, standing):
    """Which of the service's kept instances stops first when it has too many: of those of the worst standing,
    one the strategies would least have placed (spread: in the fullest group; binpack: on the emptiest host), else
    the highest index."""
    worst = max(standing.get(i, 0) for i in mine)
    left = [i for i in mine if standing.get(i, 0) == worst]
    for kind, on in svc.strategy:
        if len(left) < 2:
            break
        if kind == 'spread':
            keyed = [(counts[on].get(_group(by_name[i.host], on), 0), i) for i in left]
        elif kind == 'binpack':
            at = 0 if on == 'cpu' else 1
            keyed = [(room.free[i.host][at], i) for i in left]
        else:
            continue
        best = max(k for k, dummy in keyed)
        left = [i for k, i in keyed if k == best]
    return max(left, key=lambda i: i.index)


def plan(services, hosts, found, used=None, reserved=None, standing=None):
    """Place every service: a Plan of keep, start and stop (lists of Instance), lost (instances found on hosts that
    are not up, each placed again) and unplaced ({service: {'count': n, 'reasons': {host: why}}}).
    `found`: the instances the hosts run (Instance), `used`: {host: (cpu, memory, gpus)} spent otherwise,
    `reserved`: {service: indexes} held by instances of its other revisions (never given to a new one),
    `standing`: {Instance found: how it stands, lower is better (STANDING)}; not there: as running healthy.
    Two phases: what runs is kept first, for every service (a new instance never evicts a running one), then what
    is missing is placed."""
    by_name = dict((h.name, h) for h in hosts)
    standing = standing or {}
    room = _Room(hosts, used)
    keep, start, stop, lost, unplaced = [], [], [], [], {}
    declared = dict((s.name, s) for s in services)
    for inst in found:
        if inst.service not in declared and by_name.get(inst.host) is not None and by_name[inst.host].up:
            stop.append(inst)                                   # a service no longer declared
    ordered = sorted(services, key=lambda s: s.name)
    state = {}
    for svc in ordered:                                         # 1. keep what runs where it may
        # of two copies of one index, one on a host that stays before one on a draining host, then the better standing
        theirs = sorted((i for i in found if i.service == svc.name),
                        key=lambda i: (i.index, getattr(by_name.get(i.host), 'draining', False), standing.get(i, 0),
                                       i.host))
        counts = dict((on, collections.Counter()) for kind, on in svc.strategy if kind == 'spread')
        mine, on_host, held, leaving = [], collections.Counter(), set(), []
        for inst in theirs:
            host = by_name.get(inst.host)
            if host is None or not host.up:
                lost.append(inst)
                continue
            if host.draining and inst.index not in held and _allowed(svc, host):
                leaving.append(inst)                            # replaced elsewhere first (3.)
                held.add(inst.index)
                room.take(inst.host, svc)
                continue
            misplaced = inst.index in held or not _allowed(svc, host) or (_distinct(svc) and on_host[inst.host]) \
                or room.lacks(inst.host, svc) is not None
            if misplaced:
                stop.append(inst)
                continue
            mine.append(inst)
            held.add(inst.index)
            on_host[inst.host] += 1
            room.take(inst.host, svc)
            for on, counter in counts.items():
                counter[_group(host, on)] += 1
        while len(mine) > svc.desired:
            victim = _victim(svc, mine, by_name, counts, room, standing)
            mine.remove(victim)
            stop.append(victim)
            on_host[victim.host] -= 1
            room.take(victim.host, svc, sign=-1)
            for on, counter in counts.items():
                counter[_group(by_name[victim.host], on)] -= 1
        keep.extend(mine)
        taken = set(i.index for i in theirs if by_name.get(i.host) is not None and by_name[i.host].up)
        taken |= set((reserved or {}).get(svc.name) or ())
        state[svc.name] = (mine, on_host, counts, taken, leaving)
    for svc in ordered:                                         # 2. place what is missing
        mine, on_host, counts, taken, leaving = state[svc.name]
        index = 0
        missing = svc.desired - len(mine)
        # Reachability and membership hold for the whole pass; distinctInstance and capacity change as it places.
        fixed = dict((h.name, _fixed_refusal(svc, h)) for h in hosts)
        eligible = [h.name for h in hosts if fixed[h.name] is None]
        distinct = _distinct(svc)
        while missing > 0:
            candidates = [h for h in eligible if not (distinct and on_host[h]) and room.lacks(h, svc) is None]
            if not candidates:
                reasons = dict((h.name, fixed[h.name] or _refusal(svc, h.name, distinct, on_host, room))
                               for h in hosts)
                unplaced[svc.name] = {'count': missing, 'reasons': reasons}
                break
            while index in taken:
                index += 1
            taken.add(index)
            chosen = _choose(svc, index, candidates, by_name, counts, room)
            start.append(Instance(svc.name, index, chosen))
            on_host[chosen] += 1
            room.take(chosen, svc)
            for on, counter in counts.items():
                counter[_group(by_name[chosen], on)] += 1
            missing -= 1
    for svc in ordered:                                         # 3. what draining hosts run
        mine, dummy, dummy, dummy, leaving = state[svc.name]
        # each stays while the instances kept elsewhere that run healthy are fewer than desired: it stops once its
        # replacement (started in 2., or any other) runs healthy
        healthy = len([i for i in mine if standing.get(i, 0) == STANDING[_plan_deploy.HEALTHY]])
        stays = max(0, min(len(leaving), svc.desired - healthy))
        ranked = sorted(leaving, key=lambda i: (standing.get(i, 0), i.index))
        keep.extend(ranked[:stays])
        stop.extend(ranked[stays:])
    return Plan(keep, start, stop, lost, unplaced)


def _allowed(svc, host):
    return (svc.hosts is None or host.name in svc.hosts) and _member(svc, host)


def _fixed_refusal(svc, host):
    """Why a host never takes an instance of svc this pass (down, not one of its hosts, memberOf), or None."""
    if not host.up:
        return 'unreachable'
    if host.draining:
        return 'draining'
    if svc.hosts is not None and host.name not in svc.hosts:
        return 'does not declare the service'
    return None if _member(svc, host) else 'memberOf'


def _refusal(svc, host, distinct, on_host, room):
    """Why a reachable member host takes no further instance of svc."""
    if distinct and on_host[host]:
        return 'distinctInstance'
    return 'not enough %s' % room.lacks(host, svc)


def needs(decl, where='task'):
    """What one task takes of a host: (cpu units, memory MiB, gpus), from a declaration as drover_tasks holds it
    (`containers`, or an ECS `task_definition`): the task-level cpu and memory where given (as ECS writes them,
    read as ecs_task reads them), else the sum of its containers' (memory, else memoryReservation); GPUs the sum
    of the containers'. Raises SpecError naming the field."""
    td = decl.get('task_definition') or {}
    if isinstance(td, dict) and isinstance(td.get('taskDefinition'), dict):
        td = td['taskDefinition']
    if not isinstance(td, dict):
        td = {}
    own = decl.get('containers')
    containers = own or td.get('containerDefinitions') or []
    at = '%s.containers' % where if own else '%s.task_definition.containerDefinitions' % where
    cpu = memory = gpus = 0
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        if not isinstance(c, dict):
            continue
        field = '%s[%d]' % (at, i)
        cpu += whole(c.get('cpu') or 0, field + '.cpu', 0)
        for key in ('memory', 'memory_reservation', 'memoryReservation'):
            if c.get(key):
                memory += whole(c[key], '%s.%s' % (field, key), 0)
                break
        gpus += whole(c.get('gpu') or 0, field + '.gpu', 0)
        for j, req in enumerate(c.get('resourceRequirements') or []):
            if isinstance(req, dict) and req.get('type') == 'GPU':
                gpus += whole(req.get('value') or 0, '%s.resourceRequirements[%d].value' % (field, j), 0)
    level_cpu, level_memory = decl.get('cpu', td.get('cpu')), decl.get('memory', td.get('memory'))
    if level_cpu not in (None, ''):
        cpu = cpu_units(level_cpu, '%s.cpu' % where)
    if level_memory not in (None, ''):
        memory = memory_mib(level_memory, '%s.memory' % where)
    return cpu, memory, gpus
