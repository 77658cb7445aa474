# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host holds of tasks, read without changing it: the engine's labelled listing grouped by task, the exit
codes and last output (values hidden) of ended containers, a task as every task module returns it, and the look
the services' placement reads (every task with its revision, the host's capacity, the revision records; which
tasks are the kept instances of services, and which of those the host's settings now make otherwise).

Owns: the task containers' role and revision labels, task_view, what a stopped task keeps of its output, the look
(ecs_task_info's answer and ecs_task's `look`), purge_keep's instances.
Must not: change anything on the host (the pass in tasks.apply does), or decide a task's plan (tasks.plan does).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import platform

from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import pass_ledger
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure
from ansible_collections.drover.fleet.plugins.module_utils.gpu import plan as gpu_plan
from ansible_collections.drover.fleet.plugins.module_utils.tasks import plan as plan_mod
from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import DEFAULT_CLUSTER, instance_index
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec as spec_mod

# The drover.role of ecs_task's containers.
ROLE = 'task'
# The revision of a service that a task is an instance of (its `revision`), read back by ecs_task_info.
REVISION_LABEL = 'drover.revision'
# What a hidden value reads as.
HIDDEN = '********'


def hide(text, values):
    """`text` with every value of `values` put out of sight: the whole value, and each line of one that spans lines
    (a text may begin or end inside it), each of at least 4 characters (a shorter one would hide words, not a
    secret; a line, 4 besides blanks). A value's CR LF counts as LF."""
    pieces = set()
    for value in values or ():
        if len(value or '') >= 4:
            pieces.add(value)
        value = (value or '').replace('\r\n', '\n')
        pieces.update(p for p in [value] + value.split('\n') if len(p.strip()) >= 4)
    # Longest first, so that a value inside another is not left half hidden.
    for value in sorted(pieces, key=len, reverse=True):
        text = text.replace(value, HIDDEN)
    return text


# What a stopped task keeps of each exited container's output: its last lines, at most so many bytes (its
# task.stopped event carries fewer: plan_mod.EVENT_OUTPUT_LINES).
OUTPUT_LINES = 100
OUTPUT_BYTES = 64 * 1024


def last_output(raw, hidden, lines=OUTPUT_LINES, limit=OUTPUT_BYTES):
    """Pure: the last `lines` lines of a container's output (bytes or text), at most `limit` bytes of them (the
    newest), every value in `hidden` put out of sight (hide). None for no output."""
    if raw is None:
        return None
    text = raw.decode('utf-8', 'replace') if isinstance(raw, bytes) else raw
    text = hide(text.replace('\r\n', '\n'), hidden)       # a terminal's line ends (CR LF) read as LF
    kept = text.splitlines()[-lines:]
    text = '\n'.join(kept)
    data = text.encode('utf-8')
    if len(data) > limit:
        text = data[-limit:].decode('utf-8', 'ignore')
        text = text.split('\n', 1)[1] if '\n' in text else text      # no half line at the top
    return text or None


def task_view(record, health_names=()):
    """A task as every task module returns it; `health_names`: its essential containers with a health check."""
    return {
        'name': record['name'],
        'cluster': record['cluster'],
        'last_status': record['last_status'],
        'desired_status': record['desired_status'],
        'stopped_reason': record.get('stopped_reason'),
        'started_at': plan_mod.iso(record.get('started_at')),
        'stopped_at': plan_mod.iso(record.get('stopped_at')),
        'restart': record.get('restart') or 'never',
        'streak': record.get('streak') or 0,
        'held_until': plan_mod.iso(record.get('hold_until')),
        'health_status': plan_mod.record_health(record, health_names),
        # (a record kept by an earlier release has no network_bindings: none told)
        'containers': [dict(c, health_status=c.get('health_status') or plan_mod.UNKNOWN,
                            network_bindings=c.get('network_bindings') or [])
                       for c in record.get('containers') or []],
        'network': record.get('network'),
    }


def group(observed):
    out = {}
    for obs in observed:
        labels = obs['labels']
        key = (labels.get('drover.cluster') or 'default', labels.get('drover.task') or '')
        out.setdefault(key, []).append(obs)
    return out


def with_exit_codes(engine, grouped, keys):
    """Inspect the stopped containers of the tasks in `keys` for their exit codes, and read their last output
    (what a stopped task keeps: the values it was given hidden), before a pass removes them. Running ones need
    none, so a pass with nothing ended makes one engine call: the listing."""
    for key in keys:
        for obs in grouped.get(key, ()):
            if plan_mod.container_status(obs) == plan_mod.STOPPED and 'exit_code' not in obs:
                state = engine.inspect(obs['id']) or {}
                obs['exit_code'] = state.get('exit_code')
                obs['oom_killed'] = state.get('oom_killed')
                try:
                    # What to hide first: a container gone meanwhile keeps no output (nothing could be hidden).
                    given = engine.given_values(obs['id'])
                    raw = engine.logs(obs['id'], tail=OUTPUT_LINES) if given is not None else None
                except EngineError:
                    raw = None          # a log driver the engine cannot read back: the stop is told without it
                if raw:
                    obs['last_output'] = last_output(raw, given)
    return grouped


def observed_record(key, observed, stored):
    """What a task looks like now, without planning anything: the store's record, with the containers as
    the engine shows them."""
    record = dict(stored) if stored else {
        'cluster': key[0], 'name': key[1], 'desired_status': 'RUNNING', 'last_status': 'RUNNING',
        'stopped_reason': None, 'started_at': min([o['created'] for o in observed if o.get('created')] or [None]),
        'stopped_at': None, 'restart': None, 'streak': 0, 'hold_until': None, 'containers': []}
    if observed:
        views = [plan_mod.container_view(o) for o in observed]
        record['containers'] = sorted(views, key=lambda v: v['name'] or '')
        if all(v['last_status'] != 'RUNNING' for v in views) and record['last_status'] != 'PENDING':
            # (A PENDING run whose order was cut short may hold only a container that ran to its end.)
            record['last_status'] = 'STOPPED'
        elif stored is None or record['last_status'] == 'STOPPED':
            record['last_status'] = 'RUNNING'
    return record


def look(params, engine, store, cluster=None, name=None, gpus=False, restated=None):
    """What the services' placement reads of a host (ecs_task_info's answer, and ecs_task's with `look`): every
    task the store or the engine knows (of `cluster`, `name` where given) with its revision and whether its health
    is checked, the host's capacity and the services' revision records. `restated`: restated_instances', each such
    instance's view says `restated` (the fields, or the refusal)."""
    stored = dict(((r['cluster'], r['name']), r) for r in store.tasks())
    grouped = group(engine.list_role(ROLE))
    keys = sorted(k for k in set(stored) | set(grouped) if cluster in (None, k[0]) and name in (None, k[1]))
    with_exit_codes(engine, grouped, keys)
    out = []
    for key in keys:
        checked = plan_mod.checked_by_labels(grouped.get(key, []))
        view = task_view(observed_record(key, grouped.get(key, []), stored.get(key)), checked)
        # what a service's deployment reads: the instance's revision, and whether its health is checked
        view['revision'] = _revision(grouped.get(key, []))
        view['health_checked'] = bool(checked)
        if key in (restated or {}):
            view['restated'] = restated[key]
        out.append(view)
    return {'tasks': out, 'capacity': _capacity(params, engine, store, gpus),
            'service_revisions': store.service_revisions()}


def _capacity(params, engine, store, gpus=False):
    """What the host has for services: the engine's CPUs and memory; with `gpus`, its GPUs (as gpu_discovery
    finds them) less those the ledger pins to runners (a task's own count where its declaration says)."""
    capacity = engine.capacity()
    if gpus:
        ledger = pass_ledger(params, True, engine, store)
        runners = set(uuid_ for uuid_, (dummy, task) in ledger.pins.items() if gpu_plan.is_runners(task))
        capacity['gpus'] = len([d for d in ledger.devices if d not in runners])
    return capacity


def _revision(containers):
    """The service revision a task's containers carry (their label), or None."""
    return next((o['labels'].get(REVISION_LABEL) for o in containers if o['labels'].get(REVISION_LABEL)), None)


def instance_of(key, keep):
    """The service of purge_keep (`keep`) whose instance (`<service>-<index>` of its cluster) task `key` (cluster,
    name) is; None where it is none's."""
    for entry in keep or ():
        if key[0] == (entry.get('cluster') or DEFAULT_CLUSTER) and instance_index(key[1], entry.get('service')) \
                is not None:
            return entry.get('service')
    return None


def spared(key, keep):
    """Whether purge leaves task `key` (cluster, name) alone: an instance of a service that purge_keep names."""
    return instance_of(key, keep) is not None


def not_an_instance(tasks, keep):
    """A declared task with the name of an instance of a service purge_keep names would take the place of that
    instance's containers: refused, naming both (the services' placement refuses the service the same way)."""
    for task in tasks:
        service = instance_of((task.cluster, task.name), keep)
        if service is not None:
            raise TaskFailure('task %s of cluster %s has the name of an instance of service %s (<service>-<index>); '
                              'its instance is left as it runs: rename the task or the service'
                              % (task.name, task.cluster, service))


def restated_instances(params, grouped, records, normalize=None):
    """The instances of the services purge_keep names (of any cluster) that this host's settings now make
    otherwise than they run (a log driver mapped anew, a policy changed): each instance's revision, declared as its
    share declares it (the revision's task from the host's records, its name, cluster and revision), has another
    spec hash than its containers carry, or the host's policy now refuses it. {(cluster, name): the fields that
    differ, or the refusal}. The placement gives their host a second pass, which starts them anew (or fails,
    naming what the host refuses). An instance whose revision the host's records lack, or whose record cannot be
    read as a task, is left to the placement. Raises nothing of its own: the first pass goes on."""
    keep = params.get('purge_keep')
    if not keep:
        return {}
    kept = dict(((r['cluster'], r['service'], r['revision']), r['declaration']) for r in records)
    defaults = dict(spec_mod.set_defaults(params), registry_auth=None)   # (a password is no part of the hash)
    try:
        policy = spec_mod.host_policy(params, platform.machine())
    except SpecError as exc:
        policy = str(exc)                  # a policy that cannot be read refuses every instance (as a task)
    out = {}
    for key in sorted(grouped):
        service = instance_of(key, keep)
        containers = grouped[key]
        revision = _revision(containers)
        task = kept.get((key[0], service, revision)) if service is not None else None
        if task is None:
            continue
        if not isinstance(policy, dict):
            out[key] = policy
            continue
        raw = dict((k, v) for k, v in task.items() if k != 'registry_auth')
        raw.update(name=key[1], cluster=key[0], restart='always', revision=revision)
        try:
            decl = spec_mod.task(raw, '', defaults, bool(params.get('allow_host_network')), policy, normalize)
        except SpecError as exc:
            out[key] = str(exc)
            continue
        except (TypeError, ValueError, KeyError, AttributeError):
            continue                       # (a record of another shape: the placement's to judge)
        stale, fields = plan_mod.replaced(decl, containers)
        if stale:
            out[key] = fields or []
    return out
