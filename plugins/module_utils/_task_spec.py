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
import hashlib
import json
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError, check_name as _name
from ansible_collections.drover.fleet.plugins.module_utils import _netns_spec

# Docker refuses a memory limit below 6 MiB ("Minimum memory limit allowed is 6MB").
MIN_MEMORY_MIB = 6
# Docker limits a container name to 255 bytes; the container name is '<task>-<container>'.
MAX_CONTAINER_NAME = 255
# An image reference, after the grammar of Docker's distribution library: [domain/]path[:tag][@digest].
_LABEL = r'[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?'
# A first component is a registry host only with a dot, a port, or as localhost (else it is a path).
_DOMAIN = r'(?:(?:localhost|%s(?:\.%s)+)(?::[0-9]+)?/|%s:[0-9]+/)' % (_LABEL, _LABEL, _LABEL)
_PATH = r'[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
IMAGE_RE = re.compile(r'^%s?%s(?:/%s)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z'
                      % (_DOMAIN, _PATH, _PATH), re.ASCII)
# Bounds, as ECS has them: at most 10 container definitions in a task definition; a whole task definition
# is at most 64 KiB, so no container's environment (NAME=value strings, UTF-8) and no container's command or
# entry point (its arguments) is larger. Each stays under Linux's 128 KiB for one string (MAX_ARG_STRLEN)
# and, all of one container together, far under its total for arguments and environment (a quarter of the
# stack limit, 2 MiB by default). ECS's StopTask takes a reason of at most 255 characters.
MAX_CONTAINERS = 10
MAX_ENVIRONMENT_BYTES = 64 * 1024
MAX_ARGV_BYTES = 64 * 1024
MAX_STOP_REASON = 255
# A credential ID ends up in a URI path (/v2/credentials/<id>).
CRED_ID_RE = re.compile(r'^[A-Za-z0-9._-]{1,64}\Z')
NETWORK_MODES = ('bridge', 'host', 'none', 'awsvpc')
STATES = ('running', 'stopped', 'absent')
RESTART_POLICIES = ('never', 'on-failure', 'always')
PULL_POLICIES = ('missing', 'always', 'never')
PROTOCOLS = ('tcp', 'udp')

CONTAINER_KEYS = ('name', 'image', 'command', 'entrypoint', 'environment', 'essential', 'cpu', 'memory',
                  'port_mappings', 'gpu', 'capabilities')
# The Linux capabilities a container may add or drop, as ECS names them (KernelCapabilities in the ECS API).
CAPABILITIES = ('ALL', 'AUDIT_CONTROL', 'AUDIT_WRITE', 'BLOCK_SUSPEND', 'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH',
                'FOWNER', 'FSETID', 'IPC_LOCK', 'IPC_OWNER', 'KILL', 'LEASE', 'LINUX_IMMUTABLE', 'MAC_ADMIN',
                'MAC_OVERRIDE', 'MKNOD', 'NET_ADMIN', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_RAW', 'SETFCAP',
                'SETGID', 'SETPCAP', 'SETUID', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_CHROOT', 'SYS_MODULE', 'SYS_NICE',
                'SYS_PACCT', 'SYS_PTRACE', 'SYS_RAWIO', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'SYSLOG',
                'WAKE_ALARM')
# Dropped from every container unless its declaration adds it back: with NET_RAW a container on a shared
# bridge can forge ARP and spoof its neighbours (the host, other tasks) and read their traffic.
DEFAULT_DROP = ('NET_RAW',)

# ECS task definition keys (as DescribeTaskDefinition returns them) that map onto this collection.
TD_TASK_KEYS = ('family', 'containerDefinitions', 'networkMode', 'taskRoleArn', 'executionRoleArn')
# Keys that only describe a registered definition and ask for no behaviour: accepted as they are.
TD_METADATA_KEYS = ('taskDefinitionArn', 'revision', 'status', 'registeredAt', 'registeredBy',
                    'deregisteredAt', 'requiresAttributes', 'compatibilities', 'requiresCompatibilities',
                    'tags')
TD_CONTAINER_KEYS = ('name', 'image', 'command', 'entryPoint', 'environment', 'essential', 'cpu', 'memory',
                     'portMappings', 'resourceRequirements', 'linuxParameters')
# Members of a container definition's linuxParameters that map onto this collection.
TD_LINUX_KEYS = ('capabilities',)

Container = collections.namedtuple('Container', CONTAINER_KEYS)
# What a container is created with: cap_add and cap_drop, each a sorted tuple of capability names.
Capabilities = collections.namedtuple('Capabilities', ('add', 'drop'))
PortMapping = collections.namedtuple('PortMapping', ('container_port', 'host_port', 'protocol'))
Task = collections.namedtuple('Task', (
    'name', 'cluster', 'containers', 'network_mode', 'state', 'stop_reason', 'restart', 'pull',
    'registry_auth', 'task_role_arn', 'execution_role_arn', 'cred_id', 'network', 'spec_hash'))
RegistryAuth = collections.namedtuple('RegistryAuth', ('registry', 'username', 'password', 'ecr'))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value, field, minimum=None, maximum=None):
    if isinstance(value, str) and re.match(r'^\s*-?\d+\s*$', value):
        value = int(value)
    if not _is_int(value):
        raise SpecError('%s must be a whole number, got %r' % (field, value))
    if minimum is not None and value < minimum:
        raise SpecError('%s must be at least %d, got %d' % (field, minimum, value))
    if maximum is not None and value > maximum:
        raise SpecError('%s must be at most %d, got %d' % (field, maximum, value))
    return value


def _bool(value, field):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ('yes', 'true', 'on', '1', 'no', 'false', 'off', '0'):
        return value.lower() in ('yes', 'true', 'on', '1')
    raise SpecError('%s must be true or false, got %r' % (field, value))


def _argv(value, field):
    """A command or entrypoint: a list of strings (an exec form), or None."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of strings (exec form, e.g. ["sleep", "60"]), got %s %r'
                        % (field, type(value).__name__, value))
    out = []
    for i, arg in enumerate(value):
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise SpecError('%s[%d] must be a string, got %r' % (field, i, arg))
        out.append(str(arg))
    size = sum(len(arg.encode('utf-8', 'surrogatepass')) + 1 for arg in out)
    if size > MAX_ARGV_BYTES:
        raise SpecError('%s is %d bytes long: at most %d (64 KiB, the size of a whole ECS task definition)'
                        % (field, size, MAX_ARGV_BYTES))
    return tuple(out)


def _environment(value, field):
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise SpecError('%s must be a mapping of variable names to values, got %r' % (field, type(value).__name__))
    out = []
    for key, val in value.items():
        if not isinstance(key, str) or not key or '=' in key or '\0' in key:
            raise SpecError('%s has an invalid variable name %r' % (field, key))
        if isinstance(val, bool):
            val = 'true' if val else 'false'
        elif val is None:
            val = ''
        elif isinstance(val, (int, float)):
            val = str(val)
        elif not isinstance(val, str):
            raise SpecError('%s.%s must be a string, got %s' % (field, key, type(val).__name__))
        out.append((key, val))
    check_environment_size(out, field)
    return tuple(sorted(out))


def check_environment_size(pairs, field):
    """An environment ((name, value) pairs) of at most MAX_ENVIRONMENT_BYTES, counted as NAME=value strings."""
    size = sum(len(('%s=%s' % (k, v)).encode('utf-8', 'surrogatepass')) + 1 for k, v in pairs)
    if size > MAX_ENVIRONMENT_BYTES:
        raise SpecError('%s is %d bytes (NAME=value, all variables together): at most %d (64 KiB, the size of a '
                        'whole ECS task definition)' % (field, size, MAX_ENVIRONMENT_BYTES))


def _ports(value, field, network_mode):
    if value is None or value == []:
        return ()
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of port mappings' % field)
    if network_mode not in ('bridge', 'awsvpc'):
        raise SpecError('%s is only supported with network_mode bridge or awsvpc, not %s' % (field, network_mode))
    out = []
    seen = set()
    for i, item in enumerate(value):
        where = '%s[%d]' % (field, i)
        if not isinstance(item, dict):
            raise SpecError('%s must be a mapping with container_port, host_port, protocol' % where)
        unknown = sorted(set(item) - {'container_port', 'host_port', 'protocol'})
        if unknown:
            raise SpecError('%s has unsupported keys: %s' % (where, ', '.join(unknown)))
        if item.get('container_port') is None:
            raise SpecError('%s.container_port is required' % where)
        cport = _int(item['container_port'], where + '.container_port', 1, 65535)
        hport = item.get('host_port')
        hport = None if hport in (None, 0) else _int(hport, where + '.host_port', 1, 65535)
        if network_mode == 'awsvpc':
            # As AWS has it: the task's own namespace publishes a port on the same number, so host_port is
            # left out (then it is the container port) or equal to it.
            if hport is not None and hport != cport:
                raise SpecError('%s.host_port %d differs from its container_port %d: with network_mode awsvpc a '
                                'port is published on the same host port (leave host_port out, or give %d), as '
                                'AWS requires' % (where, hport, cport, cport))
            hport = cport
        proto = item.get('protocol') or 'tcp'
        if proto not in PROTOCOLS:
            raise SpecError('%s.protocol must be one of %s, got %r' % (where, ', '.join(PROTOCOLS), proto))
        key = (hport, proto) if hport else ('c', cport, proto)
        if key in seen:
            raise SpecError('%s maps the same port twice (%s/%s)' % (where, hport or cport, proto))
        seen.add(key)
        out.append(PortMapping(cport, hport, proto))
    return tuple(out)


def _cap_list(value, field):
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of capability names, got %r' % (field, value))
    for i, name in enumerate(value):
        if name not in CAPABILITIES:
            raise SpecError('%s[%d] %r is not a capability name ECS knows (one of %s)'
                            % (field, i, name, ', '.join(CAPABILITIES)))
    return tuple(sorted(set(value)))


def capabilities(raw, field):
    """`{add: [...], drop: [...]}` (ECS's KernelCapabilities) to what the container is created with: NET_RAW is
    dropped unless it is added back (or ALL is added)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping with add and drop (lists of capability names), got %s'
                        % (field, type(raw).__name__))
    unknown = sorted(k for k, v in raw.items() if k not in ('add', 'drop') and v is not None)
    if unknown:
        raise SpecError('%s has unsupported keys: %s (supported: add, drop)' % (field, ', '.join(unknown)))
    add = _cap_list(raw.get('add'), field + '.add')
    drop = _cap_list(raw.get('drop'), field + '.drop')
    both = sorted(set(add) & set(drop))
    if both:
        raise SpecError('%s: %s is both added and dropped' % (field, ', '.join(both)))
    if 'ALL' not in add:
        drop = tuple(sorted(set(drop) | set(c for c in DEFAULT_DROP if c not in add)))
    return Capabilities(add, drop)


def container(raw, field, network_mode):
    """One entry of `containers`, checked and made typed."""
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping' % field)
    unknown = sorted(set(raw) - set(CONTAINER_KEYS))
    if unknown:
        raise SpecError('%s has unsupported keys: %s (supported: %s)'
                        % (field, ', '.join(unknown), ', '.join(CONTAINER_KEYS)))
    name = _name(raw.get('name'), field + '.name')
    image = raw.get('image')
    if not isinstance(image, str) or not image.strip():
        raise SpecError('%s.image is required (container %s has no image)' % (field, name))
    if not IMAGE_RE.match(image):
        raise SpecError('%s.image %r is not a valid image reference' % (field, image))
    essential = raw.get('essential')
    cpu = raw.get('cpu')
    memory = raw.get('memory')
    gpu = raw.get('gpu')
    return Container(
        name=name,
        image=image,
        command=_argv(raw.get('command'), field + '.command'),
        entrypoint=_argv(raw.get('entrypoint'), field + '.entrypoint'),
        environment=_environment(raw.get('environment'), field + '.environment'),
        essential=True if essential is None else _bool(essential, field + '.essential'),
        cpu=None if cpu in (None, 0) else _int(cpu, field + '.cpu', 2, 262144),
        memory=None if memory is None else _int(memory, field + '.memory', MIN_MEMORY_MIB),
        port_mappings=_ports(raw.get('port_mappings'), field + '.port_mappings', network_mode),
        gpu=0 if gpu is None else _int(gpu, field + '.gpu', 0, 64),
        capabilities=capabilities(raw.get('capabilities'), field + '.capabilities'),
    )


def _empty(value):
    return value is None or value == [] or value == {} or value == ''


def from_task_definition(td, field='task_definition'):
    """An ECS task definition, as AWS returns it, turned into this collection's words.

    Returns (family, network_mode, task_role_arn, execution_role_arn, containers as raw dicts).
    A key that asks for something this collection does not do is refused by name; keys AWS fills
    with empty values ([] or {}) ask for nothing and pass.
    """
    if not isinstance(td, dict):
        raise SpecError('%s must be a mapping (an ECS task definition)' % field)
    unsupported = sorted(k for k, v in td.items()
                         if k not in TD_TASK_KEYS and k not in TD_METADATA_KEYS and not _empty(v))
    if unsupported:
        raise SpecError('%s has keys this collection does not support: %s (supported: %s)'
                        % (field, ', '.join(unsupported), ', '.join(TD_TASK_KEYS)))
    defs = td.get('containerDefinitions')
    if not isinstance(defs, list) or not defs:
        raise SpecError('%s.containerDefinitions is required and must be a non-empty list' % field)
    containers = []
    for i, cd in enumerate(defs):
        where = '%s.containerDefinitions[%d]' % (field, i)
        if not isinstance(cd, dict):
            raise SpecError('%s must be a mapping' % where)
        bad = sorted(k for k, v in cd.items() if k not in TD_CONTAINER_KEYS and not _empty(v))
        if bad:
            raise SpecError('%s has keys this collection does not support: %s (supported: %s)'
                            % (where, ', '.join(bad), ', '.join(TD_CONTAINER_KEYS)))
        raw = {'name': cd.get('name'), 'image': cd.get('image'), 'command': cd.get('command'),
               'entrypoint': cd.get('entryPoint'), 'essential': cd.get('essential'), 'cpu': cd.get('cpu'),
               'memory': cd.get('memory')}
        env = cd.get('environment')
        if env:
            if not isinstance(env, list):
                raise SpecError('%s.environment must be a list of {name, value}' % where)
            raw['environment'] = {}
            for j, pair in enumerate(env):
                if not isinstance(pair, dict) or 'name' not in pair or set(pair) - {'name', 'value'}:
                    raise SpecError('%s.environment[%d] must be {name, value}' % (where, j))
                raw['environment'][pair['name']] = pair.get('value')
        ports = cd.get('portMappings')
        if ports:
            if not isinstance(ports, list):
                raise SpecError('%s.portMappings must be a list' % where)
            raw['port_mappings'] = []
            for j, pm in enumerate(ports):
                if not isinstance(pm, dict):
                    raise SpecError('%s.portMappings[%d] must be a mapping' % (where, j))
                extra = sorted(set(pm) - {'containerPort', 'hostPort', 'protocol'})
                if extra:
                    raise SpecError('%s.portMappings[%d] has keys this collection does not support: %s'
                                    % (where, j, ', '.join(extra)))
                raw['port_mappings'].append({'container_port': pm.get('containerPort'),
                                             'host_port': pm.get('hostPort'), 'protocol': pm.get('protocol')})
        reqs = cd.get('resourceRequirements')
        if reqs:
            if not isinstance(reqs, list):
                raise SpecError('%s.resourceRequirements must be a list' % where)
            for j, req in enumerate(reqs):
                if not isinstance(req, dict) or req.get('type') != 'GPU':
                    raise SpecError('%s.resourceRequirements[%d]: only {type: GPU, value: N} is supported'
                                    % (where, j))
                raw['gpu'] = req.get('value')
        linux = cd.get('linuxParameters')
        if linux:
            if not isinstance(linux, dict):
                raise SpecError('%s.linuxParameters must be a mapping' % where)
            bad = sorted(k for k, v in linux.items() if k not in TD_LINUX_KEYS and not _empty(v))
            if bad:
                raise SpecError('%s.linuxParameters has keys this collection does not support: %s (supported: %s)'
                                % (where, ', '.join(bad), ', '.join(TD_LINUX_KEYS)))
            if not _empty(linux.get('capabilities')):
                capabilities(linux['capabilities'], where + '.linuxParameters.capabilities')
                raw['capabilities'] = linux['capabilities']
        containers.append(raw)
    return (td.get('family'), td.get('networkMode'), td.get('taskRoleArn'), td.get('executionRoleArn'),
            containers)


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
        return RegistryAuth(raw['registry'], None, None, True)
    for key in ('username', 'password'):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            raise SpecError('%s.%s is required (or ecr: true)' % (field, key))
    return RegistryAuth(raw['registry'], raw['username'], raw['password'], False)


def spec_hash(name, network_mode, containers, task_role_arn, network=None, cred_id=None):
    """What makes two runs of a task the same: a change here replaces the task's containers."""
    doc = {'name': name, 'network_mode': network_mode, 'task_role_arn': task_role_arn, 'cred_id': cred_id,
           'containers': [c._asdict() for c in containers]}
    if network is not None:
        doc['awsvpc'] = _netns_spec.hashable(network)
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=list).encode('utf-8')).hexdigest()[:16]


def task(raw, field='', defaults=None, allow_host_network=False):
    """One task declaration (the module's top-level options, or one entry of `tasks`). A running task on the
    host's network is refused unless `allow_host_network`."""
    prefix = field + '.' if field else ''
    raw = dict(raw)
    mode_field = prefix + 'network_mode' if raw.get('network_mode') is not None else 'network_mode'
    for key, val in (defaults or {}).items():
        if raw.get(key) is None:
            raw[key] = val
    state = raw.get('state') or 'running'
    if state not in STATES:
        raise SpecError('%sstate must be one of %s, got %r' % (prefix, ', '.join(STATES), state))
    network_mode = raw.get('network_mode')
    task_role_arn = raw.get('task_role_arn')
    execution_role_arn = raw.get('execution_role_arn')
    name = raw.get('name')
    containers_raw = raw.get('containers')
    containers_field = prefix + 'containers'
    if raw.get('task_definition') is not None:
        if containers_raw:
            raise SpecError('%scontainers and %stask_definition are mutually exclusive' % (prefix, prefix))
        family, td_mode, td_role, td_exec, containers_raw = from_task_definition(
            raw['task_definition'], prefix + 'task_definition')
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
        if val is not None and (not isinstance(val, str) or not val.startswith('arn:')):
            raise SpecError('%s%s must be an IAM role ARN (arn:...), got %r' % (prefix, key, val))
    auth = registry_auth(raw.get('registry_auth'), prefix + 'registry_auth')

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
            spec = container(item, '%s[%d]' % (containers_field, i), network_mode)
            if spec.name in seen:
                raise SpecError('%s[%d].name %r is used twice in task %s: container names must be unique'
                                % (containers_field, i, spec.name, name))
            seen.add(spec.name)
            if len('%s-%s' % (name, spec.name)) > MAX_CONTAINER_NAME:
                raise SpecError('%s[%d].name: the container name %s-%s is longer than %d characters'
                                % (containers_field, i, name, spec.name, MAX_CONTAINER_NAME))
            out.append(spec)
        containers = tuple(out)
        if not any(c.essential for c in containers):
            raise SpecError('%s: at least one container must be essential' % containers_field)
    network = None
    if network_mode == 'awsvpc' and state == 'running':
        # Without awsvpc.eni_mac, the task's namespace is held on the engine's bridge network and publishes
        # the containers' ports; around an ENI, its address reaches the containers and nothing is published.
        network = _netns_spec.net_spec(raw.get('awsvpc') or {}, name, cluster, prefix + 'awsvpc', eni_required=False)
        published = {}
        for i, spec in enumerate(containers):
            where = '%s[%d].port_mappings' % (containers_field, i)
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
    return Task(name=name, cluster=cluster, containers=containers, network_mode=network_mode, state=state,
                stop_reason=stop_reason, restart=restart, pull=pull, registry_auth=auth,
                task_role_arn=task_role_arn, execution_role_arn=execution_role_arn, cred_id=cred_id, network=network,
                spec_hash=spec_hash(name, network_mode, containers, task_role_arn, network, cred_id))


TASK_OPTION_KEYS = ('name', 'cluster', 'containers', 'task_definition', 'network_mode', 'awsvpc', 'state',
                    'stop_reason', 'restart', 'pull', 'registry_auth', 'task_role_arn', 'execution_role_arn', 'cred_id')
STOP_RANK = {'running': 0, 'stopped': 1, 'absent': 2}


def task_set(params):
    """The module's parameters: one task (`name`...) or a set (`tasks` with `purge`).

    Returns (tasks, purge_cluster or None). Two declarations of one task: the stop wins over a start
    (the task never starts); two running declarations must agree.
    """
    single = {k: params.get(k) for k in TASK_OPTION_KEYS}
    if params.get('tasks') is None:
        if params.get('purge'):
            raise SpecError('purge needs tasks (the whole set of the cluster\'s tasks), not a single name')
        if single.get('name') is None and single.get('task_definition') is None:
            raise SpecError('name (or task_definition with a family) is required when tasks is not given')
        return [task(single, allow_host_network=bool(params.get('allow_host_network')))], None
    given = sorted(k for k in ('name', 'containers', 'task_definition', 'stop_reason') if params.get(k) is not None)
    if given:
        raise SpecError('tasks is mutually exclusive with %s: declare those inside each entry of tasks'
                        % ', '.join(given))
    if not isinstance(params['tasks'], list):
        raise SpecError('tasks must be a list of task declarations')
    defaults = {k: params.get(k) for k in ('cluster', 'network_mode', 'state', 'restart', 'pull', 'registry_auth')}
    chosen = collections.OrderedDict()
    for i, raw in enumerate(params['tasks']):
        field = 'tasks[%d]' % i
        if not isinstance(raw, dict):
            raise SpecError('%s must be a mapping' % field)
        unknown = sorted(set(raw) - set(TASK_OPTION_KEYS))
        if unknown:
            raise SpecError('%s has unsupported keys: %s (supported: %s)'
                            % (field, ', '.join(unknown), ', '.join(TASK_OPTION_KEYS)))
        spec = task(raw, field, defaults, bool(params.get('allow_host_network')))
        key = (spec.cluster, spec.name)
        other = chosen.get(key)
        if other is None:
            chosen[key] = spec
        elif STOP_RANK[spec.state] > STOP_RANK[other.state]:
            chosen[key] = spec
        elif spec.state == other.state == 'running' and spec.spec_hash != other.spec_hash:
            raise SpecError('%s declares task %s/%s a second time with a different spec' % (field, spec.cluster, spec.name))
    return list(chosen.values()), (params.get('cluster') or 'default') if params.get('purge') else None
