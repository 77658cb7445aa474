# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The netlink / network-namespace adapter: the only place that talks to the kernel's networking.

Owns: finding an interface by MAC, attaching a process's netns under /run/netns, moving links between
namespaces, addresses, routes, the credential veth pair and its filter (iptables rules that let it carry
traffic to and from the credentials endpoint only), DHCP through udhcpc run inside the netns,
and /etc/netns/<netns>/resolv.conf. Namespaces are always opened with flags=0, so probing never creates
one. Errors are wrapped in NetError with what was being done.
Must not: decide anything or read the store.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import importlib.util


class _PyRoute2:
    """pyroute2, imported on first use: a converge without an awsvpc task never pays for it."""

    def __getattr__(self, name):
        from pyroute2 import IPRoute, NetNS, netns  # pylint: disable=import-outside-toplevel
        from pyroute2.netlink.exceptions import NetlinkError  # pylint: disable=import-outside-toplevel
        self.__dict__.update(IPRoute=IPRoute, NetNS=NetNS, netns=netns, NetlinkError=NetlinkError)
        return self.__dict__[name]


pr = _PyRoute2()
HAS_PYROUTE2 = importlib.util.find_spec('pyroute2') is not None
PYROUTE2_IMPORT_ERROR = None if HAS_PYROUTE2 else 'No module named pyroute2'

NETNS_DIR = '/run/netns'
ETC_NETNS = '/etc/netns'
# The task side of the credential link, inside the task's netns.
CRED_IFNAME = 'drover-cred'
# The host side of a credential link (see network.plan.host_ifname): what the filter's rules are keyed to.
HOST_IFNAME_RE = re.compile(r'^dv[0-9a-f]{10}\Z')
# The ports of the credentials endpoint a task may reach over its link: 80, and the port the service listens
# on (its --port, 51679 by default), to which the nat table sends port 80.
ENDPOINT_PORTS = (80, 51679)
# How long iptables waits for the xtables lock (Docker's engine takes it too).
XTABLES_WAIT = '10'


class NetError(Exception):
    pass


def _attr(msg, name):
    return msg.get_attr(name)


def netns_path(name):
    return os.path.join(NETNS_DIR, name)


def netns_exists(name):
    return os.path.exists(netns_path(name))


def _ns_inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def attached_to(name, pid):
    """Whether /run/netns/<name> is the network namespace of process `pid`."""
    mine = _ns_inode(netns_path(name))
    return mine is not None and pid and mine == _ns_inode('/proc/%d/ns/net' % pid)


def attach(name, pid):
    try:
        if os.path.exists(netns_path(name)):
            pr.netns.remove(name)
        pr.netns.attach(name, pid)
    except OSError as exc:
        raise NetError('attach netns %s to pid %s: %s' % (name, pid, exc))


def remove_netns(name):
    if not netns_exists(name):
        return False
    try:
        pr.netns.remove(name)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise NetError('remove netns %s: %s' % (name, exc))
    return True


def _open(name=None):
    if name is None:
        return pr.IPRoute()
    if not netns_exists(name):
        raise NetError('netns %s does not exist' % name)
    return pr.NetNS(name, flags=0)


def find_mac(mac, name=None):
    """(index, ifname) of the link with this MAC in the host (name None) or in netns `name`; None if absent."""
    if name is not None and not netns_exists(name):
        return None
    with _open(name) as ipr:
        for link in ipr.get_links():
            if (_attr(link, 'IFLA_ADDRESS') or '').lower() == mac:
                return link['index'], _attr(link, 'IFLA_IFNAME')
    return None


def wait_mac(mac, timeout, sleep=time.sleep, clock=time.monotonic):
    """Wait for a hot-plugged interface to appear on the host; its (index, ifname)."""
    deadline = clock() + timeout
    while True:
        found = find_mac(mac)
        if found:
            return found
        if clock() >= deadline:
            raise NetError('nic with mac %s not found within %ds' % (mac, int(timeout)))
        sleep(0.1)


IFF_LOOPBACK = 0x8
RT_SCOPE_UNIVERSE = 0
MAIN_TABLE = 254


def host_use(index):
    """Why the host's link `index` is the host's own and must stay where it is (None when it is not): the
    loopback, a bridge or a bond or a port of one, the link another interface of the host is made on (a VLAN,
    macvlan, ipvlan), a link that holds an address of the host's (a global one) or carries its default route. A
    hot-plugged ENI is none of these until it is configured (a host that configures one as it appears, as
    amazon-ec2-net-utils does, must leave task ENIs alone, as ECS requires). Raises NetError."""
    try:
        return _host_use(index)
    except pr.NetlinkError as exc:
        raise NetError('look at interface %s: %s' % (index, exc))


def _host_use(index):
    with pr.IPRoute() as ipr:
        every = ipr.get_links()
        links = [x for x in every if x['index'] == index]
        if not links:
            return None
        link = links[0]
        # IFLA_LINK of a link whose other end is in another namespace (a veth) is an index there, not here.
        above = [_attr(x, 'IFLA_IFNAME') for x in every if x['index'] != index and _attr(x, 'IFLA_LINK') == index
                 and _attr(x, 'IFLA_LINK_NETNSID') is None]
        if above:
            return 'the host\'s interface %s is made on it (a VLAN, macvlan or ipvlan)' % above[0]
        if link['flags'] & IFF_LOOPBACK:
            return 'it is the host\'s loopback interface'
        if _attr(link, 'IFLA_MASTER'):
            return 'it is a port of another interface of the host (a bridge or a bond)'
        info = _attr(link, 'IFLA_LINKINFO')
        kind = info.get_attr('IFLA_INFO_KIND') if info is not None else None
        if kind in ('bridge', 'bond', 'team'):
            return 'it is a %s of the host' % kind
        held = [_attr(a, 'IFA_ADDRESS') for a in ipr.get_addr(index=index) if a['scope'] == RT_SCOPE_UNIVERSE]
        if held:
            return 'it holds the host\'s address %s' % held[0]
        for family in (2, 10):
            for route in ipr.get_routes(family=family, table=MAIN_TABLE):
                if route['dst_len'] == 0 and _attr(route, 'RTA_OIF') == index:
                    return 'the host\'s default route goes through it'
    return None


def move_to_netns(index, name):
    try:
        with pr.IPRoute() as ipr:
            ipr.link('set', index=index, state='down')
            ipr.link('set', index=index, net_ns_fd=name)
    except pr.NetlinkError as exc:
        raise NetError('move interface %s into netns %s: %s' % (index, name, exc))


def return_to_host(mac, name):
    """Move the interface with `mac` out of netns `name` back to this process's netns, down."""
    found = find_mac(mac, name)
    if not found:
        return False
    fd = os.open('/proc/self/ns/net', os.O_RDONLY)
    try:
        with _open(name) as ns:
            ns.link('set', index=found[0], state='down')
            ns.flush_addr(index=found[0])
            ns.link('set', index=found[0], net_ns_fd=fd)
    except pr.NetlinkError as exc:
        raise NetError('return interface %s to the host: %s' % (mac, exc))
    finally:
        os.close(fd)
    return True


def describe(name):
    """The interfaces of netns `name`: [{name, mac, addresses (CIDRs), up}], and its routes."""
    out = []
    routes = []
    if not netns_exists(name):
        return out, routes
    with _open(name) as ns:
        addrs = {}
        for addr in ns.get_addr(family=2):
            addrs.setdefault(addr['index'], []).append('%s/%d' % (_attr(addr, 'IFA_ADDRESS'), addr['prefixlen']))
        for link in ns.get_links():
            out.append({'name': _attr(link, 'IFLA_IFNAME'), 'mac': (_attr(link, 'IFLA_ADDRESS') or '').lower(),
                        'addresses': sorted(addrs.get(link['index'], [])),
                        'up': bool(link['flags'] & 1), 'index': link['index']})
        for route in ns.get_routes(family=2, table=254):
            dst = _attr(route, 'RTA_DST')
            routes.append({'dst': '%s/%d' % (dst, route['dst_len']) if dst else '0.0.0.0/0',
                           'gateway': _attr(route, 'RTA_GATEWAY')})
    return out, routes


def configure(name, mac, address, gateway, routes):
    """lo and the ENI up, the address on the ENI, the default route and the declared routes (each only
    when missing)."""
    try:
        with _open(name) as ns:
            lo = ns.link_lookup(ifname='lo')[0]
            ns.link('set', index=lo, state='up')
            index = ns.link_lookup(address=mac)[0]
            ns.link('set', index=index, state='up')
            if address:
                ip, prefix = address.split('/')
                have = ['%s/%d' % (_attr(a, 'IFA_ADDRESS'), a['prefixlen']) for a in ns.get_addr(index=index, family=2)]
                if address not in have:
                    ns.addr('add', index=index, address=ip, prefixlen=int(prefix))
            wanted = []
            if gateway:
                wanted.append(('0.0.0.0/0', gateway))
            wanted.extend(routes)
            for dst, via in wanted:
                ns.route('replace', dst=dst, gateway=via)
    except (pr.NetlinkError, IndexError) as exc:
        raise NetError('configure netns %s: %s' % (name, exc))


def add_credential_link(name, host_ifname, host_ip, task_ip, endpoint='169.254.170.2'):
    """A veth pair: `host_ifname` with host_ip/30 on the host, CRED_IFNAME with task_ip/30 in the netns,
    and a route in the netns to the endpoint via the host side."""
    try:
        with pr.IPRoute() as ipr:
            if not ipr.link_lookup(ifname=host_ifname):
                ipr.link('add', ifname=host_ifname, kind='veth', peer={'ifname': CRED_IFNAME, 'net_ns_fd': name})
            index = ipr.link_lookup(ifname=host_ifname)[0]
            have = ['%s' % _attr(a, 'IFA_ADDRESS') for a in ipr.get_addr(index=index, family=2)]
            if host_ip not in have:
                ipr.addr('add', index=index, address=host_ip, prefixlen=30)
            ipr.link('set', index=index, state='up')
        with _open(name) as ns:
            index = ns.link_lookup(ifname=CRED_IFNAME)[0]
            have = ['%s' % _attr(a, 'IFA_ADDRESS') for a in ns.get_addr(index=index, family=2)]
            if task_ip not in have:
                ns.addr('add', index=index, address=task_ip, prefixlen=30)
            ns.link('set', index=index, state='up')
            ns.route('replace', dst='%s/32' % endpoint, gateway=host_ip)
    except (pr.NetlinkError, IndexError) as exc:
        raise NetError('credential link of netns %s: %s' % (name, exc))


def delete_link(ifname):
    with pr.IPRoute() as ipr:
        found = ipr.link_lookup(ifname=ifname)
        if not found:
            return False
        try:
            ipr.link('del', index=found[0])
        except pr.NetlinkError as exc:
            raise NetError('delete interface %s: %s' % (ifname, exc))
    return True


# --- the credential link's filter ------------------------------------------------------------------------
#
# The link must carry traffic to and from the credentials endpoint only: without a filter, the host routes
# between the link and every other network it has (a container on a Docker bridge reaches a service in an
# awsvpc task at its link address; the task reaches any host service listening on all addresses). Rules,
# keyed to the host side's name, in the filter table:
# - INPUT (Docker never touches it): from the link, TCP to the endpoint's ports, and replies to what the
#   host opened, are accepted; all else from the link is dropped.
# - FORWARD, and DOCKER-USER where the engine made it: nothing is routed from or to the link. Docker inserts
#   its own rules at the top of FORWARD when it starts, DOCKER-USER first of all, and never edits
#   DOCKER-USER: the rules there stay ahead of the engine's ACCEPTs; those in FORWARD hold without an engine.
# IPv6 is off on the host side (its link-local address would reach host services listening on '::').

def guard_rules(ifname, endpoint='169.254.170.2', ports=ENDPOINT_PORTS):
    """{chain: [rule, ...]} of the link's filter, each rule as `iptables -S` prints it (after `-A <chain>`),
    in chain order."""
    accept = [['-d', '%s/32' % endpoint, '-i', ifname, '-p', 'tcp', '-m', 'tcp', '--dport', str(port), '-j', 'ACCEPT']
              for port in ports]
    accept.append(['-i', ifname, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'])
    accept.append(['-i', ifname, '-j', 'DROP'])
    routed = [['-i', ifname, '-j', 'DROP'], ['-o', ifname, '-j', 'DROP']]
    return {'INPUT': accept, 'FORWARD': routed, 'DOCKER-USER': routed}


def _iptables(args, check=True):
    try:
        proc = subprocess.run(['iptables', '-w', XTABLES_WAIT] + list(args), capture_output=True, text=True,
                              timeout=60, check=False)
    except OSError as exc:
        raise NetError('the credential link filter needs iptables on the host: %s' % exc)
    except subprocess.TimeoutExpired:
        raise NetError('iptables %s did not finish within 60 s' % ' '.join(args[:2]))
    if check and proc.returncode != 0:
        raise NetError('iptables %s: %s' % (' '.join(args), (proc.stderr or proc.stdout).strip()[-300:]))
    return proc


def filter_rules():
    """The filter table as [(chain, [rule args])] plus the set of its chains (one `iptables -S`); None when
    the host has no iptables."""
    try:
        proc = _iptables(['-S'], check=False)
    except NetError:
        return None
    if proc.returncode != 0:
        return None
    rules, chains = [], set()
    for line in proc.stdout.splitlines():
        words = shlex.split(line)
        if len(words) >= 2 and words[0] in ('-P', '-N'):
            chains.add(words[1])
        elif len(words) >= 2 and words[0] == '-A':
            rules.append((words[1], words[2:]))
    return rules, chains


def _names(rule):
    """The interfaces a rule names with -i or -o."""
    return set(rule[i + 1] for i, word in enumerate(rule[:-1]) if word in ('-i', '-o'))


def _ipv6_path(ifname):
    return '/proc/sys/net/ipv6/conf/%s/disable_ipv6' % ifname


def link_guarded(ifname, listing, endpoint='169.254.170.2'):
    """Whether the filter of link `ifname` is whole, in order, in every chain it belongs in (and IPv6 off on
    the link, where the host has IPv6). `listing`: what filter_rules() returned."""
    if listing is None:
        return False
    rules, chains = listing
    for chain, wanted in guard_rules(ifname, endpoint).items():
        if chain not in chains:
            continue
        if [r for c, r in rules if c == chain and ifname in _names(r)] != wanted:
            return False
    try:
        with open(_ipv6_path(ifname)) as handle:
            return handle.read().strip() == '1'
    except IOError:
        return not os.path.isdir('/proc/sys/net/ipv6/conf') or not host_link_exists(ifname)


def link_guard_present(ifname, listing):
    """Whether any filter rule names link `ifname`."""
    return bool(listing) and any(ifname in _names(r) for c, r in listing[0])


def add_link_guard(ifname, endpoint='169.254.170.2'):
    """Make the filter of link `ifname` whole: a chain whose rules for the link are not exactly the wanted
    ones, in order, loses them and gets the wanted ones at its top (a chain already right is left alone)."""
    listing = filter_rules()
    if listing is None:
        raise NetError('the credential link filter needs iptables on the host (Debian package iptables)')
    rules, chains = listing
    for chain, wanted in guard_rules(ifname, endpoint).items():
        if chain not in chains:
            continue
        have = [r for c, r in rules if c == chain and ifname in _names(r)]
        if have == wanted:
            continue
        for rule in have:
            _iptables(['-D', chain] + rule, check=False)
        for rule in reversed(wanted):
            if _iptables(['-C', chain] + rule, check=False).returncode != 0:
                _iptables(['-I', chain, '1'] + rule)
    try:
        with open(_ipv6_path(ifname), 'w') as handle:
            handle.write('1\n')
    except IOError as exc:
        if os.path.isdir('/proc/sys/net/ipv6/conf') and host_link_exists(ifname):
            raise NetError('turn IPv6 off on the credential link %s: %s' % (ifname, exc))


def remove_link_guard(ifname, listing=None):
    """Remove every filter rule that names link `ifname`; True when there was one."""
    listing = listing if listing is not None else filter_rules()
    if not listing:
        return False
    found = False
    for chain, rule in listing[0]:
        if ifname in _names(rule):
            _iptables(['-D', chain] + rule, check=False)
            found = True
    return found


def orphan_guards(listing):
    """Host sides of credential links named by filter rules but no longer on the host (the link went with
    its namespace, or a teardown was cut short)."""
    if not listing:
        return []
    named = set()
    for chain, rule in listing[0]:
        named |= set(n for n in _names(rule) if HOST_IFNAME_RE.match(n))
    return sorted(n for n in named if not host_link_exists(n))


def host_link_subnets(pool='169.254.'):
    """The /30 subnets of link-local addresses on the host's links (credential links of any store)."""
    out = set()
    with pr.IPRoute() as ipr:
        for addr in ipr.get_addr(family=2):
            ip = _attr(addr, 'IFA_ADDRESS') or ''
            if ip.startswith(pool) and addr['prefixlen'] == 30:
                parts = [int(x) for x in ip.split('.')]
                parts[3] &= 0xfc
                out.add('%d.%d.%d.%d/30' % tuple(parts))
    return out


def host_link_exists(ifname):
    with pr.IPRoute() as ipr:
        return bool(ipr.link_lookup(ifname=ifname))


def write_resolv(name, servers):
    """/etc/netns/<name>/resolv.conf with `servers` (what `ip netns exec` shows as /etc/resolv.conf)."""
    directory = os.path.join(ETC_NETNS, name)
    path = os.path.join(directory, 'resolv.conf')
    text = ''.join('nameserver %s\n' % s for s in servers)
    try:
        with open(path) as handle:
            if handle.read() == text:
                return False
    except IOError:
        pass
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755, exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    return True


def read_resolv(name):
    try:
        with open(os.path.join(ETC_NETNS, name, 'resolv.conf')) as handle:
            return [line.split()[1] for line in handle if line.startswith('nameserver ') and len(line.split()) > 1]
    except IOError:
        return []


def remove_resolv(name):
    directory = os.path.join(ETC_NETNS, name)
    if os.path.isdir(directory):
        shutil.rmtree(directory)
        return True
    return False


_DHCP_SCRIPT = '''#!/bin/sh
# Called by udhcpc: write the lease where drover reads it; drover configures the interface itself.
case "$1" in
  bound|renew) printf 'ip=%s\\nmask=%s\\nrouter=%s\\ndns=%s\\nlease=%s\\n' "$ip" "$mask" "$router" "$dns" "$lease" > "$DROVER_LEASE" ;;
esac
exit 0
'''


def _udhcpc():
    for candidate in ('udhcpc', 'busybox'):
        path = shutil.which(candidate)
        if path:
            return [path] if candidate == 'udhcpc' else [path, 'udhcpc']
    raise NetError('DHCP needs udhcpc (Debian package busybox or busybox-static) on the host')


def dhcp_lease(name, ifname, timeout=10):
    """Ask for a lease on `ifname` inside netns `name` with udhcpc; returns {ip, prefix, router, dns}."""
    tmp = tempfile.mkdtemp(prefix='drover-dhcp-')
    try:
        script = os.path.join(tmp, 'lease.sh')
        lease = os.path.join(tmp, 'lease')
        with open(script, 'w') as handle:
            handle.write(_DHCP_SCRIPT)
        os.chmod(script, 0o700)
        tries = max(1, int(timeout))
        cmd = ['ip', 'netns', 'exec', name] + _udhcpc()
        cmd += ['-i', ifname, '-f', '-q', '-n', '-t', str(tries), '-T', '1', '-s', script]
        env = dict(os.environ, DROVER_LEASE=lease)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout + 15, check=False)
        if proc.returncode != 0 or not os.path.exists(lease):
            raise NetError('no DHCP lease on %s within %ss (%s)' % (ifname, timeout, (proc.stderr or proc.stdout).strip()[-300:]))
        values = {}
        with open(lease) as handle:
            for line in handle:
                key, _sep, val = line.strip().partition('=')
                values[key] = val
        mask = values.get('mask') or '24'
        prefix = int(mask) if mask.isdigit() else sum(bin(int(o)).count('1') for o in mask.split('.'))
        return {'ip': values.get('ip'), 'prefix': prefix, 'router': (values.get('router') or '').split(' ')[0] or None,
                'dns': [d for d in (values.get('dns') or '').split(' ') if d]}
    except subprocess.TimeoutExpired:
        raise NetError('DHCP on %s did not finish within %ss' % (ifname, timeout + 15))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
