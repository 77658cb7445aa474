# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner-pool passes: one call of gh_runner_slot is one pass, in this order: collect finished ->
list runners (delete this host's orphan registrations) -> list queued jobs -> plan -> apply.

Owns: reading slot occupancy back from the engine's labels, releasing ended runners (inspect, log,
remove, deregister), orphan cleanup, idle stop versus kill, starting JIT runners with their config as a
root-only file, and persisting holds, streaks and slots; what a runner gets from the host besides (its pinned
GPUs from the host's ledger, its caches through pools.caches, its slot's engine through pools.slot_engine, what its
image gives through pools.runner_image). Check mode reads (engine and GitHub listings)
and plans; it sends no POST or DELETE, creates or removes no container and writes no store row.
Must not: decide (the decider does) or talk to Docker or GitHub other than through their adapters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.drover.fleet.plugins.module_utils.gpu import plan as gpu_plan
from ansible_collections.drover.fleet.plugins.module_utils.pools import plan as plan_mod
from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import GpuFailure, Ledger, delivery, pass_ledger
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError, split_image
from ansible_collections.drover.fleet.plugins.module_utils.pools.github import Etags, GitHub, GitHubError, RateLimited, BUSY
from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils.host import metrics as _metrics
from ansible_collections.drover.fleet.plugins.module_utils.pools.caches import CacheError, PoolCaches, cache_views
from ansible_collections.drover.fleet.plugins.module_utils.pools.mirror import HostMirror, mirror_spec
from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import (
    HOLDER_ROLE as SLOT_HOLDER_ROLE, SUBID_FLOOR, SlotEngine, SlotEngineError, subid_floor_option)
from ansible_collections.drover.fleet.plugins.module_utils.pools.runner_image import (
    RunnerImageError, image_owner, runner_externals)
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import (
    RUNNER_ROLE, STORE_LABEL, TaskFailure, held_pool_owners, open_host, scoped, store_scope)
from ansible_collections.drover.fleet.plugins.module_utils.tasks.plan import iso
from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import (
    SYSBOX_RUNTIME, declarations, host_prefix, host_runner, inner_engine, owner_of, parse_runner_name, pool_spec,
    runner_name)
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

ROLE = RUNNER_ROLE
JIT_MOUNT = '/runner/.jitconfig'
# The image of a slot's network holder (profile.docker rootless): the collection's own.
HOLDER_IMAGE = 'drover.local/busybox:1'
SLOTS_MAX = 256                 # profile.slots at most: the slots whose engines a drained pool looks for
# The listings' ETags and last answers, beside the store: the next pass asks with If-None-Match, and GitHub's
# 304 answers do not count against the rate limit.
ETAGS_FILE = 'github-etags.json'
# Runner containers created and started at once in a pass that starts several (their registrations come one
# after the other before): the engine takes a few starts at a time well, and the last of a burst waits less.
STARTERS = 4
# What a failed job's record keeps of the runner's output, beside the store (the newest bytes).
RECORD_OUTPUT_BYTES = 1024 * 1024


def machine_id(path='/etc/machine-id'):
    """This host's short machine ID: with the prefix, it names the host's runners. A host name (when there is
    no machine ID) has its '-' and other characters a machine ID may not hold made '_'."""
    value = ''
    try:
        with open(path) as handle:
            value = handle.read().strip()[:12]
    except IOError:
        pass
    return re.sub(r'[^A-Za-z0-9_.]', '_', value or os.uname()[1][:12])


def _epoch(ts):
    """Docker's RFC 3339 time to epoch seconds; None for the zero time or nothing."""
    if not ts or ts.startswith('0001-'):
        return None
    try:
        return calendar.timegm(time.strptime(ts[:19], '%Y-%m-%dT%H:%M:%S'))
    except ValueError:
        return None


class PoolPass:
    def __init__(self, spec, engine, store, gh, check_mode, now, jit_dir, listing, scope=None, gpus=None,
                 mirrors=None, subid_floor=SUBID_FLOOR):
        self.spec = spec
        self.mirrors = mirrors          # the slot engines' registry mirrors this pass (None: as they were)
        self.subid_floor = subid_floor  # where the slot users' subordinate ID ranges may start (slot_subid_floor)
        # The host's GPU ledger, shared with ecs_task's tasks, and how pinned GPUs reach a runner (gpu_delivery).
        self.ledger, self.gpu_delivery = gpus or (Ledger({}, [], 'none'), 'device-request')
        self.gpu_ids = {}               # slot index -> the GPUs pinned for the runner it starts this pass
        self.slot_engines = {}          # slot index -> its SlotEngine (profile.docker rootless), ready this pass
        self.host_listing = listing     # every runner container on the engine, listed once per call
        self.scope = scope
        self.listing = listing if scope is None else scoped(listing, scope)     # those of this store
        self.engine = engine
        self.store = store
        self.gh = gh
        self.check_mode = check_mode
        self.now = now
        self.jit_dir = jit_dir
        self.events = []
        self.warnings = []
        self.started, self.stopped, self.released, self.orphans_deleted = [], [], [], []
        # Registrations of runners that ended, deleted after the pass's starts: a burst of queued jobs does not
        # wait for one DELETE per finished runner (GitHub has mostly removed ephemeral ones by then anyway).
        self.ended_registrations = []
        self.image_ready = False        # the profile's image is on the host (checked or pulled this pass)
        self.image_ids = False          # (uid, gid) its user (None: root; False: not read yet this pass)
        self.cache_binds = {}           # slot index -> the binds of its cache volumes, made before its runner starts
        self.caches = PoolCaches(engine, spec, scope, check_mode, now, self.events, self.warnings)
        self.queued_since = []          # when each matching queued job was queued (epoch seconds), oldest first
        self.waiting_for = []           # the slots that wait this pass, with the cause (gpu)
        self.pickups = []               # seconds from a job queued to the runner started for it, this pass
        row = store.pool(spec.pool)
        self.state = plan_mod.fresh_state()
        if row:
            self.state.update((k, row[k]) for k in ('failures', 'idle_exits', 'hold_until', 'hold_cause'))
        self.api_wait = row.get('api_wait') if row else None
        self.stored_row = row
        self.stored_slots = store.slots(spec.pool)

    # --- reading ---------------------------------------------------------------------------------

    def occupants(self):
        """Slot index -> occupant, from the runner containers' labels (the engine is the truth). Also notes
        every runner this host holds in any pool, so that no pool takes another's runner for an orphan."""
        out = {}
        # Read per pool: a pool passed earlier in the same call may have started runners of this host.
        # Runners of another store on the same engine are not this store's to adopt, nor orphans to delete.
        self.host_runner_ids = set(r['runner_id'] for r in self.store.all_slots() if r.get('runner_id'))
        for c in self.host_listing:
            try:
                self.host_runner_ids.add(int(c['labels'].get('drover.runner-id')))
            except (TypeError, ValueError):
                pass
        for c in self.listing:
            labels = c['labels']
            if labels.get('drover.pool') != self.spec.pool:
                continue
            try:
                idx = int(labels.get('drover.slot')) - 1
                runner_id = int(labels.get('drover.runner-id'))
            except (TypeError, ValueError):
                continue
            row = self.stored_slots.get(idx) or {}
            out[idx] = {'runner_name': c['name'], 'runner_id': runner_id, 'container_id': c['id'],
                        'started_at': c.get('created') or row.get('started_at'), 'state': c['state'],
                        'busy': bool(row.get('busy')) and row.get('runner_id') == runner_id,
                        'gpus': [u for u in (labels.get('drover.gpus') or '').split(',') if u],
                        'slot_oom_kills': labels.get('drover.slot-oom-kills')}
        return out

    def _api_open(self):
        if self.api_wait and self.now < self.api_wait:
            self.warnings.append('pool %s: GitHub asked for no requests until %s: no listing this pass'
                                 % (self.spec.pool, iso(self.api_wait)))
            return False
        return True

    def _github(self, what, call, *args):
        """Run one GitHub call; (value, ok). A rate limit stops requests until its reset."""
        try:
            return call(*args), True
        except RateLimited as exc:
            self.api_wait = exc.reset
            self.warnings.append('pool %s: %s' % (self.spec.pool, exc))
            self.events.append(plan_mod.event('github.rate_limited', self.spec.pool, self.now, until=iso(exc.reset)))
        except GitHubError as exc:
            self.warnings.append('pool %s: %s' % (self.spec.pool, exc))
            self.events.append(plan_mod.event('github.error', self.spec.pool, self.now, call=what, status=exc.status,
                                              error=str(exc)))
        return None, False

    # --- slot engines (profile.docker) --------------------------------------------------------------

    def _labels(self, **more):
        """The labels of what the pass makes for this pool (its store's too), with `more`."""
        labels = dict({'drover.pool': self.spec.pool}, **more)
        if self.scope:
            labels[STORE_LABEL] = self.scope
        return labels

    def slot_engine(self, idx):
        if idx not in self.slot_engines:
            labels = self._labels(**{'drover.slot': str(idx + 1)})
            profile = self.spec.profile
            self.slot_engines[idx] = SlotEngine(self.engine, self.scope, self.spec.pool, idx, HOLDER_IMAGE, labels,
                                                cpus=profile.cpus if profile else None,
                                                memory=profile.memory if profile else None, mirrors=self.mirrors,
                                                keep_pulled=not self.spec.pull_requests_from_forks,
                                                subid_floor=self.subid_floor)
        return self.slot_engines[idx]

    def _runner_ids(self, idx):
        """The (uid, gid) slot `idx`'s runner runs as, where it is not root: the slot's user with an engine of the
        slot's own, else the runner image's user (its /etc/passwd and /etc/group read once a pass, where its user
        is a name or a lone uid). Raises EngineError."""
        if self.spec.profile.docker == 'rootless':
            return self.slot_engine(idx).ids
        if self.image_ids is False:
            self.image_ids = image_owner(self.engine, self.spec.profile.image,
                                         self._labels(**{'drover.role': 'image-user'}))
        return self.image_ids

    def _externals(self):
        """The runner image's externals for the slot engines (runner_externals), or None; a copy that cannot be
        made is a warning (the runners start: only `container:` jobs lack it)."""
        try:
            return runner_externals(self.engine, self.spec.profile.image, self._labels(), self.now)
        except RunnerImageError as exc:
            self.warnings.append('pool %s: %s; its `container:` jobs will not find them' % (self.spec.pool, exc))
            return None

    def remove_slot_engines(self, occupants):
        """A pool declared absent, once no runner is left: its slots' engines stop and their holders go; with
        purge_caches their data (images, build cache) and users too."""
        if self.check_mode or self.spec.state != 'absent' or occupants:
            return
        holders = set(c['name'] for c in self.engine.list_role(SLOT_HOLDER_ROLE))
        for idx in range(SLOTS_MAX):
            slot = self.slot_engine(idx)
            try:
                if slot.holder_name in holders or os.path.isdir(slot.dir):
                    slot.remove(keep_data=not self.spec.purge_caches)
            except (EngineError, OSError) as exc:
                self.warnings.append('pool %s: the engine of slot %d stays: %s' % (self.spec.pool, idx + 1, exc))

    # --- GPUs ------------------------------------------------------------------------------------

    def gpu_task(self):
        """The ledger's name for the pool's runners (never a task's)."""
        return gpu_plan.runners_task(self.spec.pool)

    def _gpu_key(self, idx):
        return '%s/slot%d' % (self.gpu_task(), idx + 1)

    def sync_gpus(self, occupants):
        """The ledger's pins of the pool's runners, as the runner containers say: a runner's GPUs (its label
        drover.gpus) pinned to its slot again when the store lost them, a vacant slot's released."""
        task = self.gpu_task()
        held = set(self._gpu_key(idx) for idx in occupants)
        for key in list(gpu_plan.pinned(self.ledger.pins)):
            if gpu_plan.task_of(key) == task and key not in held:
                self.ledger.release_key(key)
        for idx, occ in sorted(occupants.items()):
            uuids = occ.get('gpus') or []
            if uuids and sorted(self.ledger.held(self._gpu_key(idx))) != sorted(uuids):
                error = self.ledger.adopt(self._gpu_key(idx), task, uuids)[1]
                if error:
                    self.warnings.append('pool %s: runner %s: %s' % (self.spec.pool, occ['runner_name'], error))

    def _pin_gpus(self, slots):
        """Pin profile.gpus GPUs for each slot's runner, in slot order; a slot that cannot get them (nor those
        after it) waits, told as runner.waiting with cause gpu. The slots that got them."""
        count = self.spec.profile.gpus
        out = []
        for idx in slots:
            key = self._gpu_key(idx)
            uuids, error = self.ledger.pin(key, self.gpu_task(), count)
            if error:
                said = self.ledger.short('profile.gpus', key, count)
                waiting = [i + 1 for i in slots[len(out):]]
                self.waiting_for.extend({'slot': i, 'cause': 'gpu'} for i in waiting)
                self.warnings.append('pool %s: slot(s) %s wait for GPUs: %s' % (
                    self.spec.pool, ', '.join(str(i) for i in waiting), said))
                self.events.append(plan_mod.event('runner.waiting', self.spec.pool, self.now, cause='gpu',
                                                  slots=waiting, error=said))
                break
            self.gpu_ids[idx] = uuids
            out.append(idx)
        return out

    # --- steps -----------------------------------------------------------------------------------

    def _jit_path(self, name):
        return os.path.join(self.jit_dir, name)

    def _forget(self, occ, deregister=True):
        """Remove the container, its JIT file and (unless asked not to) its registration."""
        if self.check_mode:
            return None
        if occ.get('container_id'):
            self.engine.remove(occ['container_id'])
        try:
            os.unlink(self._jit_path(occ['runner_name']))
        except OSError:
            pass
        if deregister and occ.get('runner_id') and self._api_open():
            # Busy: GitHub keeps it for minutes after its job is gone; the next orphan cleanup deletes it.
            return self._github('delete runner %s' % occ['runner_name'], self.gh.delete_runner, occ['runner_id'])[0]
        return None

    def collect_finished(self, occupants, vanished):
        for idx in sorted(occupants):
            occ = occupants[idx]
            if occ['state'] == 'created' and not self.check_mode:
                # A pass starts what it creates before it ends, under the host lock: a runner still only
                # created was made by a pass that died in between. Its JIT config was never used: start it.
                try:
                    self.engine.start(occ['container_id'])
                    occ['state'] = 'running'
                    self._started(occ['runner_name'], occ['runner_id'], idx)
                except EngineError as exc:
                    self.warnings.append('pool %s: cannot start %s, left created by an earlier pass: %s'
                                         % (self.spec.pool, occ['runner_name'], exc))
                    self._forget(occ)
                    self.released.append(occ['runner_name'])
                    del occupants[idx]
                continue
            if occ['state'] in ('running', 'restarting', 'paused', 'created'):
                continue
            state = self.engine.inspect(occ['container_id']) or {}
            logs = self.engine.logs(occ['container_id'])
            self._end(dict(occ, idx=idx), plan_mod.read_runner_log(logs), state, logs)
            del occupants[idx]
        for occ in vanished:
            self._end(dict(occ, container_id=None), plan_mod.read_runner_log(None), {})

    def _end(self, occ, read, state, logs=None):
        """Release an ended runner; `read`: what its log says (plan_mod.read_runner_log)."""
        started = _epoch(state.get('started_at')) or occ.get('started_at') or self.now
        finished = _epoch(state.get('finished_at')) or self.now
        slot = occ.get('idx')
        more = self._job_oom_kills(occ, slot)
        self.events.append(plan_mod.event('runner.ended', self.spec.pool, self.now, runner_name=occ['runner_name'],
                                          repository=owner_of(self.spec), took_job=read['took'], job=read['job'],
                                          result=read['result'], job_seconds=plan_mod.job_seconds(read, started,
                                                                                                  finished),
                                          runner_fault=read['fault'], runner_version=read['version'],
                                          oom_killed=bool(state.get('oom_killed')),
                                          exit_code=state.get('exit_code'), **more))
        if self.spec.profile is not None and self.spec.profile.records and read['result'] == 'Failed' \
                and occ.get('container_id') and not self.check_mode:
            self._record(occ, read, logs)
        self._forget(occ, deregister=False)
        if slot is not None:
            self.caches.ended(slot, read['took'])
            if self.spec.profile is not None and self.spec.profile.docker == 'rootless' and not self.check_mode:
                self.warnings.extend(self.slot_engine(slot).empty())
        if occ.get('runner_id') and not self.check_mode:
            self.ended_registrations.append(occ)
        self.state, events = plan_mod.ended(self.state, self.spec.pool, read['took'], finished - started, self.now,
                                            self.spec.idle_timeout, plan_mod.fault_cause(read))
        self.events.extend(events)
        self.released.append(occ['runner_name'])

    # --- records of failed jobs ----------------------------------------------------------------

    def _records_dir(self):
        return os.path.join(os.path.dirname(self.jit_dir), 'records', self.spec.pool)

    def _record(self, occ, read, logs):
        """Keep a failed job's runner container as an image (its JIT file, a bind mount, never enters it) and its
        output beside the store; not the image when its filesystem holds a runner's credentials."""
        name = occ['runner_name']
        data = {'runner_name': name, 'job': read['job'], 'result': read['result']}

        def not_kept(reason):
            self.events.append(plan_mod.event('runner.recorded', self.spec.pool, self.now, kept=False, reason=reason,
                                              **data))
        try:
            diff = self.engine.diff(occ['container_id'])
        except EngineError as exc:
            self.warnings.append('pool %s: no record of %s: %s' % (self.spec.pool, name, exc))
            return not_kept('its filesystem could not be read: %s' % exc)
        if diff is None:
            return not_kept('its container is gone')
        denied = plan_mod.record_denied(diff, mounts=(JIT_MOUNT,))
        if denied:
            return not_kept('its filesystem holds a runner\'s credentials or JIT config: %s' % ', '.join(denied[:5]))
        repository, tag = plan_mod.record_ref(self.spec.pool, name, occ['container_id'])
        labels = self._labels(**{plan_mod.RECORD_LABEL: 'true', 'drover.role': 'record',
                                 'drover.repository': owner_of(self.spec), 'drover.runner': name,
                                 'drover.job': read['job'] or '', 'drover.result': read['result'], 'drover.slot': '',
                                 'drover.runner-id': '', 'drover.output': '%s.log' % tag})
        try:
            self.engine.commit(occ['container_id'], repository, tag, labels)
        except EngineError as exc:
            self.warnings.append('pool %s: no record of %s: %s' % (self.spec.pool, name, exc))
            return not_kept('it could not be committed: %s' % exc)
        output = None
        try:
            _files.ensure_dir(os.path.dirname(self._records_dir()), 0o700)
            _files.ensure_dir(self._records_dir(), 0o700)
            output = os.path.join(self._records_dir(), labels['drover.output'])
            fd = _files.open_file(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, 'wb') as handle:
                handle.write((logs or '').encode('utf-8', 'replace')[-RECORD_OUTPUT_BYTES:])
        except (IOError, OSError) as exc:
            self.warnings.append('pool %s: the output of %s could not be kept: %s' % (self.spec.pool, name, exc))
            output = None
        self.events.append(plan_mod.event('runner.recorded', self.spec.pool, self.now, kept=True,
                                          image='%s:%s' % (repository, tag), output=output, **data))

    def records(self):
        """This pool's records on the engine (of this store), oldest first."""
        return sorted(self.engine.images_labelled(self._labels(**{plan_mod.RECORD_LABEL: 'true'})),
                      key=plan_mod.record_order)

    def prune_records(self):
        """Drop the records beyond the profile's `keep` or older than its `max_age`, and all of a pool declared
        absent, with their stored output. A present pool without records makes no engine call for them (records
        kept before `records` was taken from its profile stay until the pool is declared absent). A record that
        cannot be removed (a container runs from it) is a warning, and is tried again by the next pass."""
        kept = self.spec.profile.records if self.spec.profile is not None else None
        if self.check_mode or (kept is None and self.spec.state != 'absent'):
            return
        try:
            found = self.records()
        except EngineError as exc:
            self.warnings.append('pool %s: its records could not be listed: %s' % (self.spec.pool, exc))
            return
        drop = found if self.spec.state == 'absent' else plan_mod.records_to_drop(found, kept.keep, kept.max_age,
                                                                                  self.now)
        for record in drop:
            try:
                self.engine.remove_image(record['id'])
            except EngineError as exc:
                self.warnings.append('pool %s: record %s stays: %s' % (
                    self.spec.pool, record['tags'][0] if record['tags'] else record['id'][:19], exc))
                continue
            output = record['labels'].get('drover.output') or ''
            if plan_mod.NAME_SAFE.match(output):
                try:
                    os.unlink(os.path.join(self._records_dir(), output))
                except OSError:
                    pass

    def list_runners(self, occupants):
        """The pool's registrations; this host's that no slot holds are deleted. (busy ids, ok)."""
        if not self._api_open():
            return set(), False
        runners, ok = self._github('list runners', self.gh.runners)
        if not ok:
            return set(), False
        ours = set(o['runner_id'] for o in occupants.values()) | self.host_runner_ids
        for runner in runners:
            # The exact prefix and machine ID, parsed: not a name that merely starts with them (host `web` and
            # `web-2`'s runners, or profile `p` and profile `p-2`'s JIT files below).
            if host_runner(self.spec, runner['name']) and runner['id'] not in ours:
                if self.check_mode:
                    self.orphans_deleted.append(runner['name'])
                    continue
                result, done = self._github('delete orphan %s' % runner['name'], self.gh.delete_runner, runner['id'])
                if done and result != BUSY:
                    self.orphans_deleted.append(runner['name'])
        by_id = dict((r['id'], r) for r in runners)
        for occ in occupants.values():
            seen = by_id.get(occ['runner_id'])
            occ['online'] = bool(seen and seen['status'] == 'online')
            occ['busy'] = bool(seen and seen['busy'])
        return set(r['id'] for r in runners if r['busy']), True

    def queued(self):
        if self.spec.state != 'present' or self.spec.scale != 'queued':
            return 0
        if not self._api_open():
            return None
        jobs, ok = self._github('list queued jobs', self.gh.queued_jobs)
        if not ok:
            return None
        mine = [j for j in jobs if plan_mod.matches(j['labels'], self.spec.labels)]
        # When each waits since, oldest first: a runner started this pass picks up the oldest still waiting.
        self.queued_since = sorted(t for t in (_epoch(j.get('created_at')) for j in mine) if t is not None)
        return len(mine)

    def stop(self, occupants, idx, kill):
        occ = occupants[idx]
        if kill:
            self._forget(occ)
        elif not self.check_mode:
            if not self._api_open():
                return
            result, ok = self._github('delete runner %s' % occ['runner_name'], self.gh.delete_runner, occ['runner_id'])
            if not ok:
                return
            if result == BUSY:
                # It took a job meanwhile: keep it.
                occ['busy'] = True
                return
            self._forget(occ, deregister=False)
        self.events.append(plan_mod.event('runner.stopped', self.spec.pool, self.now, runner_name=occ['runner_name'],
                                          killed=kill))
        self.stopped.append(occ['runner_name'])
        del occupants[idx]

    def start(self, occupants, idx):
        return self.start_many(occupants, [idx])

    def start_many(self, occupants, slots):
        """Start a runner in each slot: register them one after the other (GitHub), stopping at the first that
        cannot be, then create and start their containers up to STARTERS at a time, so that the last runner
        of a burst does not wait for every other one's start. True when every one started."""
        spec = self.spec
        if self.check_mode:
            for idx in slots:
                name = runner_name(spec, idx, self.now)
                occupants[idx] = {'runner_name': name, 'runner_id': None, 'container_id': None,
                                  'started_at': self.now, 'state': 'planned', 'busy': False}
                self.started.append(name)
            return True
        if spec.profile.gpus:
            slots = self._pin_gpus(slots)
            if not slots:
                return False
        try:
            self._ensure_image()
        except EngineError as exc:
            return self._cannot_start(slots[0], 'image pull failed: %s' % exc)
        rootless = spec.profile.docker == 'rootless'
        if rootless:
            try:
                externals = self._externals()
                for idx in slots:
                    self.slot_engine(idx).externals = externals
                    if self.slot_engine(idx).ensure():
                        self.events.append(plan_mod.event('slot.engine_started', spec.pool, self.now, slot=idx + 1))
            except (EngineError, SlotEngineError) as exc:
                return self._cannot_start(slots[0], 'its slot engine: %s' % exc)
        try:
            # a slot cache's root is the user's the job runs as (with a slot engine: the slot's own user; else the
            # runner image's)
            self.cache_binds = dict((idx, self.caches.binds(idx, self._runner_ids(idx))) for idx in slots)
        except (EngineError, CacheError, OSError) as exc:
            return self._cannot_start(slots[0], 'its caches: %s' % exc)
        prepared = []
        for idx in slots:
            ready = self._register(idx)
            if ready is None:
                break
            prepared.append(ready)
        if len(prepared) > 1:
            with ThreadPoolExecutor(max_workers=min(STARTERS, len(prepared))) as pool:
                launched = list(pool.map(self._launch, prepared))
        else:
            launched = [self._launch(ready) for ready in prepared]
        every = len(prepared) == len(slots)
        for (idx, name, runner_id, path), (cid, exc) in zip(prepared, launched):
            if exc is not None:
                self._undo_start(name, runner_id, path, exc)
                every = False
                continue
            occupants[idx] = {'runner_name': name, 'runner_id': runner_id, 'container_id': cid,
                              'started_at': self.now, 'state': 'running', 'busy': False,
                              'gpus': self.gpu_ids.get(idx) or []}
            self._started(name, runner_id, idx)
        return every

    def _fresh_name(self, idx):
        """The slot's next runner name: never that of the runner that held it before, even when two passes fall
        within one second (a name is unique on GitHub, and names a record)."""
        at = int(self.now)
        parsed = parse_runner_name((self.stored_slots.get(idx) or {}).get('runner_name'))
        if parsed is not None and parsed[4] >= at:
            at = parsed[4] + 1
        return runner_name(self.spec, idx, at)

    def _register(self, idx):
        """A JIT registration for the slot's runner, its config written to a root-only file: (slot, name,
        runner id, file), or None (the pool held)."""
        spec = self.spec
        name = self._fresh_name(idx)
        # With an engine of the slot's own, jobs run in the slot's work folder, at the path its engine sees too.
        folder = self.slot_engine(idx).work if spec.profile.docker == 'rootless' else spec.work_folder
        registered, ok = self._github('register runner %s' % name, self.gh.register, name, spec.runner_group_id,
                                      spec.labels, folder)
        if not ok:
            self._hold(plan_mod.CAUSE_REGISTER, 'cannot register runner %s' % name)
            return None
        runner_id, jit = registered
        path = self._jit_path(name)
        try:
            _files.ensure_dir(self.jit_dir, 0o700)
            try:
                os.unlink(path)             # a file (or link) left there: the config is written anew, never through it
            except OSError:
                pass
            fd = _files.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, 'w') as handle:
                owner = self._runner_ids(idx)
                if owner is not None:
                    os.fchown(handle.fileno(), *owner)          # the user its runner runs as reads it, alone
                handle.write(jit)
            del jit
        except OSError as exc:
            self._undo_start(name, runner_id, path, exc)
            return None
        return idx, name, runner_id, path

    def _undo_start(self, name, runner_id, path, exc):
        """A registered runner that cannot start: its JIT file removed, its registration deleted, the pool held."""
        try:
            os.unlink(path)
        except OSError:
            pass
        self._github('delete runner %s' % name, self.gh.delete_runner, runner_id)
        self._hold(plan_mod.CAUSE_START, 'cannot start %s: %s' % (name, exc))

    def _launch(self, ready):
        """Create and start one runner's container (in a worker thread: engine calls only): (id, None) or
        (None, the error); a container that would not start is removed."""
        idx, name, runner_id, path = ready
        spec = self.spec
        labels = {'drover.role': ROLE, 'drover.pool': spec.pool, 'drover.slot': str(idx + 1),
                  'drover.runner-id': str(runner_id), 'drover.repository': owner_of(spec)}
        if self.scope is not None:
            labels[STORE_LABEL] = self.scope
        gpus = self.gpu_ids.get(idx) or []
        if gpus:
            labels['drover.gpus'] = ','.join(gpus)
        environment, device_requests = delivery(self.gpu_delivery, gpus, dict(spec.profile.environment))
        network_mode = None if spec.profile.network_mode == 'bridge' else spec.profile.network_mode
        binds = ['%s:%s:ro' % (path, JIT_MOUNT)] + self.cache_binds.get(idx, [])
        config, host = None, None
        if spec.profile.docker == 'rootless':
            # The runner runs as the slot's own user: what a job writes in its workspace is root's in the slot
            # engine's containers (the same host user), and nothing of it is the host's root.
            slot = self.slot_engine(idx)
            network_mode = 'container:%s' % slot.holder_name
            binds += slot.binds()
            environment = dict(environment, DOCKER_BUILDKIT='1')
            config = {'user': '%d:%d' % slot.ids}
            if slot.cgroups() is not None:
                host = {'cgroup_parent': slot.cgroup_parent}
            kills = slot.oom_kills()
            if kills is not None:
                labels['drover.slot-oom-kills'] = str(kills)       # so that the pass tells the job's own
        elif spec.profile.docker != 'none':
            # The engine the runner's image brings, inside the runner (sysbox, privileged): a fresh one per job.
            host, config = inner_engine(spec.profile.docker)
            environment = dict(environment, DOCKER_BUILDKIT='1')
        try:
            cid = self.engine.create(name, spec.profile.image, labels, environment=environment, config=config, host=host,
                                     device_requests=device_requests,
                                     memory_mib=spec.profile.memory, cpus=spec.profile.cpus,
                                     network_mode=network_mode, binds=binds,
                                     cap_add=spec.profile.capabilities.add, cap_drop=spec.profile.capabilities.drop)
            try:
                self.engine.start(cid)
            except EngineError:
                self.engine.remove(cid)
                raise
        except EngineError as exc:
            return None, exc
        return cid, None

    def deregister_ended(self):
        """Delete the registrations of the runners that ended this pass (Busy: left to the next orphan cleanup)."""
        for occ in self.ended_registrations:
            if not self._api_open():
                return
            self._github('delete runner %s' % occ['runner_name'], self.gh.delete_runner, occ['runner_id'])

    def _ensure_image(self):
        """The profile's image on the host, pulled by its pull policy (once per pass), before anything is registered."""
        profile = self.spec.profile
        if self.image_ready:
            return
        if profile.pull != 'always' and self.engine.image_present(profile.image):
            self.image_ready = True
            return
        if profile.pull == 'never':
            raise EngineError('%s is not on the host and pull is never' % profile.image)
        auth = profile.registry_auth
        credentials = None
        if auth is not None and split_image(profile.image)[0] == auth.registry:
            credentials = {'username': auth.username, 'password': auth.password, 'serveraddress': auth.registry}
        self.engine.pull(profile.image, credentials)
        self.image_ready = True

    def _started(self, name, runner_id, idx):
        pickup = None
        if self.queued_since:
            pickup = max(0, int(self.now) - self.queued_since.pop(0))
            self.pickups.append(pickup)
        self.events.append(plan_mod.event('runner.started', self.spec.pool, self.now, runner_name=name,
                                          repository=owner_of(self.spec), runner_id=runner_id, slot=idx + 1,
                                          pickup_seconds=pickup))
        self.started.append(name)

    def _job_oom_kills(self, occ, slot):
        """With an engine of the slot's own: {'slot_oom_kills': what the kernel killed for memory in the slot while
        this runner ran (a job's container past the profile's memory)}, told as a warning too; {} when not known."""
        base = occ.get('slot_oom_kills')
        if slot is None or base is None or not str(base).isdigit():
            return {}
        now_kills = self.slot_engine(slot).oom_kills()
        if now_kills is None:
            return {}
        kills = max(0, now_kills - int(base))
        if kills:
            self.warnings.append('pool %s: slot %d: the kernel killed %d process(es) of the job of %s for memory '
                                 '(profile.memory %s MiB)' % (self.spec.pool, slot + 1, kills, occ['runner_name'],
                                                              self.spec.profile.memory if self.spec.profile else None))
        return {'slot_oom_kills': kills}

    def _cannot_start(self, idx, why):
        """Hold the pool: the runner of slot `idx` cannot start (`why`). False."""
        self._hold(plan_mod.CAUSE_START, 'cannot start %s: %s' % (runner_name(self.spec, idx, self.now), why))
        return False

    def _hold(self, cause, error):
        self.state, events = plan_mod.hold(self.state, self.spec.pool, cause, self.now, error)
        self.events.extend(events)
        self.warnings.append('pool %s: %s' % (self.spec.pool, error))

    # --- the result ------------------------------------------------------------------------------

    def slot_views(self, occupants):
        out = []
        for idx in range(max(self.spec.slots, max(occupants) + 1 if occupants else 0)):
            occ = occupants.get(idx)
            if occ is None:
                out.append({'index': idx + 1, 'state': 'free', 'runner_name': None, 'runner_id': None,
                            'container_id': None, 'started_at': None, 'gpu_ids': []})
                continue
            state = 'busy' if occ.get('busy') else ('idle' if occ.get('online') else 'starting')
            out.append({'index': idx + 1, 'state': state, 'runner_name': occ['runner_name'],
                        'runner_id': occ['runner_id'], 'container_id': occ['container_id'],
                        'started_at': iso(occ.get('started_at')), 'gpu_ids': list(occ.get('gpus') or [])})
        return out

    def sweep_jit_files(self, occupants):
        """Remove this pool's JIT config files that no slot's runner holds (a pass that died after writing
        one and before its container existed leaves it behind; its registration goes as an orphan)."""
        if self.check_mode or self.spec.profile is None or not os.path.isdir(self.jit_dir):
            return
        held = set(o['runner_name'] for o in occupants.values())
        for name in os.listdir(self.jit_dir):
            if host_runner(self.spec, name, self.spec.profile.name) and name not in held:
                try:
                    os.unlink(self._jit_path(name))
                except OSError:
                    pass

    def save(self, occupants):
        if self.check_mode:
            return
        self.sweep_jit_files(occupants)
        if self.spec.state == 'absent' and not occupants:
            self.store.delete_pool(self.spec.pool)
        else:
            state = dict(self.state, api_wait=self.api_wait)
            self.store.put_pool(self.spec.pool, owner_of(self.spec), state, self.now)
            self.store.set_slots(self.spec.pool, dict((i, o) for i, o in occupants.items()))
        for ev in self.events:
            self.store.add_event(dict(ev, subject=ev.get('subject', 'pool/%s' % self.spec.pool)))


def _read_etags(path):
    """The listings' ETags and answers the last pass kept; {} when there are none or they cannot be read."""
    try:
        with os.fdopen(_files.open_file(path, os.O_RDONLY), 'r') as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (IOError, OSError, ValueError):
        return {}


def _write_etags(path, entries):
    """Keep the listings' ETags for the next pass (root-only, replaced whole; a failure only costs requests)."""
    try:
        _files.write_whole(path, json.dumps(entries), mode=0o600)
    except (IOError, OSError, ValueError, TypeError):
        pass


def _client(spec, params, where, github_factory):
    try:
        return github_factory(spec.api_url, spec.auth, repository=spec.repository, organization=spec.organization,
                              timeout=params.get('github_timeout') or 15)
    except Exception as exc:  # pylint: disable=broad-except
        raise TaskFailure('%sGitHub auth: %s' % (where, str(exc)[:300] or exc.__class__.__name__))


def _declared(params, mid, github_factory):
    """Each declared pool checked, with its GitHub client: [(where, spec, params, gh)]; `mid`: this host's
    machine ID, unless a pool names its own. Raises TaskFailure before the host is touched."""
    out = []
    try:
        for where, decl in declarations(params):
            prefix = '%s: ' % where if where else ''
            try:
                spec = pool_spec(decl, decl.get('machine_id') or mid)
            except SpecError as exc:
                raise TaskFailure('%s%s' % (prefix, exc))
            _distinct_names(spec, where, out)
            out.append((prefix, spec, decl, _client(spec, decl, prefix, github_factory)))
    except SpecError as exc:
        raise TaskFailure(str(exc))
    return out


def _distinct_names(spec, where, earlier):
    """Runner names are <prefix>-<machine-id>-<profile>-<slot>-<unix-seconds>: two pools of one call with the
    same profile name would start containers of the same name in the same second."""
    if spec.profile is None:
        return
    for other_where, other, dummy, dummy in earlier:
        if other.profile is not None and host_prefix(other) == host_prefix(spec) \
                and other.profile.name == spec.profile.name:
            raise SpecError('%s: profile.name %s is also the profile of %s; runner names '
                            '(<prefix>-<machine-id>-<profile>-<slot>-<unix-seconds>) of one host\'s pools must differ'
                            % (where, spec.profile.name, other_where.rstrip(': ')))


def _purged(params, mid, store, listing, declared, github_factory):
    """The pools this host holds (in its store, or only as runner containers) that a `pools` call with purge
    no longer declares: drained, with the call's own options (GitHub address and credentials) and the owner
    the store or the containers' labels recorded."""
    names = set(entry[1].pool for entry in declared)
    owners = held_pool_owners(store, listing)
    out = []
    for name in sorted(set(owners) - names):
        where = 'purge: pool %s, which this host holds and pools no longer declares, is drained; ' % name
        decl = dict((k, v) for k, v in params.items() if k not in ('pools', 'purge', 'profile', 'labels'))
        owner = owners[name] or ''
        decl.update(pool=name, state='absent', hold_until=None,
                    repository=owner if '/' in owner else None, organization=None if '/' in owner else owner)
        try:
            spec = pool_spec(decl, mid)
        except SpecError as exc:
            raise TaskFailure('%s%s' % (where, exc))
        out.append((where, spec, decl, _client(spec, decl, where, github_factory)))
    return out


def _one(spec, gh, engine, store, listing, check_mode, now, jit_dir, scope, gpus=None, mirrors=None,
         subid_floor=SUBID_FLOOR):
    """One pool's pass over a shared engine listing: the pool's result (with `changed` and `warnings`)."""
    work = PoolPass(spec, engine, store, gh, check_mode, now, jit_dir, listing, scope, gpus, mirrors, subid_floor)
    before_hold = dict(work.state)
    occupants = work.occupants()
    vanished = [dict(row, runner_name=row['runner_name']) for idx, row in work.stored_slots.items()
                if idx not in occupants]
    work.collect_finished(occupants, vanished)                 # 1. collect finished (records of failed jobs)
    work.prune_records()
    busy_ids, listed = work.list_runners(occupants)            # 2. list runners, delete orphans
    queued = work.queued() if listed else None                  # 3. queued jobs
    decided = plan_mod.plan(spec, occupants, busy_ids, queued, work.state, now, listing_ok=listed)  # 4. plan
    if decided.reason and not listed:
        work.warnings.append('pool %s: %s' % (spec.pool, decided.reason))
    for idx in decided.kill:                                    # 5. apply
        work.stop(occupants, idx, kill=True)
    for idx in decided.stop:
        work.stop(occupants, idx, kill=False)
    work.sync_gpus(occupants)                                   # vacant slots' GPUs free before any start
    if decided.start:
        work.start_many(occupants, list(decided.start))
        work.sync_gpus(occupants)
    work.deregister_ended()
    work.caches.prune_all()
    work.caches.purge(occupants)
    work.remove_slot_engines(occupants)
    work.save(occupants)
    return {
        'changed': bool(work.started or work.stopped or work.released or work.orphans_deleted
                        or work.state != before_hold),
        'pool': {'name': spec.pool, 'owner': owner_of(spec), 'slots': work.slot_views(occupants),
                 'hold': plan_mod.hold_view(work.state, spec, now), 'waiting': work.waiting_for},
        'started': work.started, 'stopped': work.stopped, 'released': work.released,
        'orphans_deleted': work.orphans_deleted, 'queued': queued, 'events': work.events, 'pickups': work.pickups,
        'warnings': work.warnings, 'github_requests': getattr(gh, 'requests', 0),
        'github_not_modified': getattr(gh, 'not_modified', 0),
    }


def _check_runtimes(engine, declared):
    """Before anything changes: a pool whose runners run under Sysbox (profile.docker sysbox) needs the runtime in
    the host's engine."""
    wanting = [where for where, s, dummy, dummy in declared
               if s.state == 'present' and s.profile is not None and s.profile.docker == 'sysbox']
    try:
        runtimes = engine.runtimes() if wanting else []
    except EngineError as exc:
        raise TaskFailure('Docker engine: %s' % exc)
    if wanting and SYSBOX_RUNTIME not in runtimes:
        raise TaskFailure('%sprofile.docker is sysbox: runners run under the %s runtime, which this host\'s engine '
                          'does not have (its runtimes: %s); install Sysbox on the host, or choose profile.docker '
                          'rootless' % (wanting[0], SYSBOX_RUNTIME, ', '.join(runtimes)))


def _mirror(engine, spec, declared, scope, state_dir, check_mode, now, events, warnings):
    """The host's registry mirror before any runner of the pass starts: (its URL or None, the slot engines'
    mirrors: [url], [] for none, or None to keep theirs when it is down). Made where `mirror` is enabled and a
    pool of the call runs slot engines; removed (its blobs and configuration too) where it is not enabled."""
    work = HostMirror(engine, scope, state_dir, now, events, warnings)
    if spec is None:
        # Its configuration file is there while the mirror is: a host that never had one costs no engine call.
        if not check_mode and os.path.exists(work.config_path):
            work.remove(purge=True)
        return None, []
    wanted = any(s.state == 'present' and s.profile is not None and s.profile.docker == 'rootless'
                 for dummy, s, dummy, dummy in declared)
    if check_mode or not wanted:
        return None, None
    url = work.ensure(spec)
    return url, [url] if url else None


def converge(params, check_mode=False, clock=time.time, github_factory=GitHub):
    """The gh_runner_slot module's one call: one pass over `pool`, or over every pool of `pools` (one engine
    listing, one store and one host lock for all of them). Returns the result dict; raises TaskFailure."""
    began = time.monotonic()
    mid = params.get('machine_id') or machine_id()
    declared = _declared(params, mid, github_factory)
    try:
        mirror = mirror_spec(params.get('mirror'))
        subid_floor = subid_floor_option(params.get('slot_subid_floor'))
    except SpecError as exc:
        raise TaskFailure(str(exc))
    host_events, host_warnings = [], []
    engine, store, lock = open_host(params, check_mode, first=lambda e: _check_runtimes(e, declared))
    metrics_warnings = []
    try:
        listing = engine.list_role(ROLE)
        scope = store_scope(params['store_path'])
        if params.get('pools') is not None and params.get('purge'):
            declared = declared + _purged(params, mid, store, scoped(listing, scope), declared, github_factory)
        now = clock()
        jit_dir = os.path.join(os.path.dirname(params['store_path']) or '.', 'jit')
        if os.path.lexists(jit_dir):
            try:
                _files.check_dir(jit_dir)
            except OSError as exc:
                raise TaskFailure('JIT config directory: %s' % exc)
        etags_path = os.path.join(os.path.dirname(params['store_path']) or '.', ETAGS_FILE)
        etags = Etags(_read_etags(etags_path))
        for dummy, dummy, dummy, gh in declared:
            if isinstance(gh, GitHub):
                gh.etags = etags
        try:
            ledger = pass_ledger(params, any(s.profile is not None and s.profile.gpus for dummy, s, dummy, dummy in declared),
                                 engine, store)
        except GpuFailure as exc:
            raise TaskFailure(exc.msg)
        gpus = (ledger, params.get('gpu_delivery') or 'device-request')
        mirror_url, mirrors = _mirror(engine, mirror, declared, scope, os.path.dirname(params['store_path']) or '.',
                                      check_mode, now, host_events, host_warnings)
        results = [_one(spec, gh, engine, store, listing, check_mode, now, jit_dir, scope, gpus, mirrors, subid_floor)
                   for dummy, spec, dummy, gh in declared]
        if not check_mode:
            for ev in host_events:
                store.add_event(ev)
            ledger.save(store, now)
            _write_etags(etags_path, etags.used)
            for result in results:
                pool = {'pool': result['pool']['name']}
                store.bump('drover_github_requests_total', pool, result['github_requests'])
                store.bump('drover_github_not_modified_total', pool, result['github_not_modified'])
                store.bump('drover_pool_pickups_total', pool, len(result['pickups']))
                store.bump('drover_pool_pickup_seconds_total', pool, sum(result['pickups']))
            if params.get('metrics_path'):
                metrics_warnings = _metrics.write_pools_file(params['metrics_path'], store.counters(), [
                    dict(r['pool'], queued=r['queued'],
                         caches=cache_views(engine, scope, r['pool']['name'], host_warnings)
                         if spec.profile is not None and spec.profile.caches else [])
                    for r, (dummy, spec, dummy, dummy) in zip(results, declared)], time.monotonic() - began, clock())
    except EngineError as exc:
        raise TaskFailure('Docker engine: %s' % exc)
    finally:
        store.close()
        if lock:
            lock.release()
        engine.close()
    if results:
        results[0]['warnings'].extend(host_warnings + metrics_warnings)
        results[0]['events'][:0] = host_events
        results[0]['mirror'] = {'enabled': mirror is not None, 'url': mirror_url}
    if params.get('pools') is None:
        return results[0]
    out = {'changed': any(r['changed'] for r in results), 'pools': [], 'events': [], 'warnings': [],
           'mirror': results[0]['mirror'] if results else {'enabled': mirror is not None, 'url': None},
           'github_requests': sum(r['github_requests'] for r in results),
           'github_not_modified': sum(r['github_not_modified'] for r in results)}
    for key in ('started', 'stopped', 'released', 'orphans_deleted'):
        out[key] = [name for r in results for name in r[key]]
    for r in results:
        out['pools'].append(dict(r['pool'], changed=r['changed'], queued=r['queued'],
                                 **dict((k, r[k]) for k in ('started', 'stopped', 'released', 'orphans_deleted',
                                                            'github_requests', 'github_not_modified'))))
        out['events'].extend(r['events'])
        out['warnings'].extend(r['warnings'])
    return out


def record_view(image, records_dir):
    """A failed job's record as gh_runner_info shows it."""
    labels = image['labels']
    pool, name = labels.get('drover.pool') or '', labels.get('drover.output') or ''
    output = os.path.join(records_dir, pool, name)
    safe = plan_mod.NAME_SAFE.match(pool) and plan_mod.NAME_SAFE.match(name)
    return {'image': image['tags'][0] if image['tags'] else image['id'], 'runner_name': labels.get('drover.runner'),
            'repository': labels.get('drover.repository'), 'job': labels.get('drover.job') or None,
            'result': labels.get('drover.result'), 'created_at': iso(image.get('created')), 'size': image.get('size'),
            'output': output if safe and os.path.isfile(output) else None}


def info(params):
    """The gh_runner_info module's one call: the host's pools, slots and holds, read-only."""
    engine, store, lock = open_host(params, True)
    try:
        now = time.time()
        scope = store_scope(params['store_path'])
        containers = scoped(engine.list_role(ROLE), scope)
        labels = {plan_mod.RECORD_LABEL: 'true'}
        if scope:
            labels[STORE_LABEL] = scope
        records = sorted(engine.images_labelled(labels), key=plan_mod.record_order)
        records_dir = os.path.join(os.path.dirname(params['store_path']) or '.', 'records')
        out, warnings = [], []
        for row in store.pools():
            if params.get('pool') not in (None, row['pool']):
                continue
            mine = [c for c in containers if c['labels'].get('drover.pool') == row['pool']]
            slots = store.slots(row['pool'])
            held = row.get('hold_until') is not None and now < row['hold_until']
            out.append({
                'name': row['pool'], 'owner': row['owner'],
                'records': [record_view(r, records_dir) for r in records if r['labels'].get('drover.pool') == row['pool']],
                'caches': cache_views(engine, scope, row['pool'], warnings),
                'slots': [{'index': i + 1, 'runner_name': r['runner_name'], 'runner_id': r['runner_id'],
                           'container_id': r['container_id'], 'busy': bool(r['busy']),
                           'started_at': iso(r['started_at']),
                           'container_state': next((c['state'] for c in mine if c['id'] == r['container_id']), None)}
                          for i, r in sorted(slots.items())],
                'hold': {'until': iso(row['hold_until']) if held else None, 'cause': row['hold_cause'] if held else None,
                         'failures': row['failures'], 'idle_exits': row['idle_exits']},
            })
        return dict({'changed': False, 'pools': out}, **({'warnings': warnings} if warnings else {}))
    except EngineError as exc:
        raise TaskFailure('Docker engine: %s' % exc)
    finally:
        store.close()
        engine.close()
