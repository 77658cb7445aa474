# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening a host for a pass: the engine, the host lock and the store, with one failure type.

Owns: the order in which a converge reaches the engine (first: an unreachable engine changes nothing),
takes the host lock (never in check mode) and opens the store (read-only in check mode).
Must not: plan or apply anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.drover.fleet.plugins.module_utils._docker import Engine, EngineUnavailable
from ansible_collections.drover.fleet.plugins.module_utils._store import HostLock, LockTimeout, Store, StoreError


class TaskFailure(Exception):
    """The pass cannot go on; `msg` says why, `result` holds what was done before it."""

    def __init__(self, msg, result=None):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result or {}


def open_host(params, check_mode):
    """Reach the engine, take the host lock (not in check mode) and open the store; raises TaskFailure."""
    try:
        engine = Engine(params.get('docker_host'), timeout=params.get('timeout') or 60)
    except EngineUnavailable as exc:
        raise TaskFailure(str(exc))
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
