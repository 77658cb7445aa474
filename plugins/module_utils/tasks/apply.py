# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task passes: observe, plan, apply, record — the one call ecs_task and ecs_task_info make.

Owns: the order of a pass (validate, reach the engine, take the host lock, one labelled listing,
plan each task, carry out the plans), the undo of a failed start, and the result every task module
returns.
Must not: decide anything itself (the decider does), read the host for the look or a task's view other than
through tasks.look, or talk to Docker other than through the adapter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import platform
import shutil
import time
import uuid

from ansible_collections.drover.fleet.plugins.module_utils.aws import calls as aws
from ansible_collections.drover.fleet.plugins.module_utils.aws import awslogs
from ansible_collections.drover.fleet.plugins.module_utils.host import cgroup as cgroup_mod
from ansible_collections.drover.fleet.plugins.module_utils.network import credtoken
from ansible_collections.drover.fleet.plugins.module_utils.network import endpoint as endpoint_mod
from ansible_collections.drover.fleet.plugins.module_utils.host import files as files_mod
from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens
from ansible_collections.drover.fleet.plugins.module_utils.network import netlink as net
from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import GpuFailure, Ledger, delivery, pass_ledger
from ansible_collections.drover.fleet.plugins.module_utils.tasks import order as order_mod
from ansible_collections.drover.fleet.plugins.module_utils.tasks import plan as plan_mod
from ansible_collections.drover.fleet.plugins.module_utils.network.apply import (
    HOLDER_ROLE, TaskNetwork, check_holder_images)
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import bridge_backed, legacy_netns_name
from ansible_collections.drover.fleet.plugins.module_utils.network import plan as plan_netns
from ansible_collections.drover.fleet.plugins.module_utils.network.plan import PoolExhausted
from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import records_option
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec as spec_mod
from ansible_collections.drover.fleet.plugins.module_utils.aws import checked as _td_checked
from ansible_collections.drover.fleet.plugins.module_utils.tasks import level as level_mod
from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.host import metrics as metrics_mod
from ansible_collections.drover.fleet.plugins.module_utils._docker import (
    Engine, EngineError, EngineUnavailable, split_image)
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure, held_pools, open_host
from ansible_collections.drover.fleet.plugins.module_utils.tasks.look import (
    REVISION_LABEL, ROLE, group, hide, look, not_an_instance, restated_instances, spared, task_view, with_exit_codes)
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store, StoreError

# The key of _read_from_aws's answer that lists the values it read (no container is named so: names are checked).
READ_VALUES = ' values'


def scrub(text, fetched):
    """`text` with every value the run read from AWS put out of sight (the engine's errors may quote an option's
    or a variable's value)."""
    return hide(text, (fetched or {}).get(READ_VALUES))


# How long state healthy waits for a task to become HEALTHY, by default (seconds; as docker_container's).
HEALTHY_WAIT = 300


def labels_for(decl, spec):
    labels = {
        'drover.role': ROLE,
        'drover.task': decl.name,
        'drover.container': spec.name,
        'drover.cluster': decl.cluster,
        'drover.spec-hash': decl.spec_hash,
        'drover.spec-fields': decl.fields,
        'drover.essential': 'true' if spec.essential else 'false',
    }
    if spec.stop_timeout:
        labels['drover.stop-timeout'] = str(spec.stop_timeout)
    if plan_mod.has_check(spec):
        labels[plan_mod.HEALTH_LABEL] = 'true'
    if decl.task_role_arn:
        labels['drover.task-role'] = decl.task_role_arn
    if decl.revision:
        labels[REVISION_LABEL] = decl.revision
    return labels


CRED_URI_VAR = 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'
CRED_HOST = 'http://169.254.170.2'


def new_cred_id(decl):
    """The declared credential ID, else a fresh random one for the run (unguessable, as ECS's are)."""
    return decl.cred_id or uuid.uuid4().hex


def container_name(decl, spec):
    return '%s-%s' % (decl.name, spec.name)


def _diff_view(record):
    if record is None:
        return None
    view = task_view(record)
    view['spec_hash'] = record.get('spec_hash')
    for key in ('started_at', 'stopped_at', 'streak'):
        view.pop(key)
    view.pop('health_status')
    view['containers'] = [{'name': c.get('name'), 'image': c.get('image'), 'last_status': c.get('last_status')}
                          for c in view['containers']]
    return view


def _name_clashes(tasks, observed):
    """A declared container name held by another task's container: refuse before anything changes."""
    owner = {o['name']: (o['labels'].get('drover.cluster'), o['labels'].get('drover.task')) for o in observed}
    for decl in tasks:
        if decl.state != 'running':
            continue
        for spec in decl.containers:
            name = container_name(decl, spec)
            held = owner.get(name)
            if held and held != (decl.cluster, decl.name):
                raise TaskFailure('task %s/%s: container name %s is already used by task %s/%s on this host'
                                  % (decl.cluster, decl.name, name, held[0], held[1]))


def _cred_id_clashes(tasks, observed, registered):
    """A declared cred_id registered to another task (in the store, or on another task's running containers),
    or declared by two tasks at once: refuse before anything changes."""
    owner = {}
    for obs in observed:
        labels = obs['labels']
        if labels.get('drover.cred-id') and plan_mod.container_status(obs) == plan_mod.RUNNING:
            owner[labels['drover.cred-id']] = (labels.get('drover.cluster') or 'default', labels.get('drover.task'))
    owner.update((c['cred_id'], (c['cluster'], c['task'])) for c in registered)
    for decl in tasks:
        if decl.state != 'running' or not decl.cred_id:
            continue
        held = owner.get(decl.cred_id)
        if held and held != (decl.cluster, decl.name):
            raise TaskFailure('task %s/%s: cred_id %s is already registered to task %s/%s on this host; a credential '
                              'ID names one task' % (decl.cluster, decl.name, decl.cred_id, held[0], held[1]))
        owner[decl.cred_id] = (decl.cluster, decl.name)


class Pass:
    """One converge of a set of declared tasks on one host."""

    def __init__(self, engine, store, check_mode, holders=(), clock=time.time, ledger=None, gpu=None, aws_options=None,
                 order_wait=None, sleep=time.sleep):
        self.engine = engine
        self.store = store
        self.check_mode = check_mode
        self.clock = clock
        self.warnings = []
        self.network = TaskNetwork(engine, store, check_mode, holders, clock, owner='ecs_task')
        self.ledger = ledger if ledger is not None else Ledger({}, [], 'none')
        self.credentials = store.credentials()
        self.images_seen = set()
        self.gpu = gpu or {'delivery': 'device-request', 'strict': False}
        self.aws = aws_options or {}
        self.aws_auths = {}           # (kind, execution role, registry or secret) -> pull credentials, this pass only
        self._key = None              # the host key of the credential tokens, read (or made) at first need
        self.log_cred_ids = {}        # (cluster, task) -> the run's execution-role credential ID for awslogs
        self.cgroups = None           # the host's cgroups, at first need
        self.task_volumes = {}        # (cluster, task) -> names of the engine volumes of the task (one listing)
        self.order_wait = order_wait  # seconds the pass may still wait for its tasks' orders, all together (None: no bound)
        self.sleep = sleep

    def _cgroups(self):
        if self.cgroups is None:
            self.cgroups = cgroup_mod.Cgroups(cgroup_mod.detect())
        return self.cgroups

    def _level_present(self, decl):
        """Before the first container of a run: the task's volumes (its own, and shared ones it provisions),
        and its parent cgroup with the task's size. Raises EngineError or CgroupError."""
        for vol in decl.volumes:
            if vol.kind == 'task':
                name = level_mod.engine_volume(decl.cluster, decl.name, vol.name)
                labels = dict(vol.labels)
                labels.update(level_mod.volume_labels(decl.cluster, decl.name, vol.name))
                have = self.engine.volume(name)
                if have is None:
                    self.engine.volume_create(name, vol.driver, vol.driver_opts, labels)
                    self.task_volumes.setdefault((decl.cluster, decl.name), []).append(name)
                elif have['labels'].get('drover.task') != decl.name or \
                        have['labels'].get('drover.cluster') != decl.cluster:
                    raise EngineError('volume %s is on the engine and is not task %s/%s\'s'
                                      % (name, decl.cluster, decl.name))
            elif vol.kind == 'shared' and self.engine.volume(vol.name) is None:
                if not vol.autoprovision:
                    raise EngineError('shared volume %s is not on the engine and autoprovision is false' % vol.name)
                labels = dict(vol.labels)
                labels.update(level_mod.shared_labels(decl.cluster, vol.name))
                self.engine.volume_create(vol.name, vol.driver, vol.driver_opts, labels)
        if decl.cpu or decl.memory:
            self._cgroups().ensure(level_mod.cgroup_parent(decl.cluster, decl.name), decl.cpu, decl.memory)
        if firelens.router(decl.containers) is not None:
            self._write_router_config(decl)

    def _firelens_dir(self, decl):
        return firelens.directory(self.store.path, decl.cluster, decl.name)

    def _write_router_config(self, decl):
        """The task's FireLens files: the router's configuration, and the directory of its socket. Raises
        EngineError (the run's start fails with it)."""
        path = self._firelens_dir(decl)
        try:
            for step in (os.path.dirname(os.path.dirname(path)), os.path.dirname(path), path):
                files_mod.ensure_dir(step, 0o755 if step != path else 0o700)
            files_mod.ensure_dir(firelens.socket_dir(path), 0o755)
            files_mod.mount_bounded(firelens.socket_dir(path), firelens.SOCKET_DIR_KIB, firelens.SOCKET_DIR_INODES)
            os.chmod(path, 0o700)        # the task's own directory: its mode whoever made it first
            fd = files_mod.open_file(os.path.join(path, firelens.CONFIG), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, 'w') as handle:
                handle.write(firelens.config_text(decl.cluster, decl.name, decl.containers))
        except OSError as exc:
            raise EngineError('cannot make the log router\'s files in %s: %s' % (path, exc))

    def _teardown_level(self, decl):
        """Every path that ends a run removes the task's own volumes and its parent cgroup (found by labels and by
        the path cluster and task give, so after store loss too). Returns whether there was any."""
        names = self.task_volumes.pop((decl.cluster, decl.name), [])
        parent = level_mod.cgroup_parent(decl.cluster, decl.name)
        had_cgroup = self._cgroups().exists(parent)
        router_files = os.path.isdir(self._firelens_dir(decl))
        if router_files and not self.check_mode:
            try:
                files_mod.unmount(firelens.socket_dir(self._firelens_dir(decl)))
            except OSError as exc:
                self.warnings.append('task %s/%s: %s' % (decl.cluster, decl.name, exc))
            shutil.rmtree(self._firelens_dir(decl), ignore_errors=True)
            if os.path.exists(self._firelens_dir(decl)):
                self.warnings.append('task %s/%s: its log router\'s files in %s could not all be removed'
                                     % (decl.cluster, decl.name, self._firelens_dir(decl)))
        if not self.check_mode:
            for name in names:
                self.engine.volume_remove(name)
            if had_cgroup:
                try:
                    self._cgroups().remove(parent)
                except cgroup_mod.CgroupError as exc:
                    self.warnings.append('task %s/%s: %s' % (decl.cluster, decl.name, exc))
        elif names:
            self.task_volumes[(decl.cluster, decl.name)] = names
        return bool(names) or had_cgroup or router_files

    @staticmethod
    def gpu_task(decl):
        """The ledger's name for a task: unique on the host (':' is in no task or cluster name)."""
        return '%s:%s' % (decl.cluster, decl.name)

    def _gpus_for(self, decl, spec):
        """Pin the container's GPUs. Returns (uuids, failure or None); a short ledger is a warning unless
        gpu_strict."""
        if not spec.gpu:
            self.ledger.release_key('%s/%s' % (self.gpu_task(decl), spec.name))
            return [], None
        key = '%s/%s' % (self.gpu_task(decl), spec.name)
        uuids, error = self.ledger.pin(key, self.gpu_task(decl), spec.gpu)
        if error:
            error = self.ledger.short(plan_mod.gpu_field(decl, spec.name), key, spec.gpu)
            if self.gpu['strict']:
                return [], error
            self.warnings.append('%s; container %s of task %s/%s runs without GPUs (best effort; gpu_strict=true '
                                 'makes this a failure)' % (error, spec.name, decl.cluster, decl.name))
        return uuids, None

    def _drop_credentials(self, decl):
        """Credentials never outlive their task: deregister them on every path that ends it."""
        held = [c for c in self.credentials if (c['cluster'], c['task']) == (decl.cluster, decl.name)]
        if held and not self.check_mode:
            self.store.delete_credentials(decl.cluster, decl.name)
            self.credentials = [c for c in self.credentials if c not in held]
        return bool(held)

    def host_key(self, create):
        """The host key of the credential tokens (made once, next to the store); None when missing and not
        `create`. Raises TaskFailure when the file cannot be read or made."""
        if self._key is None:
            try:
                self._key = credtoken.host_key(self.store.path, create=create)
            except (credtoken.HostKeyError, OSError) as exc:
                raise TaskFailure(str(exc) if isinstance(exc, credtoken.HostKeyError)
                                  else 'cannot make the host credentials key: %s' % exc.strerror)
        return self._key

    def _credential_env(self, decl, cred_id):
        """What a container of the task finds in its environment to fetch its credentials (the token: only here)."""
        secret = credtoken.token(self.host_key(create=True), cred_id, decl.cluster, decl.name, decl.task_role_arn)
        return {CRED_URI_VAR: '/v2/credentials/%s' % cred_id,
                credtoken.FULL_URI_VAR: '%s/v2/credentials/%s' % (CRED_HOST, cred_id),
                credtoken.TOKEN_VAR: secret}

    def _register_log_role(self, decl, resume):
        """A run whose containers log with awslogs, of a task with an execution role: the engine's driver fetches
        that role's credentials from the endpoint under a random credential ID of the run (a cut-short start's
        is kept), registered for the host itself (no token; no container or task netns gets it). It goes with
        the task's other registrations on every path that ends the run."""
        if not (decl.execution_role_arn and awslogs.served(decl.containers)):
            return
        held = [c['cred_id'] for c in self.credentials if resume and (c['cluster'], c['task']) == (decl.cluster, decl.name)
                and c['source_ip'] == awslogs.HOST_SOURCE and c['role_arn'] == decl.execution_role_arn]
        cred_id = held[0] if held else uuid.uuid4().hex
        self.store.put_credential(cred_id, decl.cluster, decl.name, decl.execution_role_arn, awslogs.HOST_SOURCE,
                                  self.clock())
        self.log_cred_ids[(decl.cluster, decl.name)] = cred_id

    def _serve_awslogs(self, decl, spec, host):
        """A container logging with awslogs: ECS's options made the engine's (its stream, region, endpoint, and
        the execution role's credentials)."""
        log = host.get('log_config')
        if log and log['type'] == awslogs.DRIVER:
            host['log_config'] = dict(log, config=awslogs.engine_options(
                dict(dict(spec.log_configuration).get('options') or ()), spec.name, decl.name,
                self.log_cred_ids.get((decl.cluster, decl.name)), self.aws.get('region'), self.aws.get('endpoint_url')))

    def _check_token_key(self, decl, observed):
        """A running task whose containers carry no token, or one made with another host key, cannot fetch
        its credentials: say so (it needs a new run)."""
        marks = set(o['labels'].get(credtoken.KEY_LABEL) for o in observed
                    if o['labels'].get('drover.cred-id') and plan_mod.container_status(o) == plan_mod.RUNNING)
        if not marks:
            return
        key = self.host_key(create=False)
        if key is None or marks != {credtoken.fingerprint(key)}:
            self.warnings.append('task %s/%s: its containers carry no credential token of this host\'s key (started '
                                 'before tokens, or the key %s was lost), so the credentials endpoint refuses them; '
                                 'declare the task stopped, then running, to give it a new run'
                                 % (decl.cluster, decl.name, credtoken.key_path(self.store.path)))

    def adopt_credentials(self, decl, observed):
        """Register again what the task's running containers carry (drover.cred-id, drover.task-role)."""
        known = set(c['cred_id'] for c in self.credentials)
        self._check_token_key(decl, observed)
        for obs in observed:
            labels = obs['labels']
            cred_id, role = labels.get('drover.cred-id'), labels.get('drover.task-role')
            if cred_id and role and cred_id not in known and plan_mod.container_status(obs) == plan_mod.RUNNING:
                task_ip = None
                holder = self.network.holder(decl.cluster, decl.name)
                if holder is not None and decl.network is not None:
                    alloc = self.network.allocations().get(self.network.netns_of(decl.cluster, decl.name))
                    task_ip = plan_netns.link_ips(alloc)[1] if alloc else None
                if not self.check_mode:
                    self.store.put_credential(cred_id, decl.cluster, decl.name, role, task_ip, self.clock())
                known.add(cred_id)
        self._adopt_log_role(decl, observed)

    def _adopt_log_role(self, decl, observed):
        """A running task whose execution-role registration for awslogs the store lost: registered again from
        its containers' log configuration (one inspect, only then), so the driver's next renewal is answered."""
        if not (decl.execution_role_arn and awslogs.served(decl.containers)) or any(
                (c['cluster'], c['task']) == (decl.cluster, decl.name) and c['source_ip'] == awslogs.HOST_SOURCE
                for c in self.credentials):
            return
        for obs in observed:
            if plan_mod.container_status(obs) == plan_mod.RUNNING:
                cred_id = awslogs.cred_id_of(self.engine.log_config(obs['id']))
                if cred_id:
                    row = {'cred_id': cred_id, 'cluster': decl.cluster, 'task': decl.name,
                           'role_arn': decl.execution_role_arn, 'source_ip': awslogs.HOST_SOURCE}
                    if not self.check_mode:
                        self.store.put_credential(cred_id, decl.cluster, decl.name, decl.execution_role_arn,
                                                  awslogs.HOST_SOURCE, self.clock())
                        self.credentials.append(row)
                    return

    def adopt_gpus(self, decl, observed):
        """Re-pin what the task's running containers hold (their drover.gpus labels): no UUID twice."""
        for obs in observed:
            uuids = plan_mod.gpu_ids(obs['labels'])
            if uuids and plan_mod.container_status(obs) == plan_mod.RUNNING:
                key = '%s/%s' % (self.gpu_task(decl), obs['labels'].get('drover.container'))
                error = self.ledger.adopt(key, self.gpu_task(decl), uuids)[1]
                if error:
                    self.warnings.append('task %s/%s: %s' % (decl.cluster, decl.name, error))

    def _holder_cred_id(self, decl):
        """The credential ID a bridge-backed task's holder carries (a cut-short start made it, and no container
        yet): the run keeps it."""
        holder = self.network.holder(decl.cluster, decl.name)
        if holder is None or not bridge_backed(decl.network):
            return None
        return holder['labels'].get('drover.cred-id')

    def _teardown_network(self, decl):
        """Every path that ends a run ends its network: ENI back, link and its filter, holder, netns, /30.
        The task's credential registration goes first: its /30 is never free while one names it."""
        mac = decl.network.eni_mac if decl.network else None
        if self.network.has_network(decl.cluster, decl.name) or (
                mac and net.netns_exists(legacy_netns_name(decl.name))):
            self._drop_credentials(decl)
            return self.network.absent(decl.cluster, decl.name, mac)
        return []

    def _auth_for(self, decl, image, credentials=None):
        registry = split_image(image)[0]
        if credentials:
            return self._aws_auth(decl, registry, aws.registry_credentials, dict(credentials)['credentials_parameter'])
        auth = decl.registry_auth
        if (auth is not None and auth.ecr and registry == auth.registry) or aws.ecr_registry(registry):
            return self._aws_auth(decl, registry, aws.ecr_login, registry)
        if auth is None or registry != auth.registry:
            return None
        return {'username': auth.username, 'password': auth.password, 'serveraddress': auth.registry}

    def _aws_auth(self, decl, registry, fetch, source):
        """Pull credentials from AWS, read as the task's execution role (or the host): an ECR token
        (fetch=aws.ecr_login, source the registry) or a container's repositoryCredentials
        (aws.registry_credentials, source the secret); once per role, source and pass."""
        key = (fetch.__name__, decl.execution_role_arn, source)
        if key not in self.aws_auths:
            try:
                self.aws_auths[key] = fetch(source, decl.execution_role_arn, self.aws.get('region'),
                                            self.aws.get('endpoint_url'), 'drover-pull-%s' % decl.name)
            except aws.AwsError as exc:
                raise EngineError(str(exc))
        username, password = self.aws_auths[key]
        return {'username': username, 'password': password, 'serveraddress': registry}

    def _ensure_image(self, decl, image, credentials=None):
        if decl.pull == 'always':
            self.engine.pull(image, self._auth_for(decl, image, credentials))
            return
        if image in self.images_seen:
            return
        if self.engine.image_present(image):
            self.images_seen.add(image)          # one inspect per image and pass, not per container
            return
        if decl.pull == 'never':
            raise EngineError('%s is not on the host and pull is never' % image)
        self.engine.pull(image, self._auth_for(decl, image, credentials))

    def _start_run(self, decl, resume=(), record=None):
        """Build the task network (awsvpc), then start the containers in order; on any failure remove what
        started and tear the network down. Returns (container views, failure reason or None, network view, cut).
        `resume`: the containers a cut-short start of this run made: a running one is kept as it is (its GPUs
        and credential ID with it), one that ran to its end stays exited (never started twice), a created one is
        started, the missing ones are made. A container waits for its dependencies (the order decider); `cut`:
        the pass's time to wait ran out first, the run stays PENDING and the next pass goes on with it."""
        kept = dict((o['labels'].get('drover.container'), o) for o in resume)
        made = []
        views = []
        reason = None
        network_mode = decl.network_mode if decl.network_mode != 'bridge' else None
        netview = None
        cred_id = None
        try:
            # Read before anything of the run is made, so that a secret that cannot be read leaves nothing behind.
            fetched = self._read_from_aws(decl, skip=kept)
        except aws.AwsError as exc:
            if kept:
                # A cut-short start taken up: what it made goes, as on any failed start.
                self._end_failed_start([o['id'] for o in kept.values()], decl)
            return self._failed_views(decl), plan_mod.reason_secrets(exc), None, False
        if decl.task_role_arn:
            carried = [o['labels'].get('drover.cred-id') for o in kept.values() if o['labels'].get('drover.cred-id')]
            cred_id = carried[0] if carried else self._holder_cred_id(decl) or new_cred_id(decl)
        if decl.network is not None:
            # A holder on the bridge is the address its task's containers fetch credentials from (they share its
            # namespace): it carries their credential ID, as a bridge task's containers do.
            labels = {'drover.cred-id': cred_id} if cred_id and bridge_backed(decl.network) else None
            try:
                netview = self.network.present(decl.network, labels=labels)[1]
                network_mode = 'container:%s' % netview['holder_id']
            except (net.NetError, EngineError, PoolExhausted) as exc:
                self._teardown_network(decl)
                return self._failed_views(decl), plan_mod.reason_network(exc), None, False
        try:
            self._level_present(decl)
        except (EngineError, cgroup_mod.CgroupError) as exc:
            self._teardown_level(decl)
            self._teardown_network(decl)
            return self._failed_views(decl), plan_mod.reason_start(exc), None, False
        if decl.task_role_arn:
            task_ip = ((netview or {}).get('credential_link') or {}).get('task_ip')
            self.store.put_credential(cred_id, decl.cluster, decl.name, decl.task_role_arn, task_ip, self.clock())
        self._register_log_role(decl, resume)
        for name, obs in list(kept.items()):
            # The cut-short start's GPUs stay with its containers, started or only created (no UUID twice);
            # one whose GPUs are pinned elsewhere meanwhile is made again.
            uuids = plan_mod.gpu_ids(obs['labels'])
            if uuids and self.ledger.adopt('%s/%s' % (self.gpu_task(decl), name), self.gpu_task(decl), uuids)[1]:
                self.engine.remove(obs['id'])
                del kept[name]
        by_name = dict((c.name, c) for c in decl.containers)
        started = dict((name, obs['id']) for name, obs in kept.items()
                       if plan_mod.container_status(obs) != plan_mod.PENDING)
        made.extend(started.values())
        watched = order_mod.watched(decl.containers)
        facts, gpus = {}, {}
        cut = False
        while reason is None:
            now = self.clock()
            follow = set(watched)
            essentials = set(c.name for c in decl.containers if c.essential)
            facts = self._facts(started, follow | (essentials if follow else set()))
            nxt = order_mod.step(decl.containers, set(started), facts, now)
            if nxt.failure:
                reason = nxt.failure
                break
            if nxt.done:
                break
            if not nxt.ready:
                bounds = [b for b in (nxt.deadline, None if self.order_wait is None else now + self.order_wait)
                          if b is not None]
                limit = min(bounds) if bounds else now
                if now >= limit:
                    cut = True           # the next pass goes on from here
                    break
                self.sleep(min(order_mod.ORDER_POLL, max(limit - now, 0.01)))
                if self.order_wait is not None:
                    self.order_wait -= self.clock() - now
                continue
            spec = by_name[nxt.ready[0]]
            cid, gpus[spec.name], reason = self._start_one(decl, spec, kept.get(spec.name), cred_id, network_mode, made,
                                                           fetched.get(spec.name))
            if reason is None:
                started[spec.name] = cid
                if watched:
                    self._progress(decl, started, gpus, record)
        for name, cid in started.items():
            f = facts.get(name)
            spec = by_name[name]
            obs = kept.get(name)
            exited = f is not None and f['state'] == order_mod.EXITED
            if obs is not None and plan_mod.container_status(obs) == plan_mod.STOPPED and f is None:
                exited, f = True, {'exit_code': obs.get('exit_code')}
            health = plan_mod.UNKNOWN
            if plan_mod.has_check(spec) and f is not None and not exited:
                health = plan_mod.ENGINE_HEALTH.get(f.get('health'), plan_mod.UNKNOWN)
            ports = []
            if spec.port_mappings and not exited:
                # where the host published its ports (a port it picked is known only now): one inspect more, for a
                # container that publishes any
                ports = (self.engine.inspect(cid) or {}).get('ports') or []
            views.append({'name': name, 'image': spec.image, 'runtime_id': cid,
                          'last_status': plan_mod.STOPPED if exited else plan_mod.RUNNING,
                          'exit_code': f['exit_code'] if exited else None,
                          'gpu_ids': plan_mod.gpu_ids(obs['labels']) if obs is not None else list(gpus.get(name, ())),
                          'health_status': health, 'network_bindings': plan_mod.network_bindings(ports)})
        if reason is not None:
            self._end_failed_start(made, decl)
            return self._failed_views(decl), scrub(reason, fetched), None, False
        declared = [c.name for c in decl.containers]
        if cut:
            views.extend(plan_mod.declared_view(c, plan_mod.PENDING) for c in decl.containers if c.name not in started)
        return sorted(views, key=lambda v: declared.index(v['name'])), None, netview, cut

    @staticmethod
    def _waits(decl, views):
        """(container, dependency, condition) of what a cut-short ordered start still waits for."""
        started = set(v['name'] for v in views if v['last_status'] != plan_mod.PENDING)
        return [(c.name, other, cond) for c in decl.containers if c.name not in started
                for other, cond in order_mod.deps(c) if cond in order_mod.WATCHED and other in started]

    def _facts(self, started, names):
        """The facts of the started containers among `names` (their state, exit code, health, start)."""
        out = {}
        for name in sorted(names):
            if name in started:
                out[name] = order_mod.fact(self.engine.inspect(started[name]))
        return out

    def _progress(self, decl, started, gpus, record):
        """An ordered start records each container it started, so that a pass killed while it waits is taken up
        by the next one (the PENDING record and its containers)."""
        views = []
        for c in decl.containers:
            if c.name in started:
                views.append({'name': c.name, 'image': c.image, 'runtime_id': started[c.name],
                              'last_status': plan_mod.RUNNING, 'exit_code': None, 'gpu_ids': list(gpus.get(c.name, ())),
                              'health_status': plan_mod.UNKNOWN, 'network_bindings': []})
            else:
                views.append(plan_mod.declared_view(c, plan_mod.PENDING))
        if record is not None:
            self._put(dict(record, containers=views), self.clock())

    def _end_failed_start(self, made, decl):
        """A start that failed: what it made goes (last made first), with its GPUs, credentials, level and network."""
        for cid in reversed(made):
            self.engine.remove(cid)
        self.ledger.release(self.gpu_task(decl))
        self.store.delete_credentials(decl.cluster, decl.name)
        self._teardown_level(decl)
        self._teardown_network(decl)

    def _read_from_aws(self, decl, skip=()):
        """What each container of the run reads from AWS, read once for the run as the task's execution role:
        {container: {'env': its environment (its environment files, then its declared environment, then its
        secrets: each wins over the one before), 'log': its log driver's secret options}}. `skip`: containers
        made already. Raises aws.AwsError (naming what could not be read, never a value)."""
        router = firelens.router(decl.containers)
        routed = [c for c in decl.containers if firelens.logs_to_router(c) and self._log_secrets(c)]
        wanted = [c for c in decl.containers
                  if c.name not in skip and (c.secrets or c.environment_files or self._log_secrets(c)
                                             or (c is router and routed))]
        if not wanted:
            return {}
        reader = aws.Reader(decl.execution_role_arn, self.aws.get('region'), self.aws.get('endpoint_url'),
                            'drover-start-%s' % decl.name)
        sources = set(dict(item)['value_from'] for c in wanted for item in c.secrets or ())
        sources.update(v for c in wanted for _n, v in self._log_secrets(c))
        values = reader.secrets(sorted(sources))
        files, out = {}, {}
        for c in wanted:
            env = {}
            for item in c.environment_files or ():
                arn = dict(item)['value']
                if arn not in files:
                    files[arn] = reader.environment_file(arn)
                for name, value in files[arn]:
                    env.setdefault(name, value)          # the first file that has a variable gives it
            env.update(c.environment)
            env.update((dict(item)['name'], values[dict(item)['value_from']]) for item in c.secrets or ())
            if c is router:
                env.update(firelens.secret_env(routed, values))     # the router's file names them, as ${VARIABLE}
            log = {} if firelens.logs_to_router(c) else dict((name, values[v]) for name, v in self._log_secrets(c))
            out[c.name] = {'env': env, 'log': log}
        # Every value read (a file's too): kept out of a stopped reason, where the engine's error may quote one.
        out[READ_VALUES] = sorted(set(values.values()) | set(v for pairs in files.values() for _n, v in pairs),
                                  key=len, reverse=True)
        return out

    @staticmethod
    def _log_secrets(c):
        """(option, value_from) of a container's log secret options (none when its driver was mapped away)."""
        return dict(c.log_configuration or ()).get('secret_options') or ()

    def _start_one(self, decl, spec, obs, cred_id, network_mode, made, fetched=None):
        """Start one container of the run: one a cut-short start made (created, not started), or a new one.
        `fetched`: what it read from AWS (_read_from_aws; None: nothing).
        Returns (container id, its GPUs, failure reason or None)."""
        if obs is not None:
            made.append(obs['id'])
            try:
                self.engine.start(obs['id'])
            except EngineError as exc:
                return None, (), plan_mod.reason_start(exc)
            return obs['id'], plan_mod.gpu_ids(obs['labels']), None
        try:
            self._ensure_image(decl, spec.image, spec.repository_credentials)
        except EngineError as exc:
            return None, (), plan_mod.reason_pull(exc)
        uuids, error = self._gpus_for(decl, spec)
        if error:
            return None, (), plan_mod.reason_start(error)
        labels = labels_for(decl, spec)
        environment = dict(fetched['env'] if fetched else spec.environment)   # a copy, never the declaration
        if cred_id:
            labels['drover.cred-id'] = cred_id
            labels[credtoken.KEY_LABEL] = credtoken.fingerprint(self.host_key(create=True))
            environment.update(self._credential_env(decl, cred_id))
        if uuids:
            labels['drover.gpus'] = ','.join(uuids)
        environment, device_requests = delivery(self.gpu['delivery'], uuids, environment)
        config, host, more_labels = settings.render(spec, decl.name, self._names(decl), self._volumes(decl))
        host.update(self._task_host(decl, spec))
        if spec.firelens_configuration is not None:
            host['binds'] = list(host.get('binds') or ()) + firelens.router_binds(self._firelens_dir(decl))
        if firelens.logs_to_router(spec):
            host['log_config'] = firelens.log_config(spec, decl.name, self._firelens_dir(decl))
        self._serve_awslogs(decl, spec, host)
        if fetched and fetched['log']:
            host['log_config'] = dict(host['log_config'], config=dict(host['log_config']['config'], **fetched['log']))
        more_labels.update(labels)                   # the collection's own labels win
        try:
            cid = self.engine.create(
                container_name(decl, spec), spec.image, more_labels, environment=environment,
                ports=spec.port_mappings if decl.network is None and decl.network_mode != 'host' else None,
                network_mode=network_mode, device_requests=device_requests, config=config, host=host)
        except EngineError as exc:
            return None, uuids, plan_mod.reason_start(exc)
        made.append(cid)
        try:
            self.engine.start(cid)
        except EngineError as exc:
            return None, uuids, plan_mod.reason_start(exc)
        return cid, uuids, None

    @staticmethod
    def _names(decl):
        """The task's container names -> their names on the engine (links, volumes_from)."""
        return dict((c.name, container_name(decl, c)) for c in decl.containers)

    @staticmethod
    def _volumes(decl):
        """The task's volumes -> what a mount point binds (a host path, or an engine volume)."""
        return level_mod.mount_sources(decl.cluster, decl.name, decl.volumes)

    @staticmethod
    def _task_host(decl, spec):
        """What the task level puts into each container's host config: the parent cgroup of a sized task, the
        IPC and PID namespaces (`task`: the first container's, shared by the others)."""
        out = {}
        if decl.cpu or decl.memory:
            out['cgroup_parent'] = level_mod.cgroup_parent(decl.cluster, decl.name)
        first = decl.containers[0]
        shared = 'container:%s' % container_name(decl, first)
        if decl.ipc_mode == 'task':
            out['ipc_mode'] = 'shareable' if spec.name == first.name else shared
        elif decl.ipc_mode in ('host', 'none'):
            out['ipc_mode'] = decl.ipc_mode
        if decl.pid_mode == 'task' and spec.name != first.name:
            out['pid_mode'] = shared
        elif decl.pid_mode == 'host':
            out['pid_mode'] = 'host'
        return out

    def _stop(self, obs, remove=True):
        """Remove one container; one declared with a stop timeout gets its grace period first. Without `remove`
        (a run whose containers are kept) it is stopped only, with its grace period if it has one."""
        timeout = obs['labels'].get('drover.stop-timeout')
        if not remove:
            self.engine.stop(obs['id'], int(timeout or 0))
            return
        if timeout and obs.get('state') == 'running':
            self.engine.stop(obs['id'], int(timeout))
        self.engine.remove(obs['id'])

    @staticmethod
    def _failed_views(decl):
        return [plan_mod.declared_view(s, plan_mod.STOPPED) for s in decl.containers]

    def _put(self, record, now):
        if not self.check_mode:
            self.store.put_task(record, now)

    def apply(self, decl, plan, now):
        """Carry out one plan. Returns (task record to report, events, changed)."""
        record = plan.record
        events = list(plan.events)
        changed = plan.changed
        if not self.check_mode:
            for obs in stop_order(plan.remove):
                self._stop(obs)
            for obs in stop_order(plan.halt):
                self._stop(obs, remove=False)
        # A run ends here (its network, pins and credentials go, before a new run builds its own) when
        # containers go, the task goes, it is STOPPED, or it stopped in this pass and restarts at once.
        # A run whose containers are kept (task_cleanup_wait) keeps its network and task level until they go.
        ending = plan.remove or plan.delete or (not plan.start and record['last_status'] == plan_mod.STOPPED) \
            or any(ev['event'] == 'task.stopped' for ev in plan.events)
        if ending:
            if not plan.keep and self._teardown_network(decl):
                changed = True
            if not plan.keep and self._teardown_level(decl):
                changed = True
            if self.ledger.release(self.gpu_task(decl)):
                changed = True
            if self._drop_credentials(decl):
                changed = True
        if plan.delete:
            if not self.check_mode:
                self.store.delete_task(decl.cluster, decl.name)
        elif plan.start:
            if self.check_mode:
                record = dict(record, containers=[
                    plan_mod.declared_view(s, plan_mod.PENDING, self._gpus_for(decl, s)[0]) for s in decl.containers])
                events.append(plan_mod.event('task.running', plan.key, now))
            else:
                self.warnings.extend(decl.warnings)
                self._put(record, now)                   # PENDING: a cut-short start is found again
                views, reason, netview, cut = self._start_run(decl, plan.resume, record)
                if cut:
                    record = dict(record, containers=views)
                    if netview is not None:
                        record['network'] = netview
                    waits = ', '.join('%s waits for %s (%s)' % w for w in self._waits(decl, views))
                    self.warnings.append('task %s/%s: its containers start in order and this converge\'s time to wait '
                                         'ran out (%s): the next converge goes on with it' % (decl.cluster, decl.name,
                                                                                              waits))
                elif reason is None:
                    record = dict(record, last_status='RUNNING', containers=views)
                    if netview is not None:
                        record['network'] = netview
                    events.append(plan_mod.event('task.running', plan.key, now))
                else:
                    record = plan_mod.stopped_record(record, reason, now, decl.restart, views)
                    events.extend(plan_mod.stop_events(plan.key, record, now))
                self._put(record, now)
        else:
            if decl.network is not None and record['last_status'] == plan_mod.RUNNING:
                changed = self._keep_network(decl, record) or changed
            if plan.write:
                self._put(record, now)
        if not self.check_mode:
            for ev in events:
                self.store.add_event(ev)
        return record, events, changed

    def _keep_network(self, decl, record):
        """A running awsvpc task: check its network, record its /30 again if the store lost it. Its
        containers live in the holder's netns, so a lost holder is reported, never rebuilt under them."""
        holder = self.network.holder(decl.cluster, decl.name)
        if holder is None or holder.get('state') != 'running':
            self.warnings.append('task %s/%s runs without its network holder; declare it stopped and running '
                                 'again to rebuild its network' % (decl.cluster, decl.name))
            return False
        try:
            steps, view = self.network.present(decl.network)
        except (net.NetError, EngineError, PoolExhausted) as exc:
            self.warnings.append('task %s/%s: %s' % (decl.cluster, decl.name, plan_mod.reason_network(exc)))
            return False
        record['network'] = view
        return bool(set(steps) - {'allocate'})


def stop_order(observed):
    """A run's containers in the order they stop: the last started first, so that one stops before the
    containers it links to or takes volumes from. The engine lists the newest first; `created` (whole
    seconds) keeps that order whatever order the listing came in, and within one second the listing's."""
    return sorted(observed, key=lambda o: -(o.get('created') or 0))


def _check_level(tasks, engine):
    """What the task level needs of the host, checked before anything changes: the shared volumes a task does
    not provision are on the engine, one it provisions is not there with another driver, and a sized task has a
    cgroup driver this collection can make its parent cgroup for."""
    running = [t for t in tasks if t.state == 'running']
    drivers = None
    for decl in running:
        where = (decl.where or {}).get('volumes', 'volumes')
        for index, vol in enumerate(decl.volumes):
            if getattr(vol, 'driver', None) not in (None, 'local'):
                drivers = engine.volume_drivers() if drivers is None else drivers
                if vol.driver not in drivers:
                    raise TaskFailure('%s[%d] (%s) of task %s/%s asks for the volume driver %s, which this engine does '
                                      'not have (its drivers: %s); install the plugin, or use another driver'
                                      % (where, index, vol.name, decl.cluster, decl.name, vol.driver, ', '.join(drivers)))
            if vol.kind != 'shared':
                continue
            have = engine.volume(vol.name)
            if have is None and not vol.autoprovision:
                raise TaskFailure('%s[%d] (%s) of task %s/%s (scope shared, autoprovision false) names no volume on the '
                                  'engine: make it, or set autoprovision' % (where, index, vol.name, decl.cluster, decl.name))
            owner = (have or {}).get('labels') or {}
            if owner.get('drover.task') or owner.get('drover.cluster', decl.cluster) != decl.cluster:
                # Another task's own volume, or a shared volume provisioned for another cluster: its files are theirs.
                raise TaskFailure('%s[%d] (%s) of task %s/%s (scope shared) is a volume the collection made for %s: a '
                                  'shared volume is shared within its cluster only'
                                  % (where, index, vol.name, decl.cluster, decl.name,
                                     'task %s/%s' % (owner.get('drover.cluster'), owner['drover.task'])
                                     if owner.get('drover.task') else 'cluster %s' % owner.get('drover.cluster')))
            if have is not None and vol.autoprovision and have['driver'] != vol.driver:
                raise TaskFailure('%s[%d] (%s) of task %s/%s (scope shared) is on the engine with the driver %s, not %s'
                                  % (where, index, vol.name, decl.cluster, decl.name, have['driver'], vol.driver))
    if any(t.cpu or t.memory for t in running):
        driver = engine.cgroups()[0]
        if driver != 'cgroupfs':
            sized = [t for t in running if t.cpu or t.memory][0]
            raise TaskFailure('task %s/%s: the task size (cpu, memory) is a parent cgroup this collection makes with '
                              'the engine\'s cgroupfs driver; this engine uses the %s driver'
                              % (sized.cluster, sized.name, driver))


def _check_binds(tasks, allowed):
    """A host bind under the host's bind_paths is checked again on the host, before anything changes: the engine
    follows symbolic links, and a task that can write under an allowed prefix can plant one there (root -> /)."""
    if allowed is None:
        return
    for decl in tasks:
        if decl.state != 'running':
            continue
        where = (decl.where or {}).get('volumes', 'volumes')
        for index, vol in enumerate(decl.volumes):
            if vol.kind != 'bind':
                continue
            real = os.path.realpath(vol.source_path)
            # A prefix may itself go through a link (/var/run is /run): it is taken as written and as resolved.
            if not level_mod.under(real, list(allowed) + [os.path.realpath(p) for p in allowed if p.startswith('/')]):
                raise TaskFailure('%s[%d] (%s) of task %s/%s binds %s, which is %s on this host: outside the host paths '
                                  'this host allows for binds (bind_paths: %s); a symbolic link there is refused'
                                  % (where, index, vol.name, decl.cluster, decl.name, vol.source_path, real,
                                     ', '.join(allowed) or 'none'))


def _ledger(params, tasks, engine, store):
    """The GPU ledger of the pass. GPUs are discovered only when a declared container asks for some."""
    try:
        return pass_ledger(params, any(t.state == 'running' and any(c.gpu for c in t.containers) for t in tasks),
                           engine, store)
    except GpuFailure as exc:
        raise TaskFailure(exc.msg)


def _health_words(decl, view):
    """What a failed wait for HEALTHY says of each container of the task."""
    by_name = dict((c.name, c) for c in decl.containers)
    words = []
    for c in view.get('containers') or []:
        spec = by_name.get(c['name'])
        text = '%s %s' % (c['name'], c.get('health_status') or plan_mod.UNKNOWN)
        if spec is None or not plan_mod.has_check(spec):
            text += ' (no health check)'
        elif c.get('last_status') != plan_mod.RUNNING:
            text += ' (%s)' % c.get('last_status')
        words.append(text)
    return ', '.join(words) or 'none'


def _wait_healthy(engine, store, waiting, result, timeout, clock, sleep):
    """state healthy: after the pass, wait until each task of `waiting` ((index in result['tasks'], decl, record))
    is HEALTHY, `timeout` seconds at most, reading the engine's listing. A task that is not RUNNING, that turns
    UNHEALTHY or whose container stops fails the wait at once (the next converge stops it with its reason)."""
    deadline = clock() + timeout
    pending = list(waiting)
    while pending:
        now = clock()
        grouped = group(engine.list_role(ROLE))
        still = []
        for index, decl, record in pending:
            key = (decl.cluster, decl.name)
            names = plan_mod.checked(decl)
            view = result['tasks'][index]
            if record['last_status'] != plan_mod.RUNNING:
                raise TaskFailure('task %s/%s is %s%s, so it cannot become HEALTHY (state healthy)' % (
                    key[0], key[1], record['last_status'],
                    ': %s' % record['stopped_reason'] if record['last_status'] == plan_mod.STOPPED else ''), result)
            by_name = dict((o['labels'].get('drover.container'), o) for o in grouped.get(key, []))
            views = []
            for c in record.get('containers') or []:
                obs = by_name.get(c['name'])
                status = plan_mod.container_status(obs) if obs is not None else plan_mod.STOPPED
                views.append(dict(c, last_status=status,
                                  health_status=plan_mod.container_health(obs) if obs is not None else plan_mod.UNKNOWN))
            health = plan_mod.task_health(views, names)
            shown = dict(task_view(dict(record, containers=views), names), **dict(
                (k, v) for k, v in view.items() if k == 'changed_fields'))
            stopped = [v['name'] for v in views if v['name'] in names and v['last_status'] != plan_mod.RUNNING]
            if health == plan_mod.UNHEALTHY or stopped:
                result['tasks'][index] = shown
                raise TaskFailure('task %s/%s %s while state healthy waited for it (containers: %s); the next converge '
                                  'stops it' % (key[0], key[1], 'turned UNHEALTHY' if not stopped else 'stopped',
                                                _health_words(decl, shown)), result)
            if health != plan_mod.HEALTHY:
                still.append((index, decl, record))
                if now >= deadline:
                    result['tasks'][index] = shown
                    raise TaskFailure('task %s/%s is not HEALTHY after %s s (healthy_wait_timeout): its health is %s '
                                      '(containers: %s)' % (key[0], key[1], timeout, health,
                                                            _health_words(decl, shown)), result)
                continue
            before = plan_mod.task_health(record.get('containers'), names)
            events = plan_mod.health_events(key, before, health, now, views)
            record = dict(record, containers=views)
            store.put_task(record, now)
            for ev in events:
                store.add_event(ev)
            result['events'].extend(events)
            result['tasks'][index] = shown
        pending = still
        if pending:
            sleep(max(min(order_mod.ORDER_POLL, deadline - clock()), 0.01))


def converge(params, check_mode=False, diff=False, clock=time.time, sleep=time.sleep):
    """The ecs_task module's one call. Returns the result dict; raises TaskFailure."""
    try:
        normalize = _td_checked.Checked()
        tasks, purge_cluster = spec_mod.task_set(params, platform.machine(), normalize)
    except spec_mod.SpecError as exc:
        raise TaskFailure(str(exc))
    healthy_wait = params.get('healthy_wait_timeout')
    healthy_wait = HEALTHY_WAIT if healthy_wait is None else healthy_wait
    if not isinstance(healthy_wait, int) or isinstance(healthy_wait, bool) or healthy_wait < 0:
        raise TaskFailure('healthy_wait_timeout must be a number of seconds, 0 or more, got %r' % (healthy_wait,))
    keep = params.get('task_cleanup_wait') or 0
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
        raise TaskFailure('task_cleanup_wait must be a number of seconds, 0 or more, got %r' % (keep,))
    if any(t.network is not None for t in tasks) and not net.HAS_PYROUTE2:
        raise TaskFailure('network_mode awsvpc needs the Python library pyroute2 on the managed host: '
                          'pip install pyroute2 (or let the drover.fleet.host role install it)')
    try:
        revisions = records_option(params.get('service_revisions'))
    except SpecError as exc:
        raise TaskFailure(str(exc))
    not_an_instance(tasks, params.get('purge_keep'))
    began = time.monotonic()
    engine, store, lock = open_host(params, check_mode)
    result = {'changed': False, 'tasks': [], 'events': []}
    befores, afters = {}, {}
    waiting = []
    try:
        stored = dict(((r['cluster'], r['name']), r) for r in store.tasks())
        declared = [(t.cluster, t.name) for t in tasks]
        keys = list(declared)
        managed = engine.list_role()
        observed = [m for m in managed if m['labels'].get('drover.role') == ROLE]
        holders = [m for m in managed if m['labels'].get('drover.role') == HOLDER_ROLE]
        grouped = group(observed)
        if purge_cluster is not None:
            listed = set(k for k in grouped if k[0] == purge_cluster)
            listed |= set(k for k in group(holders) if k[0] == purge_cluster)
            listed |= set(k for k in stored if k[0] == purge_cluster)
            keys += sorted(k for k in listed if k not in declared and not spared(k, params.get('purge_keep')))
        with_exit_codes(engine, grouped, keys)
        _name_clashes(tasks, observed)
        _cred_id_clashes(tasks, observed, store.credentials())
        ledger = _ledger(params, tasks, engine, store)
        _check_level(tasks, engine)
        _check_binds(tasks, params.get('bind_paths'))
        # (the spared instances as the pass found them: it leaves them as they are)
        restated = restated_instances(params, grouped, store.service_revisions(), normalize) \
            if params.get('look') is not None else {}
        purge = [spec_mod.task({'name': k[1], 'cluster': k[0], 'state': 'absent'}) for k in keys[len(declared):]]
        now = clock()
        plans = [(decl, plan_mod.plan_task(decl, grouped.get((decl.cluster, decl.name), []),
                                           stored.get((decl.cluster, decl.name)), now, keep)) for decl in tasks + purge]
        try:
            # The networks this pass builds: their holder image is on the host before anything changes.
            said = check_holder_images(engine, [('awsvpc task %s/%s' % (d.cluster, d.name), d.network.holder_image)
                                                for d, p in plans if p.start and d.network is not None], check_mode)
        except net.NetError as exc:
            raise TaskFailure(str(exc))
        work = Pass(engine, store, check_mode, holders, clock, ledger,
                    {'delivery': params.get('gpu_delivery') or 'device-request', 'strict': bool(params.get('gpu_strict'))},
                    {'region': params.get('aws_region'), 'endpoint_url': params.get('aws_endpoint_url')},
                    # A pass waits for its tasks' orders, all together, at most the longest start timeout it needs.
                    order_wait=order_mod.pass_wait([t.containers for t in tasks if t.state == 'running']))
        for vol in engine.volumes_labelled({'drover.scope': 'task', 'drover.cluster': None, 'drover.task': None}):
            key = (vol['labels'].get('drover.cluster'), vol['labels'].get('drover.task'))
            work.task_volumes.setdefault(key, []).append(vol['name'])
        if not check_mode and any(t.state == 'running' and t.task_role_arn for t in tasks):
            work.host_key(create=True)           # made (or refused) before anything of the pass changes
        work.warnings.extend(said)
        for decl, plan in plans:
            key = (decl.cluster, decl.name)
            if not plan.remove and not plan.start:
                work.adopt_gpus(decl, grouped.get(key, []))
                work.adopt_credentials(decl, grouped.get(key, []))
            record, events, changed = work.apply(decl, plan, now)
            result['changed'] = result['changed'] or changed
            view = task_view(record, plan_mod.checked(decl))
            if decl.wait_healthy:
                waiting.append((len(result['tasks']), decl, record))
            if plan.remove and plan.start and decl.state == 'running' and plan.changed_fields is not None:
                view['changed_fields'] = plan.changed_fields
            result['tasks'].append(view)
            result['events'].extend(events)
            befores[key] = _diff_view(stored.get(key))
            afters[key] = None if plan.delete or decl.state == 'absent' else _diff_view(record)
            if afters[key] is not None and view.get('changed_fields'):
                afters[key]['changed_fields'] = view['changed_fields']
        if not check_mode:
            ledger.save(store, now)
            if revisions is not None:
                # the controller's bookkeeping, not a change of what the host runs: `changed` stays as the tasks left it
                result['service_revisions_written'] = store.set_service_revisions(revisions, now)
            if any(t.state == 'running' and (t.task_role_arn or (t.execution_role_arn and awslogs.served(t.containers)))
                   for t in tasks):
                repaired, trouble = endpoint_mod.reassert(params['store_path'])
                if repaired:
                    result['changed'] = True
                    work.warnings.append('the credentials endpoint\'s redirect was not whole: %s added again'
                                         % ', '.join(repaired))
                if trouble:
                    work.warnings.append(trouble)
            if waiting:
                result['warnings'] = work.warnings
                _wait_healthy(engine, store, waiting, result, healthy_wait, clock, sleep)
        if not check_mode and params.get('metrics_path'):
            work.warnings.extend(metrics_mod.write_tasks_files(params['metrics_path'], store.counters(),
                                                               params.get('cluster'), result['tasks'],
                                                               time.monotonic() - began, clock()))
        result['warnings'] = work.warnings
        if params.get('look') is not None:
            # what the services' placement reads of the host, after the pass (drover.fleet.converge's first pass)
            try:
                result['look'] = look(params, engine, store, gpus=params['look'].get('gpus'), restated=restated)
            except GpuFailure as exc:               # (no look: the play looks again, and tells why)
                work.warnings.append('the look for the services: %s' % exc.msg)
        # The runner pools the host holds, for drover.fleet.runner_pools: no drain pass where none is declared
        # and none is held.
        result['ansible_facts'] = {'drover_host_pools': held_pools(store, managed, params['store_path'])}
    except EngineError as exc:
        result['changed'] = True if result['tasks'] else result['changed']
        raise TaskFailure('Docker engine: %s' % exc, result)
    except TaskFailure:
        raise
    finally:
        store.close()
        if lock:
            lock.release()
        engine.close()
    if diff:
        shown = [k for k in befores if befores[k] is not None or afters[k] is not None]
        result['diff'] = {
            'before': dict(('%s/%s' % k, befores[k]) for k in shown),
            'after': dict(('%s/%s' % k, afters[k]) for k in shown),
        }
    return result


def info(params):
    """The ecs_task_info module's one call: every task the store or the engine knows, read-only."""
    try:
        engine = Engine(params.get('docker_host'), timeout=params.get('timeout') or 60)
    except EngineUnavailable as exc:
        raise TaskFailure(str(exc))
    try:
        store = Store(params['store_path'], read_only=True, older_ok=True)
    except StoreError as exc:
        engine.close()
        raise TaskFailure(str(exc))
    try:
        return dict(look(params, engine, store, params.get('cluster'), params.get('name'), params.get('gpus')),
                    changed=False)
    except GpuFailure as exc:
        raise TaskFailure(exc.msg)
    except EngineError as exc:
        raise TaskFailure('Docker engine: %s' % exc)
    finally:
        store.close()
        engine.close()
