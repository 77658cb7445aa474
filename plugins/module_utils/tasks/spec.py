# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared tasks: validation of what a user wrote into typed, hashable specs.

Owns: the shape of a task declaration (`containers` or an ECS `task_definition`), every rule a
declaration must follow, the error message for each broken rule, and the spec hash that tells an
unchanged task from a changed one.
Must not: touch Docker, the store, the network or the clock. Raises SpecError (with the field named)
and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import fnmatch
import hashlib
import json
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError, check_name as _name
from ansible_collections.drover.fleet.plugins.module_utils.network import spec as _netns_spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens
from ansible_collections.drover.fleet.plugins.module_utils.aws import model as _td_model
from ansible_collections.drover.fleet.plugins.module_utils.aws.calls import ecr_registry
from ansible_collections.drover.fleet.plugins.module_utils.tasks import level as level_mod

# Docker limits a container name to 255 bytes; the container name is '<task>-<container>'.
MAX_CONTAINER_NAME = 255
# Bounds, as ECS has them: at most 10 container definitions in a task definition; ECS's StopTask takes a reason
# of at most 255 characters.
MAX_CONTAINERS = 10
MAX_STOP_REASON = 255
# A credential ID ends up in a URI path (/v2/credentials/<id>).
CRED_ID_RE = re.compile(r'^[A-Za-z0-9._-]{1,64}\Z')
REVISION_RE = CRED_ID_RE
# An IAM role's name: ECS takes it for a role ARN of the account (the role is assumed as arn:...:role/<name>).
ROLE_NAME_RE = re.compile(r'^[A-Za-z0-9+=,.@_-]{1,64}\Z')
NETWORK_MODES = ('bridge', 'host', 'none', 'awsvpc')
# ECS's old name of bridge (Docker's default network).
NETWORK_MODE_ALIASES = {'default': 'bridge'}
STATES = ('running', 'healthy', 'stopped', 'absent')
RESTART_POLICIES = ('never', 'on-failure', 'always')
PULL_POLICIES = ('missing', 'always', 'never')
CONTAINER_KEYS = settings.OPTIONS

# ECS task definition keys (as DescribeTaskDefinition returns them) that map onto this collection.
TD_TASK_KEYS = ('family', 'containerDefinitions', 'networkMode', 'taskRoleArn', 'executionRoleArn') + \
    level_mod.LEVEL_ECS + ('enableFaultInjection',) + tuple(sorted(level_mod.ECS_WARNED))
# Keys that only describe a registered definition and ask for no behaviour: accepted as they are.
TD_METADATA_KEYS = ('taskDefinitionArn', 'revision', 'status', 'registeredAt', 'registeredBy',
                    'deregisteredAt', 'requiresAttributes', 'compatibilities', 'requiresCompatibilities',
                    'tags')

Container = settings.Container
Task = collections.namedtuple('Task', (
    'name', 'cluster', 'containers', 'network_mode', 'state', 'stop_reason', 'restart', 'pull',
    'registry_auth', 'task_role_arn', 'execution_role_arn', 'cred_id', 'network', 'spec_hash', 'warnings',
    'fields', 'cpu', 'memory', 'volumes', 'placement_constraints', 'runtime_platform', 'ipc_mode', 'pid_mode', 'where',
    'wait_healthy', 'revision'))
# where: each task-level option -> the field it was given in (volumes, or task_definition.volumes), for messages.
# wait_healthy: state healthy (a running task, that the converge then waits for until it is HEALTHY).
Task.__new__.__defaults__ = (None, None, None, (), (), None, None, None, None, False, None)
RegistryAuth = collections.namedtuple('RegistryAuth', ('registry', 'username', 'password', 'ecr'))


def has_check(container):
    """Whether a container is declared with a health check (a check of NONE is none)."""
    return container.health_check is not None and \
        list(dict(container.health_check).get('command') or ())[:1] != ['NONE']


def _empty(value):
    return value is None or value == [] or value == {} or value == ''


def from_task_definition(td, field='task_definition', normalize=None):
    """An ECS task definition, as AWS returns it, turned into this collection's words. `normalize`: what checks
    it by AWS's model (aws.model.normalize by default; the applier's keeps what it checked, aws.checked).

    Returns (family, network_mode, task_role_arn, execution_role_arn, containers as raw dicts, the task-level
    fields as {option: value}, warnings).
    A key that asks for something this collection does not do is refused by name; keys AWS fills
    with empty values ([] or {}) ask for nothing and pass.
    """
    if not _td_model.HAS_BOTOCORE:
        raise SpecError('%s is checked by AWS\'s model of ECS, which comes with the Python library botocore: '
                        'install botocore (or boto3) on the managed host' % field)
    early = []
    td = (normalize or _td_model.normalize)(td, field, early)
    defs = td.get('containerDefinitions')
    if not isinstance(defs, list) or not defs:
        raise SpecError('%s.containerDefinitions is required and must be a non-empty list' % field)
    # The container definitions first: a field a later release handles is named as such ("is not supported
    # yet"), whatever else the document asks for.
    containers = [settings.from_ecs(cd, '%s.containerDefinitions[%d]' % (field, i)) for i, cd in enumerate(defs)]
    level, warnings = level_mod.from_task_definition(td, field)
    warnings = early + list(warnings)
    unsupported = sorted(k for k, v in td.items()
                         if k not in TD_TASK_KEYS and k not in TD_METADATA_KEYS and not _empty(v))
    if unsupported:
        raise SpecError('%s has keys this collection does not support: %s (supported: %s)'
                        % (field, ', '.join(unsupported), ', '.join(TD_TASK_KEYS)))
    return (td.get('family'), td.get('networkMode'), td.get('taskRoleArn'), td.get('executionRoleArn'),
            containers, level, warnings)


def registry_auth(raw, field):
    """A registry_auth mapping (of a task, or a runner profile) as a RegistryAuth; None when not given."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping with registry, and username and password or ecr: true' % field)
    unknown = sorted(k for k, v in raw.items() if v is not None and k not in ('registry', 'username', 'password', 'ecr'))
    if unknown:
        raise SpecError('%s has unsupported keys: %s' % (field, ', '.join(unknown)))
    if not isinstance(raw.get('registry'), str) or not raw.get('registry'):
        raise SpecError('%s.registry is required' % field)
    ecr = raw.get('ecr') or False
    if not isinstance(ecr, bool):
        raise SpecError('%s.ecr must be true or false, got %r' % (field, ecr))
    if ecr:
        if raw.get('username') or raw.get('password'):
            raise SpecError('%s: ecr and username/password are mutually exclusive (with ecr, the token comes from '
                            'ECR GetAuthorizationToken)' % field)
        if not ecr_registry(raw['registry']):
            # The token pulls every repository the host (or the execution role) may read: it goes to ECR alone.
            raise SpecError('%s.registry %s is not an ECR registry (<account>.dkr.ecr.<region>.amazonaws.com): an ECR '
                            'token is handed to ECR alone' % (field, raw['registry']))
        return RegistryAuth(raw['registry'], None, None, True)
    for key in ('username', 'password'):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            raise SpecError('%s.%s is required (or ecr: true)' % (field, key))
    return RegistryAuth(raw['registry'], raw['username'], raw['password'], False)


def spec_hash(name, network_mode, containers, task_role_arn, network=None, cred_id=None, level=None, revision=None):
    """What makes two runs of a task the same: a change here replaces the task's containers. `level`: the
    task-level fields ({option: value}), each part of the hash only when set; `revision` too."""
    return _digest(spec_doc(name, network_mode, containers, task_role_arn, network, cred_id, level, revision), 16)


def spec_doc(name, network_mode, containers, task_role_arn, network=None, cred_id=None, level=None, revision=None):
    doc = {'name': name, 'network_mode': network_mode, 'task_role_arn': task_role_arn, 'cred_id': cred_id,
           'containers': [settings.hashable(c) for c in containers]}
    if revision is not None:
        doc['revision'] = revision
    if network is not None:
        doc['awsvpc'] = _netns_spec.hashable(network)
    doc.update(level_mod.hashable(level or {}))
    return doc


def _digest(value, size):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=list).encode('utf-8')).hexdigest()[:size]


def spec_fields(doc):
    """Each field of a spec (its doc) with a short digest of its value, as `containers[web].memory: 1a2b3c4d`: the
    label drover.spec-fields, from which a replacement says which fields changed (never their values)."""
    out = {}
    for key, value in doc.items():
        if key != 'containers':
            out[key] = _digest(value, 8)
            continue
        for c in value:
            for option, setting in c.items():
                if option != 'name':
                    out['containers[%s].%s' % (c['name'], option)] = _digest(setting, 8)
    return json.dumps(out, sort_keys=True, separators=(',', ':'))


def changed_fields(old, new):
    """The fields two spec_fields labels disagree on, sorted; None when the old one is unknown."""
    try:
        before = json.loads(old)
        after = json.loads(new)
    except (TypeError, ValueError):
        return None
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def task(raw, field='', defaults=None, allow_host_network=False, host=None, normalize=None):
    """One task declaration (the module's top-level options, or one entry of `tasks`). A running task on the
    host's network is refused unless `allow_host_network`. `host`: the host's policy and what is known of it
    (allow_privileged, log_drivers, log_driver_map, bind_paths, allow_host_namespaces, attributes, machine,
    region). `normalize`: as from_task_definition's."""
    prefix = field + '.' if field else ''
    raw = dict(raw)
    mode_field = prefix + 'network_mode' if raw.get('network_mode') is not None else 'network_mode'
    for key, val in (defaults or {}).items():
        if raw.get(key) is None:
            raw[key] = val
    state = raw.get('state') or 'running'
    if state not in STATES:
        raise SpecError('%sstate must be one of %s, got %r' % (prefix, ', '.join(STATES), state))
    wait_healthy = state == 'healthy'
    if wait_healthy:
        state = 'running'
    network_mode = raw.get('network_mode')
    task_role_arn = raw.get('task_role_arn')
    execution_role_arn = raw.get('execution_role_arn')
    name = raw.get('name')
    containers_raw = raw.get('containers')
    containers_field = prefix + 'containers'
    role_fields = {'task_role_arn': prefix + 'task_role_arn', 'execution_role_arn': prefix + 'execution_role_arn'}
    td_level, warnings = {}, []
    if raw.get('task_definition') is not None:
        if containers_raw:
            raise SpecError('%scontainers and %stask_definition are mutually exclusive' % (prefix, prefix))
        family, td_mode, td_role, td_exec, containers_raw, td_level, warnings = from_task_definition(
            raw['task_definition'], prefix + 'task_definition', normalize)
        td_mode = NETWORK_MODE_ALIASES.get(td_mode, td_mode)
        containers_field = prefix + 'task_definition.containerDefinitions'
        if name is None:
            if family is None:
                raise SpecError('%sname is required when %stask_definition has no family' % (prefix, prefix))
            name = family
        if td_mode is not None:
            if network_mode is not None and network_mode != td_mode:
                raise SpecError('%snetwork_mode %r contradicts %stask_definition.networkMode %r'
                                % (prefix, network_mode, prefix, td_mode))
            network_mode = td_mode
            mode_field = prefix + 'task_definition.networkMode'
        # A role the document gives, or that neither gives, is named as the document names it.
        if not task_role_arn:
            role_fields['task_role_arn'] = prefix + 'task_definition.taskRoleArn'
        if not execution_role_arn:
            role_fields['execution_role_arn'] = prefix + 'task_definition.executionRoleArn'
        task_role_arn = task_role_arn or td_role
        execution_role_arn = execution_role_arn or td_exec
    name = _name(name, prefix + 'name')
    cluster = _name(raw.get('cluster') or 'default', prefix + 'cluster')
    network_mode = network_mode or 'bridge'
    if network_mode not in NETWORK_MODES:
        raise SpecError('%snetwork_mode must be one of %s, got %r' % (prefix, ', '.join(NETWORK_MODES), network_mode))
    restart = raw.get('restart') or 'never'
    if restart not in RESTART_POLICIES:
        raise SpecError('%srestart must be one of %s, got %r' % (prefix, ', '.join(RESTART_POLICIES), restart))
    pull = raw.get('pull') or 'missing'
    if pull not in PULL_POLICIES:
        raise SpecError('%spull must be one of %s, got %r' % (prefix, ', '.join(PULL_POLICIES), pull))
    stop_reason = raw.get('stop_reason')
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise SpecError('%sstop_reason must be a string' % prefix)
    if stop_reason is not None and len(stop_reason) > MAX_STOP_REASON:
        raise SpecError('%sstop_reason is %d characters long: at most %d (as ECS\'s StopTask takes)'
                        % (prefix, len(stop_reason), MAX_STOP_REASON))
    cred_id = raw.get('cred_id')
    if cred_id is not None:
        if not task_role_arn:
            raise SpecError('%scred_id needs task_role_arn: a credential ID names the credentials of a task role' % prefix)
        if not isinstance(cred_id, str) or not CRED_ID_RE.match(cred_id):
            raise SpecError('%scred_id must be 1 to 64 letters, digits, ".", "_" or "-", got %r' % (prefix, cred_id))
    for key, val in (('task_role_arn', task_role_arn), ('execution_role_arn', execution_role_arn)):
        if val is not None and (not isinstance(val, str) or not (val.startswith('arn:') or ROLE_NAME_RE.match(val))):
            raise SpecError('%s must be an IAM role ARN (arn:...) or a role name (as ECS takes it: letters, digits and '
                            '+=,.@_-, at most 64), got %r' % (role_fields[key], val))
    if state == 'running':
        for key, val in (('task_role_arn', task_role_arn), ('execution_role_arn', execution_role_arn)):
            if val is not None and not role_allowed(val, (host or {}).get('allowed_roles')):
                raise SpecError('%s %s is not a role this host lets a task take (allowed_roles: %s; role variable '
                                'drover_allowed_roles)' % (role_fields[key], val,
                                                           ', '.join(host['allowed_roles']) or 'none'))
    auth = registry_auth(raw.get('registry_auth'), prefix + 'registry_auth')
    revision = raw.get('revision')
    if revision is not None and (not isinstance(revision, str) or not REVISION_RE.match(revision)):
        raise SpecError('%srevision must be 1 to 64 letters, digits, ".", "_" or "-", got %r' % (prefix, revision))

    level = _level(raw, td_level, prefix, cluster, name, state, host or {})
    # The host's policy bounds a task that is to run; stopping or removing one is always allowed.
    policy = host if state == 'running' else dict(host or {}, enforce=False)
    containers = ()
    if state == 'running' or containers_raw:
        if not isinstance(containers_raw, list) or not containers_raw:
            if state == 'running':
                raise SpecError('%s is required with state running and must be a non-empty list '
                                '(or give task_definition)' % containers_field)
            raise SpecError('%s must be a list' % containers_field)
        if len(containers_raw) > MAX_CONTAINERS:
            raise SpecError('%s lists %d containers: a task has at most %d (as an ECS task definition)'
                            % (containers_field, len(containers_raw), MAX_CONTAINERS))
        out = []
        seen = set()
        for i, item in enumerate(containers_raw):
            spec, said = settings.parse(item, '%s[%d]' % (containers_field, i), network_mode, policy,
                                        ecs=raw.get('task_definition') is not None)
            warnings.extend(said)
            if spec.name in seen:
                raise SpecError('%s[%d].name %r is used twice in task %s: container names must be unique'
                                % (containers_field, i, spec.name, name))
            seen.add(spec.name)
            if len('%s-%s' % (name, spec.name)) > MAX_CONTAINER_NAME:
                raise SpecError('%s[%d].name: the container name %s-%s is longer than %d characters'
                                % (containers_field, i, name, spec.name, MAX_CONTAINER_NAME))
            out.append(spec)
        containers = tuple(out)
        settings.check_references(containers, containers_field, network_mode,
                                  set(v.name for v in level['volumes'] or ()),
                                  ecs=raw.get('task_definition') is not None)
        firelens.check(containers, containers_field, settings.namer_of(containers_field,
                                                                       raw.get('task_definition') is not None))
        _check_sizes(containers, containers_field, level, name, raw.get('task_definition') is not None)
        settings.check_reads_as_role(containers, execution_role_arn, settings.namer_of(
            containers_field, raw.get('task_definition') is not None), role_fields['execution_role_arn'])
        if not any(c.essential for c in containers):
            raise SpecError('%s: at least one container must be essential' % containers_field)
    network = None
    if network_mode == 'awsvpc' and state == 'running':
        # Without awsvpc.eni_mac, the task's namespace is held on the engine's bridge network and publishes
        # the containers' ports; around an ENI, its address reaches the containers and nothing is published.
        network = _netns_spec.net_spec(raw.get('awsvpc') or {}, name, cluster, prefix + 'awsvpc', eni_required=False)
        published = {}
        names = settings.namer_of(containers_field, raw.get('task_definition') is not None)
        for i, spec in enumerate(containers):
            where = names(i, 'port_mappings')
            if spec.port_mappings and not _netns_spec.bridge_backed(network):
                raise SpecError('%s: an awsvpc task with an ENI (%sawsvpc.eni_mac) publishes no ports, its containers '
                                'are reached on the ENI\'s address; ports are published with network_mode bridge, '
                                'or awsvpc without an ENI' % (where, prefix))
            for j, port in enumerate(spec.port_mappings):
                key = (port.container_port, port.protocol)
                if key in published:
                    raise SpecError('%s[%d]: port %d/%s is mapped by container %s too; the containers of an awsvpc '
                                    'task share one network namespace' % (where, j, key[0], key[1], published[key]))
                published[key] = spec.name
        network = network._replace(ports=tuple(
            (p.container_port, p.host_port, p.protocol) for c in containers for p in c.port_mappings))
    elif raw.get('awsvpc') and network_mode != 'awsvpc':
        raise SpecError('%sawsvpc is only used with network_mode awsvpc, not %s' % (prefix, network_mode))
    if network_mode == 'host' and state == 'running' and not allow_host_network:
        raise SpecError('%s is host: task %s/%s would share the host\'s network (and see every task\'s traffic); '
                        'this host refuses host-network tasks unless allow_host_network is true '
                        '(role variable drover_allow_host_network)' % (mode_field, cluster, name))
    if wait_healthy and not any(c.essential and has_check(c) for c in containers):
        raise SpecError('%sstate is healthy: task %s/%s has no essential container with a health check '
                        '(containers[].health_check, healthCheck in a task definition), so it never becomes HEALTHY; '
                        'declare one, or use state running' % (prefix, cluster, name))
    return Task(name=name, cluster=cluster, containers=containers, network_mode=network_mode, state=state,
                stop_reason=stop_reason, restart=restart, pull=pull, registry_auth=auth,
                task_role_arn=task_role_arn, execution_role_arn=execution_role_arn, cred_id=cred_id, network=network,
                spec_hash=spec_hash(name, network_mode, containers, task_role_arn, network, cred_id, level, revision),
                warnings=tuple(warnings), cpu=level['cpu'], memory=level['memory'], volumes=level['volumes'] or (),
                placement_constraints=level['placement_constraints'] or (),
                runtime_platform=level['runtime_platform'], ipc_mode=level['ipc_mode'], pid_mode=level['pid_mode'],
                where=dict(level['where'], containers=containers_field), wait_healthy=wait_healthy, revision=revision,
                fields=spec_fields(spec_doc(name, network_mode, containers, task_role_arn, network, cred_id, level,
                                            revision)))


def _level(raw, td_level, prefix, cluster, name, state, host):
    """The task-level fields, from the options or the task definition (not both, unless equal), checked.
    The host's policy and placement are checked for a task that is to run (stopping one is always allowed)."""
    running = state == 'running'
    out = {'where': {}}
    for option, ecs in level_mod.LEVEL:
        value, field, ecs_form = raw.get(option), prefix + option, False
        if td_level.get(option) is not None:
            if value is not None and value != td_level[option]:
                raise SpecError('%s%s contradicts %stask_definition.%s: give it in one place'
                                % (prefix, option, prefix, ecs))
            value, field, ecs_form = td_level[option], '%stask_definition.%s' % (prefix, ecs), True
        out['where'][option] = field
        if value is None or value == [] or value == {} or value == '':
            out[option] = None
        elif option == 'cpu':
            out[option] = level_mod.cpu_units(value, field)
        elif option == 'memory':
            out[option] = level_mod.memory_mib(value, field)
        elif option == 'volumes':
            out[option] = level_mod.volumes(value, field, ecs_form, host if running else {}, host.get('region'))
        elif option == 'placement_constraints':
            attrs = level_mod.host_attributes(host.get('machine'), host.get('attributes'))
            out[option] = level_mod.placement(value, field, ecs_form, attrs, running)
        elif option == 'runtime_platform':
            out[option] = level_mod.runtime_platform(value, field, ecs_form, host.get('machine'), running)
        elif option == 'ipc_mode':
            out[option] = level_mod.namespace_mode(value, field, level_mod.IPC_MODES, 'IPC',
                                                   host.get('allow_host_namespaces'), running)
        else:
            out[option] = level_mod.namespace_mode(value, field, level_mod.PID_MODES, 'process',
                                                   host.get('allow_host_namespaces'), running)
    return out


def _check_sizes(containers, field, level, name, ecs):
    """No container may ask for more memory than the task has (as ECS refuses)."""
    if not level['memory']:
        return
    for i, c in enumerate(containers):
        at = settings._namer('%s[%d]' % (field, i), ecs)     # pylint: disable=protected-access
        for option in ('memory', 'memory_reservation'):
            value = getattr(c, option)
            if value and value > level['memory']:
                raise SpecError('%s (%d MiB) is above the memory of task %s (%d MiB)'
                                % (at(option), value, name, level['memory']))


def role_allowed(role, patterns):
    """Whether a task may take `role` (an ARN, or a bare name of the host's account) under the host's allowlist
    `patterns` (None: any role): an ARN matches the ARN patterns, a name the name patterns (shell-style, in case)."""
    if patterns is None:
        return True
    arn = role.startswith('arn:')
    return any(fnmatch.fnmatchcase(role, p) for p in patterns if p.startswith('arn:') == arn)


def _check_policy(params):
    """The host's policy values themselves: an empty or relative bind prefix would read as '/', every path."""
    for i, prefix in enumerate(params.get('bind_paths') or ()):
        if not isinstance(prefix, str) or not prefix.startswith('/') or '..' in prefix.split('/'):
            raise SpecError('bind_paths[%d] must be an absolute path with no ".." (give / itself to allow every '
                            'path), got %r' % (i, prefix))
    for i, pattern in enumerate(params.get('allowed_devices') or ()):
        if not isinstance(pattern, str) or not pattern.startswith('/dev/'):
            raise SpecError('allowed_devices[%d] must be a pattern of devices under /dev/, got %r' % (i, pattern))
    for i, cap in enumerate(params.get('allowed_capabilities') or ()):
        if cap not in settings.CAPABILITIES:
            raise SpecError('allowed_capabilities[%d] %r is not a capability (as ECS names them: SYS_PTRACE, '
                            'IPC_LOCK...)' % (i, cap))
    for key in ('log_addresses', 'allowed_roles', 'nfs_servers', 'allowed_security_options'):
        for i, value in enumerate(params.get(key) or ()):
            if not isinstance(value, str) or not value or value != value.strip():
                raise SpecError('%s[%d] must be a non-empty string with no blank at either end, got %r' % (key, i, value))


def host_policy(params, machine=None):
    """The host's policy for what a task may do, from the module's options, and what is known of the host
    (`machine`: its architecture, as uname names it)."""
    _check_policy(params)
    return {'enforce': True, 'allow_privileged': bool(params.get('allow_privileged')), 'log_drivers': params.get('log_drivers'),
            'log_driver_map': params.get('log_driver_map'), 'aws_logs': bool(params.get('aws_logs')),
            'log_addresses': params.get('log_addresses') or [], 'aws_endpoint_url': params.get('aws_endpoint_url'),
            'allowed_roles': params.get('allowed_roles'),
            'allowed_capabilities': params.get('allowed_capabilities') or [],
            'allowed_security_options': params.get('allowed_security_options') or [],
            'allowed_devices': params.get('allowed_devices') or [], 'nfs_servers': params.get('nfs_servers') or [],
            'bind_paths': params.get('bind_paths'),
            'allow_host_namespaces': bool(params.get('allow_host_namespaces')),
            'attributes': params.get('attributes') or {}, 'machine': machine, 'region': params.get('aws_region')}


TASK_OPTION_KEYS = ('name', 'cluster', 'containers', 'task_definition', 'network_mode', 'awsvpc', 'state',
                    'stop_reason', 'restart', 'pull', 'registry_auth', 'task_role_arn', 'execution_role_arn', 'cred_id',
                    'revision') + \
    level_mod.LEVEL_OPTIONS
STOP_RANK = {'running': 0, 'stopped': 1, 'absent': 2}


def set_defaults(params):
    """What the module's top-level options give every entry of `tasks` that leaves them out."""
    return {k: params.get(k) for k in ('cluster', 'network_mode', 'state', 'restart', 'pull', 'registry_auth')}


def task_set(params, machine=None, normalize=None):
    """The module's parameters: one task (`name`...) or a set (`tasks` with `purge`). `normalize`: as
    from_task_definition's.

    Returns (tasks, purge_cluster or None). Two declarations of one task: the stop wins over a start
    (the task never starts); two running declarations must agree.
    """
    single = {k: params.get(k) for k in TASK_OPTION_KEYS}
    if params.get('tasks') is None:
        if params.get('purge'):
            raise SpecError('purge needs tasks (the whole set of the cluster\'s tasks), not a single name')
        if single.get('name') is None and single.get('task_definition') is None:
            raise SpecError('name (or task_definition with a family) is required when tasks is not given')
        return [task(single, allow_host_network=bool(params.get('allow_host_network')),
                     host=host_policy(params, machine), normalize=normalize)], None
    given = sorted(k for k in ('name', 'containers', 'task_definition', 'stop_reason') + level_mod.LEVEL_OPTIONS
                   if params.get(k) is not None)
    if given:
        raise SpecError('tasks is mutually exclusive with %s: declare those inside each entry of tasks'
                        % ', '.join(given))
    if not isinstance(params['tasks'], list):
        raise SpecError('tasks must be a list of task declarations')
    defaults = set_defaults(params)
    chosen = collections.OrderedDict()
    for i, raw in enumerate(params['tasks']):
        field = 'tasks[%d]' % i
        if not isinstance(raw, dict):
            raise SpecError('%s must be a mapping' % field)
        unknown = sorted(set(raw) - set(TASK_OPTION_KEYS))
        if unknown:
            raise SpecError('%s has unsupported keys: %s (supported: %s)'
                            % (field, ', '.join(unknown), ', '.join(TASK_OPTION_KEYS)))
        spec = task(raw, field, defaults, bool(params.get('allow_host_network')), host_policy(params, machine),
                    normalize)
        key = (spec.cluster, spec.name)
        other = chosen.get(key)
        if other is None:
            chosen[key] = spec
        elif STOP_RANK[spec.state] > STOP_RANK[other.state]:
            chosen[key] = spec
        elif spec.state == other.state == 'running' and spec.spec_hash != other.spec_hash:
            raise SpecError('%s declares task %s/%s a second time with a different spec' % (field, spec.cluster, spec.name))
    return list(chosen.values()), (params.get('cluster') or 'default') if params.get('purge') else None
