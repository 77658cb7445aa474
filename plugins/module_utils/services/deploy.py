# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Services: deployments - a changed service replaced a few instances at a time, gated on their health, with a
circuit breaker that rolls a failing revision back.

Owns: what a service's revision is (a digest of the task it declares), where its deployment stands (the revision
records, as the hosts keep them), and for one pass: the revision its instances converge to (the target), how many
instances of it the pass may have, which instances of other revisions stop, whether the breaker trips, and the
events. ECS's rolling update: at least `minimum_healthy_percent` of the desired count healthy (rounded up), at
most `maximum_percent` running (rounded down); the breaker's threshold is half the desired count, at least 3, at
most 200, counted over the new revision's failed runs; a tripped breaker marks the revision failed and, with
`rollback`, makes the last revision that completed the target again. A record's seal (an HMAC under the
controller's key) and which records of a service a host holds can be taken (`untrusted`): a host keeps the records,
but may not write one of its own that the placement takes.
Must not: place anything (services.plan does, with the counts this gives), read a host or keep anything between
calls: the revision records come from the hosts and go back to them (design.md: a fleet-wide decision is a pure
function of the hosts' observed state).

An instance seen is (index, host, revision, state, failures): `state` healthy (running, and healthy where its
health is checked), pending (running, health not known yet), unhealthy (running) or stopped; `failures` the runs of
it that failed (its restart streak, and one for a failure not yet counted there).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import hashlib
import hmac
import json
import math

from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import (
    COMPLETED, FAILED, IN_PROGRESS, REPLACED, SEALED_KEYS, STATUSES, bounded, stored_declaration)
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

DEFAULTS = {'minimum_healthy_percent': 100, 'maximum_percent': 200}
BREAKER_DEFAULTS = {'enable': True, 'rollback': True}
HEALTHY, PENDING, UNHEALTHY, STOPPED = 'healthy', 'pending', 'unhealthy', 'stopped'
# where a deployment stands once its revision failed: the previous revision coming back, or back and healthy
ROLLING_BACK, ROLLED_BACK = 'rolling_back', 'rolled_back'
KEEP_RECORDS = 5                        # the revisions the hosts keep of a service (and any the pass needs)

Deployment = collections.namedtuple('Deployment', ('minimum_healthy_percent', 'maximum_percent', 'breaker',
                                                   'rollback'))
Seen = collections.namedtuple('Seen', ('index', 'host', 'revision', 'state', 'failures'))
# target: the revision the pass converges to (None: frozen, every instance kept as it is); count: how many of its
# instances the pass may have; keep_old / stop: the instances (Seen) of other revisions kept and stopped;
# records: the revision records after the pass ({revision: record}); status: where the service stands; declared:
# the revision the inventory declares
Step = collections.namedtuple('Step', ('target', 'count', 'keep_old', 'stop', 'records', 'events', 'status',
                                       'failures', 'threshold', 'declared'))


def deployment_spec(raw, where='service'):
    """A service's `deployment`, checked: a Deployment. Raises SpecError naming the field."""
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise SpecError('%s.deployment must be a mapping' % where)
    unknown = sorted(set(raw) - set(DEFAULTS) - set(['circuit_breaker']))
    if unknown:
        raise SpecError('%s.deployment has unsupported keys: %s (it takes circuit_breaker, maximum_percent, '
                        'minimum_healthy_percent)' % (where, ', '.join(unknown)))
    values = {}
    for key, default in DEFAULTS.items():
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or \
                (key == 'minimum_healthy_percent' and value > 100) or (key == 'maximum_percent' and value < 100):
            raise SpecError('%s.deployment.%s must be a whole number %s, got %r' % (
                where, key, 'from 0 to 100' if key == 'minimum_healthy_percent' else 'of at least 100', value))
        values[key] = value
    breaker = raw.get('circuit_breaker')
    breaker = {} if breaker is None else breaker
    if not isinstance(breaker, dict) or set(breaker) - set(BREAKER_DEFAULTS):
        raise SpecError('%s.deployment.circuit_breaker must be a mapping of enable and rollback, got %r'
                        % (where, breaker))
    flags = {}
    for key, default in BREAKER_DEFAULTS.items():
        flags[key] = breaker.get(key, default)
        if not isinstance(flags[key], bool):
            raise SpecError('%s.deployment.circuit_breaker.%s must be true or false, got %r'
                            % (where, key, flags[key]))
    return Deployment(values['minimum_healthy_percent'], values['maximum_percent'], flags['enable'],
                      flags['rollback'])


def bounds(desired, dep):
    """(the fewest instances that must stay healthy, the most that may run) during a deployment."""
    return (int(math.ceil(desired * dep.minimum_healthy_percent / 100.0)),
            int(math.floor(desired * dep.maximum_percent / 100.0)))


def check_room(desired, dep, where='service'):
    """A deployment must be able to move: more may run than must stay healthy."""
    low, high = bounds(desired, dep)
    if desired and high <= low:
        raise SpecError('%s.deployment: with desired_count %d, minimum_healthy_percent %d keeps %d healthy and '
                        'maximum_percent %d lets %d run: a new revision could never start; lower the first or raise '
                        'the second' % (where, desired, dep.minimum_healthy_percent, low, dep.maximum_percent, high))


def threshold(desired):
    """The circuit breaker's threshold: half the desired count (rounded up), at least 3, at most 200 (as ECS)."""
    return min(max(int(math.ceil(desired / 2.0)), 3), 200)


def revision_of(task):
    """A revision: a digest of the task a service declares (its task keys; the registry password left out, so
    that a rotated password is not a new revision)."""
    text = json.dumps(stored_declaration(task), sort_keys=True, default=str)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]


def seal(key, record):
    """A revision record's seal: hex HMAC-SHA256 under `key` (the controller's, bytes) of a canonical JSON of its
    fields (SEALED_KEYS). The same record gives the same seal on every controller holding the key."""
    fields = dict((k, record.get(k)) for k in SEALED_KEYS)
    text = json.dumps(['drover-service-record-v1', fields], sort_keys=True, separators=(',', ':'), default=str)
    return hmac.new(key, text.encode('utf-8'), hashlib.sha256).hexdigest()


def sealed(key, record):
    """The record with its seal."""
    out = dict(record)
    out['seal'] = seal(key, out)
    return out


def untrusted(key, record, service):
    """Why a revision record that a host holds of `service` ((cluster, name)) is not taken, or None where it is:
    its seal must be the controller's over its fields, its revision the digest of its declaration, its numbers
    within their bounds. What it says is a reason of a few words, never the record's content."""
    if (record.get('cluster'), record.get('service')) != tuple(service):
        return 'of another service'
    if not all(bounded(record.get(k), low) for k, low in (('number', 1), ('generation', 0))) or \
            (record.get('rollback_of') is not None and not bounded(record.get('rollback_of'), 1)):
        return 'numbers out of bounds'
    if record.get('status') not in STATUSES or not isinstance(record.get('declaration'), dict) or \
            record.get('revision') != revision_of(record['declaration']):
        return 'revision not the digest of its declaration'
    mark = record.get('seal')
    if not isinstance(mark, str) or not mark:
        return 'unsealed'
    if not hmac.compare_digest(mark.encode('utf-8', 'replace'), seal(key, record).encode('ascii')):
        return 'badly sealed'
    return None


def merge(records):
    """The revision records that several hosts hold of one service, as one {revision: record}: for each revision
    the latest (the highest `generation`: every change of a service's records takes the next one), then the one
    furthest along (failed over completed over in progress over replaced)."""
    rank = {REPLACED: 0, IN_PROGRESS: 1, COMPLETED: 2, FAILED: 3}

    def key(rec):
        return (rec.get('generation') or 0, rank.get(rec['status'], -1), rec['number'])
    out = {}
    for rec in records:
        have = out.get(rec['revision'])
        if have is None or key(rec) > key(have):
            out[rec['revision']] = dict(rec)
    return out


def _fallback(records, failed):
    """The revision a failed one rolls back to: the latest that completed (or whose rollback is under way)."""
    choices = [r for r in records.values() if r['revision'] != failed and (
        r['status'] == COMPLETED or (r['status'] == IN_PROGRESS and r.get('rollback_of') is not None))]
    return max(choices, key=lambda r: r['number'])['revision'] if choices else None


def _event(kind, service, now, **data):
    out = {'event': kind, 'at': now, 'cluster': service[0], 'service': service[1],
           'subject': 'service/%s/%s' % service}
    out.update(data)
    return out


def step(service, desired, dep, declared, declaration, records, seen, now):
    """One pass of a service's deployment. `service`: (cluster, name); `declared`: the revision the inventory
    declares, `declaration` its task as stored; `records`: {revision: record} as the hosts keep them; `seen`: the
    instances (Seen) on the hosts that are up; `now`: the events' time (ISO). Returns a Step."""
    records = dict((k, dict(v)) for k, v in records.items())
    events = []
    generation = [max([r.get('generation') or 0 for r in records.values()] or [0]) + 1]

    def mark(rec, **change):
        rec.update(change, generation=generation[0])

    current = records.get(declared)
    superseded = [r for r in records.values() if r['revision'] != declared and r['status'] == IN_PROGRESS
                  and r.get('rollback_of') is None]
    # A new revision, or one declared again (a revert) while another deployment is under way or after it gave way:
    # a deployment of it starts, and one under way gives way to it.
    if current is None or current['status'] == REPLACED or (current['status'] == COMPLETED and superseded):
        for rec in superseded:
            mark(rec, status=REPLACED)
        if current is None:
            number = max([r['number'] for r in records.values()] or [0]) + 1
            current = records[declared] = {'revision': declared, 'number': number, 'rollback_of': None,
                                           'declaration': declaration}
        mark(current, status=IN_PROGRESS, rollback_of=None)
        events.append(_event('service.deployment.started', service, now, revision=current['number'],
                             desired_count=desired))
    limit = threshold(desired)
    target = declared
    if current['status'] == FAILED:
        target = _fallback(records, declared) if dep.rollback else None
    failures = 0
    if target == declared and current['status'] == IN_PROGRESS and dep.breaker:
        # (an instance whose image never came has no container, so no revision label: it counts as the target's)
        failures = sum(s.failures for s in seen if s.revision == declared or s.revision not in records)
        if failures >= limit:
            mark(current, status=FAILED)
            events.append(_event('service.deployment.failed', service, now, revision=current['number'],
                                 reason='circuit breaker: %d failed runs of revision %d, threshold %d' % (
                                     failures, current['number'], limit)))
            target = _fallback(records, declared) if dep.rollback else None
            if target is not None:
                mark(records[target], status=IN_PROGRESS, rollback_of=current['number'])
                events.append(_event('service.deployment.rolled_back', service, now, revision=current['number'],
                                     to_revision=records[target]['number']))
    if target is None:                          # failed without a rollback: every instance stays as it is
        return Step(None, 0, list(seen), [], _pruned(records, declared, None, seen), events, FAILED, failures, limit,
                    declared)
    # An instance of a revision the hosts no longer know is taken for one of the target (its declaration is
    # the target's: it is replaced where it runs).
    known = set(r for r in records if r != target)
    new = [s for s in seen if s.revision not in known]
    old = [s for s in seen if s not in new]
    low, high = bounds(desired, dep)
    healthy_new = len([s for s in new if s.state == HEALTHY])
    old_healthy = sorted((s for s in old if s.state == HEALTHY), key=lambda s: (s.index, s.host))
    stop = [s for s in old if s.state != HEALTHY]
    # what may run: every instance of the target (a stopped one is kept, and restarts), the others not stopped
    running = len(new) + len([s for s in old if s.state != STOPPED])
    start = max(0, min(desired - len(new), high - running))
    can_stop = max(0, len(old_healthy) + healthy_new - low)
    stopping = old_healthy[len(old_healthy) - min(can_stop, len(old_healthy)):]
    stop += stopping
    keep_old = [s for s in old_healthy if s not in stopping]
    rec = records[target]
    status = rec['status']
    # (scaled to 0: nothing is to turn healthy, and the pass stops every old instance it saw - done with it; one that
    # a host fails to stop is seen at the next pass, and the deployment goes on)
    done = (not old or (desired == 0 and not keep_old)) and len(new) == desired and healthy_new == desired and \
        all(s.revision == target for s in new)
    if rec['status'] == IN_PROGRESS and done:
        mark(rec, status=COMPLETED)
        status = COMPLETED
        events.append(_event('service.deployment.completed', service, now, revision=rec['number'],
                             desired_count=desired, **({'rollback_of': rec['rollback_of']}
                                                       if rec.get('rollback_of') is not None else {})))
    elif rec['status'] == COMPLETED and not done:
        status = IN_PROGRESS if old else COMPLETED
    if target != declared:
        status = ROLLED_BACK if rec['status'] == COMPLETED else ROLLING_BACK
    return Step(target, min(len(new), desired) + start, keep_old, stop, _pruned(records, declared, target, seen),
                events, status, failures, limit, declared)


def _pruned(records, declared, target, seen):
    """The records the hosts keep: the latest KEEP_RECORDS; the declared and target revisions, those an instance
    runs, and the latest that completed (what a rollback returns to)."""
    latest = sorted(records.values(), key=lambda r: -r['number'])[:KEEP_RECORDS]
    keep = set(r['revision'] for r in latest) | set(r for r in (declared, target) if r)
    keep |= set(s.revision for s in seen)
    done = [r for r in records.values() if r['status'] == COMPLETED]
    if done:
        keep.add(max(done, key=lambda r: r['number'])['revision'])
    return dict((k, v) for k, v in records.items() if k in keep)


def failure_line(view):
    """What a deployment that did not complete tells its user (drover.fleet.deploy's failure), from the service's
    view; None for one that completed or goes on. `web: revision 3 failed (circuit breaker: 3/3); rolled back, runs
    2/2 healthy on revision 2`."""
    state = view.get('deployment')
    if state not in (ROLLING_BACK, ROLLED_BACK, FAILED):
        return None
    text = '%s: revision %s failed (circuit breaker: %d/%d)' % (
        view['name'], view.get('declared_revision'), view.get('failures') or 0, view.get('failure_threshold') or 0)
    health = '%d/%d healthy on revision %s' % (view['healthy'], view['desired_count'], view.get('revision'))
    if state == ROLLED_BACK:
        return text + '; rolled back, runs %s' % health
    if state == ROLLING_BACK:
        return text + '; rolling back to revision %s, %s so far' % (view.get('revision'), health)
    return text + '; no rollback (circuit_breaker.rollback is off, or no earlier revision completed): its ' \
        'instances stay as they run (%d running)' % view.get('running', 0)


def service_line(view, detail=False):
    """A service's line, from its view (drover.fleet.service_placement's `services`): `web: 9/9 healthy, revision
    7` and where its deployment stands; with `detail` (the placement's report), the instances running while it
    deploys, the breaker's count, and how many are placed, of an older revision and unplaced."""
    revision = view.get('revision') if view.get('revision') is not None else '-'
    text = '%s: %d/%d healthy, revision %s' % (view['name'], view['healthy'], view['desired_count'], revision)
    state = view.get('deployment')
    if state == IN_PROGRESS:
        text += ', deploying' + (' (%d running)' % view['running'] if detail else '')
    elif state in (ROLLING_BACK, ROLLED_BACK):
        text += ', %s: revision %s failed' % (state.replace('_', ' '), view.get('declared_revision'))
    elif state == FAILED:
        text += ', deployment failed (revision %s' % view.get('declared_revision')
        text += (', circuit breaker: %d/%d)' % (view['failures'], view['failure_threshold'])) if detail else ')'
    if not detail:
        return text
    text += ', %d/%d placed' % (view['placed'], view['desired_count'])
    if view['older']:
        text += ' (and %d of an older revision)' % view['older']
    if view['unplaced']:
        text += ', %d unplaced' % view['unplaced']['count']
    return text
