# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task decider: what one pass must do to one task.

Owns: stop-first ordering, detection of exited essential containers and vanished containers,
replacement of a changed task, the restart policies, the restart streak and its backoff hold, the health of
containers and tasks (and the stop of a task whose essential container turned unhealthy), the reason
strings, and the name a message gives a declared container field (containers[0].gpu, or the task
definition's). Input: the declaration, what the engine shows for the task's labels, the stored record, and the
clock (an argument). Output: a Plan.
Must not: do any I/O or read the clock.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec as spec_mod

# Backoff of a task that keeps stopping (and of a failing runner pool): 30 s doubling up to 600 s.
BACKOFF_BASE = 30
BACKOFF_CAP = 600
# A run that stayed up this long before it stopped starts a new streak instead of lengthening the old one.
STABLE_RUN = BACKOFF_CAP

PENDING, RUNNING, STOPPED = 'PENDING', 'RUNNING', 'STOPPED'
# A container's restart policy (ECS restartPolicy): how long a run must have lasted to run again at once, unset.
RESTART_ATTEMPT_PERIOD = 300

# Reason strings, word for word (behaviour.md).
TASK_STOPPED = 'Task stopped'
EXITED_UNSEEN = 'Container exited while no converge was running'
HEALTH_FAILED = 'Task failed container health checks'

# Health, as ECS reports it for a container and for a task.
HEALTHY, UNHEALTHY, UNKNOWN = 'HEALTHY', 'UNHEALTHY', 'UNKNOWN'
# The label of a container declared with a health check: only such a check counts (not the image's HEALTHCHECK).
HEALTH_LABEL = 'drover.health-check'
ENGINE_HEALTH = {'healthy': HEALTHY, 'unhealthy': UNHEALTHY}


def gpu_field(decl, name):
    """The field that asks for the GPUs of container `name` of a task, as the declaration names it
    (containers[0].gpu, task_definition.containerDefinitions[0].resourceRequirements, after tasks[N].)."""
    index = [c.name for c in decl.containers].index(name)
    field = (decl.where or {}).get('containers') or 'containers'
    return '%s[%d].%s' % (field, index, 'resourceRequirements' if field.endswith('containerDefinitions') else 'gpu')


def reason_exited(name, code):
    return 'container %s exited (%s)' % (name, 'unknown' if code is None else code)


def reason_pull(err):
    return 'image pull failed: %s' % err


def reason_start(err):
    return 'container start failed: %s' % err


def reason_secrets(err):
    return 'ResourceInitializationError: unable to read secrets or environment files: %s' % err


def reason_network(err):
    return 'network setup failed: %s' % err


def backoff(n):
    """Seconds to hold after the n-th stop in a row (n >= 1): 30, 60, 120, 240, 480, 600, 600, ..."""
    return min(BACKOFF_BASE << min(max(n, 1) - 1, 5), BACKOFF_CAP)


def failed(reason):
    """Whether a run's end counts as a failure for restart: on-failure (only a clean exit 0 does not)."""
    return not (reason or '').endswith(' exited (0)')


def restarts(policy, reason):
    """Whether a run that ended with `reason` runs again under the restart `policy`."""
    return policy == 'always' or (policy == 'on-failure' and failed(reason))


EXITED_RE = re.compile(r'^container (.+) exited \((-?[0-9]+)\)\Z')


def container_policy(decl, reason):
    """The restart_policy of the container whose exit (`reason`) stopped the run, when it runs the task again
    (enabled, and the code is not one of its ignored_exit_codes), as a dict; else None."""
    found = EXITED_RE.match(reason or '')
    if not found:
        return None
    spec = dict((c.name, c) for c in decl.containers).get(found.group(1))
    if spec is None or spec.restart_policy is None:
        return None
    policy = dict(spec.restart_policy)
    if not policy.get('enabled') or int(found.group(2)) in (policy.get('ignored_exit_codes') or ()):
        return None
    return policy


def restart_of(decl, reason):
    """(restart policy, stable run) a run that ended with `reason` falls under: the task's restart and STABLE_RUN,
    or, when its container's restart policy runs it again, always and its restart_attempt_period."""
    policy = container_policy(decl, reason)
    if policy is None:
        return decl.restart, STABLE_RUN
    return 'always', policy.get('restart_attempt_period') or RESTART_ATTEMPT_PERIOD


def iso(ts):
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def event(kind, task, now, **data):
    out = {'event': kind, 'at': iso(now), 'cluster': task[0], 'task': task[1],
           'subject': 'task/%s/%s' % (task[0], task[1])}
    out.update(data)
    return out


def container_status(obs):
    state = obs.get('state')
    if state in ('running', 'restarting', 'paused'):
        return RUNNING
    if state == 'created':
        return PENDING
    return STOPPED


def container_health(obs):
    """A container's health_status: what the engine last saw of its declared health check (HEALTHY, UNHEALTHY), else
    UNKNOWN (starting, not running, or no declared check: an image's own HEALTHCHECK does not count)."""
    if obs['labels'].get(HEALTH_LABEL) != 'true' or container_status(obs) != RUNNING:
        return UNKNOWN
    return ENGINE_HEALTH.get(obs.get('health'), UNKNOWN)


has_check = spec_mod.has_check


def replaced(decl, observed):
    """What of a task's run (`observed`, its containers) a running declaration `decl` replaces: (the containers of
    another spec or not among its containers, the fields the first of another spec differs in - None where unknown
    or where only the containers differ)."""
    names = set(c.name for c in decl.containers)
    stale = [o for o in observed
             if o['labels'].get('drover.spec-hash') != decl.spec_hash or o['labels'].get('drover.container') not in names]
    other = [o['labels'] for o in stale if o['labels'].get('drover.spec-hash') != decl.spec_hash]
    return stale, (spec_mod.changed_fields(other[0].get('drover.spec-fields'), decl.fields) if other else None)


def checked(decl):
    """The names of the task's essential containers declared with a health check: those its health is made of."""
    return set(c.name for c in decl.containers if c.essential and has_check(c))


def checked_by_labels(observed):
    """As checked(), from the labels of the task's containers (when no declaration is at hand)."""
    return set(o['labels'].get('drover.container') for o in observed
               if o['labels'].get(HEALTH_LABEL) == 'true' and o['labels'].get('drover.essential') != 'false')


def task_health(views, names):
    """A task's health_status from its container views: UNHEALTHY when one of `names` (its essential containers
    with a health check) is unhealthy, HEALTHY when every one is healthy, else UNKNOWN (none, or not yet known)."""
    health = dict((v.get('name'), v.get('health_status') or UNKNOWN) for v in views or ())
    got = [health.get(n, UNKNOWN) for n in sorted(names)]
    if UNHEALTHY in got:
        return UNHEALTHY
    if got and all(h == HEALTHY for h in got):
        return HEALTHY
    return UNKNOWN


def record_health(record, names):
    """The health_status of a task's record: a run that stopped because of its health checks stays UNHEALTHY,
    any other stopped run is UNKNOWN; a run that goes on has the health of its containers (task_health)."""
    if record.get('last_status') == STOPPED:
        return UNHEALTHY if record.get('stopped_reason') == HEALTH_FAILED else UNKNOWN
    return task_health(record.get('containers'), names)


def health_events(key, before, after, now, views=()):
    """task.healthy / task.unhealthy when the task's health turned to that (`before`: the stored run's)."""
    if after == before or after == UNKNOWN:
        return []
    data = {}
    if after == UNHEALTHY:
        data['containers'] = sorted(v['name'] for v in views if v.get('health_status') == UNHEALTHY)
    return [event('task.%s' % after.lower(), key, now, **data)]


def container_view(obs, declared_image=None):
    status = container_status(obs)
    out = {
        'name': obs['labels'].get('drover.container'),
        'image': declared_image or obs.get('image'),
        'runtime_id': obs['id'],
        'last_status': status,
        'exit_code': obs.get('exit_code') if status == STOPPED else None,
        'gpu_ids': gpu_ids(obs['labels']),
        'health_status': container_health(obs),
        # where the host publishes its ports (ECS's networkBindings): a running container's only
        'network_bindings': network_bindings(obs.get('ports')) if status == RUNNING else [],
    }
    if status == STOPPED and obs.get('last_output'):
        # Its last lines, read before the container goes (values it was given hidden).
        out['last_output'] = obs['last_output']
    return out


def declared_view(spec, status, gpu_ids_=()):
    """A declared container that has no container on the engine (not started yet, or gone)."""
    return {'name': spec.name, 'image': spec.image, 'runtime_id': None, 'last_status': status,
            'exit_code': None, 'gpu_ids': list(gpu_ids_), 'health_status': UNKNOWN, 'network_bindings': []}


def network_bindings(ports):
    """The ports a container publishes on the host (the adapter's `ports`, from its listing or an inspect), as ECS's
    networkBindings name them (bindIP, containerPort, hostPort, protocol): a port the host picked (host_port unset or
    0) is told."""
    return [{'bind_ip': ip, 'container_port': cport, 'host_port': hport, 'protocol': proto}
            for ip, cport, hport, proto in ports or ()]


def gpu_ids(labels):
    """The GPU UUIDs a container was given, from its drover.gpus label."""
    return [u for u in (labels.get('drover.gpus') or '').split(',') if u]


class Plan:
    """What a pass does to one task: containers to remove, whether to start a new run, the record to
    keep (None: delete it), the events, and whether that changes the host."""

    def __init__(self, key):
        self.key = key
        self.remove = []          # observed containers, removed before anything starts
        self.start = False        # start a new run of the declared containers, in order
        self.resume = []          # with start: the containers a cut-short start already made, kept and reused
        self.record = None        # the stored record after the plan (before a start's own outcome)
        self.write = False        # the record differs from the stored one
        self.delete = False       # the stored record goes
        self.events = []
        self.changed = False
        self.warnings = []
        self.changed_fields = None  # with a replacement: the fields of the declaration that changed
        # A run that stopped keeps its containers (task_cleanup_wait): they, its network and its task level stay;
        # its GPUs and credentials go.
        self.keep = False
        self.halt = []            # with keep: the containers still running, stopped (not removed)


def _stop(record, reason, now, restart, containers, stop_reason_given=False, stable_run=STABLE_RUN):
    """The record of a run that ended now with `reason`; with a restart due, the streak and hold too (a run that
    lasted `stable_run` seconds starts a new streak)."""
    rec = dict(record)
    rec['last_status'] = STOPPED
    rec['stopped_reason'] = reason
    rec['stopped_at'] = now
    rec['containers'] = containers
    if restarts(restart, reason) and not stop_reason_given:
        started = rec.get('started_at')
        stable = started is not None and now - started >= stable_run
        rec['streak'] = 1 if stable else (rec.get('streak') or 0) + 1
        # The first stop of a streak runs again at once; a task that keeps stopping is held back before its
        # next run: 30 s before the second, doubling up to 600 s.
        rec['hold_until'] = now + backoff(rec['streak'] - 1) if rec['streak'] > 1 else None
    else:
        rec['hold_until'] = None
    return rec


def stopped_record(record, reason, now, restart, containers):
    """Pure: the record after a run failed to start (used by the applier)."""
    return _stop(record, reason, now, restart, containers)


# The last lines of each exited container's output that a task.stopped event carries (the record keeps more).
EVENT_OUTPUT_LINES = 20


def event_output(views, lines=EVENT_OUTPUT_LINES):
    """{container: its last `lines` lines} of the exited containers (views) that printed something."""
    return dict((v['name'], '\n'.join(v['last_output'].splitlines()[-lines:])) for v in views or ()
                if v.get('last_output'))


def stopped_event(key, now, reason, views):
    """task.stopped, with the last lines of what its exited containers printed (`last_output`), where any did."""
    output = event_output(views)
    return event('task.stopped', key, now, reason=reason, **({'last_output': output} if output else {}))


def stop_events(key, rec, now):
    out = [stopped_event(key, now, rec['stopped_reason'], rec.get('containers'))]
    if rec.get('hold_until'):
        out.append(event('task.held', key, now, until=iso(rec['hold_until']), streak=rec['streak']))
    return out


def stopped_view(view):
    """A container's view once its task stopped: stopped, and publishing nothing."""
    return dict(view, last_status=STOPPED, network_bindings=[])


def _stopped_containers(observed):
    return [stopped_view(container_view(obs)) for obs in observed]


def _blank(decl, now):
    return {'cluster': decl.cluster, 'name': decl.name, 'spec_hash': decl.spec_hash, 'desired_status': RUNNING,
            'last_status': PENDING, 'stopped_reason': None, 'restart': decl.restart, 'started_at': None,
            'stopped_at': None, 'streak': 0, 'hold_until': None, 'containers': []}


def _new_run(plan, decl, record, now, keep_streak):
    rec = _blank(decl, now)
    if keep_streak and record:
        rec['streak'] = record.get('streak') or 0
    rec['started_at'] = now
    plan.start = True
    plan.record = rec
    plan.write = True
    plan.changed = True


def _restart_now(plan, decl, stopped, now):
    """A run that just stopped, whose restart policy runs it again and that is not held: the next run
    starts in the same pass (the stopped run is reported first; its containers go before the new ones)."""
    if restarts(restart_of(decl, stopped.get('stopped_reason'))[0], stopped.get('stopped_reason')) and \
            stopped.get('hold_until') is None:
        _new_run(plan, decl, stopped, now, keep_streak=True)


def _finish(plan, stored):
    if plan.record is not None and not plan.delete:
        plan.write = plan.write or stored is None or any(
            plan.record.get(k) != stored.get(k) for k in plan.record if k != 'updated_at')
    return plan


def _kept(plan, decl, observed, stored, now, keep):
    """A run that stopped, still wanted running, whose containers were kept: they go when its restart policy runs
    it again (then the next run starts) or once `keep` seconds have passed since it stopped; until then they stay."""
    record = dict(stored, restart=decl.restart)
    reason = record.get('stopped_reason')
    hold = record.get('hold_until')
    if restarts(restart_of(decl, reason)[0], reason) and (hold is None or now >= hold):
        plan.remove = list(observed)
        _new_run(plan, decl, record, now, keep_streak=True)
        return plan
    plan.record = record
    if keep and record.get('stopped_at') is not None and now < record['stopped_at'] + keep:
        plan.keep = True
    else:
        plan.remove = list(observed)
        plan.changed = True
    return _finish(plan, stored)


def plan_task(decl, observed, stored, now, keep=0):
    """Plan one declared task. `observed`: the engine's containers labelled with this task (each a dict
    with id, labels, state, image, created, health, and exit_code for those not running). `stored`: the record,
    or None. `keep`: seconds a run that stopped on its own keeps its containers (0: they go when it stops)."""
    key = (decl.cluster, decl.name)
    plan = Plan(key)
    live_running = any(container_status(o) == RUNNING for o in observed)
    was_running = live_running or (stored is not None and stored.get('last_status') in (RUNNING, PENDING))

    if decl.state in ('stopped', 'absent'):
        reason = decl.stop_reason or TASK_STOPPED
        plan.remove = list(observed)
        plan.changed = bool(observed)
        if decl.state == 'absent':
            plan.delete = stored is not None
            plan.changed = plan.changed or plan.delete
            if was_running:
                plan.events.append(stopped_event(key, now, reason, _stopped_containers(observed)))
            base = dict(stored) if stored else _blank(decl, now)
            base.update(desired_status=STOPPED, last_status=STOPPED, hold_until=None)
            if was_running:
                base.update(stopped_reason=reason, stopped_at=now, containers=_stopped_containers(observed))
            plan.record = base
            return plan
        if stored is None and not observed:
            rec = _blank(decl, now)
            rec.update(desired_status=STOPPED, last_status=STOPPED)
            plan.record = rec       # nothing to keep: a task never run stays unknown to the store
            return plan
        rec = dict(stored) if stored else _blank(decl, now)
        if was_running:
            rec = _stop(rec, reason, now, 'never', _stopped_containers(observed) or rec.get('containers', []),
                        stop_reason_given=True)
            plan.events.append(stopped_event(key, now, reason, rec['containers']))
        rec['desired_status'] = STOPPED
        rec['hold_until'] = None
        rec['restart'] = decl.restart
        plan.record = rec
        _finish(plan, stored)
        plan.changed = plan.changed or plan.write
        return plan

    # --- state: running ---------------------------------------------------------------------------
    stale, fields = replaced(decl, observed)
    by_name = {o['labels'].get('drover.container'): o for o in observed}

    if stale:
        # A changed declaration replaces the whole task: stop the old run, start a new one now.
        plan.remove = list(observed)
        plan.changed_fields = fields
        if was_running:
            plan.events.append(stopped_event(key, now, TASK_STOPPED, _stopped_containers(observed)))
        _new_run(plan, decl, stored, now, keep_streak=False)
        return plan

    if observed and (any(container_status(o) == PENDING for o in observed)
                     or (stored is not None and stored.get('last_status') == PENDING)):
        # A start that was cut short (a converge killed mid-start, or one whose time to wait for the task's
        # order ran out). What it made is of the current declaration (a stale one was replaced above): when no
        # essential container of it has stopped, the start goes on from where it was cut - nothing already
        # started starts twice (a container that is not essential and ran to its end stays exited: the
        # containers that depend on it may be waiting for just that). Else the run is cleared and started again.
        if any(container_status(o) == STOPPED and o['labels'].get('drover.essential') != 'false' for o in observed):
            plan.remove = list(observed)
            _new_run(plan, decl, stored, now, keep_streak=True)
        else:
            _new_run(plan, decl, stored, now, keep_streak=True)
            plan.resume = list(observed)
        return plan

    if observed and stored is not None and stored.get('last_status') == STOPPED and \
            stored.get('desired_status') == RUNNING and all(container_status(o) == STOPPED for o in observed):
        return _kept(plan, decl, observed, stored, now, keep)

    record = dict(stored) if stored else None
    if observed:
        reason = None
        for spec in decl.containers:
            if not spec.essential:
                continue
            obs = by_name.get(spec.name)
            if obs is None:
                reason = EXITED_UNSEEN
                break
            if container_status(obs) == STOPPED:
                reason = reason_exited(spec.name, obs.get('exit_code'))
                break
        health_names = checked(decl)
        if reason is None and any(container_health(by_name[n]) == UNHEALTHY for n in health_names):
            # An essential container turned unhealthy: the task stops, and its restart policy decides what follows.
            reason = HEALTH_FAILED
        views = [container_view(by_name[c.name], c.image) if c.name in by_name else declared_view(c, STOPPED)
                 for c in decl.containers]
        # A transition is within one run: a run the store does not know as running starts UNKNOWN.
        before = record_health(stored, health_names) if stored and stored.get('last_status') == RUNNING else UNKNOWN
        plan.events.extend(health_events(key, before, task_health(views, health_names), now, views))
        if record is None or record.get('desired_status') != RUNNING or record.get('last_status') != RUNNING:
            # Adopt from labels alone: the run is what the engine shows.
            created = [o.get('created') for o in observed if o.get('created')]
            record = _blank(decl, now)
            if stored:
                record['streak'] = stored.get('streak') or 0
            record.update(last_status=RUNNING, started_at=min(created) if created else now)
        record.update(containers=views, restart=decl.restart, spec_hash=decl.spec_hash,
                      desired_status=RUNNING)
        if reason is None:
            record['last_status'] = RUNNING
            plan.record = record
            return _finish(plan, stored)
        # An essential container ended: the whole task stops, and every container of it goes.
        plan.remove = list(observed)
        views = [stopped_view(view) for view in views]
        policy, stable_run = restart_of(decl, reason)
        record = _stop(record, reason, now, policy, views, stable_run=stable_run)
        plan.events.extend(stop_events(key, record, now))
        plan.record = record
        plan.changed = True
        plan.write = True
        _restart_now(plan, decl, record, now)
        if keep and not plan.start:
            plan.remove = []
            plan.keep = True
            plan.halt = [o for o in observed if container_status(o) != STOPPED]
        return plan

    # Nothing of the task on the engine.
    if record is None or record.get('desired_status') != RUNNING or record.get('spec_hash') != decl.spec_hash:
        _new_run(plan, decl, record, now, keep_streak=False)
        return plan
    if record.get('last_status') == PENDING:
        # A start cut short before any container was made: start the run again.
        _new_run(plan, decl, record, now, keep_streak=True)
        return plan
    if record.get('last_status') == RUNNING:
        # It ran when we last looked, and is gone now.
        views = [stopped_view(c) for c in record.get('containers') or []]
        record = _stop(record, EXITED_UNSEEN, now, decl.restart, views)
        record['restart'] = decl.restart
        plan.events.extend(stop_events(key, record, now))
        plan.record = record
        plan.changed = True
        plan.write = True
        _restart_now(plan, decl, record, now)
        return plan
    # STOPPED, still wanted running: the restart policy decides.
    reason = record.get('stopped_reason')
    record['restart'] = decl.restart
    if restarts(restart_of(decl, reason)[0], reason):
        hold = record.get('hold_until')
        if hold is None or now >= hold:
            _new_run(plan, decl, record, now, keep_streak=True)
            return plan
    plan.record = record
    return _finish(plan, stored)
