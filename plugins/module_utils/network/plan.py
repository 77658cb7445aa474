# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The task-network decider: which steps bring a task's netns to its declaration, or tear it down.

Owns: the order of the steps (holder, attach, ENI, addressing, credential link and its filter, DNS; and
the reverse for teardown), and the allocation of credential-link /30s out of 169.254.0.0/16.
Must not: do any I/O. Input: the declaration and what the host shows (gathered by the applier).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import ipaddress

LINK_POOL = ipaddress.IPv4Network('169.254.0.0/16')
# Never hand out the credentials endpoint's /24, the instance metadata /24, or the pool's first /24.
LINK_RESERVED = (ipaddress.IPv4Network('169.254.0.0/24'), ipaddress.IPv4Network('169.254.169.0/24'),
                 ipaddress.IPv4Network('169.254.170.0/24'), ipaddress.IPv4Network('169.254.255.0/24'))
ENDPOINT = '169.254.170.2'


class PoolExhausted(Exception):
    pass


def host_ifname(netns):
    """The host side of a netns's credential link: short (IFNAMSIZ is 16) and the same on every pass."""
    return 'dv%s' % hashlib.sha1(netns.encode('utf-8')).hexdigest()[:10]


def link_ips(subnet):
    """(host side, task side) of a credential-link /30."""
    net = ipaddress.IPv4Network(subnet)
    return str(net.network_address + 1), str(net.network_address + 2)


def subnet_of(task_ip):
    return str(ipaddress.IPv4Interface('%s/30' % task_ip).network)


def registered_subnets(credentials):
    """The /30s that credential registrations name an address in: never handed to another task while one
    does (a task given such a /30 would be answered with that registration's credentials)."""
    out = set()
    for row in credentials:
        source = row.get('source_ip')
        try:
            if source and ipaddress.IPv4Address(source) in LINK_POOL:
                out.add(subnet_of(source))
        except ValueError:
            continue
    return out


def allocate(allocations, netns, in_use=()):
    """The /30 for `netns`: the one it holds, else the lowest free one. `allocations`: {netns: subnet};
    `in_use`: subnets the host's links already carry (another store's, or one lost with a store), and those
    a credential registration still names."""
    if netns in allocations:
        return allocations[netns]
    used = set(allocations.values()) | set(in_use)
    for net in LINK_POOL.subnets(new_prefix=30):
        if any(net.subnet_of(r) for r in LINK_RESERVED):
            continue
        if str(net) not in used:
            return str(net)
    raise PoolExhausted('no free /30 left in %s for the credential link of %s' % (LINK_POOL, netns))


def plan_present(spec, seen, allocations):
    """Steps to build or repair the netns of `spec`. `seen`: holder (dict or None), attached (bool),
    eni ('ns', 'host' or None), interfaces/routes in the netns, host_link (bool), resolv (list)."""
    steps = []
    holder = seen.get('holder')
    if holder is None or holder.get('state') != 'running':
        steps.append('holder')
    if 'holder' in steps or not seen.get('attached'):
        steps.append('attach')
    fresh = 'attach' in steps
    routes = set((r['dst'], r['gateway']) for r in seen.get('routes') or [])
    # Without an ENI (a holder on the engine's bridge network), the engine addresses and routes the namespace.
    if spec.eni_mac is not None:
        if fresh or seen.get('eni') != 'ns':
            steps.append('eni')
        by_mac = dict((i['mac'], i) for i in seen.get('interfaces') or [])
        eni = by_mac.get(spec.eni_mac)
        lo = [i for i in seen.get('interfaces') or [] if i['name'] == 'lo']
        wanted_routes = set((r.dst, r.gateway) for r in spec.routes)
        if spec.gateway:
            wanted_routes.add(('0.0.0.0/0', spec.gateway))
        if 'eni' in steps or eni is None or not eni['up'] or not (lo and lo[0]['up']) \
                or (spec.address and spec.address not in eni['addresses']) \
                or (spec.dhcp and not eni['addresses']) or not wanted_routes <= routes:
            steps.append('configure')
    subnet = None
    if spec.credential_link:
        subnet = allocations.get(spec.netns) or seen.get('link_subnet')
        if subnet is None or allocations.get(spec.netns) != subnet:
            steps.append('allocate')
        task_ip = link_ips(subnet)[1] if subnet else None
        cred = [i for i in seen.get('interfaces') or [] if task_ip and '%s/30' % task_ip in i['addresses']]
        if fresh or not seen.get('host_link') or not cred or (ENDPOINT + '/32', link_ips(subnet)[0]) not in routes:
            steps.append('link')
        if 'link' in steps or not seen.get('guarded'):
            steps.append('guard')
    else:
        if seen.get('host_link'):
            steps.append('unlink')
        if seen.get('guard_rules'):
            steps.append('unguard')
        if spec.netns in allocations:
            steps.append('free')
    # With DHCP and no declared servers, the lease's servers stand.
    managed_dns = bool(spec.dns_servers) or not spec.dhcp
    if managed_dns and list(spec.dns_servers) != list(seen.get('resolv') or []):
        steps.append('resolv')
    return steps


def plan_absent(seen, allocated):
    """Steps to tear a netns down: the ENI goes back first, the netns last."""
    steps = []
    if seen.get('eni') == 'ns':
        steps.append('eni_back')
    if seen.get('host_link'):
        steps.append('unlink')
    if seen.get('guard_rules'):
        steps.append('unguard')
    if seen.get('holder') is not None:
        steps.append('holder_remove')
    if seen.get('netns_exists'):
        steps.append('netns_remove')
    if allocated:
        steps.append('free')
    if seen.get('resolv'):
        steps.append('resolv_remove')
    return steps
