# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cgroup adapter: the only place that writes the host's cgroup file system.

Owns: the parent cgroup of a sized task (ECS task `cpu` and `memory`) under the engine's cgroup root, for the
`cgroupfs` driver on cgroup v1 (memory/<parent>/memory.limit_in_bytes, cpu/<parent>/cpu.cfs_quota_us and
cpu.cfs_period_us) and on cgroup v2 (<parent>/memory.max and cpu.max, the cpu and memory controllers enabled on
the way down); making it with its limits, telling whether it is there, and removing it (the empty cgroups the
engine left under it first).
Must not: decide anything (the parent's path and the limits are arguments), or talk to the engine.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import time

ROOT = '/sys/fs/cgroup'
CFS_PERIOD_US = 100000
MIB = 1024 * 1024
# How long a removal waits for the engine to let go of a container's cgroup under the parent.
REMOVE_WAIT = 5.0
# The controllers a task size limits.
V2_CONTROLLERS = ('cpu', 'memory')


class CgroupError(Exception):
    """The parent cgroup could not be made, written or removed; the message says which file and why."""


def _write(path, value):
    try:
        with open(path, 'w') as handle:
            handle.write(value)
    except OSError as exc:
        raise CgroupError('cannot write %s to %s: %s' % (value.strip(), path, exc.strerror))


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


class Cgroups:
    """The cgroups of tasks on one host. `version`: 1 or 2 (as the engine reports it); `root`: where the
    cgroup file system is mounted."""

    def __init__(self, version, root=ROOT):
        self.version = int(version or 1)
        self.root = root

    def _dirs(self, parent):
        """Every directory that is the parent cgroup (one per v1 hierarchy; one on v2)."""
        rel = parent.strip('/')
        if self.version == 2:
            return [os.path.join(self.root, rel)]
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return []
        out = []
        for name in names:
            base = os.path.join(self.root, name)
            if not os.path.isdir(base) or os.path.islink(base):
                continue                # the joined hierarchies (cpu -> cpu,cpuacct) are listed once
            out.append(os.path.join(base, rel))
        return out

    def exists(self, parent):
        return any(os.path.isdir(d) for d in self._dirs(parent))

    def ensure(self, parent, cpu, memory):
        """Make the parent cgroup and write its limits: `cpu` CPU units (1024 a CPU; None: no quota), `memory`
        MiB (None: no limit). Written again when it is there already."""
        if self.version == 2:
            self._ensure_v2(parent, cpu, memory)
            return
        rel = parent.strip('/')
        for controller in ('memory', 'cpu'):
            if not os.path.isdir(os.path.join(self.root, controller)):
                raise CgroupError('the cgroup v1 hierarchy %s is not mounted at %s'
                                  % (controller, os.path.join(self.root, controller)))
        mem = os.path.join(self.root, 'memory', rel)
        cpu_dir = os.path.join(self.root, 'cpu', rel)
        for path in (mem, cpu_dir):
            self._mkdir(path)
        _write(os.path.join(mem, 'memory.limit_in_bytes'), '%d\n' % (memory * MIB) if memory else '-1\n')
        _write(os.path.join(cpu_dir, 'cpu.cfs_period_us'), '%d\n' % CFS_PERIOD_US)
        _write(os.path.join(cpu_dir, 'cpu.cfs_quota_us'), '%d\n' % quota_us(cpu) if cpu else '-1\n')

    def _ensure_v2(self, parent, cpu, memory):
        parts = parent.strip('/').split('/')
        path = self.root
        for part in parts:
            self._enable(path)
            path = os.path.join(path, part)
            self._mkdir(path)
        _write(os.path.join(path, 'memory.max'), '%d\n' % (memory * MIB) if memory else 'max\n')
        _write(os.path.join(path, 'cpu.max'), '%s %d\n' % (quota_us(cpu) if cpu else 'max', CFS_PERIOD_US))

    def _enable(self, path):
        """Enable the cpu and memory controllers for the children of `path` (v2), where not yet."""
        control = os.path.join(path, 'cgroup.subtree_control')
        enabled = (_read(control) or '').split()
        missing = [c for c in V2_CONTROLLERS if c not in enabled]
        if missing:
            _write(control, ' '.join('+%s' % c for c in missing) + '\n')

    @staticmethod
    def _mkdir(path):
        try:
            os.makedirs(path)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise CgroupError('cannot make the cgroup %s: %s' % (path, exc.strerror))

    def limits(self, parent):
        """What the parent cgroup's limit files say (for reports and tests): {file: text}."""
        rel = parent.strip('/')
        if self.version == 2:
            base = os.path.join(self.root, rel)
            names = (('memory.max', base), ('cpu.max', base))
        else:
            names = (('memory.limit_in_bytes', os.path.join(self.root, 'memory', rel)),
                     ('cpu.cfs_quota_us', os.path.join(self.root, 'cpu', rel)),
                     ('cpu.cfs_period_us', os.path.join(self.root, 'cpu', rel)))
        return dict((name, _read(os.path.join(base, name))) for name, base in names)

    def remove(self, parent, clock=time.monotonic, sleep=time.sleep):
        """Remove the parent cgroup in every hierarchy (the engine's empty cgroups under it first). Returns
        whether there was one. A cgroup still busy after REMOVE_WAIT seconds is an error."""
        found = False
        for top in self._dirs(parent):
            if not os.path.isdir(top):
                continue
            found = True
            deadline = clock() + REMOVE_WAIT
            while True:
                try:
                    self._rmtree(top)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY) or clock() >= deadline:
                        raise CgroupError('cannot remove the cgroup %s: %s' % (top, exc.strerror))
                    sleep(0.1)
        return found

    @staticmethod
    def _rmtree(top):
        """rmdir a cgroup and the cgroups under it, deepest first (a cgroup's files cannot be removed, only its
        directory, once no process is in it)."""
        for dirpath, dirnames, dummy in os.walk(top, topdown=False):  # pylint: disable=unused-variable
            for name in dirnames:
                path = os.path.join(dirpath, name)
                if os.path.isdir(path):
                    os.rmdir(path)
        if os.path.isdir(top):
            os.rmdir(top)


def detect(root=ROOT):
    """The cgroup version of the host: 2 when `root` is the unified hierarchy, else 1 (v1, or hybrid)."""
    return 2 if os.path.exists(os.path.join(root, 'cgroup.controllers')) else 1


def quota_us(cpu):
    """The CFS quota of `cpu` CPU units per CFS_PERIOD_US (cpu/1024 CPUs)."""
    return cpu * CFS_PERIOD_US // 1024
