# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening a host for a pass: the engine, the host lock and the store, with one failure type.

Owns: the order in which a converge reaches the engine (first: an unreachable engine changes nothing),
takes the host lock (never in check mode) and opens the store (read-only in check mode).
Also: which runner pools a host holds (its store's rows, and the runner containers that carry the store's
label), which both modules report.
Must not: plan or apply anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.drover.fleet.plugins.module_utils._docker import Engine, EngineUnavailable
from ansible_collections.drover.fleet.plugins.module_utils.host.store import HostLock, LockTimeout, Store, StoreError

# The label that ties a runner container to the store that started it: two stores on one engine (two
# inventories, a demo beside a test) must not adopt or drain each other's runners.
STORE_LABEL = 'drover.store'
RUNNER_ROLE = 'runner'


def store_scope(store_path):
    """The store's identity on the engine: a digest of its absolute path (a store lost and made again at the
    same path keeps it, so its runners are still adopted)."""
    return hashlib.sha256(os.path.abspath(store_path).encode('utf-8')).hexdigest()[:16]


def scoped(listing, scope):
    """The runner containers of this store: labelled with its scope, or with none (started before the
    label existed: adopted as before)."""
    return [c for c in listing if c['labels'].get(STORE_LABEL) in (None, scope)]


def held_pool_owners(store, listing):
    """{pool: owner} of the pools a host holds: its store's pools, and those only runner containers of this
    store (`listing`, already scoped) still name."""
    owners = dict((c['labels'].get('drover.pool'), c['labels'].get('drover.repository')) for c in listing
                  if c['labels'].get('drover.pool'))
    owners.update((row['pool'], row['owner']) for row in store.pools())
    return owners


def held_pools(store, listing, store_path):
    """The names of the pools a host holds, from any listing of the engine's drover containers."""
    runners = [c for c in listing if c['labels'].get('drover.role') == RUNNER_ROLE]
    return sorted(held_pool_owners(store, scoped(runners, store_scope(store_path))))


class TaskFailure(Exception):
    """The pass cannot go on; `msg` says why, `result` holds what was done before it."""

    def __init__(self, msg, result=None):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result or {}


def open_host(params, check_mode, first=None):
    """Reach the engine, take the host lock (not in check mode) and open the store; raises TaskFailure.
    `first(engine)`: what must hold of the engine before the lock file or the store is made (it raises)."""
    try:
        engine = Engine(params.get('docker_host'), timeout=params.get('timeout') or 60)
    except EngineUnavailable as exc:
        raise TaskFailure(str(exc))
    if first is not None:
        try:
            first(engine)
        except BaseException:
            engine.close()
            raise
    lock = None
    try:
        if not check_mode:
            lock = HostLock(params['store_path'] + '.lock', timeout=params.get('lock_timeout') or 60).acquire()
        store = Store(params['store_path'], read_only=check_mode)
    except (StoreError, LockTimeout) as exc:
        if lock:
            lock.release()
        engine.close()
        raise TaskFailure(str(exc))
    return engine, store, lock
