# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU ledger: which of the host's GPUs is pinned to which container, as pure functions.

A ledger is a dict of pins {uuid: (key, task)}, where a key names a container as `task/container`
(a task name has no `/`), together with the host's devices (UUIDs in index order, from gpu.nvml).
Every function takes a ledger and returns a new one; the one it was given is never changed.

Owns: pinning (all-or-nothing, lowest-index free GPUs first, idempotent per key), releasing by task
or by key, re-pinning an adopted container's GPUs without ever giving one GPU to two keys, the
views (free, pinned, stale) every GPU module returns, and the messages of a short ledger.
Must not: discover GPUs (gpu.nvml does), read or write the store, read a clock or do any other I/O.
A pin whose GPU is no longer discovered is kept and reported as stale, never dropped in silence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


RUNNER_MARK = '@'                   # in no cluster or task name: the ledger's name of a runner pool's runners


def runners_task(pool):
    """The ledger's task name for the runners of a runner pool (never a task's)."""
    return 'pool%s%s' % (RUNNER_MARK, pool)


def is_runners(task):
    """Whether a pin's task is a runner pool's (runners_task), not a task's."""
    return RUNNER_MARK in task


class PinError(ValueError):
    """A key or task that cannot name a container: a caller's mistake, not a short ledger."""


def short_message(requested, free_count):
    """The failure of a pin the ledger cannot meet, word for word."""
    return 'gpu ledger: requested %d GPUs, %d free' % (requested, free_count)


def short_for(field, requested, host_count, free_count):
    """The failure of a declared container's GPU request the ledger cannot meet: the field that asks, named as
    the declaration names it (containers[0].gpu, task_definition.containerDefinitions[0].resourceRequirements),
    and the host's GPUs, how many it has and how many of them the container could have (free)."""
    return '%s asks for %d GPU%s; this host has %d GPU%s, %d free' % (
        field, requested, '' if requested == 1 else 's', host_count, '' if host_count == 1 else 's', free_count)


def could_have(pins, devices, key):
    """How many GPUs `key` could be given: the free ones and the discovered ones it holds (pin's M)."""
    known = set(devices)
    return len(free(pins, devices)) + len([u for u in held(pins, key, devices) if u in known])


def check_task(task):
    if not isinstance(task, str) or not task:
        raise PinError('task: a non-empty string is required')
    if '/' in task:
        raise PinError('task: %r contains "/", which separates the task from the container in a pin key' % task)
    return task


def key_for(task, container):
    """The pin key of a task's container: `task/container`."""
    check_task(task)
    if not isinstance(container, str) or not container:
        raise PinError('container: a non-empty string is required')
    return '%s/%s' % (task, container)


def task_of(key):
    """The task part of a pin key."""
    return key.split('/', 1)[0]


def _check_key(key, task):
    check_task(task)
    if not isinstance(key, str) or not key.startswith(task + '/') or len(key) == len(task) + 1:
        raise PinError('key: %r is not of the form %s/<container>' % (key, task))


def _in_device_order(uuids, devices):
    """`uuids` sorted by device index; those not discovered (stale) last, by name."""
    index = dict((u, i) for i, u in enumerate(devices))
    return sorted(uuids, key=lambda u: (0, index[u], u) if u in index else (1, 0, u))


def held(pins, key, devices=()):
    """The UUIDs pinned to `key`, in device order."""
    return _in_device_order([u for u, p in pins.items() if p[0] == key], devices)


def free(pins, devices):
    """The discovered UUIDs pinned to nobody, in device order."""
    return [u for u in devices if u not in pins]


def stale(pins, devices):
    """The pinned UUIDs that are not discovered (any more), sorted."""
    known = set(devices)
    return sorted(u for u in pins if u not in known)


def pinned(pins, devices=()):
    """{key: [uuids in device order]} of every key holding a pin."""
    out = {}
    for uuid, p in pins.items():
        out.setdefault(p[0], []).append(uuid)
    return dict((k, _in_device_order(v, devices)) for k, v in out.items())


def view(pins, devices):
    """What the GPU modules report of a ledger."""
    return {'devices': list(devices), 'free': free(pins, devices), 'pinned': pinned(pins, devices),
            'stale': stale(pins, devices)}


def pin(pins, devices, key, task, n):
    """Pin `n` GPUs to `key` (a container of `task`), all or nothing.

    Returns (new pins, the key's UUIDs in device order, None), or on a short ledger
    (the pins unchanged, [], 'gpu ledger: requested N GPUs, M free') with M the GPUs the key could have
    (the free ones plus those it holds). A key that holds `n` pins keeps them (idempotent); a key
    whose count changes keeps what it holds that is still discovered, up to `n`, and takes the
    lowest-index free GPUs for the rest. `n` = 0 releases the key.
    """
    _check_key(key, task)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise PinError('count: %r is not an integer >= 0' % (n,))
    mine = held(pins, key, devices)
    if len(mine) == n:
        return dict(pins), mine, None
    known = set(devices)
    live = [u for u in mine if u in known]
    available = free(pins, devices)
    if len(live) + len(available) < n:
        return dict(pins), [], short_message(n, len(live) + len(available))
    chosen = set(live[:n]) | set(available[:max(0, n - len(live))])
    out = dict((u, p) for u, p in pins.items() if p[0] != key)
    for uuid in chosen:
        out[uuid] = (key, task)
    return out, _in_device_order(chosen, devices), None


def release(pins, task):
    """Free every key of `task`. Returns (new pins, freed UUIDs sorted)."""
    check_task(task)
    gone = sorted(u for u, p in pins.items() if p[1] == task or task_of(p[0]) == task)
    return dict((u, p) for u, p in pins.items() if u not in gone), gone


def release_key(pins, key):
    """Free one key. Returns (new pins, freed UUIDs sorted)."""
    gone = sorted(u for u, p in pins.items() if p[0] == key)
    return dict((u, p) for u, p in pins.items() if u not in gone), gone


def adopt(pins, key, task, uuids):
    """Pin exactly `uuids` to `key`, the GPUs an adopted container already uses.

    Returns (new pins, the UUIDs, None), or (the pins unchanged, [], error) when a UUID is pinned to
    another key: one GPU is never given to two keys. The key's other pins are freed. A UUID that is not
    discovered is pinned all the same (the container holds it) and shows as stale.
    """
    _check_key(key, task)
    wanted = []
    for uuid in uuids or ():
        if not isinstance(uuid, str) or not uuid:
            raise PinError('uuids: %r is not a GPU UUID' % (uuid,))
        if uuid not in wanted:
            wanted.append(uuid)
    taken = [(u, pins[u][0]) for u in wanted if u in pins and pins[u][0] != key]
    if taken:
        return dict(pins), [], 'gpu ledger: cannot adopt %s for %s: %s' % (
            ', '.join(wanted), key, '; '.join('%s is pinned to %s' % t for t in taken))
    out = dict((u, p) for u, p in pins.items() if p[0] != key)
    for uuid in wanted:
        out[uuid] = (key, task)
    return out, wanted, None
