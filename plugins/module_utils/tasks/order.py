# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order decider: which containers of a starting task may start now (ECS dependsOn).

Owns: the conditions START, COMPLETE, SUCCESS and HEALTHY, the start timeout of a dependency (from its own
start), what a failed dependency stops the task with (the reason strings), and how long a pass may wait for a
task's order (the longest start timeout it needs).
Input: the task's containers (checked: no cycle, no unknown name), the facts the engine shows about the ones
started in this run, and the clock (an argument). Output: a Step.
Must not: do any I/O or read the clock.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings

# How long the containers that depend on another one wait for it, from its start, when it declares no
# start_timeout: 3 minutes, as ECS.
DEFAULT_START_TIMEOUT = 180
# How often a waiting pass looks at the containers it waits for (seconds).
ORDER_POLL = 0.5

START, COMPLETE, SUCCESS, HEALTHY = settings.CONDITIONS
# The conditions that need the engine's view of the dependency (START is met by starting it).
WATCHED = (COMPLETE, SUCCESS, HEALTHY)

# What the engine shows of a container of the run (one fact per started container; absent: not started).
RUNNING, EXITED = 'running', 'exited'


def reason_dependency(name, condition, waiter, why):
    """The reason a task stops with when a dependency fails: names the container and the condition."""
    return 'container %s did not reach %s (%s): container %s depends on it' % (name, condition, why, waiter)


def reason_essential(name, code):
    return 'container %s exited (%s)' % (name, 'unknown' if code is None else code)


def start_timeout(container):
    return container.start_timeout or DEFAULT_START_TIMEOUT


def deps(container):
    """(other container, condition) for each dependency of `container`."""
    return [(dict(d)['container_name'], dict(d)['condition']) for d in container.depends_on or ()]


def watched(containers):
    """The names of the containers whose state a start must follow: those another one waits for with
    COMPLETE, SUCCESS or HEALTHY."""
    return set(name for c in containers for name, cond in deps(c) if cond in WATCHED)


def ordered(containers):
    """Whether a task's start waits for anything (COMPLETE, SUCCESS or HEALTHY)."""
    return bool(watched(containers))


def pass_wait(tasks):
    """How long a pass may wait for the order of `tasks` (seconds): the longest start timeout of a container
    that another one waits for; 0 when none waits."""
    longest = 0
    for containers in tasks:
        by_name = dict((c.name, c) for c in containers)
        for name in watched(containers):
            longest = max(longest, start_timeout(by_name[name]))
    return longest


def epoch(text):
    """An engine timestamp (RFC 3339, nanoseconds; the zero time for never) as seconds, or None."""
    if not text or text.startswith('0001-'):
        return None
    head, _dot, frac = text.rstrip('Z').partition('.')
    try:
        when = datetime.datetime.strptime(head[:19], '%Y-%m-%dT%H:%M:%S').replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    digits = ''.join(ch for ch in frac if ch.isdigit())[:6]
    return when.timestamp() + (int(digits) / 10.0 ** len(digits) if digits else 0.0)


def fact(inspected):
    """The fact of one started container, from the adapter's inspect (None: it is gone)."""
    if inspected is None:
        return None
    status = inspected.get('status')
    return {'state': RUNNING if status in ('running', 'restarting', 'paused') else EXITED,
            'exit_code': inspected.get('exit_code'), 'health': inspected.get('health'),
            'started_at': epoch(inspected.get('started_at'))}


class Step:
    """What a start does next: `ready` (names, in start order) may start now; `failure`: the reason the task
    stops with; `deadline`: the clock by which a dependency waited for has met its condition or failed (None:
    nothing is waited for); `done`: every container was started."""

    def __init__(self):
        self.ready = []
        self.failure = None
        self.deadline = None
        self.done = False
        self.waits = []           # (waiter, dependency, condition) not met yet


def _met(cond, f):
    """Whether the fact `f` of a started dependency meets `cond`: True, False (not yet), or the reason it never
    will."""
    if cond == START:
        return True
    if f is None:
        return 'it is gone'
    if cond == HEALTHY:
        if f['health'] == 'healthy':
            return True
        if f['state'] == EXITED:
            return 'it exited (%s) before its health check passed' % f['exit_code']
        return False
    if f['state'] != EXITED:
        return False
    if cond == SUCCESS and f['exit_code'] != 0:
        return 'it exited (%s)' % f['exit_code']
    return True


def step(containers, started, facts, now):
    """The next step of a start. `containers`: the task's, `started`: the names started in this run,
    `facts`: name -> fact (see `fact`) of the started containers the start follows (the watched ones, and the
    essential ones while it waits), `now`: the clock."""
    out = Step()
    by_name = dict((c.name, c) for c in containers)
    for c in settings.start_order(containers):
        if c.name in started:
            continue
        blocked = False
        for other, cond in deps(c):
            if other not in started:
                blocked = True
                continue
            met = _met(cond, facts.get(other))
            if met is True:
                continue
            if met is not False:
                out.failure = reason_dependency(other, cond, c.name, met)
                return out
            f = facts.get(other)
            limit = start_timeout(by_name[other])
            since = f.get('started_at') if f else None
            deadline = (since if since is not None else now) + limit
            if now >= deadline:
                out.failure = reason_dependency(other, cond, c.name, 'not within %d s of its start' % limit)
                return out
            out.deadline = deadline if out.deadline is None else min(out.deadline, deadline)
            out.waits.append((c.name, other, cond))
            blocked = True
        if not blocked and all(n in started for n in settings.needs(c)):
            out.ready.append(c.name)
    for name, f in sorted(facts.items()):
        # An essential container that ended while the others wait: the task stops (as it would once running).
        c = by_name.get(name)
        if c is not None and c.essential and f is not None and f['state'] == EXITED:
            out.failure, out.ready, out.deadline = reason_essential(name, f['exit_code']), [], None
            return out
    out.done = not out.ready and all(c.name in started for c in containers)
    return out
