# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared task networks (awsvpc): validation into a typed spec.

Owns: the rules of an awsvpc declaration (MAC, CIDR, DHCP, gateway, routes, DNS, credential link) and
their messages, for task_netns and for ecs_task's `awsvpc` option alike.
Must not: touch the host. Raises SpecError naming the field.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import hashlib
import ipaddress
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError, NAME_RE

# How long to wait for a hot-plugged ENI to appear on the host (seconds).
ENI_WAIT = 30
HOLDER_IMAGE = 'drover.local/busybox:1'
MAC_RE = re.compile(r'^[0-9a-f]{2}(:[0-9a-f]{2}){5}\Z')
NETNS_KEYS = ('eni_mac', 'address', 'dhcp', 'gateway', 'routes', 'dns_servers', 'credential_link', 'wait_timeout',
              'holder_image')
# The options that only an ENI gives a meaning to: without one, the engine addresses and routes the task's
# namespace on its bridge network, and the task reaches the credentials endpoint as a bridge task does.
ENI_ONLY_KEYS = ('address', 'dhcp', 'gateway', 'routes', 'credential_link', 'wait_timeout')

# `ports`: what the holder publishes on the host, (container_port, host_port, protocol) each; only a
# bridge-backed network (no ENI) publishes any.
NetSpec = collections.namedtuple('NetSpec', (
    'task', 'cluster', 'netns', 'eni_mac', 'address', 'dhcp', 'gateway', 'routes', 'dns_servers',
    'credential_link', 'wait_timeout', 'holder_image', 'ports'))
Route = collections.namedtuple('Route', ('dst', 'gateway'))


# How much of the task's name a network's names show (the digest that follows makes them unique).
NET_TASK_CHARS = 24


def net_id(cluster, task):
    """The short host name of a task's network: the start of the task's name (for people), then a digest of
    cluster and task (for uniqueness: '/' is in no cluster or task name, so no two tasks share one)."""
    digest = hashlib.sha1(('%s/%s' % (cluster, task)).encode('utf-8')).hexdigest()[:10]
    return '%s-%s' % (task[:NET_TASK_CHARS], digest)


def netns_name(cluster, task):
    """The network namespace of a task (cluster and task: its identity), as `ip netns` lists it."""
    return 'drover-%s' % net_id(cluster, task)


def legacy_netns_name(task):
    """The name earlier releases gave a task's namespace (task alone): still found through its holder's
    drover.netns label, and torn down, on hosts that run such a network."""
    return 'drover-%s' % task


def holder_name(cluster, task):
    """The holder container that owns a task's network namespace."""
    return 'drover-netns-%s' % net_id(cluster, task)


def _mac(value, field):
    if not isinstance(value, str) or not MAC_RE.match(value.strip().lower()):
        raise SpecError('%s must be a MAC address like 02:00:c6:12:00:10, got %r' % (field, value))
    mac = value.strip().lower()
    if int(mac[:2], 16) & 1:
        raise SpecError('%s %s is a multicast address, not an interface MAC' % (field, mac))
    return mac


def _cidr(value, field):
    if not isinstance(value, str) or '/' not in value:
        raise SpecError('%s must be an IPv4 address with its prefix length (CIDR, e.g. 198.18.7.2/24), got %r'
                        % (field, value))
    try:
        iface = ipaddress.IPv4Interface(value)
    except ValueError as exc:
        raise SpecError('%s is not a valid IPv4 CIDR: %s' % (field, exc))
    if iface.ip == iface.network.network_address and iface.network.prefixlen < 31:
        raise SpecError('%s %s is the network address of its subnet, not a host address' % (field, value))
    return str(iface)


def _ip(value, field):
    try:
        return str(ipaddress.IPv4Address(value))
    except (ValueError, TypeError):
        raise SpecError('%s must be an IPv4 address, got %r' % (field, value))


def net_spec(raw, task, cluster='default', field='', eni_required=True):
    """An awsvpc declaration (the task_netns module's options, or ecs_task's `awsvpc`). Without `eni_mac`
    (allowed where not `eni_required`): a namespace on the engine's bridge network (see bridge_backed)."""
    prefix = field + '.' if field else ''
    if not isinstance(raw, dict):
        raise SpecError('%s must be a mapping with %s' % (field or 'awsvpc', ', '.join(NETNS_KEYS)))
    unknown = sorted(set(k for k, v in raw.items() if v is not None) - set(NETNS_KEYS))
    if unknown:
        raise SpecError('%shas unsupported keys: %s' % (prefix or 'awsvpc ', ', '.join(unknown)))
    if not isinstance(task, str) or not NAME_RE.match(task or ''):
        raise SpecError('name %r is not a valid task name' % (task,))
    if raw.get('eni_mac') is None and not eni_required:
        return _bridge_spec(raw, task, cluster, prefix)
    if raw.get('eni_mac') is None:
        raise SpecError('%seni_mac is required: the MAC address of the ENI the task network is built around' % prefix)
    mac = _mac(raw['eni_mac'], prefix + 'eni_mac')
    dhcp = bool(raw.get('dhcp'))
    address = raw.get('address')
    if dhcp and address:
        raise SpecError('%sdhcp and %saddress are mutually exclusive: the address comes from DHCP or is declared'
                        % (prefix, prefix))
    if not dhcp and not address:
        raise SpecError('%saddress (a CIDR) or %sdhcp: true is required' % (prefix, prefix))
    address = _cidr(address, prefix + 'address') if address else None
    gateway = _ip(raw['gateway'], prefix + 'gateway') if raw.get('gateway') else None
    if gateway and address and ipaddress.IPv4Address(gateway) not in ipaddress.IPv4Interface(address).network:
        raise SpecError('%sgateway %s is not in the subnet of %saddress %s' % (prefix, gateway, prefix, address))
    routes = []
    for i, item in enumerate(raw.get('routes') or []):
        where = '%sroutes[%d]' % (prefix, i)
        if not isinstance(item, dict) or set(item) - {'dst', 'gateway'} or not item.get('dst'):
            raise SpecError('%s must be a mapping with dst (a CIDR) and gateway' % where)
        try:
            dst = str(ipaddress.IPv4Network(item['dst'], strict=True))
        except ValueError as exc:
            raise SpecError('%s.dst is not a valid IPv4 network: %s' % (where, exc))
        via = _ip(item.get('gateway') or gateway, where + '.gateway') if (item.get('gateway') or gateway) else None
        if via is None:
            raise SpecError('%s.gateway is required (no default gateway declared)' % where)
        routes.append(Route(dst, via))
    dns = tuple(_ip(d, '%sdns_servers[%d]' % (prefix, i)) for i, d in enumerate(raw.get('dns_servers') or []))
    wait = raw.get('wait_timeout')
    wait = ENI_WAIT if wait is None else wait
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0 or wait > 3600:
        raise SpecError('%swait_timeout must be a number of seconds from 0 to 3600, got %r' % (prefix, wait))
    link = raw.get('credential_link')
    holder_image = raw.get('holder_image') or HOLDER_IMAGE
    return NetSpec(task=task, cluster=cluster, netns=netns_name(cluster, task), eni_mac=mac, address=address, dhcp=dhcp,
                   gateway=gateway, routes=tuple(routes), dns_servers=dns,
                   credential_link=True if link is None else bool(link), wait_timeout=wait,
                   holder_image=holder_image, ports=())


def _bridge_spec(raw, task, cluster, prefix):
    """An awsvpc network with no ENI: the holder is on the engine's default bridge network, which addresses
    and routes it; every option that only an ENI gives a meaning to is refused by name."""
    for key in ENI_ONLY_KEYS:
        if raw.get(key) is not None and raw.get(key) != []:
            raise SpecError('%s%s needs %seni_mac: without an ENI the task\'s namespace is on the engine\'s bridge '
                            'network, which addresses and routes it (%s only apply to an ENI)'
                            % (prefix, key, prefix, ', '.join(ENI_ONLY_KEYS)))
    dns = tuple(_ip(d, '%sdns_servers[%d]' % (prefix, i)) for i, d in enumerate(raw.get('dns_servers') or []))
    return NetSpec(task=task, cluster=cluster, netns=netns_name(cluster, task), eni_mac=None, address=None,
                   dhcp=False, gateway=None, routes=(), dns_servers=dns, credential_link=False, wait_timeout=None,
                   holder_image=raw.get('holder_image') or HOLDER_IMAGE, ports=())


def bridge_backed(spec):
    """Whether a task network is held on the engine's bridge network (no ENI declared)."""
    return spec is not None and spec.eni_mac is None


def hashable(spec):
    """What of a net spec makes a task's run: a change replaces the task."""
    if spec is None:
        return None
    doc = spec._asdict()
    # The published ports are the containers' port mappings, already in the task's hash.
    for key in ('wait_timeout', 'task', 'cluster', 'ports'):
        doc.pop(key)
    # The namespace's name follows from cluster and task, the run's identity: the hash keeps the name it has
    # always carried, so that a run made before names held the cluster is not replaced for it.
    doc['netns'] = legacy_netns_name(spec.task)
    doc['routes'] = [list(r) for r in spec.routes]
    doc['dns_servers'] = list(spec.dns_servers)
    if bridge_backed(spec):
        doc['backing'] = 'bridge'          # an ENI network's document has no such key: its hash is unchanged
    return doc
