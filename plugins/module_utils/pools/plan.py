# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner-pool decider: holds, backoff and streaks of a pool, and which slots start or stop.

Owns: what an ended runner means for its pool (took a job, failed early, idle exit, unknown), the hold
and its backoff (never lengthened while held, runner.failed announced once per streak), and the plan of
one pass (runners wanted = queued jobs + warm - idle runners, up to the slots; surplus idle runners that
waited IDLE_TIMEOUT stop; a held pool starts nothing; an unread listing decides nothing).
Must not: do any I/O or read the clock: `now` is an argument.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import hashlib
import posixpath
import re

from ansible_collections.drover.fleet.plugins.module_utils.tasks.plan import backoff, iso

# A runner that waited this long for a job and then ended connected fine: an idle exit, not a failure.
IDLE_TIMEOUT = 300

CAUSE_NO_JOB = 'no job'
CAUSE_IDLE_EXITS = 'idle exits'
CAUSE_REGISTER = 'register'
CAUSE_START = 'start'
CAUSE_FLEET = 'fleet'
CAUSE_RUNNER_FAULT = 'runner fault'

# What a runner's log says (the runner's own lines; a hostile runner writes what it likes, so every value
# read is bounded and printable, and nothing else of the log leaves the module).
_RUNNING = re.compile(r'Running job: ([^\r\n]{1,200})')
# The runner's own time at the start of its line: `2026-12-02 14:56:29Z: Running job: build`.
_LINE_TIME = re.compile(r'(?:^|\n)(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)Z: $')
_RESULT = re.compile(r'Job ([^\r\n]{1,200}?) completed with result: ([A-Za-z]{1,20})')
# Every completed line, whatever its job's name (counted: the runner prints one per job, a job may forge more).
_COMPLETED = re.compile(r'completed with result: ([A-Za-z]*)')
_DEPRECATED = re.compile(r'Runner version v?([0-9A-Za-z.+_-]{1,40}) is deprecated')
_ERROR = re.compile(r'An error occur+ed: ')
_JOB_NAME = 100


def fresh_state():
    return {'failures': 0, 'idle_exits': 0, 'hold_until': None, 'hold_cause': None}


def held(state, now):
    until = state.get('hold_until')
    return until is not None and now < until


def fleet_held(spec, now):
    """Whether a hold from outside the host (the pool's `hold_until`, a fleet-wide hold) has not ended."""
    until = getattr(spec, 'hold_until', None)
    return until is not None and now < until


def hold_view(state, spec, now):
    """The pool's hold as the module reports it: the later of its own and the fleet's (cause `fleet`)."""
    own = state.get('hold_until') if held(state, now) else None
    fleet = spec.hold_until if fleet_held(spec, now) else None
    until, cause = own, state.get('hold_cause') if own is not None else None
    if fleet is not None and (own is None or fleet > own):
        until, cause = fleet, CAUSE_FLEET
    return {'until': iso(until), 'cause': cause, 'failures': state.get('failures') or 0,
            'idle_exits': state.get('idle_exits') or 0}


def event(kind, pool, now, **data):
    out = {'event': kind, 'at': iso(now), 'pool': pool, 'subject': 'pool/%s' % pool}
    out.update(data)
    return out


def hold(state, pool, cause, now, error=None):
    """Hold the pool after a failure, unless it is held already (runners that fail while it is held
    started before the hold: they do not lengthen it). Returns (state, events)."""
    if held(state, now):
        return dict(state), []
    out = dict(state)
    out['failures'] = (state.get('failures') or 0) + 1
    wait = backoff(out['failures'])
    out['hold_until'] = now + wait
    out['hold_cause'] = cause
    events = []
    if out['failures'] == 1:
        # Once per streak: a pool that stays broken says so once, not every 10 minutes.
        events.append(event('runner.failed', pool, now, cause=cause, held_for=wait, error=error))
    events.append(event('pool.held', pool, now, cause=cause, until=iso(out['hold_until']), failures=out['failures']))
    return out, events


def took_job(logs):
    """True when the log shows a job taken, False when it shows none, None when there is no log at all."""
    if not logs:
        return None
    return 'Running job: ' in logs


def _printable(text, limit):
    text = ''.join(c if c.isprintable() else '?' for c in text.strip())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def read_runner_log(logs):
    """What an ended runner's log says: {'took': took_job(logs), 'job': the job it ran (its first `Running job:`
    line; None), 'result': `Job <name> completed with result: <R>`'s R, the last one (None), 'fault': None,
    'deprecated' (GitHub refused the runner's version, before or after a job: actions/runner#3366 cancels the job
    it took) or 'error' (an `An error occurred:` line from a runner that took no job), 'version': the deprecated
    version (None)}.

    What a job prints reaches the same log (a step can write to the runner's own output), so faults are read only
    where the runner alone writes: before the first `Running job:` line. From there to the job's `completed with
    result:` line is the job's span, where nothing counts. After it, a deprecated line counts only when it follows
    the one and only completed line and that says `Canceled` (the runner's own cancel): a job that forged a
    completed line as well makes two, and holds nothing."""
    out = {'took': took_job(logs), 'job': None, 'result': None, 'fault': None, 'version': None, 'job_started': None}
    if not logs:
        return out
    running = _RUNNING.search(logs)
    results = list(_RESULT.finditer(logs))
    if results:
        out['result'] = results[-1].group(2)
    if running is None:
        # no job: the whole log is the runner's own
        deprecated = _DEPRECATED.search(logs)
        if deprecated:
            out['fault'], out['version'] = 'deprecated', deprecated.group(1)
        elif _ERROR.search(logs):
            out['fault'] = 'error'
        return out
    out['job'] = _printable(running.group(1), _JOB_NAME)
    out['job_started'] = _line_time(logs, running.start())
    deprecated = _DEPRECATED.search(logs, 0, running.start())
    if deprecated is None:
        completed = list(_COMPLETED.finditer(logs, running.end()))
        if len(completed) == 1 and completed[0].group(1) == 'Canceled':
            deprecated = _DEPRECATED.search(logs, completed[0].end())
    if deprecated:
        out['fault'], out['version'] = 'deprecated', deprecated.group(1)
    return out


def _line_time(logs, at):
    """The runner's time (epoch seconds, UTC) at the start of the line where `at` is, or None (a line without it)."""
    head = logs[max(0, at - 40):at]
    found = _LINE_TIME.search(head if at >= 40 else '\n' + head)
    if found is None:
        return None
    try:
        return calendar.timegm(tuple(int(x) for x in found.groups()) + (0, 0, 0))
    except (OverflowError, ValueError):
        return None


def job_seconds(read, started, finished):
    """How long an ended runner's job ran, in seconds: from its `Running job:` line's time to the runner's end
    (the engine's), never longer than the runner lived (the line's time is the runner's clock, and a job writes
    the same output); the runner's whole life when the line has no time; None when it took no job."""
    if not read['took'] or started is None or finished is None or finished < started:
        return None
    began = read.get('job_started')
    if began is None or not started <= began <= finished:
        began = started
    return int(finished - began)


def image_ids(user, passwd, group):
    """The (uid, gid) an image's containers run as, from its Config.User (`name`, `uid`, `name:group`, `uid:gid`)
    and its /etc/passwd and /etc/group texts (None where it has none), as the engine resolves them; None for root.
    Raises ValueError naming a user or group the image does not have."""
    name, dummy, grp = (user or '').partition(':')
    if name in ('', 'root', '0') and grp in ('', 'root', '0'):
        return None
    users = _entries(passwd, 7)
    if name.isdigit():
        uid = int(name)
        gid = next((int(e[3]) for e in users if e[2] == name and e[3].isdigit()), 0)
    else:
        found = [e for e in users if e[0] == name and e[2].isdigit() and e[3].isdigit()]
        if not found:
            raise ValueError('the image\'s user %s is not in its /etc/passwd' % name)
        uid, gid = int(found[0][2]), int(found[0][3])
    if grp.isdigit():
        gid = int(grp)
    elif grp:
        found = [e for e in _entries(group, 4) if e[0] == grp and e[2].isdigit()]
        if not found:
            raise ValueError('the image\'s group %s is not in its /etc/group' % grp)
        gid = int(found[0][2])
    if uid > 2 ** 32 - 2 or gid > 2 ** 32 - 2:
        raise ValueError('the image\'s user %s is out of range' % user)
    return None if (uid, gid) == (0, 0) else (uid, gid)


def _entries(text, fields):
    return [line.split(':') for line in (text or '').splitlines() if line.count(':') == fields - 1]


# What a failed job's record must not hold: the names a runner keeps its credentials and its JIT config under.
# A record whose filesystem diff has one is not kept.
RECORD_DENY = ('.jitconfig', '.credentials', '.credentials_rsaparams', '.runner')
RECORD_REPOSITORY = 'drover-record'
RECORD_LABEL = 'drover.record'
# A runner name as a file name (what a record's label says is checked before it names a file).
NAME_SAFE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}\Z')


def record_denied(paths, mounts=()):
    """The paths of a runner's filesystem diff that keep a record from being kept (sorted). `mounts`: where the
    container's bind mounts are (the JIT config's): the engine lists each mount point as added, and commits it
    empty, never what is mounted there."""
    return sorted(p for p in paths or () if p not in mounts and (
        posixpath.basename(p) in RECORD_DENY or 'jitconfig' in p.lower()))


def record_ref(pool, runner_name, container_id):
    """(repository, tag) of a failed job's record: drover-record/<pool>:<runner>-<container ID's first 12>, each
    made what the engine takes (a repository part is lower-case letters and digits between single '-'; a tag at
    most 128 characters). The container's ID keeps two runners of one name apart (a slot empty in between may
    name its next runner in the same second)."""
    part = re.sub(r'[^a-z0-9]+', '-', pool.lower()).strip('-') or 'pool'
    suffix = '-' + re.sub(r'[^A-Za-z0-9]', '', container_id or '')[:12]
    tag = runner_name
    if len(tag) + len(suffix) > 128:
        tag = '%s-%s' % (tag[:128 - len(suffix) - 17], hashlib.sha256(runner_name.encode('utf-8')).hexdigest()[:16])
    return '%s/%s' % (RECORD_REPOSITORY, part), tag + suffix


def record_order(record):
    """Oldest first: by when the image was made (whole seconds), then by the second its runner was named (a slot's
    runners are named in increasing seconds), then by name."""
    runner = (record.get('labels') or {}).get('drover.runner') or ''
    tail = runner.rsplit('-', 1)[-1]
    return (record.get('created') or 0, int(tail) if tail.isdigit() else 0, runner)


def records_to_drop(records, keep, max_age, now):
    """The records (dicts with `created`, epoch) beyond the newest `keep`, or older than `max_age` seconds."""
    newest = sorted(records, key=record_order, reverse=True)
    return [r for i, r in enumerate(newest)
            if i >= keep or (max_age is not None and now - (r.get('created') or 0) > max_age)]


def fault_cause(read):
    """The hold cause of a runner fault (`read`: read_runner_log's), naming the version; None without one."""
    if read.get('fault') == 'deprecated':
        return '%s: version %s deprecated' % (CAUSE_RUNNER_FAULT, read['version'])
    if read.get('fault') == 'error':
        return '%s: an error before any job' % CAUSE_RUNNER_FAULT
    return None


def ended(state, pool, took, waited, now, idle_timeout=IDLE_TIMEOUT, fault=None):
    """The pool's state after one of its runners ended. `took`: took_job(logs); `waited`: seconds it ran;
    `idle_timeout`: the pool's (IDLE_TIMEOUT by default); `fault`: fault_cause(...) of its log, which holds
    the pool as a runner that took no job does, even after it took one (a deprecated runner cancels it)."""
    out = dict(state)
    if fault:
        return hold(out, pool, fault, now, 'the runner failed: %s' % fault[len(CAUSE_RUNNER_FAULT) + 2:])
    if took is None:
        return out, []
    if took:
        events = [event('pool.released', pool, now)] if held(state, now) else []
        out.update(failures=0, idle_exits=0, hold_until=None, hold_cause=None)
        return out, events
    if waited >= idle_timeout:
        out['idle_exits'] = (state.get('idle_exits') or 0) + 1
        if out['idle_exits'] == 1:
            # It started and connected: the next failure begins a new streak, announced again.
            out['failures'] = 0
            return out, []
        return hold(out, pool, CAUSE_IDLE_EXITS, now, 'its runners end without a job after waiting for one')
    return hold(out, pool, CAUSE_NO_JOB, now, 'a runner ended without taking a job')


def matches(job_labels, pool_labels):
    """A job matches a pool when every label it asks for is one of the pool's (case-insensitive)."""
    have = set(l.lower() for l in pool_labels) | {'self-hosted'}
    return all(l.lower() in have for l in job_labels)


class PoolPlan:
    def __init__(self):
        self.start = []        # slot indexes (0-based) to start a runner in
        self.stop = []         # slot indexes whose idle runner stops
        self.kill = []         # slot indexes whose runner is killed (kill_busy)
        self.reason = None     # why nothing was decided, when so


def plan(spec, occupants, busy_ids, queued, state, now, listing_ok=True):
    """Which slots start and stop. `occupants`: slot index -> occupant dict (runner_id, started_at) for
    every occupied slot; `busy_ids`: ids of this pool's runners GitHub shows busy; `queued`: queued jobs
    matching the pool (None when unread)."""
    out = PoolPlan()
    occupied = sorted(occupants)
    free = [i for i in range(spec.slots) if i not in occupants]
    idle = [i for i in occupied if occupants[i].get('runner_id') not in busy_ids and not occupants[i].get('busy')]
    if spec.state == 'absent':
        out.kill = list(occupied) if spec.kill_busy else []
        out.stop = [] if spec.kill_busy else idle
        return out
    if not listing_ok or queued is None:
        out.reason = 'a GitHub listing could not be read: no runner starts or stops this pass'
        return out
    if spec.scale == 'fixed':
        # Every slot always holds a runner; none is stopped for being idle.
        new = len(free)
    else:
        busy = len(occupied) - len(idle)
        wanted_idle = min(queued + spec.warm, spec.slots - busy)
        new = min(len(free), max(0, wanted_idle - len(idle)))
        waited = sorted((i for i in idle if now - (occupants[i].get('started_at') or now) >= spec.idle_timeout),
                        key=lambda i: occupants[i].get('started_at') or 0)
        out.stop = waited[:max(0, len(idle) - wanted_idle)]
    if held(state, now) or fleet_held(spec, now):
        view = hold_view(state, spec, now)
        out.reason = 'held until %s (%s)' % (view['until'], view['cause'])
        return out
    out.start = free[:new]
    return out
