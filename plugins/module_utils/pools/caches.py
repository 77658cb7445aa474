# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A runner pool's caches (profile.caches): engine volumes that outlive the ephemeral runners.

Scope slot: a volume of each slot's own, mounted read-write in its runners, one at a time. Scope pool: a
read-only snapshot in generations (a volume each), never rewritten: seed_from slot1 copies slot 1's own volume
(its one writer) into a new generation once slot 1 is vacant after a job ran there; runners started later mount
the new one, those running keep theirs; a generation no container mounts any more goes. seed_from pool:<name>
mounts that pool's current snapshot. A snapshot's root directory carries the sticky bit while it is copied:
one left so by a pass that died midway is never mounted. Volumes are found again by name and labels after the
store is lost.

Owns: naming, labelling and making the volumes, the binds a runner gets, trimming to max_size, seeding and
pruning snapshots, purging a pool's caches, and the view gh_runner_info shows. Works through the engine adapter
and the host's filesystem (a volume's mount point), as root on the engine's host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils.pools import plan as plan_mod
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import STORE_LABEL
from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import SEED_SLOT

ROLE = 'cache'
SNAPSHOT_LABEL = 'drover.snapshot'      # a pool snapshot's generation (1, 2, ...); slot caches have drover.slot
COPYING = stat.S_ISVTX                  # on a snapshot's root while it is copied


class CacheError(Exception):
    """A slot's cache cannot be mounted."""


def volume_name(scope, pool, cache, part):
    """drover-cache-<store>-<pool>-<cache>-<slot> for a slot's own volume, ...-g<generation> for a snapshot."""
    return 'drover-cache-%s-%s-%s-%s' % ((scope or 'any')[:8], pool, cache, part)


class PoolCaches:
    """The caches of one pool in one pass; events and warnings go to the pass's lists."""

    def __init__(self, engine, spec, scope, check_mode, now, events, warnings):
        self.engine = engine
        self.spec = spec
        self.scope = scope
        self.check_mode = check_mode
        self.now = now
        self.events = events
        self.warnings = warnings
        self.caches = spec.profile.caches if spec.profile is not None else ()
        self.snapshots = {}             # (pool, cache) -> the current snapshot volume, found or made this pass

    def _labels(self, pool, cache, path, **extra):
        labels = {'drover.role': ROLE, 'drover.pool': pool, 'drover.cache': cache, 'drover.cache-path': path}
        labels.update(extra)
        if self.scope:
            labels[STORE_LABEL] = self.scope
        return labels

    def _warn(self, cache, text):
        self.warnings.append('pool %s: cache %s: %s' % (self.spec.pool, cache.name, text))

    # --- a runner's binds ------------------------------------------------------------------------

    def binds(self, idx, owner=None):
        """The binds of slot `idx`'s caches (volume:path:rw|ro), their volumes made (labelled) when missing; a
        volume of a cache's name that is not that cache of this store is never mounted (CacheError). `owner`: the
        (uid, gid) the job runs as, whose a writable cache's root is made (a new volume's root is root's, 0755)."""
        out = []
        for cache in self.caches:
            if cache.scope == 'slot' or (cache.seed_from == SEED_SLOT and idx == 0):
                out.append('%s:%s:rw' % (self._slot_volume(cache, idx, owner), cache.path))
            else:
                pool = self.spec.pool if cache.seed_from == SEED_SLOT else cache.seed_from.split(':', 1)[1]
                out.append('%s:%s:ro' % (self._snapshot(pool, cache), cache.path))
        return out

    def _slot_volume(self, cache, idx, owner=None):
        name = volume_name(self.scope, self.spec.pool, cache.name, idx + 1)
        labels = self._labels(self.spec.pool, cache.name, cache.path, **{'drover.slot': str(idx + 1)})
        found = self._ensure(name, labels, 'the cache %s of slot %d' % (cache.name, idx + 1))
        if owner is not None:
            _own_root(found.get('mountpoint'), owner)
        return name

    def _ensure(self, name, labels, what):
        """The volume, made when missing: its engine view."""
        found = self.engine.volume(name)
        if found is None:
            self.engine.volume_create(name, 'local', {}, labels)
            found = self.engine.volume(name) or {}
        elif any(found['labels'].get(k) != v for k, v in labels.items() if k != 'drover.cache-path'):
            raise CacheError('volume %s is not %s of this store' % (name, what))
        return found

    # --- snapshots -------------------------------------------------------------------------------

    def _generations(self, pool, cache_name):
        """[(generation, volume name, complete)] of a pool's snapshots of a cache, oldest first."""
        labels = {'drover.role': ROLE, 'drover.pool': pool, 'drover.cache': cache_name, SNAPSHOT_LABEL: None}
        if self.scope:
            labels[STORE_LABEL] = self.scope
        out = []
        for row in self.engine.volumes_labelled(labels):
            gen = row['labels'].get(SNAPSHOT_LABEL, '')
            if gen.isdigit() and row['name'] == volume_name(self.scope, pool, cache_name, 'g' + gen):
                out.append((int(gen), row['name'], _complete(row.get('mountpoint'))))
        return sorted(out)

    def _snapshot(self, pool, cache, known=None):
        """The current (newest complete) snapshot of `pool`'s cache; an empty first one made when there is none.
        `known`: its generations, when the caller listed them already."""
        key = (pool, cache.name)
        if key not in self.snapshots:
            known = self._generations(pool, cache.name) if known is None else known
            done = [name for dummy, name, complete in known if complete]
            if done:
                self.snapshots[key] = done[-1]
            else:
                name = volume_name(self.scope, pool, cache.name, 'g1')
                self._ensure(name, self._labels(pool, cache.name, cache.path, **{SNAPSHOT_LABEL: '1'}),
                             'the snapshot 1 of the cache %s of pool %s' % (cache.name, pool))
                self.snapshots[key] = name
        return self.snapshots[key]

    def ended(self, idx, ran_job):
        """A runner of slot `idx` ended (its slot is vacant now): trim the slot's caches, and after a job in slot 1,
        seed a new generation of each snapshot seeded from it."""
        if self.check_mode:
            return
        for cache in self.caches:
            if cache.scope == 'slot' or (cache.seed_from == SEED_SLOT and idx == 0):
                self._trim(cache, idx)
            if cache.seed_from == SEED_SLOT and idx == 0 and ran_job:
                self._seed(cache)

    def _mountpoint(self, cache, name):
        try:
            found = self.engine.volume(name)
        except EngineError as exc:
            self._warn(cache, str(exc))
            return None
        return (found or {}).get('mountpoint') or None

    def _trim(self, cache, idx):
        """Trim a writable volume to max_size, oldest files first (links removed, never followed)."""
        if not cache.max_size:
            return
        root = self._mountpoint(cache, volume_name(self.scope, self.spec.pool, cache.name, idx + 1))
        if root is None:
            return
        try:
            removed, freed, left_out = _files.trim_tree(root, cache.max_size * 1024 * 1024)
        except OSError as exc:
            self._warn(cache, 'slot %d could not be trimmed: %s' % (idx + 1, exc))
            return
        if left_out:
            self._warn(cache, 'slot %d was trimmed without looking at all it holds: %s; it may hold more than '
                       'max_size' % (idx + 1, _files.left_out_said(left_out)))
        if removed:
            self.events.append(plan_mod.event('cache.trimmed', self.spec.pool, self.now, cache=cache.name,
                                              slot=idx + 1, files=removed, bytes=freed))

    def _seed(self, cache):
        """Copy slot 1's volume into a new snapshot generation (marked as being copied until it is whole), then
        let the older generations that no container mounts go."""
        pool = self.spec.pool
        seed = self._mountpoint(cache, volume_name(self.scope, pool, cache.name, 1))
        if seed is None:
            return
        try:
            known = self._generations(pool, cache.name)
            gen = (known[-1][0] if known else 0) + 1
            name = volume_name(self.scope, pool, cache.name, 'g%d' % gen)
            self.engine.volume_create(name, 'local', {}, self._labels(pool, cache.name, cache.path,
                                                                      **{SNAPSHOT_LABEL: str(gen)}))
            root = self._mountpoint(cache, name)
            if root is None:
                raise OSError('volume %s has no mount point' % name)
            top = os.lstat(seed)
            os.chmod(root, 0o700 | COPYING)
            for entry in os.listdir(root):          # an engine may copy an image's files into a new volume
                raise OSError('volume %s is not empty (%s)' % (name, entry))
            files, size, left_out, beyond = _files.copy_tree(seed, root)
            if beyond:
                # A partial copy is no snapshot: it stays marked as being copied (never mounted) and goes; runners
                # keep mounting the current one.
                self._drop(name)
                self._warn(cache, 'a snapshot of slot 1 was not made: the copy did not reach all it holds: %s'
                           % _files.left_out_said(beyond))
                return
            os.chown(root, top.st_uid, top.st_gid)
            os.chmod(root, stat.S_IMODE(top.st_mode) & ~(COPYING | stat.S_ISUID | stat.S_ISGID))
        except (EngineError, OSError) as exc:
            self._warn(cache, 'a snapshot of slot 1 could not be made: %s' % exc)
            return
        self.snapshots[(pool, cache.name)] = name
        self.events.append(plan_mod.event('cache.seeded', pool, self.now, cache=cache.name, generation=gen,
                                          files=files, bytes=size, left_out=left_out))
        self.prune(cache)

    def _drop(self, name):
        """Remove a snapshot generation not made whole (the next prune removes it when this cannot)."""
        try:
            self.engine.volume_remove(name, in_use_ok=True)
        except EngineError:
            pass

    def prune(self, cache, known=None):
        """Remove this pool's snapshot generations of `cache` older than the current one (and unfinished ones),
        each once no container (running or not) mounts it: the engine refuses a volume in use. `known`: its
        generations, when the caller listed them already."""
        current = self.snapshots.get((self.spec.pool, cache.name))
        if current is None:
            return
        known = self._generations(self.spec.pool, cache.name) if known is None else known
        at = next((gen for gen, name, dummy in known if name == current), None)
        for gen, name, complete in known:
            if name == current or (complete and (at is None or gen > at)):
                continue
            try:
                self.engine.volume_remove(name, in_use_ok=True)
            except EngineError as exc:
                self._warn(cache, 'snapshot %s stays: %s' % (name, exc))

    def prune_all(self):
        """Once a pass: older snapshots that runners mounted until now."""
        if self.check_mode:
            return
        for cache in self.caches:
            if cache.seed_from == SEED_SLOT:
                try:
                    known = self._generations(self.spec.pool, cache.name)       # listed once for both
                    self._snapshot(self.spec.pool, cache, known)
                    self.prune(cache, known)
                except (EngineError, CacheError) as exc:
                    self._warn(cache, str(exc))

    def purge(self, occupants):
        """A pool declared absent with purge_caches, once no runner is left: its caches and snapshots go (a
        snapshot another pool's runner mounts stays, with a warning)."""
        if self.check_mode or self.spec.state != 'absent' or not self.spec.purge_caches or occupants:
            return
        labels = {'drover.role': ROLE, 'drover.pool': self.spec.pool}
        if self.scope:
            labels[STORE_LABEL] = self.scope
        for volume in self.engine.volumes_labelled(labels):
            try:
                self.engine.volume_remove(volume['name'])
            except EngineError as exc:
                self.warnings.append('pool %s: cache volume %s stays: %s' % (self.spec.pool, volume['name'], exc))


def _complete(mountpoint):
    """Whether a snapshot's copy finished (its root no longer carries the COPYING mark)."""
    try:
        return not os.lstat(mountpoint).st_mode & COPYING
    except (TypeError, OSError):
        return False


def cache_views(engine, scope, pool, warnings=None):
    """A pool's caches as gh_runner_info shows them: each slot's own volumes and each snapshot generation, with
    the bytes of their files (of those a walk reaches: `warnings`, a list, is told of what it left out)."""
    out = []
    labels = {'drover.role': ROLE, 'drover.pool': pool}
    if scope:
        labels[STORE_LABEL] = scope
    for volume in engine.volumes_labelled(labels):
        marks = volume['labels']
        try:
            size, left_out = _files.tree_size(volume['mountpoint']) if volume.get('mountpoint') else (None, 0)
        except OSError:
            size, left_out = None, 0
        if left_out and warnings is not None:
            warnings.append('pool %s: cache volume %s: its size counts only what a walk reached: %s'
                            % (pool, volume['name'], _files.left_out_said(left_out)))
        slot, gen = marks.get('drover.slot'), marks.get(SNAPSHOT_LABEL)
        out.append({'name': marks.get('drover.cache'), 'slot': int(slot) if slot and slot.isdigit() else None,
                    'snapshot': int(gen) if gen and gen.isdigit() else None, 'path': marks.get('drover.cache-path'),
                    'volume': volume['name'], 'size': size})
    return out


def _own_root(mountpoint, owner):
    """A volume's root directory given to `owner` ((uid, gid)), through its own descriptor (never a link)."""
    if not mountpoint:
        raise CacheError('its volume has no mount point on the host')
    _files.own_dir(mountpoint, owner[0], owner[1])
