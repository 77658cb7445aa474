# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU ledger passes: check, discover, lock, read the pins, change them, write them — the one call
gpu_pin and gpu_info make, and the Ledger other passes (ecs_task) use inside their own lock.

Owns: the checks of the GPU modules' options, the order of a pin pass (discovery before the host
lock, one read and at most one write of the pins under it), best-effort versus strict, and the result
the GPU modules return.
Must not: decide which GPU goes where (gpu.plan does), talk to NVML or nvidia-smi other than through
gpu.nvml, or write anything in check mode (the store is opened read-only and no lock is taken).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sqlite3
import time

from ansible_collections.drover.fleet.plugins.module_utils.gpu import nvml as gpu_mod
from ansible_collections.drover.fleet.plugins.module_utils.gpu import plan as plan_mod
from ansible_collections.drover.fleet.plugins.module_utils.host.store import (
    LOCK_TIMEOUT, HostLock, LockTimeout, Store, StoreError)


class GpuFailure(Exception):
    """The pass cannot go on; `msg` says why, `result` holds what the module returns with it."""

    def __init__(self, msg, result=None):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result or {}


def stale_warning(uuids):
    return ('gpu ledger: %d pinned GPU(s) not discovered on this host: %s; their pins are kept until their '
            'task is released' % (len(uuids), ', '.join(uuids)))


class Ledger:
    """The host's GPU pins for one pass: read once from an open store, changed in memory, written once.

    A pass that already holds the host lock and the store (ecs_task) makes one with `Ledger.load`,
    pins, releases and adopts through it, and calls `save` once outside check mode.
    """

    def __init__(self, pins, devices, source):
        self.before = dict(pins)
        self.pins = dict(pins)
        self.devices = list(devices)
        self.source = source

    @classmethod
    def load(cls, store, devices, source):
        return cls(store.gpu_pins(), devices, source)

    @property
    def changed(self):
        return self.pins != self.before

    def pin(self, key, task, n):
        """(UUIDs, None), or ([], 'gpu ledger: requested N GPUs, M free') with nothing reserved."""
        self.pins, uuids, error = plan_mod.pin(self.pins, self.devices, key, task, n)
        return uuids, error

    def short(self, field, key, n):
        """What a request of `n` GPUs for `key` the ledger cannot meet says: `field` (the declaration's name
        for it) and the host's GPUs, how many and how many free for the key."""
        return plan_mod.short_for(field, n, len(self.devices), plan_mod.could_have(self.pins, self.devices, key))

    def adopt(self, key, task, uuids):
        """(UUIDs, None), or ([], error) when one of them is pinned to another key; nothing changes then."""
        self.pins, uuids, error = plan_mod.adopt(self.pins, key, task, uuids)
        return uuids, error

    def release(self, task):
        """Free every key of the task; returns the freed UUIDs."""
        self.pins, gone = plan_mod.release(self.pins, task)
        return gone

    def release_key(self, key):
        self.pins, gone = plan_mod.release_key(self.pins, key)
        return gone

    def held(self, key):
        return plan_mod.held(self.pins, key, self.devices)

    def view(self):
        out = plan_mod.view(self.pins, self.devices)
        out['source'] = self.source
        return out

    def save(self, store, now):
        """Write the pins when they changed (one transaction). Returns whether it wrote."""
        if not self.changed:
            return False
        store.set_gpu_pins(self.pins, now)
        self.before = dict(self.pins)
        return True


def delivery(how, uuids, environment):
    """How pinned GPUs reach a container (`how`: gpu_delivery): (environment, device requests)."""
    if not uuids:
        return environment, None
    if how == 'env':
        return dict(environment, NVIDIA_VISIBLE_DEVICES=','.join(uuids)), None
    if how == 'cdi':
        return environment, [{'driver': 'cdi', 'device_ids': ['nvidia.com/gpu=%s' % u for u in uuids]}]
    return environment, [{'driver': 'nvidia', 'device_ids': list(uuids), 'capabilities': [['gpu']]}]


def pass_ledger(params, wanted, engine, store):
    """The GPU ledger of a pass of ecs_task or gh_runner_slot (host options gpu_discovery, gpu_devices,
    gpu_delivery): the host's pins, with the GPUs discovered only when something declared asks for some
    (`wanted`). Raises GpuFailure."""
    if not wanted:
        return Ledger.load(store, [], 'none')
    if params.get('gpu_delivery') == 'cdi' and not engine.supports_cdi():
        raise GpuFailure('gpu_delivery cdi needs a Docker engine with CDI support (25 or newer); this host runs '
                         '%s: use gpu_delivery device-request or env' % engine.describe())
    try:
        devices, source = gpu_mod.discover(params.get('gpu_discovery') or 'auto', params.get('gpu_devices'))
    except gpu_mod.GpuError as exc:
        raise GpuFailure('GPU discovery: %s' % exc)
    return Ledger.load(store, devices, source)


def check_discovery(params):
    """Check discovery/devices; returns the checked static list (or None)."""
    mode = params.get('discovery') or 'auto'
    devices = params.get('devices')
    if mode not in gpu_mod.MODES:
        raise GpuFailure('discovery: %r is not one of %s' % (mode, ', '.join(gpu_mod.MODES)))
    if mode == 'static':
        try:
            return gpu_mod.check_devices(devices)
        except gpu_mod.GpuError as exc:
            raise GpuFailure(str(exc))
    if devices is not None:
        raise GpuFailure('devices: only used with discovery=static, not with discovery=%s' % mode)
    return None


def check_params(params):
    """Check gpu_pin's options before anything is touched; raises GpuFailure naming the field."""
    task = params.get('task')
    container = params.get('container')
    count = params.get('count')
    state = params.get('state') or 'present'
    if container is not None and not task:
        raise GpuFailure('task: required with container (the task container %s belongs to)' % (container,))
    try:
        plan_mod.check_task(task)
        if container is not None:
            plan_mod.key_for(task, container)
    except plan_mod.PinError as exc:
        raise GpuFailure(str(exc))
    if state not in ('present', 'absent'):
        raise GpuFailure('state: %r is not one of present, absent' % (state,))
    if state == 'present':
        if container is None:
            raise GpuFailure('container: required with state=present (the pins are per container)')
        if count is None:
            raise GpuFailure('count: required with state=present')
    elif count is not None:
        raise GpuFailure('count: not used with state=absent (absent releases every pin of the task, or of '
                         'the container when given); leave it out')
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
        raise GpuFailure('count: must be an integer >= 0, got %r' % (count,))
    check_discovery(params)


def discover(params):
    """The host's GPUs: (UUIDs, source); raises GpuFailure."""
    try:
        return gpu_mod.discover(params.get('discovery') or 'auto', params.get('devices'))
    except gpu_mod.GpuError as exc:
        raise GpuFailure(str(exc))


def _result(ledger, gpu_ids, changed):
    out = ledger.view()
    out['changed'] = changed
    out['gpu_ids'] = list(gpu_ids)
    return out


def converge(params, check_mode=False, diff=False, clock=time.time):
    """The gpu_pin module's one call. Returns the result dict (with `warnings`); raises GpuFailure."""
    check_params(params)
    devices, source = discover(params)
    lock = None
    store = None
    try:
        if not check_mode:
            lock = HostLock(params['store_path'] + '.lock',
                            timeout=params.get('lock_timeout') or LOCK_TIMEOUT).acquire()
        store = Store(params['store_path'], read_only=check_mode)
        ledger = Ledger.load(store, devices, source)
        warnings = []
        task = params['task']
        gpu_ids = []
        if (params.get('state') or 'present') == 'present':
            key = plan_mod.key_for(task, params['container'])
            gpu_ids, error = ledger.pin(key, task, params['count'])
            if error:
                if params.get('strict'):
                    raise GpuFailure(error, _result(ledger, [], False))
                warnings.append('%s; container %s runs without GPUs (best effort; strict=true makes this a '
                                'failure)' % (error, key))
        elif params.get('container') is not None:
            ledger.release_key(plan_mod.key_for(task, params['container']))
        else:
            ledger.release(task)
        changed = ledger.changed
        before = plan_mod.pinned(ledger.before, devices)
        if not check_mode:
            ledger.save(store, clock())
    except (StoreError, LockTimeout) as exc:
        raise GpuFailure(str(exc))
    except sqlite3.Error as exc:
        raise GpuFailure('store %s: the GPU pins cannot be read or written (%s); nothing was changed'
                         % (params['store_path'], exc))
    finally:
        if store is not None:
            store.close()
        if lock is not None:
            lock.release()
    result = _result(ledger, gpu_ids, changed)
    if result['stale']:
        warnings.append(stale_warning(result['stale']))
    result['warnings'] = warnings
    if diff:
        result['diff'] = {'before': {'pinned': before}, 'after': {'pinned': result['pinned']}}
    return result


def info(params):
    """The gpu_info module's one call: the host's GPUs and pins, read-only, no lock."""
    check_discovery(params)
    devices, source = discover(params)
    try:
        store = Store(params['store_path'], read_only=True)
    except StoreError as exc:
        raise GpuFailure(str(exc))
    try:
        ledger = Ledger.load(store, devices, source)
    except sqlite3.Error as exc:
        raise GpuFailure('store %s: the GPU pins cannot be read (%s)' % (params['store_path'], exc))
    finally:
        store.close()
    result = ledger.view()
    result['changed'] = False
    return result
