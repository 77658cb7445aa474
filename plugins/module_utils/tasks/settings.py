# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of a task's container: one table, from which everything else derives.

Owns: SETTINGS, one row per container setting: its option name in `containers[]` (snake_case), its name in an
ECS container definition (camelCase, `linuxParameters.` members included), its type and rules, the
documentation `ansible-doc` shows, and what it becomes in the engine's container config and host config. The
module's argument spec (`argument_spec()`), its documentation (`documentation()`, written into
plugins/doc_fragments/container_settings.py by hack/gen-docs.py), the check of a declaration (`parse()`), the
translation of an ECS container definition (`from_ecs()`) and the engine call (`render()`) all read this table.
Must not: touch the engine, the store or the host. Raises SpecError (naming the field) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import fnmatch
import re

from ansible_collections.drover.fleet.plugins.module_utils.aws import awslogs
from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens
from ansible_collections.drover.fleet.plugins.module_utils.aws import log_destinations as destinations
from ansible_collections.drover.fleet.plugins.module_utils.aws.calls import s3_object, secret_source
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError, check_name

# Docker refuses a memory limit below 6 MiB ("Minimum memory limit allowed is 6MB").
MIN_MEMORY_MIB = 6
# An image reference, after the grammar of Docker's distribution library: [domain/]path[:tag][@digest].
_LABEL = r'[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?'
# A first component is a registry host only with a dot, a port, or as localhost (else it is a path).
_DOMAIN = r'(?:(?:localhost|%s(?:\.%s)+)(?::[0-9]+)?/|%s:[0-9]+/)' % (_LABEL, _LABEL, _LABEL)
_PATH = r'[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
IMAGE_RE = re.compile(r'^%s?%s(?:/%s)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z'
                      % (_DOMAIN, _PATH, _PATH), re.ASCII)
# A whole ECS task definition is at most 64 KiB, so no container's environment (NAME=value strings, UTF-8) and no
# command or entry point (its arguments) is larger; each stays far under Linux's limits for arguments.
MAX_ENVIRONMENT_BYTES = 64 * 1024
MAX_ARGV_BYTES = 64 * 1024
PROTOCOLS = ('tcp', 'udp')
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
# The engine's default set (a container has these unless dropped): adding one back needs nothing. Any other
# reaches past the container (SYS_ADMIN, SYS_MODULE, DAC_READ_SEARCH, NET_ADMIN, SYS_TIME...), so adding it needs
# the host's allow_privileged or its allowed_capabilities.
ENGINE_CAPABILITIES = ('AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
                       'NET_RAW', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT')
# The security option that only confines a container further whatever the host (no-new-privileges). Any other
# may lift a confinement: seccomp, systempaths, an AppArmor profile (a host's profile may be unconfined), an
# SELinux label (spc_t, unconfined_t, every category), label disable. Each needs the host's allow_privileged, or
# its allowed_security_options (the profiles and labels its operator knows).
CONFINING_SECURITY_OPTION_RE = re.compile(r'^no-new-privileges(?:[:=]true)?\Z')
ULIMITS = ('core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss',
           'rtprio', 'rttime', 'sigpending', 'stack')
DEVICE_PERMISSIONS = ('read', 'write', 'mknod')
# The log drivers of the Docker engine this collection passes on (the host's policy may allow fewer).
LOG_DRIVERS = ('json-file', 'local', 'syslog', 'journald', 'gelf', 'fluentd', 'none')
# Log options a declaration may not give as secret options: the collection checks them (where a driver sends:
# the host's log_addresses), or sets them itself.
VISIBLE_LOG_OPTIONS = ('tag',) + destinations.OPTIONS + awslogs.OWN
# A log option's name (the engine's --log-opt keys, Fluent Bit's output keys): one word, never a line of its own.
LOG_OPTION_RE = firelens.KEY_RE
# ECS's driver of FireLens: the engine's fluentd driver, writing to the task's log router (aws/firelens.py).
FIRELENS_DRIVER = firelens.DRIVER
# The collection's own container labels (drover.task, drover.cred-id, drover.gpus...): none comes from a declaration.
OWN_LABELS = 'drover.'
# The most environment files one container reads (as ECS has it).
MAX_ENVIRONMENT_FILES = 10
# Health check defaults, as ECS has them (seconds, retries).
HEALTH_DEFAULTS = (('interval', 30), ('timeout', 5), ('retries', 3), ('start_period', 0))
NANO = 10 ** 9
# The conditions a container waits for on another one of its task (ECS dependsOn).
CONDITIONS = ('START', 'COMPLETE', 'SUCCESS', 'HEALTHY')

Capabilities = collections.namedtuple('Capabilities', ('add', 'drop'))
PortMapping = collections.namedtuple('PortMapping', ('container_port', 'host_port', 'protocol'))


# --- the kinds of values ---------------------------------------------------------------------------------

def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def whole(value, field, minimum=None, maximum=None):
    if isinstance(value, str) and re.match(r'^\s*-?\d+\s*$', value):
        value = int(value)
    if not is_int(value):
        raise SpecError('%s must be a whole number, got %r' % (field, value))
    if minimum is not None and value < minimum:
        raise SpecError('%s must be at least %d, got %d' % (field, minimum, value))
    if maximum is not None and value > maximum:
        raise SpecError('%s must be at most %d, got %d' % (field, maximum, value))
    return value


def boolean(value, field):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ('yes', 'true', 'on', '1', 'no', 'false', 'off', '0'):
        return value.lower() in ('yes', 'true', 'on', '1')
    raise SpecError('%s must be true or false, got %r' % (field, value))


def text(value, field):
    if not isinstance(value, str) or not value:
        raise SpecError('%s must be a non-empty string, got %r' % (field, value))
    if '\0' in value:
        raise SpecError('%s must not hold a NUL character' % field)
    return value


def texts(value, field):
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of strings, got %r' % (field, value))
    return tuple(text(v, '%s[%d]' % (field, i)) for i, v in enumerate(value))


def wholes(value, field):
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of whole numbers, got %r' % (field, value))
    return tuple(whole(v, '%s[%d]' % (field, i)) for i, v in enumerate(value))


def argv(value, field):
    """A command or entrypoint: a list of strings (an exec form)."""
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


def check_environment_size(pairs, field):
    """An environment ((name, value) pairs) of at most MAX_ENVIRONMENT_BYTES, counted as NAME=value strings."""
    size = sum(len(('%s=%s' % (k, v)).encode('utf-8', 'surrogatepass')) + 1 for k, v in pairs)
    if size > MAX_ENVIRONMENT_BYTES:
        raise SpecError('%s is %d bytes (NAME=value, all variables together): at most %d (64 KiB, the size of a '
                        'whole ECS task definition)' % (field, size, MAX_ENVIRONMENT_BYTES))


def _scalar(val, field):
    if isinstance(val, bool):
        return 'true' if val else 'false'
    if val is None:
        return ''
    if isinstance(val, (int, float)):
        return str(val)
    if not isinstance(val, str):
        raise SpecError('%s must be a string, got %s' % (field, type(val).__name__))
    return val


def environment(value, field):
    if not isinstance(value, dict):
        raise SpecError('%s must be a mapping of variable names to values, got %r' % (field, type(value).__name__))
    out = []
    for key, val in value.items():
        if not isinstance(key, str) or not key or '=' in key or '\0' in key:
            raise SpecError('%s has an invalid variable name %r' % (field, key))
        out.append((key, _scalar(val, '%s.%s' % (field, key))))
    check_environment_size(out, field)
    return tuple(sorted(out))


def mapping(value, field):
    """A mapping of strings to strings (labels, driver options), sorted pairs."""
    if not isinstance(value, dict):
        raise SpecError('%s must be a mapping of names to values, got %s' % (field, type(value).__name__))
    out = []
    for key, val in value.items():
        if not isinstance(key, str) or not key:
            raise SpecError('%s has an invalid name %r' % (field, key))
        out.append((key, _scalar(val, '%s.%s' % (field, key))))
    return tuple(sorted(out))


def _cap_list(value, field):
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
    add = _cap_list(raw['add'], field + '.add') if raw.get('add') is not None else ()
    drop = _cap_list(raw['drop'], field + '.drop') if raw.get('drop') is not None else ()
    both = sorted(set(add) & set(drop))
    if both:
        raise SpecError('%s: %s is both added and dropped' % (field, ', '.join(both)))
    if 'ALL' not in add:
        drop = tuple(sorted(set(drop) | set(c for c in DEFAULT_DROP if c not in add)))
    return Capabilities(add, drop)


def ports(value, field, network_mode, ecs=False):
    """Port mappings as PortMapping tuples, a containerPortRange made one mapping a port (each on a free host
    port with network_mode bridge, as ECS assigns a host port range; on the same port with awsvpc and host).
    `ecs`: messages name ECS's members (hostPort, containerPortRange)."""
    name = dict((u.option, u.ecs if ecs else u.option) for u in BY_OPTION['port_mappings'].sub).get
    if not isinstance(value, (list, tuple)):
        raise SpecError('%s must be a list of port mappings' % field)
    if not value:
        return ()
    if network_mode not in ('bridge', 'awsvpc', 'host'):
        raise SpecError('%s is only supported with network_mode bridge, awsvpc or host, not %s' % (field, network_mode))
    out = []
    seen = set()
    for i, item in enumerate(value):
        where = '%s[%d]' % (field, i)
        if not isinstance(item, dict):
            raise SpecError('%s must be a mapping with %s, %s, %s'
                            % (where, name('container_port'), name('host_port'), name('protocol')))
        unknown = sorted(k for k, v in item.items() if v is not None and k not in PORT_KEYS)
        if unknown:
            raise SpecError('%s has unsupported keys: %s' % (where, ', '.join(unknown)))
        proto = item.get('protocol') or 'tcp'
        if proto not in PROTOCOLS:
            raise SpecError('%s.%s must be one of %s, got %r' % (where, name('protocol'), ', '.join(PROTOCOLS), proto))
        for cport, hport in _port_pairs(item, where, network_mode, name, len(out)):
            key = (hport, proto) if hport else ('c', cport, proto)
            if key in seen:
                raise SpecError('%s maps the same port twice (%s/%s)' % (where, hport or cport, proto))
            seen.add(key)
            out.append(PortMapping(cport, hport, proto))
    return tuple(out)


def _port_pairs(item, where, network_mode, name, before):
    """(container port, host port or None) of one port mapping; a range gives one pair a port of it."""
    span = item.get('container_port_range')
    if span is not None:
        at = '%s.%s' % (where, name('container_port_range'))
        for option in ('container_port', 'host_port'):
            if item.get(option) not in (None, 0):
                raise SpecError('%s: a mapping gives %s or %s, not both (the host ports of a range are picked as '
                                'ECS picks them)' % (where, name('container_port_range'), name(option)))
        found = re.match(r'\A\s*([0-9]+)\s*-\s*([0-9]+)\s*\Z', span) if isinstance(span, str) else None
        if not found or not 1 <= int(found.group(1)) < int(found.group(2)) <= 65535:
            raise SpecError('%s must be a range of ports, first-last (1 to 65535, the first below the last), got %r'
                            % (at, span))
        first, last = int(found.group(1)), int(found.group(2))
        if before + last - first + 1 > MAX_PUBLISHED_PORTS:
            raise SpecError('%s %s: a container publishes at most %d ports on this host (each one a listener of the '
                            'engine\'s)' % (at, span, MAX_PUBLISHED_PORTS))
        return [(port, None if network_mode == 'bridge' else port) for port in range(first, last + 1)]
    if item.get('container_port') is None:
        raise SpecError('%s.%s is required (or %s)' % (where, name('container_port'), name('container_port_range')))
    cport = whole(item['container_port'], '%s.%s' % (where, name('container_port')), 1, 65535)
    hport = item.get('host_port')
    hport = None if hport in (None, 0) else whole(hport, '%s.%s' % (where, name('host_port')), 1, 65535)
    if network_mode in ('awsvpc', 'host'):
        # As AWS has it: the task's own namespace publishes a port on the same number (awsvpc), or the
        # container listens on the host's own port (host), so the host port is left out (then it is the
        # container port) or equal to it.
        if hport is not None and hport != cport:
            raise SpecError('%s.%s %d differs from its %s %d: with network_mode %s a port is %s on the same host port '
                            '(leave %s out, or give %d), as AWS requires'
                            % (where, name('host_port'), hport, name('container_port'), cport, network_mode,
                               'published' if network_mode == 'awsvpc' else 'the host\'s', name('host_port'), cport))
        hport = cport
    return [(cport, hport)]


# The most ports one container publishes (a range is one a port): each is a listener of the engine's.
MAX_PUBLISHED_PORTS = 1024
# Members of a port mapping: ECS's names, and what they become (name and app_protocol name a port for ECS
# Service Connect; they are accepted and change nothing on the host).
PORT_KEYS = ('container_port', 'host_port', 'protocol', 'name', 'app_protocol', 'container_port_range')


# --- the table --------------------------------------------------------------------------------------------

# A member of a setting whose value is a mapping (or a list of mappings).
Sub = collections.namedtuple('Sub', ('option', 'ecs', 'kind', 'required', 'doc', 'choices'))
# One container setting.
#  option: its name in containers[]; ecs: its place in an ECS container definition (None: none there);
#  kind: str, int, bool, strs, ints, argv, env, map, record, records, raw; sub: the members of a record(s);
#  low/high: the bounds of an int; doc: what ansible-doc says; to: where it goes in the engine's call
#  (config.<key> or host.<key> of the Docker SDK's create_container / create_host_config; None: the
#  apply layer renders it); awsvpc: False where AWS refuses it in awsvpc tasks; core: always in the spec hash.
Setting = collections.namedtuple('Setting', (
    'option', 'ecs', 'kind', 'sub', 'low', 'high', 'doc', 'to', 'awsvpc', 'core', 'default', 'required', 'choices'))


def S(option, ecs, kind, doc, to=None, sub=(), low=None, high=None, awsvpc=True, core=False, default=None,
      required=False, choices=None):
    return Setting(option, ecs, kind, tuple(sub), low, high, tuple(doc) if isinstance(doc, list) else (doc,), to,
                   awsvpc, core, default, required, choices)


def U(option, ecs, kind, doc, required=False, choices=None):
    return Sub(option, ecs, kind, required, doc, choices)


SETTINGS = (
    S('name', 'name', 'name', 'The container\'s name in the task.', core=True, required=True),
    S('image', 'image', 'image', 'The image reference, for example V(drover.local/busybox:1).', core=True,
      required=True),
    S('command', 'command', 'argv', [
        'The command, as a list of arguments (exec form). A plain string is refused, so that C(sh -c "a; b") is '
        'never split in a surprising place.',
        'At most 64 KiB, as is O(containers[].entrypoint).'], to='config.command', core=True),
    S('entrypoint', 'entryPoint', 'argv', 'The entrypoint, as a list of arguments (exec form).',
      to='config.entrypoint', core=True),
    S('environment', 'environment', 'env', [
        'Environment variables; values are turned into strings.',
        'At most 64 KiB in all (the C(NAME=value) strings in UTF-8), the size of a whole ECS task definition.'],
      core=True),
    S('essential', 'essential', 'bool', 'When an essential container exits, the whole task stops.', core=True,
      default=True),
    S('cpu', 'cpu', 'int', [
        'CPU units, 1024 to one CPU, given to the container as relative CPU shares (as ECS does on EC2); from 2 '
        'to 262144.',
        'V(0) or unset gives the engine\'s default.'], to='host.cpu_shares', core=True),
    S('memory', 'memory', 'int', 'The hard memory limit in MiB; at least 6 (the engine\'s minimum).',
      to='host.mem_limit', core=True, low=MIN_MEMORY_MIB),
    S('memory_reservation', 'memoryReservation', 'int', [
        'The soft memory limit in MiB (Docker\'s C(--memory-reservation)); below O(containers[].memory) when both '
        'are given.'], to='host.mem_reservation', low=MIN_MEMORY_MIB),
    S('port_mappings', 'portMappings', 'records', [
        'Published ports, with O(network_mode=bridge), or O(network_mode=awsvpc) without O(awsvpc.eni_mac) '
        '(then they are published on the task\'s network holder).',
        'With O(network_mode=awsvpc), as AWS requires, O(containers[].port_mappings[].host_port) is left out (the '
        'port is published on the host port of the same number) or equal to '
        'O(containers[].port_mappings[].container_port); any other host port is refused. A port is mapped by one '
        'container of the task only (they share one network namespace).'], core=True, sub=(
            U('container_port', 'containerPort', 'int', 'The port inside the container; required unless '
              'O(containers[].port_mappings[].container_port_range) is given.'),
            U('host_port', 'hostPort', 'int', 'The port on the host; unset or V(0) picks a free one (with '
              'O(network_mode=awsvpc), the container port).'),
            U('protocol', 'protocol', 'str', 'The protocol; V(tcp) when unset.', choices=list(PROTOCOLS)),
            U('name', 'name', 'str', 'A name of the port (ECS Service Connect); changes nothing on the host.'),
            U('app_protocol', 'appProtocol', 'str', 'The application protocol (ECS Service Connect); changes '
              'nothing on the host.'),
            U('container_port_range', 'containerPortRange', 'str',
              'A range of container ports, V(first-last), instead of O(containers[].port_mappings[].container_port) '
              '(without O(containers[].port_mappings[].host_port)): each port is published on a free host port '
              'with O(network_mode=bridge), as ECS picks a host port range, and on the same port with '
              'O(network_mode=awsvpc). At most 1024 ports a container.'))),
    S('gpu', None, 'int', [
        'How many GPUs the container asks for (ECS C(resourceRequirements) of type C(GPU)). They are pinned to it '
        'in the host\'s GPU ledger before it starts (all or nothing), handed to it as O(gpu_delivery) says, '
        'reported as C(gpu_ids), and released on every path that ends the task.',
        'When the ledger is short the container runs without GPUs and a warning says so, unless O(gpu_strict) is '
        'set.'], core=True, default=0, low=0, high=64),
    S('capabilities', 'linuxParameters.capabilities', 'record', [
        'Linux capabilities given to or taken from the engine\'s default set, as ECS\'s '
        'C(linuxParameters.capabilities) does, with ECS\'s names (V(NET_RAW), V(SYS_PTRACE), V(ALL)...).',
        'Every container runs B(without) C(NET_RAW) (no raw or packet sockets, so no forged ARP or sniffing of '
        'the other containers on the bridge) unless O(containers[].capabilities.add) names it (or V(ALL)). '
        'C(ping) in a container needs it back, or an image whose C(ping) uses ICMP datagram sockets.'],
      core=True, sub=(
          U('add', 'add', 'strs', 'Capabilities added (Docker\'s C(--cap-add)).'),
          U('drop', 'drop', 'strs', 'Capabilities dropped (Docker\'s C(--cap-drop)); V(NET_RAW) is dropped without '
            'being named here.'))),
    S('mount_points', 'mountPoints', 'records', [
        'Volumes of the task (ECS C(volumes)) mounted into the container (Docker binds).'], sub=(
            U('source_volume', 'sourceVolume', 'str', 'The name of the task volume.', required=True),
            U('container_path', 'containerPath', 'str', 'Where it is mounted (an absolute path).', required=True),
            U('read_only', 'readOnly', 'bool', 'Mount it read-only.'))),
    S('volumes_from', 'volumesFrom', 'records', [
        'Mount every volume of another container of the task (Docker\'s C(--volumes-from)); that container is '
        'started first.'], sub=(
            U('source_container', 'sourceContainer', 'str', 'The other container\'s name in the task.',
              required=True),
            U('read_only', 'readOnly', 'bool', 'Mount them read-only.')), to='host.volumes_from'),
    S('links', 'links', 'strs', [
        'Other containers of the task this one reaches by name, each V(name) or V(name:alias) (Docker\'s '
        'C(--link)); with O(network_mode=bridge) only. They are started first (containers that need each other '
        'in a cycle are refused).'], to='host.links', awsvpc=False),
    S('ulimits', 'ulimits', 'records', 'Resource limits (Docker\'s C(--ulimit)).', sub=(
        U('name', 'name', 'str', 'The limit.', required=True, choices=list(ULIMITS)),
        U('soft_limit', 'softLimit', 'int', 'The soft limit.', required=True),
        U('hard_limit', 'hardLimit', 'int', 'The hard limit, at least the soft one.', required=True)),
      to='host.ulimits'),
    S('user', 'user', 'str', 'The user (and group) the command runs as: V(name), V(uid), V(uid:gid)...',
      to='config.user'),
    S('working_directory', 'workingDirectory', 'str', 'The working directory of the command.',
      to='config.working_dir'),
    S('hostname', 'hostname', 'str', 'The container\'s host name; not with O(network_mode=awsvpc), as on AWS.',
      to='config.hostname', awsvpc=False),
    S('dns_servers', 'dnsServers', 'strs', 'Name servers; not with O(network_mode=awsvpc), as on AWS.',
      to='host.dns', awsvpc=False),
    S('dns_search_domains', 'dnsSearchDomains', 'strs', 'DNS search domains; not with O(network_mode=awsvpc).',
      to='host.dns_search', awsvpc=False),
    S('extra_hosts', 'extraHosts', 'records', 'Entries added to the container\'s C(/etc/hosts); not with '
      'O(network_mode=awsvpc).', sub=(
          U('hostname', 'hostname', 'str', 'The host name.', required=True),
          U('ip_address', 'ipAddress', 'str', 'Its address.', required=True)), to='host.extra_hosts', awsvpc=False),
    S('disable_networking', 'disableNetworking', 'bool', 'Run the container without a network; not with '
      'O(network_mode=awsvpc).', to='config.network_disabled', awsvpc=False),
    S('docker_labels', 'dockerLabels', 'map', [
        'Labels of the container. Names that start with C(drover.) are the collection\'s own (it reads them back '
        'to know its containers): one given here is left out, with a warning.'],
      to=None),
    S('privileged', 'privileged', 'bool', [
        'Run the container privileged: it gets every capability and every device of the host.',
        'Refused unless the host allows it (O(allow_privileged)).'], to='host.privileged'),
    S('readonly_root_filesystem', 'readonlyRootFilesystem', 'bool', 'Mount the container\'s root file system '
      'read-only.', to='host.read_only'),
    S('docker_security_options', 'dockerSecurityOptions', 'strs', 'Security options (Docker\'s '
      'C(--security-opt)), for example V(no-new-privileges), V(apparmor=PROFILE), V(label:type:T).',
      to='host.security_opt'),
    S('system_controls', 'systemControls', 'records', 'Kernel parameters of the container\'s namespaces '
      '(Docker\'s C(--sysctl)).', sub=(
          U('namespace', 'namespace', 'str', 'The parameter, for example V(net.core.somaxconn).', required=True),
          U('value', 'value', 'str', 'Its value.', required=True)), to='host.sysctls'),
    S('pseudo_terminal', 'pseudoTerminal', 'bool', 'Give the container a terminal (Docker\'s C(--tty)).',
      to='config.tty'),
    S('interactive', 'interactive', 'bool', 'Keep the container\'s standard input open (Docker\'s '
      'C(--interactive)).', to='config.stdin_open'),
    S('init_process_enabled', 'linuxParameters.initProcessEnabled', 'bool', 'Run an init process as PID 1 that '
      'forwards signals and reaps zombies (Docker\'s C(--init)).', to='host.init'),
    S('devices', 'linuxParameters.devices', 'records', 'Host devices given to the container (Docker\'s '
      'C(--device)).', sub=(
          U('host_path', 'hostPath', 'str', 'The device on the host.', required=True),
          U('container_path', 'containerPath', 'str', 'Its path in the container; the host path when unset.'),
          U('permissions', 'permissions', 'strs', 'Of V(read), V(write), V(mknod); all three when unset.')),
      to='host.devices'),
    S('shared_memory_size', 'linuxParameters.sharedMemorySize', 'int', 'The size of C(/dev/shm) in MiB.',
      to='host.shm_size', low=1),
    S('tmpfs', 'linuxParameters.tmpfs', 'records', 'tmpfs mounts (Docker\'s C(--tmpfs)).', sub=(
        U('container_path', 'containerPath', 'str', 'Where it is mounted.', required=True),
        U('size', 'size', 'int', 'Its size in MiB.', required=True),
        U('mount_options', 'mountOptions', 'strs', 'Mount options, for example V(noexec), V(nosuid).')),
      to='host.tmpfs'),
    S('max_swap', 'linuxParameters.maxSwap', 'int', 'Swap the container may use, in MiB, on top of '
      'O(containers[].memory) (which it needs); V(0) means none.', to='host.memswap_limit', low=0),
    S('swappiness', 'linuxParameters.swappiness', 'int', 'How readily the kernel swaps the container\'s '
      'memory, 0 to 100.', to='host.mem_swappiness', low=0, high=100),
    S('health_check', 'healthCheck', 'record', [
        'The container\'s health check (Docker\'s C(HEALTHCHECK)), with ECS\'s defaults: interval 30 s, timeout '
        '5 s, 3 retries, start period 0 s.'], sub=(
            U('command', 'command', 'strs', 'The check: V([CMD-SHELL, "curl -f http://localhost/"]) or V([CMD, '
              'exe, arg...]).', required=True),
            U('interval', 'interval', 'int', 'Seconds between checks, 5 to 300.'),
            U('timeout', 'timeout', 'int', 'Seconds a check may take, 2 to 60.'),
            U('retries', 'retries', 'int', 'Failures in a row that make the container unhealthy, 1 to 10.'),
            U('start_period', 'startPeriod', 'int', 'Seconds after the start when failures do not count, 0 to '
              '300.')), to='config.healthcheck'),
    S('restart_policy', 'restartPolicy', 'record', [
        'The container\'s restart policy (ECS C(restartPolicy)). ECS restarts the container in place; here it joins '
        'the task\'s O(restart): when the task stops because this container exited, with a code not in '
        'O(containers[].restart_policy.ignored_exit_codes), the task runs again (as with O(restart=always)), with the '
        'task\'s backoff; with an ignored code the task\'s O(restart) decides alone.',
        'Only on an essential container (the exit of one that is not essential does not stop the task).'], sub=(
            U('enabled', 'enabled', 'bool', 'Whether the policy applies.', required=True),
            U('ignored_exit_codes', 'ignoredExitCodes', 'ints', 'Exit codes that do not run the task again (at most '
              '50).'),
            U('restart_attempt_period', 'restartAttemptPeriod', 'int', 'Seconds, 60 to 1800 (V(300) when unset): a '
              'run that lasted this long before the container exited runs again at once and starts a new streak; '
              'one that ended sooner runs again after the backoff (30 s doubling to 600 s).'))),
    S('stop_timeout', 'stopTimeout', 'int', [
        'Seconds between the stop signal and the kill when the task stops (the engine\'s C(StopTimeout)); 2 to '
        '120.', 'Unset, a stopping task\'s container is killed at once.'], to='config.stop_timeout', low=2,
      high=120),
    S('depends_on', 'dependsOn', 'records', [
        'Other containers of the task this one waits for before it starts, each with the condition it waits for '
        '(ECS C(dependsOn)). The task\'s containers start in that order (and after the ones they link to or take '
        'volumes from); they stop in the reverse order, each with its O(containers[].stop_timeout).',
        'V(START): the other container was started. V(COMPLETE): it exited, with any code. V(SUCCESS): it exited '
        'with code 0; any other code stops the task. V(HEALTHY): its O(containers[].health_check) passed.',
        'V(COMPLETE) and V(SUCCESS) name a container that is not essential; V(HEALTHY) one with a health check. '
        'A name that is not another container of the task, or containers that wait for each other in a cycle, '
        'are refused.',
        'The other container\'s O(containers[].start_timeout) bounds the wait: when it has not reached the '
        'condition that long after it started, the task stops with a reason that names it and the condition. '
        'A container that ran to completion stays exited: it is not started again, and its exit does not stop '
        'the task (it is not essential).'], sub=(
            U('container_name', 'containerName', 'str', 'The other container\'s name in the task.', required=True),
            U('condition', 'condition', 'str', 'What this container waits for.', required=True,
              choices=list(CONDITIONS)))),
    S('start_timeout', 'startTimeout', 'int', [
        'How long the containers that depend on this one (O(containers[].depends_on)) wait, from its start, for '
        'it to reach the condition they wait for, in seconds; V(180) (3 minutes, as ECS) when unset.',
        'Kept with the container as the label C(drover.start-timeout).'], low=1),
    S('repository_credentials', 'repositoryCredentials', 'record', [
        'Pull credentials for the container\'s image from AWS Secrets Manager (ECS\'s private registry '
        'authentication): the secret holds a JSON object with C(username) and C(password). It is read when the image '
        'is pulled, as the task\'s O(execution_role_arn) (assumed through STS with the host\'s credentials), which '
        'the task must have (as ECS requires: never as the host), in the region of its ARN (else O(aws_region)), '
        'through O(aws_endpoint_url) when set; the credentials serve that pull only and are never kept, logged or '
        'returned.',
        'A secret that cannot be read stops the task with a reason that names its ARN and AWS\'s error code. For '
        'this container\'s image it takes the place of O(registry_auth).'], sub=(
            U('credentials_parameter', 'credentialsParameter', 'str', 'The secret: its ARN, or its name.',
              required=True),)),
    S('secrets', 'secrets', 'records', [
        'Environment variables whose values are read from AWS when the task starts (ECS\'s C(secrets)): an SSM '
        'Parameter Store parameter (its name, or its ARN; SecureString values decrypted) or a Secrets Manager '
        'secret (its ARN; with ECS\'s suffix C(:json-key:version-stage:version-id) one key of a JSON secret, or '
        'a version of it).',
        'They are read as the task\'s O(execution_role_arn) (assumed through STS with the host\'s credentials), '
        'or as the host when there is none; an SSM name is read in O(aws_region), an ARN in its own region; '
        'O(aws_endpoint_url) is used when set. A secret that cannot be read stops the task with a reason that '
        'names it and AWS\'s error code; nothing of the task is left started.',
        'A value goes only into the environment of this container (a secret wins over O(containers[].environment) '
        'and over O(containers[].environment_files), as ECS\'s agent has it): never into results, diffs, '
        'events, labels, the store or logs. The task\'s spec holds O(containers[].secrets[].value_from), not the '
        'value: a changed value_from replaces the task\'s containers, a value changed in AWS does not (as on '
        'AWS; the next run of the task reads it).'], sub=(
            U('name', 'name', 'str', 'The environment variable.', required=True),
            U('value_from', 'valueFrom', 'str', 'The SSM parameter (name or ARN) or the Secrets Manager secret '
              '(ARN, with the optional ECS suffix).', required=True))),
    S('environment_files', 'environmentFiles', 'records', [
        'Files of C(VARIABLE=VALUE) lines in S3 whose variables join the container\'s environment when the task '
        'starts (ECS\'s C(environmentFiles)): C(#) comments and blank lines are skipped, values are taken as '
        'they are. Read as O(containers[].secrets) are (the execution role, O(aws_endpoint_url)); a file that '
        'cannot be read, is over 1 MiB or is not such lines stops the task with a reason that names it.',
        'O(containers[].environment) wins over a file, and a variable in two files takes its value from the '
        'first one listed (as ECS\'s agent merges them). At most 10 files.'], sub=(
            U('value', 'value', 'str', 'The S3 object\'s ARN: V(arn:aws:s3:::bucket/path/to/file.env).',
              required=True),
            U('type', 'type', 'str', 'Where the file is: V(s3) (the only kind; the default).', choices=['s3']))),
    S('firelens_configuration', 'firelensConfiguration', 'record', [
        'Makes this container the task\'s log router (ECS\'s FireLens): the containers whose '
        'O(containers[].log_configuration.log_driver) is V(awsfirelens) send their logs to it. The collection '
        'writes its Fluent Bit configuration (a forward input on the socket C(/var/run/fluent.sock), ECS\'s '
        'metadata C(ecs_cluster), C(ecs_task_definition), C(ecs_task_id) unless switched off, the file named in '
        'the options, and one output per container from that container\'s log options) and mounts it at '
        'C(/fluent-bit/etc/fluent-bit.conf); the files live next to the host store and go with the task.',
        'The router starts before the containers that log to it. A task has one router; a container that logs '
        'with V(awsfirelens) needs one.'], sub=(
            U('type', 'type', 'str', 'The router: V(fluentbit).', required=True, choices=['fluentbit', 'fluentd']),
            U('options', 'options', 'map', 'C(enable-ecs-log-metadata) (V(true), the default, or V(false)), '
              'C(config-file-type) V(file) and C(config-file-value) (an absolute path in the router\'s image: '
              'the configuration of your own that the written one includes).'))),
    S('log_configuration', 'logConfiguration', 'record', [
        'The container\'s log driver and its options. The host\'s O(log_drivers) says which drivers are allowed; '
        'a driver this host cannot serve is replaced as O(log_driver_map) says (V(awslogs) becomes V(local)), '
        'with a warning. On a host with AWS access for logs (O(aws_logs)), V(awslogs) is the engine\'s own driver, '
        'with the execution role\'s credentials.',
        'V(awsfirelens) sends the container\'s logs to the task\'s log router (the container with '
        'O(containers[].firelens_configuration)) through the engine\'s V(fluentd) driver, which the host\'s '
        'O(log_drivers) must allow; its options (C(Name) and the plugin\'s own) become the router\'s output '
        'for this container.'], sub=(
            U('log_driver', 'logDriver', 'str', 'The driver: V(json-file), V(local), V(syslog), V(journald), '
              'V(gelf), V(fluentd), V(none) (or one O(log_driver_map) maps; V(awslogs) with O(aws_logs)).',
              required=True),
            U('options', 'options', 'map', 'The driver\'s options.'),
            U('secret_options', 'secretOptions', 'map', 'Driver options whose values are read from AWS when the task '
              'starts (ECS\'s C(secretOptions)): the option\'s name -> an SSM parameter or a Secrets Manager '
              'secret, as O(containers[].secrets[].value_from) is; the value goes only into this container\'s log '
              'configuration (with V(awsfirelens), into the environment of the task\'s log router, whose '
              'configuration names it as C(${VARIABLE})).')), to='host.log_config'),
)
BY_OPTION = collections.OrderedDict((s.option, s) for s in SETTINGS)
OPTIONS = tuple(BY_OPTION)
CORE = tuple(s.option for s in SETTINGS if s.core)
Container = collections.namedtuple('Container', OPTIONS)

# ECS container definition members that this release does not do yet or never does here, and why.
ECS_REFUSED = {
    'credentialSpecs': 'is refused: gMSA credential specs are for Windows containers',
}
# ECS members with no effect on a host of its own: accepted as they are.
ECS_ACCEPTED = ('versionConsistency',)


# --- checking a declaration -------------------------------------------------------------------------------

def _record(setting, raw, field, ecs=False):
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping with %s' % (field, ', '.join(u.option for u in setting.sub)))
    known = dict((u.option, u) for u in setting.sub)
    said = dict((u.option, u.ecs if ecs else u.option) for u in setting.sub)
    unknown = sorted(k for k, v in raw.items() if k not in known and v is not None)
    if unknown:
        raise SpecError('%s has unsupported keys: %s (supported: %s)'
                        % (field, ', '.join(map(str, unknown)), ', '.join(known)))
    out = []
    for u in setting.sub:
        value = raw.get(u.option)
        where = '%s.%s' % (field, said[u.option])
        if value is None:
            if u.required:
                raise SpecError('%s is required' % where)
            continue
        value = _value(u.kind, value, where)
        if u.choices and value not in u.choices:
            raise SpecError('%s must be one of %s, got %r' % (where, ', '.join(u.choices), value))
        out.append((u.option, value))
    return tuple(out)


def _value(kind, value, field, low=None, high=None):
    if kind == 'int':
        return whole(value, field, low, high)
    if kind == 'bool':
        return boolean(value, field)
    if kind == 'str':
        if is_int(value):
            value = str(value)
        return text(value, field)
    if kind == 'strs':
        return texts(value, field)
    if kind == 'ints':
        return wholes(value, field)
    if kind == 'argv':
        return argv(value, field)
    if kind == 'env':
        return environment(value, field)
    if kind == 'map':
        return mapping(value, field)
    raise SpecError('%s: no rule for kind %s' % (field, kind))     # pragma: no cover - a table error


def _one(setting, raw, field, ctx):
    """One setting's value, checked and made hashable; None when unset."""
    if setting.option == 'name':
        return check_name(raw, field)
    if setting.option == 'image':
        if not isinstance(raw, str) or not raw.strip():
            raise SpecError('%s is required (container %s has no image)' % (field, ctx.get('container')))
        if not IMAGE_RE.match(raw):
            raise SpecError('%s %r is not a valid image reference' % (field, raw))
        return raw
    if setting.option == 'capabilities':
        return capabilities(raw, field)
    if raw is None:
        return () if setting.option in ('environment', 'port_mappings') else setting.default
    if setting.option == 'port_mappings':
        return ports(raw, field, ctx.get('network_mode'), ctx.get('ecs'))
    if setting.option == 'cpu' and raw == 0:
        return None
    if setting.kind == 'argv' and raw == []:
        return None                     # as if absent, as ECS takes an empty list
    if setting.kind == 'record':
        return _record(setting, raw, field, ctx.get('ecs'))
    if setting.kind == 'records':
        if not isinstance(raw, (list, tuple)):
            raise SpecError('%s must be a list of mappings' % field)
        return tuple(_record(setting, item, '%s[%d]' % (field, i), ctx.get('ecs')) for i, item in enumerate(raw))
    if setting.option == 'cpu':
        return whole(raw, field, 2, 262144)
    return _value(setting.kind, raw, field, setting.low, setting.high)


def parse(raw, field, network_mode, host=None, ecs=False):
    """One entry of `containers`, checked and made a Container. `host`: the host's policy (allow_privileged,
    log_drivers, log_driver_map); `ecs`: the entry came from an ECS container definition, so messages name
    ECS's fields. Returns (Container, warnings)."""
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping' % field)
    unknown = sorted(k for k, v in raw.items() if k not in BY_OPTION and v is not None)
    if unknown:
        raise SpecError('%s has unsupported keys: %s (supported: %s)'
                        % (field, ', '.join(map(str, unknown)), ', '.join(OPTIONS)))
    ctx = {'network_mode': network_mode, 'container': raw.get('name'), 'ecs': ecs}
    at = _namer(field, ecs)
    values = {}
    for setting in SETTINGS:
        values[setting.option] = _one(setting, raw.get(setting.option), at(setting.option), ctx)
    spec = Container(**values)
    warnings = _rules(spec, at, network_mode, host or {})
    if spec.log_configuration is not None:
        spec, more = _log_policy(spec, at, host or {})
        warnings.extend(more)
    return spec, warnings


def _namer(field, ecs):
    """The name of a setting in a message: its option (containers[0].memory_reservation), or where an ECS
    container definition has it (task_definition.containerDefinitions[0].memoryReservation)."""
    def at(option, rest=''):
        setting = BY_OPTION[option]
        name = setting.ecs if ecs and setting.ecs else option
        if rest and ecs:
            first, tail = rest.partition('.')[0], rest.partition('.')[2]
            subs = dict((u.option, u.ecs) for u in setting.sub)
            rest = subs.get(first, first) + ('.' + tail if tail else '')
        return '%s.%s%s' % (field, name, '.' + rest if rest else '')
    return at


def _rules(c, at, network_mode, host):
    """What the model cannot say: combinations, and the host's policy. `at(option, member)` names a field."""
    warnings = []
    if network_mode == 'awsvpc':
        for setting in SETTINGS:
            if not setting.awsvpc and getattr(c, setting.option) not in (None, False, ()):
                raise SpecError('%s is not supported with network_mode awsvpc (as on AWS): the task\'s containers '
                                'share one network namespace' % at(setting.option))
    if c.links and network_mode != 'bridge':
        raise SpecError('%s works with network_mode bridge only, not %s' % (at('links'), network_mode))
    if c.memory and c.memory_reservation and c.memory_reservation > c.memory:
        raise SpecError('%s (%d MiB) must not be above %s (%d MiB)'
                        % (at('memory_reservation'), c.memory_reservation, at('memory'), c.memory))
    if c.max_swap is not None and not c.memory:
        raise SpecError('%s needs %s: the swap is counted on top of the hard limit' % (at('max_swap'), at('memory')))
    enforce = host.get('enforce', True)
    if c.privileged and enforce and not host.get('allow_privileged'):
        raise SpecError('%s: container %s would get every capability and device of the host; this host refuses '
                        'privileged containers unless allow_privileged is true (role variable '
                        'drover_allow_privileged)' % (at('privileged'), c.name))
    for i, item in enumerate(c.ulimits or ()):
        item = dict(item)
        if item['hard_limit'] < item['soft_limit']:
            raise SpecError('%s (%d) is below its soft limit (%d)'
                            % (_member(at, 'ulimits', i, 'hard_limit'), item['hard_limit'], item['soft_limit']))
    for option in ('mount_points', 'tmpfs', 'devices'):
        for i, item in enumerate(getattr(c, option) or ()):
            item = dict(item)
            path = item.get('container_path')
            if path is not None and not path.startswith('/'):
                raise SpecError('%s must be an absolute path, got %r' % (_member(at, option, i, 'container_path'), path))
            for member in ('container_path', 'host_path'):
                # The engine reads "source:target:options": a ':' or ',' here would be a mode (rshared, z) of the
                # host's path, or a device's permissions, that nobody declared.
                if any(ch in (item.get(member) or '') for ch in ':,\0'):
                    raise SpecError('%s must not hold ":", "," or a NUL character, got %r'
                                    % (_member(at, option, i, member), item[member]))
            if option == 'devices' and [p for p in item['host_path'].split('/')[1:] if p in ('', '.', '..')]:
                # /dev/dri/../sda would match /dev/dri/* and be the host's disk.
                raise SpecError('%s must be a device\'s path itself (no empty, "." or ".." part), got %r'
                                % (_member(at, option, i, 'host_path'), item['host_path']))
            if option == 'devices':
                if not item['host_path'].startswith('/dev/'):
                    raise SpecError('%s must be a device under /dev, got %r'
                                    % (_member(at, option, i, 'host_path'), item['host_path']))
                bad = [p for p in item.get('permissions') or () if p not in DEVICE_PERMISSIONS]
                if bad:
                    raise SpecError('%s %s is not one of %s'
                                    % (_member(at, option, i, 'permissions'), ', '.join(bad),
                                       ', '.join(DEVICE_PERMISSIONS)))
            if option == 'tmpfs' and item['size'] < 1:
                raise SpecError('%s must be at least 1 (MiB), got %d' % (_member(at, option, i, 'size'), item['size']))
    if c.health_check is not None:
        hc = dict(c.health_check)
        if not hc['command'] or hc['command'][0] not in ('CMD', 'CMD-SHELL', 'NONE'):
            raise SpecError('%s must start with CMD, CMD-SHELL or NONE, got %r'
                            % (at('health_check', 'command'), list(hc['command'][:1])))
        for key, low, high in (('interval', 5, 300), ('timeout', 2, 60), ('retries', 1, 10), ('start_period', 0, 300)):
            if key in hc and not low <= hc[key] <= high:
                raise SpecError('%s must be from %d to %d, got %d' % (at('health_check', key), low, high, hc[key]))
    seen = set()
    for i, item in enumerate(c.secrets or ()):
        item = dict(item)
        if '=' in item['name']:
            raise SpecError('%s %r is not an environment variable name' % (_member(at, 'secrets', i, 'name'), item['name']))
        if item['name'] in seen:
            raise SpecError('%s %s is given twice' % (_member(at, 'secrets', i, 'name'), item['name']))
        seen.add(item['name'])
        try:
            secret_source(item['value_from'])
        except ValueError as exc:
            raise SpecError('%s %r %s' % (_member(at, 'secrets', i, 'value_from'), item['value_from'], exc))
    log = dict(c.log_configuration or ())
    for name, value_from in log.get('secret_options') or ():
        where = at('log_configuration', 'secret_options') + '.' + name
        if not LOG_OPTION_RE.match(name):
            raise SpecError('%s %r is not a log option\'s name: letters, digits, _ . - on one line'
                            % (at('log_configuration', 'secret_options'), name))
        if name in dict(log.get('options') or ()):
            raise SpecError('%s: %s is also in %s' % (where, name, at('log_configuration', 'options')))
        if name in VISIBLE_LOG_OPTIONS:
            raise SpecError('%s: %s is no secret: the collection checks it (or sets it itself), so it is given in %s '
                            'or not at all' % (where, name, at('log_configuration', 'options')))
        try:
            secret_source(value_from)
        except ValueError as exc:
            raise SpecError('%s %r %s' % (where, value_from, exc))
    if len(c.environment_files or ()) > MAX_ENVIRONMENT_FILES:
        raise SpecError('%s has %d files: at most %d'
                        % (at('environment_files'), len(c.environment_files), MAX_ENVIRONMENT_FILES))
    for i, item in enumerate(c.environment_files or ()):
        try:
            s3_object(dict(item)['value'])
        except ValueError as exc:
            raise SpecError('%s %r %s' % (_member(at, 'environment_files', i, 'value'), dict(item)['value'], exc))
    if c.restart_policy is not None:
        rp = dict(c.restart_policy)
        if rp['enabled'] and not c.essential:
            raise SpecError('%s: container %s is not essential, so its exit does not stop the task and nothing runs '
                            'again; make it essential or leave the policy out' % (at('restart_policy'), c.name))
        if rp.get('restart_attempt_period') is not None and not 60 <= rp['restart_attempt_period'] <= 1800:
            raise SpecError('%s must be from 60 to 1800, got %d'
                            % (at('restart_policy', 'restart_attempt_period'), rp['restart_attempt_period']))
        if len(rp.get('ignored_exit_codes') or ()) > 50:
            raise SpecError('%s has %d codes: at most 50' % (at('restart_policy', 'ignored_exit_codes'),
                                                             len(rp['ignored_exit_codes'])))
    own = [k for k, v in c.docker_labels or () if k.startswith(OWN_LABELS)]
    if own:
        warnings.append('%s: %s %s in the collection\'s own label namespace (%s*): left out of container %s'
                        % (at('docker_labels'), ', '.join(own), 'is' if len(own) == 1 else 'are', OWN_LABELS,
                           c.name))
    for i, item in enumerate(c.extra_hosts or ()):
        if not re.match(r'^[0-9a-fA-F.:]+\Z', dict(item)['ip_address']):
            raise SpecError('%s must be an IP address, got %r'
                            % (_member(at, 'extra_hosts', i, 'ip_address'), dict(item)['ip_address']))
    for i, item in enumerate(c.system_controls or ()):
        if not re.match(r'^[a-z0-9_]+(\.[a-zA-Z0-9_-]+)+\Z', dict(item)['namespace']):
            raise SpecError('%s %r is not a kernel parameter name (like net.core.somaxconn)'
                            % (_member(at, 'system_controls', i, 'namespace'), dict(item)['namespace']))
    if enforce:
        _privileged_in_all_but_name(c, at, host)
    return warnings


def _privileged_in_all_but_name(c, at, host):
    """What gives a container the host without `privileged`: a capability beyond the engine's default set, a
    host device, a security option that lifts a confinement. Each needs the host's allow_privileged, or (the first
    two) its allowed_capabilities or allowed_devices."""
    if host.get('allow_privileged'):
        return
    allowed = set(host.get('allowed_capabilities') or ())
    beyond = [cap for cap in c.capabilities.add if cap not in ENGINE_CAPABILITIES and cap not in allowed]
    if beyond:
        raise SpecError('%s: %s reaches past the container (it is not in the engine\'s default set); this host '
                        'refuses it unless it is in allowed_capabilities or allow_privileged is true (role variables '
                        'drover_allowed_capabilities, drover_allow_privileged)' % (at('capabilities', 'add'), beyond[0]))
    patterns = host.get('allowed_devices') or ()
    for i, item in enumerate(c.devices or ()):
        path = dict(item)['host_path']
        if not any(fnmatch.fnmatchcase(path, p) for p in patterns):
            raise SpecError('%s %s: a host device gives the container what the host keeps behind it (a disk, its '
                            'memory); this host refuses it unless it matches allowed_devices (%s) or allow_privileged is '
                            'true (role variables drover_allowed_devices, drover_allow_privileged)'
                            % (_member(at, 'devices', i, 'host_path'), path, ', '.join(patterns) or 'none'))
    known = host.get('allowed_security_options') or ()
    for i, option in enumerate(c.docker_security_options or ()):
        if not CONFINING_SECURITY_OPTION_RE.match(option) and option not in known:
            raise SpecError('%s[%d] %s may lift a confinement of the container (an AppArmor profile or an SELinux '
                            'label of the host may be unconfined; seccomp, systempaths and label disable are); this '
                            'host refuses it unless it is in allowed_security_options or allow_privileged is true '
                            '(role variables drover_allowed_security_options, drover_allow_privileged)'
                            % (at('docker_security_options'), i, option))


def _log_policy(c, at, host):
    """The host's log policy: a mapped driver is replaced (with a warning), a driver not allowed is refused;
    awslogs is served (its options checked) where the host says it has AWS access for logs (aws_logs)."""
    config = dict(c.log_configuration)
    driver = config['log_driver']
    mapped = dict(host.get('log_driver_map') or DEFAULT_LOG_DRIVER_MAP)
    allowed = tuple(LOG_DRIVERS if host.get('log_drivers') is None else host['log_drivers'])     # []: none
    if host.get('aws_logs'):
        # The host has AWS access for logs: awslogs is the engine's own driver, never mapped.
        mapped.pop(awslogs.DRIVER, None)
        allowed += (awslogs.DRIVER,)
    warnings = []
    if driver == FIRELENS_DRIVER:
        if 'fluentd' not in allowed:
            raise SpecError('%s %s logs through the engine\'s fluentd driver, which is not allowed on this host '
                            '(allowed: %s)' % (at('log_configuration', 'log_driver'), driver, ', '.join(allowed) or 'none'))
        return c, warnings
    if driver in mapped:
        warnings.append('%s %s cannot be served on this host: container %s logs with %s instead (log_driver_map)'
                        % (at('log_configuration', 'log_driver'), driver, c.name, mapped[driver]))
        config = {'log_driver': mapped[driver]}     # the options were the other driver's
        driver = mapped[driver]
    if driver not in allowed:
        raise SpecError('%s %r is not allowed on this host (allowed: %s)'
                        % (at('log_configuration', 'log_driver'), driver, ', '.join(allowed) or 'none'))
    if host.get('enforce', True):
        destinations.check(driver, dict(config.get('options') or ()), host.get('log_addresses'),
                           lambda member: at('log_configuration', member), host.get('aws_endpoint_url'))
    if driver == awslogs.DRIVER:
        awslogs.check(config.get('options'), at('log_configuration', 'options'), host.get('region'))
    return c._replace(log_configuration=tuple(sorted(config.items()))), warnings


# The drivers of ECS that a host of its own cannot serve, and what they become (the host's log_driver_map);
# awslogs leaves the map on a host with AWS access for logs (aws_logs).
DEFAULT_LOG_DRIVER_MAP = (('awslogs', 'local'), ('splunk', 'local'))


# --- from an ECS container definition ---------------------------------------------------------------------

def _get(cd, path):
    value = cd
    for part in path.split('.'):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _native(setting, value, where):
    """An ECS value in this collection's words (the members of records renamed)."""
    if setting.kind not in ('record', 'records') or value is None:
        return value
    names = dict((u.ecs, u.option) for u in setting.sub)

    def one(item, at):
        if not isinstance(item, dict):
            raise SpecError('%s must be a mapping' % at)
        out = {}
        for key, val in item.items():
            if key not in names:
                raise SpecError('%s has a key this collection does not support: %s' % (at, key))
            out[names[key]] = val
        return out
    if setting.kind == 'record':
        return one(value, where)
    if not isinstance(value, list):
        raise SpecError('%s must be a list' % where)
    return [one(item, '%s[%d]' % (where, i)) for i, item in enumerate(value)]


def from_ecs(cd, where):
    """An ECS container definition (checked by AWS's model) as a `containers` entry."""
    if not isinstance(cd, dict):
        raise SpecError('%s must be a mapping' % where)
    for key in sorted(cd):
        if key in ECS_REFUSED and cd[key] not in (None, [], {}):
            raise SpecError('%s.%s %s' % (where, key, ECS_REFUSED[key]))
    known = set(s.ecs.split('.')[0] for s in SETTINGS if s.ecs) | set(ECS_ACCEPTED) | {'resourceRequirements'}
    unknown = sorted(k for k, v in cd.items() if k not in known and k not in ECS_REFUSED and v not in (None, [], {}))
    if unknown:
        raise SpecError('%s has keys this collection does not support: %s' % (where, ', '.join(unknown)))
    linux = cd.get('linuxParameters') or {}
    if not isinstance(linux, dict):
        raise SpecError('%s.linuxParameters must be a mapping' % where)
    linux_known = set(s.ecs.split('.', 1)[1] for s in SETTINGS if s.ecs and s.ecs.startswith('linuxParameters.'))
    bad = sorted(k for k, v in linux.items() if k not in linux_known and v not in (None, [], {}))
    if bad:
        raise SpecError('%s.linuxParameters has keys this collection does not support: %s' % (where, ', '.join(bad)))
    raw = {}
    for setting in SETTINGS:
        if setting.ecs is None:
            continue
        value = _get(cd, setting.ecs)
        if value is None or value == [] or value == {}:
            continue
        at = '%s.%s' % (where, setting.ecs)
        if setting.option == 'environment':
            value = _env_from_ecs(value, at)
        elif setting.option == 'log_configuration':
            value = {'logDriver': value.get('logDriver'), 'options': value.get('options'),
                     'secretOptions': _env_from_ecs(value['secretOptions'], at + '.secretOptions', 'valueFrom')
                     if value.get('secretOptions') else None}
        raw[setting.option] = _native(setting, value, at)
    for j, req in enumerate(cd.get('resourceRequirements') or []):
        if not isinstance(req, dict) or req.get('type') != 'GPU':
            raise SpecError('%s.resourceRequirements[%d]: only {type: GPU, value: N} is supported (%s)'
                            % (where, j, req.get('type') if isinstance(req, dict) else req))
        raw['gpu'] = req.get('value')
    return raw


def _env_from_ecs(value, where, member='value'):
    if not isinstance(value, list):
        raise SpecError('%s must be a list of {name, %s}' % (where, member))
    out = {}
    for j, pair in enumerate(value):
        if not isinstance(pair, dict) or 'name' not in pair or set(pair) - {'name', member}:
            raise SpecError('%s[%d] must be {name, %s}' % (where, j, member))
        out[pair['name']] = pair.get(member)
    return out


# --- onto the engine --------------------------------------------------------------------------------------

def render(c, task, names, volumes):
    """What the engine's create call gets from a container's settings: (config kwargs, host config kwargs,
    labels) for the Docker SDK's create_container / create_host_config, as plain values. `names`: the task's
    container names -> engine names; `volumes`: the task's volume names -> what a bind mounts (a host path or
    an engine volume name)."""
    config, host, labels = {}, {}, {}
    for setting in SETTINGS:
        value = getattr(c, setting.option)
        if value is None or value == () or setting.to is None:
            continue
        where, key = setting.to.split('.', 1)
        out = config if where == 'config' else host
        out[key] = _engine_value(setting.option, value, c, names)
    if c.memory:
        host['mem_limit'] = '%dm' % c.memory
    if c.memory_reservation:
        host['mem_reservation'] = '%dm' % c.memory_reservation
    if c.max_swap is not None:
        host['memswap_limit'] = '%dm' % (c.memory + c.max_swap)
    if c.mount_points:
        binds = []
        for item in c.mount_points:
            item = dict(item)
            source = volumes[item['source_volume']]
            binds.append('%s:%s%s' % (source, item['container_path'], ':ro' if item.get('read_only') else ''))
        host['binds'] = binds
    host['cap_add'] = list(c.capabilities.add) or None
    host['cap_drop'] = list(c.capabilities.drop) or None
    if c.docker_labels:
        # The collection reads its own labels back (task, credentials, GPUs, grace period): never a declared one.
        labels.update((k, v) for k, v in c.docker_labels if not k.startswith(OWN_LABELS))
    if c.start_timeout is not None:
        labels['drover.start-timeout'] = str(c.start_timeout)
    return config, host, labels


def _engine_value(option, value, c, names):
    if option == 'capabilities':
        return value
    if option == 'volumes_from':
        return ['%s%s' % (names[dict(v)['source_container']], ':ro' if dict(v).get('read_only') else '')
                for v in value]
    if option == 'links':
        out = {}
        for link in value:
            target, alias = link.partition(':')[0], link.partition(':')[2]
            out[names[target]] = alias or target
        return out
    if option == 'ulimits':
        return [{'name': dict(u)['name'], 'soft': dict(u)['soft_limit'], 'hard': dict(u)['hard_limit']} for u in value]
    if option == 'extra_hosts':
        return dict((dict(h)['hostname'], dict(h)['ip_address']) for h in value)
    if option == 'system_controls':
        return dict((dict(s)['namespace'], dict(s)['value']) for s in value)
    if option == 'devices':
        out = []
        for d in value:
            d = dict(d)
            perms = d.get('permissions') or DEVICE_PERMISSIONS
            out.append('%s:%s:%s' % (d['host_path'], d.get('container_path') or d['host_path'],
                                     ''.join(p[0] for p in DEVICE_PERMISSIONS if p in perms)))
        return out
    if option == 'shared_memory_size':
        return '%dm' % value
    if option == 'tmpfs':
        out = {}
        for t in value:
            t = dict(t)
            out[t['container_path']] = ','.join(['size=%dm' % t['size']] + list(t.get('mount_options') or ()))
        return out
    if option == 'health_check':
        hc = dict(HEALTH_DEFAULTS)
        hc.update(dict(value))
        return {'test': list(hc['command']), 'interval': hc['interval'] * NANO, 'timeout': hc['timeout'] * NANO,
                'retries': hc['retries'], 'start_period': hc['start_period'] * NANO}
    if option == 'log_configuration':
        log = dict(value)
        # secret_options join the config when the run reads them (the apply layer): never their source here.
        return {'type': log['log_driver'], 'config': dict(log.get('options') or ())}
    if isinstance(value, tuple):
        return list(value)
    return value


def edges(c):
    """(other container, option) for each container of the task that `c` needs first: those it links to and
    those whose volumes it takes (the engine resolves both when it creates `c`), and those it depends on."""
    out = [(link.partition(':')[0], 'links') for link in c.links or ()]
    out.extend((dict(v)['source_container'], 'volumes_from') for v in c.volumes_from or ())
    out.extend((dict(d)['container_name'], 'depends_on') for d in c.depends_on or ())
    return out


def needs(c):
    """The containers of the task that must be started before `c`."""
    return [name for name, _option in edges(c)]


def start_order(containers):
    """The task's containers in the order they are made: each after the ones it needs (links, volumes_from,
    depends_on), as ECS's agent orders them; in the order declared otherwise. The references were checked (no
    cycle)."""
    done, out = set(), []
    # The log router starts before the containers that log to it (ECS's agent makes that a START dependency).
    routers = [c.name for c in containers if c.firelens_configuration is not None]

    def visit(c, by_name):
        if c.name in done:
            return
        done.add(c.name)
        logs = dict(c.log_configuration or ()).get('log_driver') == FIRELENS_DRIVER
        for name in needs(c) + (routers if logs else []):
            visit(by_name[name], by_name)
        out.append(c)
    by_name = dict((c.name, c) for c in containers)
    for c in containers:
        visit(c, by_name)
    return tuple(out)


def check_references(containers, field, network_mode, volume_names, ecs=False):
    """The references between a task's containers (links, volumes_from, depends_on) and to its volumes
    (mount_points): each names another container (or a volume) of the task, and none goes round in a cycle."""
    names = set(c.name for c in containers)
    by_name = dict((c.name, c) for c in containers)
    for i, c in enumerate(containers):
        at = _namer('%s[%d]' % (field, i), ecs)
        for j, v in enumerate(c.volumes_from or ()):
            src = dict(v)['source_container']
            if src not in names or src == c.name:
                raise SpecError('%s %r is not another container of the task'
                                % (_member(at, 'volumes_from', j, 'source_container'), src))
        for j, link in enumerate(c.links or ()):
            target = link.partition(':')[0]
            if target not in names or target == c.name:
                raise SpecError('%s[%d] %r does not name another container of the task' % (at('links'), j, link))
        for j, m in enumerate(c.mount_points or ()):
            src = dict(m)['source_volume']
            if src not in volume_names:
                raise SpecError('%s %r is not a volume of the task (volumes: %s)'
                                % (_member(at, 'mount_points', j, 'source_volume'), src,
                                   ', '.join(sorted(volume_names)) or 'none'))
        for j, dep in enumerate(c.depends_on or ()):
            dep = dict(dep)
            other = dep['container_name']
            if other not in names or other == c.name:
                raise SpecError('%s %r is not another container of the task (containers: %s)'
                                % (_member(at, 'depends_on', j, 'container_name'), other,
                                   ', '.join(sorted(names - {c.name})) or 'none'))
            if dep['condition'] in ('COMPLETE', 'SUCCESS') and by_name[other].essential:
                raise SpecError('%s %s: container %s is essential; %s waits for it to exit, and an essential '
                                'container that exits stops the task (declare it essential: false)'
                                % (_member(at, 'depends_on', j, 'condition'), dep['condition'], other,
                                   dep['condition']))
            if dep['condition'] == 'HEALTHY' and by_name[other].health_check is None:
                raise SpecError('%s HEALTHY: container %s has no health check (%s) to pass'
                                % (_member(at, 'depends_on', j, 'condition'), other,
                                   _namer('%s[%d]' % (field, [x.name for x in containers].index(other)),
                                          ecs)('health_check')))
    for i, c in enumerate(containers):
        seen = set()
        todo = [(c.name, [c.name], ())]
        while todo:
            name, path, kinds = todo.pop()
            for other, option in edges(by_name[name]):
                if other == c.name:
                    at = _namer('%s[%d]' % (field, i), ecs)
                    steps = list(zip(path, kinds + (option,)))
                    waits = [who for who, kind in steps if kind == 'depends_on']
                    if waits:
                        k = [x.name for x in containers].index(waits[0])
                        raise SpecError('%s goes round in a cycle (%s): containers that wait for each other never '
                                        'start' % (_namer('%s[%d]' % (field, k), ecs)('depends_on'),
                                                   ' -> '.join(path + [other])))
                    raise SpecError('%s and %s go round in a cycle (%s): each needs the other to exist first'
                                    % (at('links'), at('volumes_from'), ' -> '.join(path + [other])))
                if other not in seen:
                    seen.add(other)
                    todo.append((other, path + [other], kinds + (option,)))


def check_reads_as_role(containers, execution_role_arn, names, role_field):
    """What a container reads from AWS when its task starts (secrets, environment files, log secret options) is
    read as the task's execution role: a task without one is refused, as ECS refuses it."""
    if execution_role_arn:
        return
    for i, c in enumerate(containers):
        for option, member in (('secrets', None), ('environment_files', None), ('log_configuration', 'secret_options'),
                               ('repository_credentials', None)):
            value = getattr(c, option)
            if member is not None:
                value = dict(value or ()).get(member)
            if value:
                raise SpecError('%s: the task has no %s, and what a container reads from AWS when it starts is read as '
                                'the task\'s execution role (as ECS requires)' % (names(i, option, member), role_field))


def namer_of(field, ecs):
    """names(i, option, member=None): the name of a setting of the i-th container of `field` in a message."""
    def names(i, option, member=''):
        return _namer('%s[%d]' % (field, i), ecs)(option, member or '')
    return names


def _member(at, option, index, member):
    """The name of a member of one item of a list setting: containers[0].volumes_from[1].source_container,
    or task_definition.containerDefinitions[0].volumesFrom[1].sourceContainer."""
    whole = at(option, member)
    head = at(option)
    return '%s[%d]%s' % (head, index, whole[len(head):])


def hashable(c):
    """A container's part of the spec hash: the settings of earlier releases always (so that an unchanged
    declaration keeps its hash), the others only when set."""
    doc = {}
    for setting in SETTINGS:
        value = getattr(c, setting.option)
        if setting.core or value not in (None, ()):
            doc[setting.option] = value
    return doc


# --- the module's argument spec and documentation ---------------------------------------------------------

_TYPES = {'name': 'str', 'image': 'str', 'str': 'str', 'int': 'int', 'bool': 'bool', 'strs': 'list', 'ints': 'list',
          'argv': 'raw', 'env': 'dict', 'map': 'dict', 'record': 'dict', 'records': 'list'}


def _spec_of(kind, required=False, default=None, choices=None, sub=()):
    out = {'type': _TYPES[kind]}
    if kind == 'strs':
        out['elements'] = 'str'
    if kind == 'ints':
        out['elements'] = 'int'
    if kind in ('record', 'records'):
        if kind == 'records':
            out['elements'] = 'dict'
        out['options'] = dict((u.option, _spec_of(u.kind, u.required, choices=u.choices)) for u in sub)
    if required:
        out['required'] = True
    if default is not None:
        out['default'] = default
    if choices:
        out['choices'] = list(choices)
    return out


# Options whose names sound like secrets but hold where a secret is read from (names, ARNs), never a value.
NOT_SECRETS = ('secrets', 'secret_options')


def argument_spec():
    """The sub-options of the module's `containers`."""
    out = dict((s.option, _spec_of(s.kind, s.required, s.default, s.choices, s.sub)) for s in SETTINGS)
    for spec in [out] + [v.get('options') or {} for v in out.values()]:
        for name in NOT_SECRETS:
            if name in spec:
                spec[name]['no_log'] = False
    return out


def documentation():
    """The sub-options of the module's `containers`, as ansible-doc takes them (a dict, dumped to YAML)."""
    out = {}
    for s in SETTINGS:
        doc = list(s.doc)
        if s.ecs:
            doc.append('ECS C(%s).' % s.ecs)
        entry = {'description': doc}
        entry.update(_spec_of(s.kind, s.required, s.default, s.choices))
        entry.pop('options', None)
        if s.sub:
            entry['suboptions'] = {}
            for u in s.sub:
                sub = {'description': [u.doc, 'ECS C(%s).' % u.ecs]}
                sub.update(_spec_of(u.kind, u.required, choices=u.choices))
                entry['suboptions'][u.option] = sub
        out[s.option] = entry
    return out
