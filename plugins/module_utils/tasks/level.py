# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task level of a task declaration: size, volumes, placement, platform, IPC and PID namespaces.

Owns: the task-level fields of an ECS task definition and their ecs_task options (LEVEL, ECS name and option
name of each), their rules and messages, the units of `cpu` and `memory`, the kinds of volumes and what each
becomes on the engine (a bind, a volume of the task, a shared volume), the host's policy for binds and host
namespaces, the host attributes placement constraints are evaluated against, the task's cgroup path and the
names of its engine volumes, and the task level's part of the spec hash.
Must not: touch Docker, the store, the host or the clock: what is known of the host (its machine, its
declared attributes, its policy) is an argument. Raises SpecError (with the field named) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
from ansible_collections.drover.fleet.plugins.module_utils.tasks import placement as _placement
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import net_id
from ansible_collections.drover.fleet.plugins.module_utils.tasks.settings import (
    MIN_MEMORY_MIB, boolean, mapping)

# The task-level fields: (option, ECS name). Each is a task option and a key of an ECS task definition.
LEVEL = (('cpu', 'cpu'), ('memory', 'memory'), ('volumes', 'volumes'),
         ('placement_constraints', 'placementConstraints'), ('runtime_platform', 'runtimePlatform'),
         ('ipc_mode', 'ipcMode'), ('pid_mode', 'pidMode'))
LEVEL_OPTIONS = tuple(pair[0] for pair in LEVEL)
LEVEL_ECS = tuple(pair[1] for pair in LEVEL)
# ECS task-definition keys that change nothing on a host of its own (accepted, or accepted with a warning).
ECS_WARNED = {'ephemeralStorage': 'sizes the ephemeral storage of Fargate tasks only; a host of its own gives a '
                                  'task the engine\'s storage'}
# ECS task-definition keys refused, and why.
ECS_REFUSED = {
    'proxyConfiguration': 'is refused: it configures the App Mesh proxy, an AWS service',
    'inferenceAccelerators': 'is refused: Elastic Inference accelerators are an AWS service',
    'trustedExecutionConfiguration': 'is refused: Nitro enclaves are an AWS service',
}
# Bounds of the task size, as ECS takes them on EC2: 128 CPU units (0.125 vCPU) to 192 vCPU; memory at least
# the engine's minimum.
MIN_CPU_UNITS = 128
MAX_CPU_UNITS = 196608
CPU_UNITS = 1024                    # CPU units in one vCPU
GIB_MIB = 1024
# ipcMode and pidMode, as ECS has them.
IPC_MODES = ('host', 'task', 'none')
PID_MODES = ('host', 'task')
SCOPES = ('task', 'shared')
VOLUME_NAME_RE = re.compile(r'^[A-Za-z0-9_-]{1,255}\Z')
# An engine volume name (Docker's rule).
ENGINE_VOLUME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*\Z')
EFS_ID_RE = re.compile(r'^fs-[0-9a-f]{8,40}\Z')
NFS_HOST_RE = re.compile(r'^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*'
                         r'|[0-9a-fA-F:.]+)\Z')
# The NFS mount options EFS documents for its file systems.
EFS_NFS_OPTIONS = 'nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport'
# What the engine's local volume driver may mount for a task (its driver_opts type): a tmpfs, or an NFS export of
# a server the host lists (nfs_servers). Any other type mounts what the host holds (a disk's device, a path with
# o=bind), around bind_paths, and needs the host's allow_privileged.
LOCAL_MOUNT_TYPES = ('tmpfs', 'nfs', 'nfs4')
LOCAL_OPTS = ('type', 'device', 'o', 'size')
# NFS mount options that would send the mount elsewhere than the server in addr=.
NFS_ELSEWHERE = ('mountaddr', 'clientaddr')
# The names the collection gives its own task volumes (engine_volume): never a shared volume a task names.
OWN_VOLUME_PREFIX = 'drover-'
MAX_CONSTRAINTS = 10
CONSTRAINT_TYPES = ('memberOf', 'distinctInstance')
# What runtimePlatform.cpuArchitecture names, and the machines (uname) that are it.
ARCHITECTURES = {'X86_64': ('x86_64', 'amd64'), 'ARM64': ('aarch64', 'arm64')}
# The cgroup of a task's containers, under the engine's cgroup root (cgroupfs driver).
CGROUP_DIR = 'drover'

# One volume of the task. kind: bind (source: a host path), task (an engine volume made for each run and
# removed with it), shared (an engine volume named `name` that outlives the task).
Volume = collections.namedtuple('Volume', ('name', 'kind', 'source_path', 'driver', 'driver_opts', 'labels',
                                           'autoprovision'))
Constraint = collections.namedtuple('Constraint', ('type', 'expression'))
Platform = collections.namedtuple('Platform', ('cpu_architecture', 'operating_system_family'))


def _naming(ecs):
    """A member's key: the option's (snake_case) or ECS's (camelCase)."""
    def name(option, camel):
        return camel if ecs else option
    return name


def _namer(field, ecs):
    """A member's name in a message: the option's (snake_case) or ECS's (camelCase)."""
    def at(option, ecs_name, where=field):
        return '%s.%s' % (where, ecs_name if ecs else option)
    return at


# --- task size ---------------------------------------------------------------------------------------------

_NUMBER = r'\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*'


def _amount(value, field, unit_re, scale, what):
    if isinstance(value, bool) or value is None:
        raise SpecError('%s must be %s, got %r' % (field, what, value))
    if isinstance(value, (int, float)):
        number, factor = float(value), 1
    elif isinstance(value, str):
        found = re.match(r'^%s(%s)?\s*\Z' % (_NUMBER, unit_re), value, re.I)
        if not found:
            raise SpecError('%s must be %s, got %r' % (field, what, value))
        number, factor = float(found.group(1)), scale if found.group(2) else 1
    else:
        raise SpecError('%s must be %s, got %r' % (field, what, value))
    amount = number * factor
    if amount != int(amount):
        unit = 'CPU units' if scale == CPU_UNITS else 'MiB'
        raise SpecError('%s %r is not a whole number of %s' % (field, value, unit))
    return int(amount)


def cpu_units(value, field):
    """Task CPU as ECS takes it: CPU units (`1024`, `"1024"`) or vCPUs (`"1 vCPU"`, `"0.5 vCPU"`)."""
    units = _amount(value, field, r'v?cpus?', CPU_UNITS,
                    'CPU units (like 1024 or "1024") or vCPUs (like "1 vCPU" or "0.5 vCPU")')
    if not MIN_CPU_UNITS <= units <= MAX_CPU_UNITS:
        raise SpecError('%s must be from %d CPU units (0.125 vCPU) to %d (192 vCPU), got %d'
                        % (field, MIN_CPU_UNITS, MAX_CPU_UNITS, units))
    return units


def memory_mib(value, field):
    """Task memory as ECS takes it: MiB (`2048`, `"2048"`) or GB (`"2 GB"`, `"0.5GB"`; 1 GB = 1024 MiB)."""
    mib = _amount(value, field, r'gb|gib', GIB_MIB, 'MiB (like 2048 or "2048") or GB (like "2 GB" or "0.5GB")')
    if mib < MIN_MEMORY_MIB:
        raise SpecError('%s must be at least %d MiB (the engine\'s minimum), got %d' % (field, MIN_MEMORY_MIB, mib))
    return mib


def cgroup_parent(cluster, task):
    """The parent cgroup of a task's containers (found again from cluster and task after store loss)."""
    return '/%s/%s' % (CGROUP_DIR, net_id(cluster, task))


# --- volumes -----------------------------------------------------------------------------------------------

def _path(value, field):
    if not isinstance(value, str) or not value.startswith('/'):
        raise SpecError('%s must be an absolute path, got %r' % (field, value))
    if '\0' in value or ':' in value:
        raise SpecError('%s must not hold ":" or a NUL character, got %r' % (field, value))
    if '..' in value.split('/'):
        raise SpecError('%s %r has a ".." component: give the path itself' % (field, value))
    parts = [p for p in value.split('/') if p not in ('', '.')]
    return '/' + '/'.join(parts)


def under(path, prefixes):
    for prefix in prefixes:
        if not isinstance(prefix, str) or not prefix.startswith('/'):
            continue                    # '' or '.' would read as '/' below: no prefix at all, never every path
        prefix = '/' + '/'.join(p for p in prefix.split('/') if p not in ('', '.'))
        if prefix == '/' or path == prefix or path.startswith(prefix + '/'):
            return True
    return False


def _members(raw, field, allowed):
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping' % field)
    unknown = sorted(str(k) for k, v in raw.items() if k not in allowed and v is not None)
    if unknown:
        raise SpecError('%s has unsupported keys: %s (supported: %s)' % (field, ', '.join(unknown), ', '.join(allowed)))


def _volume(raw, where, ecs, policy, region):
    at = _namer(where, ecs)
    n = _naming(ecs)
    keys = [n('name', 'name'), n('host', 'host'), n('docker_volume_configuration', 'dockerVolumeConfiguration'),
            n('efs_volume_configuration', 'efsVolumeConfiguration'),
            n('fsx_windows_file_server_volume_configuration', 'fsxWindowsFileServerVolumeConfiguration'),
            n('configured_at_launch', 'configuredAtLaunch')]
    _members(raw, where, keys)
    name = raw.get('name')
    if not isinstance(name, str) or not VOLUME_NAME_RE.match(name):
        raise SpecError('%s must be 1 to 255 letters, digits, "_" or "-", got %r' % (at('name', 'name'), name))
    fsx = raw.get(keys[4])
    if fsx not in (None, {}):
        raise SpecError('%s is refused: FSx for Windows File Server volumes are for Windows containers only'
                        % at(keys[4], keys[4]))
    if raw.get(keys[5]) is not None and boolean(raw[keys[5]], at(keys[5], keys[5])):
        raise SpecError('%s is refused: a volume configured at launch is an EBS volume ECS attaches, an AWS '
                        'service' % at(keys[5], keys[5]))
    given = [k for k in keys[1:4] if raw.get(k) is not None and raw.get(k) != {}]
    if len(given) > 1:
        raise SpecError('%s: give one of %s, not %s together' % (where, ', '.join(keys[1:4]), ' and '.join(given)))
    host, docker, efs = raw.get(keys[1]), raw.get(keys[2]), raw.get(keys[3])
    if host:
        src_key = n('source_path', 'sourcePath')
        _members(host, at(keys[1], keys[1]), [src_key])
        if host.get(src_key) is not None:
            field = '%s.%s' % (at(keys[1], keys[1]), src_key)
            path = _path(host[src_key], field)
            allowed = policy.get('bind_paths')
            if allowed is not None and not under(path, allowed):
                raise SpecError('%s %r is outside the host paths this host allows for binds (bind_paths: %s; role '
                                'variable drover_bind_paths)' % (field, path, ', '.join(allowed) or 'none'))
            return Volume(name, 'bind', path, None, (), (), False)
    if docker:
        where = at(keys[2], keys[2])
        dk = [n('scope', 'scope'), n('autoprovision', 'autoprovision'), n('driver', 'driver'),
              n('driver_opts', 'driverOpts'), n('labels', 'labels')]
        _members(docker, where, dk)
        scope = docker.get('scope') or 'task'
        if scope not in SCOPES:
            raise SpecError('%s.scope must be one of %s, got %r' % (where, ', '.join(SCOPES), scope))
        auto = boolean(docker['autoprovision'], '%s.autoprovision' % where) \
            if docker.get('autoprovision') is not None else False
        if auto and scope != 'shared':
            raise SpecError('%s.autoprovision is only used with scope shared (a task volume is made for each run)'
                            % where)
        driver = docker.get('driver') or 'local'
        if not isinstance(driver, str) or not re.match(r'^[A-Za-z0-9][A-Za-z0-9_./:-]*\Z', driver):
            raise SpecError('%s.driver must be a volume driver name, got %r' % (where, driver))
        opts = mapping(docker[dk[3]], '%s.%s' % (where, dk[3])) if docker.get(dk[3]) is not None else ()
        labels = mapping(docker['labels'], '%s.labels' % where) if docker.get('labels') is not None else ()
        bad = [pair[0] for pair in labels if pair[0].startswith('drover.')]
        if bad:
            raise SpecError('%s.labels: %s is one of the collection\'s own labels (drover.*)' % (where, bad[0]))
        if scope == 'shared' and not ENGINE_VOLUME_RE.match(name):
            raise SpecError('%s %r names a shared engine volume: it must start with a letter or digit'
                            % (at('name', 'name'), name))
        if scope == 'shared' and name.startswith(OWN_VOLUME_PREFIX):
            raise SpecError('%s %r: %s* names the collection\'s own volumes (a task\'s, made for its run): a shared '
                            'volume has a name of its own' % (at('name', 'name'), name, OWN_VOLUME_PREFIX))
        if driver == 'local' and opts and policy.get('enforce') and not policy.get('allow_privileged'):
            _local_mount(dict(opts), '%s.%s' % (where, dk[3]), policy.get('nfs_servers') or ())
        return Volume(name, scope, None, driver, opts, labels, auto)
    if efs:
        return _efs(name, efs, at(keys[3], keys[3]), n, region, policy)
    return Volume(name, 'task', None, 'local', (), (), False)


def _local_mount(opts, field, servers):
    """The local driver's options of a task's volume: a tmpfs, or an NFS export of a listed server; never a bind
    or a device of the host's (those need the host's allow_privileged)."""
    unknown = sorted(k for k in opts if k not in LOCAL_OPTS)
    if unknown:
        raise SpecError('%s.%s is not an option of the local volume driver (type, device, o)' % (field, unknown[0]))
    kind = opts.get('type')
    words = [w.strip() for w in (opts.get('o') or '').split(',') if w.strip()]
    if kind not in LOCAL_MOUNT_TYPES or [w for w in words if w.split('=', 1)[0] in ('bind', 'rbind', 'remount')]:
        raise SpecError('%s: type %s, o %s would mount what the host holds (a device, or a host path around '
                        'bind_paths); this host mounts a tmpfs, or an NFS export of one of its nfs_servers, unless '
                        'allow_privileged is true (role variable drover_allow_privileged)'
                        % (field, kind, opts.get('o') or '(none)'))
    device = opts.get('device') or ''
    if kind == 'tmpfs' and device not in ('', 'tmpfs'):
        raise SpecError('%s.device must be tmpfs for a tmpfs, got %r' % (field, device))
    if kind != 'tmpfs':
        addrs = [w.split('=', 1)[1] for w in words if w.startswith('addr=')]
        elsewhere = [w for w in words if w.split('=', 1)[0] in NFS_ELSEWHERE]
        if elsewhere:
            raise SpecError('%s.o %s: an NFS volume mounts from the server in addr= alone' % (field, elsewhere[0]))
        if not device.startswith(':') or len(addrs) != 1:
            raise SpecError('%s: an NFS volume gives its server in o (addr=<server>) and the export in device '
                            '(:<path>), got device %r, o %r' % (field, device, opts.get('o')))
        _nfs_server(addrs[0], '%s.o' % field, servers)


def _nfs_server(server, field, servers):
    """An NFS server a task mounts from: the engine mounts it as root, from the host's network (an export that
    trusts the host's address trusts the task); only the host's nfs_servers."""
    if server not in servers:
        raise SpecError('%s: the NFS server %s is not one this host mounts for tasks (nfs_servers: %s; role '
                        'variable drover_nfs_servers)' % (field, server, ', '.join(servers) or 'none'))


def _efs(name, efs, where, n, region, policy):
    ek = [n('file_system_id', 'fileSystemId'), n('root_directory', 'rootDirectory'),
          n('transit_encryption', 'transitEncryption'), n('transit_encryption_port', 'transitEncryptionPort'),
          n('authorization_config', 'authorizationConfig')]
    _members(efs, where, ek)
    fs = efs.get(ek[0])
    if not isinstance(fs, str) or not fs:
        raise SpecError('%s.%s is required' % (where, ek[0]))
    if EFS_ID_RE.match(fs):
        addr = '%s.efs.%s.amazonaws.com' % (fs, region or 'us-east-1')
    elif NFS_HOST_RE.match(fs):
        addr = fs                       # an NFS server's name or address (a stand-in for EFS)
        if policy.get('enforce') and not policy.get('allow_privileged'):
            _nfs_server(addr, '%s.%s' % (where, ek[0]), policy.get('nfs_servers') or ())
    else:
        raise SpecError('%s.%s must be an EFS file system ID (fs-...) or an NFS server\'s name or address, got %r'
                        % (where, ek[0], fs))
    root = _path(efs.get(ek[1]) or '/', '%s.%s' % (where, ek[1]))
    transit = efs.get(ek[2]) or 'DISABLED'
    if transit == 'ENABLED':
        raise SpecError('%s.%s ENABLED is refused: TLS to EFS needs the EFS mount helper, which the engine\'s local '
                        'volume driver does not have' % (where, ek[2]))
    if transit != 'DISABLED':
        raise SpecError('%s.%s must be ENABLED or DISABLED, got %r' % (where, ek[2], transit))
    if efs.get(ek[3]) is not None:
        raise SpecError('%s.%s is used with %s ENABLED only' % (where, ek[3], ek[2]))
    auth = efs.get(ek[4])
    if auth:
        ak = [n('access_point_id', 'accessPointId'), n('iam', 'iam')]
        _members(auth, '%s.%s' % (where, ek[4]), ak)
        if auth.get(ak[0]) or (auth.get('iam') or 'DISABLED') != 'DISABLED':
            raise SpecError('%s.%s is refused: EFS access points and IAM authorization need the EFS mount helper '
                            '(TLS and the task role), which the engine\'s local volume driver does not have'
                            % (where, ek[4]))
    opts = (('device', ':%s' % root), ('o', 'addr=%s,%s' % (addr, EFS_NFS_OPTIONS)), ('type', 'nfs'))
    return Volume(name, 'task', None, 'local', opts, (), False)


def volumes(raw, field, ecs, policy, region=None):
    """The task's volumes, checked: a tuple of Volume."""
    if not isinstance(raw, (list, tuple)):
        raise SpecError('%s must be a list of volumes' % field)
    out = []
    seen = set()
    for i, item in enumerate(raw):
        where = '%s[%d]' % (field, i)
        vol = _volume(item, where, ecs, policy, region)
        if vol.name in seen:
            raise SpecError('%s.name %r is used twice: volume names must be unique in the task' % (where, vol.name))
        seen.add(vol.name)
        out.append(vol)
    return tuple(out)


def engine_volume(cluster, task, volume):
    """The engine's name of a volume of the task (kind task), from cluster, task and volume names."""
    return 'drover-%s-%s' % (net_id(cluster, task), volume)


def volume_labels(cluster, task, volume):
    """The labels a volume of the task carries, by which it is found again and removed with the task."""
    return {'drover.role': 'task-volume', 'drover.scope': 'task', 'drover.cluster': cluster, 'drover.task': task,
            'drover.volume': volume}


def shared_labels(cluster, volume):
    """The labels of a shared volume this collection provisioned (it outlives the task; never removed by it)."""
    return {'drover.scope': 'shared', 'drover.cluster': cluster, 'drover.volume': volume}


def mount_sources(cluster, task, vols):
    """The task's volume names -> what a mount point binds: a host path, or an engine volume name."""
    out = {}
    for v in vols:
        if v.kind == 'bind':
            out[v.name] = v.source_path
        elif v.kind == 'task':
            out[v.name] = engine_volume(cluster, task, v.name)
        else:
            out[v.name] = v.name
    return out


# --- placement and platform ----------------------------------------------------------------------------------

def host_attributes(machine, declared=None):
    """The attributes a host is matched against: the built-in ECS ones, then those its inventory declares
    (ecs.os-type and ecs.cpu-architecture are the host's and cannot be declared otherwise)."""
    attrs = dict((str(k), str(v)) for k, v in (declared or {}).items() if v is not None)
    attrs['ecs.os-type'] = 'linux'
    attrs['ecs.os-family'] = 'LINUX'
    arch = ecs_architecture(machine)
    if arch:
        attrs['ecs.cpu-architecture'] = arch
    return attrs


def ecs_architecture(machine):
    """ECS's name of a machine's architecture (ecs.cpu-architecture): x86_64 or arm64."""
    for name, machines in ARCHITECTURES.items():
        if (machine or '').lower() in machines:
            return 'x86_64' if name == 'X86_64' else 'arm64'
    return machine or None


def placement(raw, field, ecs, attributes, check_host):
    """placementConstraints, checked; with `check_host`, each memberOf expression is evaluated against the host's
    `attributes` and a non-match is refused with the expression."""
    if not isinstance(raw, (list, tuple)):
        raise SpecError('%s must be a list of constraints' % field)
    if len(raw) > MAX_CONSTRAINTS:
        raise SpecError('%s lists %d constraints: at most %d (as ECS)' % (field, len(raw), MAX_CONSTRAINTS))
    out = []
    for i, item in enumerate(raw):
        where = '%s[%d]' % (field, i)
        _members(item, where, ['type', 'expression'])
        kind = item.get('type')
        if kind not in CONSTRAINT_TYPES:
            raise SpecError('%s.type must be one of %s, got %r' % (where, ', '.join(CONSTRAINT_TYPES), kind))
        expr = item.get('expression')
        if kind == 'distinctInstance':
            if expr is not None:
                raise SpecError('%s.expression is not used with distinctInstance' % where)
            out.append(Constraint(kind, None))     # one host is one instance: always met
            continue
        if not isinstance(expr, str) or not expr.strip():
            raise SpecError('%s.expression is required with memberOf' % where)
        if len(expr) > 2000:
            raise SpecError('%s.expression is longer than 2000 characters (ECS\'s limit)' % where)
        member = _placement.matches(expr, attributes, '%s.expression' % where)
        if check_host and not member:
            shown = ', '.join('%s=%s' % kv for kv in sorted(attributes.items()))
            raise SpecError('%s.expression %r: this host is not a member (its attributes: %s); declare the host\'s '
                            'attributes with the host option attributes (role variable drover_attributes)'
                            % (where, expr, shown))
        out.append(Constraint(kind, expr))
    return tuple(out)


def runtime_platform(raw, field, ecs, machine, check_host):
    """runtimePlatform, checked against the host's machine."""
    n = _naming(ecs)
    keys = [n('cpu_architecture', 'cpuArchitecture'), n('operating_system_family', 'operatingSystemFamily')]
    _members(raw, field, keys)
    arch, family = raw.get(keys[0]), raw.get(keys[1])
    if family is not None:
        if not isinstance(family, str):
            raise SpecError('%s.%s must be a string, got %r' % (field, keys[1], family))
        if family.startswith('WINDOWS'):
            raise SpecError('%s.%s %s is refused: Windows containers do not run on this Linux host'
                            % (field, keys[1], family))
        if family != 'LINUX':
            raise SpecError('%s.%s must be LINUX, got %r' % (field, keys[1], family))
    if arch is not None:
        if arch not in ARCHITECTURES:
            raise SpecError('%s.%s must be one of %s, got %r' % (field, keys[0], ', '.join(sorted(ARCHITECTURES)), arch))
        if check_host and (machine or '').lower() not in ARCHITECTURES[arch]:
            raise SpecError('%s.%s is %s but this host is %s' % (field, keys[0], arch, machine or 'of an unknown '
                                                                                                  'architecture'))
    return Platform(arch, family)


def namespace_mode(value, field, choices, what, allow_host, check_host):
    """ipcMode or pidMode: host only where the host allows it."""
    if value not in choices:
        raise SpecError('%s must be one of %s, got %r' % (field, ', '.join(choices), value))
    if value == 'host' and check_host and not allow_host:
        raise SpecError('%s is host: the task\'s containers would share the host\'s %s namespace (and see or signal '
                        'every process of the host); this host refuses it unless allow_host_namespaces is true '
                        '(role variable drover_allow_host_namespaces)' % (field, what))
    return value


# --- from an ECS task definition, and into the spec hash -------------------------------------------------------

def from_task_definition(td, field):
    """The task-level fields of a normalized task definition, as {option: value}, and warnings. Refuses the
    fields this collection never does (naming each and why)."""
    for key in sorted(ECS_REFUSED):
        if td.get(key) not in (None, [], {}):
            raise SpecError('%s.%s %s' % (field, key, ECS_REFUSED[key]))
    if td.get('enableFaultInjection') is not None:
        if boolean(td['enableFaultInjection'], '%s.enableFaultInjection' % field):
            raise SpecError('%s.enableFaultInjection true is refused: ECS fault injection is an AWS service (false '
                            'is accepted)' % field)
    warnings = ['%s.%s %s' % (field, key, why) for key, why in sorted(ECS_WARNED.items())
                if td.get(key) not in (None, [], {})]
    return dict((option, td[ecs]) for option, ecs in LEVEL if td.get(ecs) not in (None, [], {})), warnings


def hashable(level):
    """The task level's part of the spec hash: only the fields that are set (so that a task declared without
    any keeps the hash it had before they existed)."""
    return dict((k, v) for k, v in level.items() if v not in (None, ()) and k != 'where')
