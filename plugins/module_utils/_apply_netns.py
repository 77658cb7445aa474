# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task networks: observe, plan, apply — shared by task_netns and ecs_task's awsvpc tasks.

Owns: gathering what the host shows of a task's netns (holder, namespace, ENI, links, DNS, the /30
allocation), carrying out the decider's steps in order, and rolling a fresh build back when a step fails.
Must not: decide which steps (the decider does) or talk to netlink or Docker other than through adapters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.drover.fleet.plugins.module_utils import _netns as net
from ansible_collections.drover.fleet.plugins.module_utils import _plan_netns as plan
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils._host import TaskFailure, open_host
from ansible_collections.drover.fleet.plugins.module_utils._netns_spec import NETNS_KEYS, holder_name, net_spec, netns_name
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError, check_name

HOLDER_ROLE = 'netns-holder'
HOLDER_COMMAND = ('sleep', '2147483647')
# The holder only sleeps; it never needs raw sockets (a task's containers have their own capabilities).
HOLDER_CAP_DROP = ('NET_RAW',)


def holder_labels(spec):
    return {'drover.role': HOLDER_ROLE, 'drover.task': spec.task, 'drover.cluster': spec.cluster,
            'drover.eni-mac': spec.eni_mac, 'drover.netns': spec.netns}


class TaskNetwork:
    """Builds and tears down task netns on one host; `holders` is the pass's one listing of holders."""

    def __init__(self, engine, store, check_mode, holders, clock=time.time):
        self.engine = engine
        self.store = store
        self.check_mode = check_mode
        self.clock = clock
        self.holders = dict((h['labels'].get('drover.task'), h) for h in holders)
        self._allocations = None

    def allocations(self):
        if self._allocations is None:
            self._allocations = self.store.link_allocations()
        return self._allocations

    def observe(self, task, mac):
        name = netns_name(task)
        holder = self.holders.get(task)
        seen = {'holder': holder, 'netns_exists': net.netns_exists(name), 'attached': False, 'eni': None,
                'interfaces': [], 'routes': [], 'host_link': net.host_link_exists(plan.host_ifname(name)),
                'resolv': net.read_resolv(name), 'link_subnet': None}
        if holder is not None and holder.get('state') == 'running':
            state = self.engine.inspect(holder['id']) or {}
            holder['pid'] = state.get('pid')
            seen['attached'] = bool(net.attached_to(name, holder['pid']))
        if seen['netns_exists']:
            seen['interfaces'], seen['routes'] = net.describe(name)
        if mac:
            if any(i['mac'] == mac for i in seen['interfaces']):
                seen['eni'] = 'ns'
            elif net.find_mac(mac):
                seen['eni'] = 'host'
        for iface in seen['interfaces']:
            if iface['name'] == net.CRED_IFNAME:
                for cidr in iface['addresses']:
                    if cidr.endswith('/30'):
                        seen['link_subnet'] = plan.subnet_of(cidr.split('/')[0])
        return seen

    def view(self, spec_or_task, seen):
        name = netns_name(spec_or_task) if isinstance(spec_or_task, str) else spec_or_task.netns
        subnet = self.allocations().get(name) or seen.get('link_subnet')
        host_ip, task_ip = plan.link_ips(subnet) if subnet and seen.get('host_link') else (None, None)
        holder = seen.get('holder')
        return {
            'name': name,
            'path': net.netns_path(name) if seen.get('netns_exists') else None,
            'holder_id': holder['id'] if holder else None,
            'interfaces': [dict((k, i[k]) for k in ('name', 'mac', 'addresses')) for i in seen.get('interfaces') or []],
            'credential_link': {'host_ip': host_ip, 'task_ip': task_ip} if host_ip else None,
            'dns_servers': list(seen.get('resolv') or []),
        }

    # --- present ---------------------------------------------------------------------------------

    def present(self, spec, seen=None):
        """Build or repair the netns; returns (steps done or planned, view). Raises NetError/EngineError;
        a failed fresh build leaves nothing behind."""
        seen = seen or self.observe(spec.task, spec.eni_mac)
        steps = plan.plan_present(spec, seen, self.allocations())
        if self.check_mode or not steps:
            return steps, self.view(spec, seen)
        fresh = not seen['netns_exists'] and seen['holder'] is None
        try:
            self._build(spec, seen, steps)
        except (net.NetError, EngineError, plan.PoolExhausted):
            if fresh:
                self.absent(spec.task, spec.eni_mac, spec.cluster)
            raise
        return steps, self.view(spec, self.observe(spec.task, spec.eni_mac))

    def _build(self, spec, seen, steps):
        now = self.clock()
        holder = seen['holder']
        if 'holder' in steps:
            if seen['eni'] == 'ns':
                net.return_to_host(spec.eni_mac, spec.netns)     # never let the ENI die with an old netns
            if holder is not None:
                self.engine.remove(holder['id'])
            if not self.engine.image_present(spec.holder_image):
                self.engine.pull(spec.holder_image)
            cid = self.engine.create(holder_name(spec.task), spec.holder_image, holder_labels(spec),
                                     command=HOLDER_COMMAND, network_mode='none', dns=spec.dns_servers,
                                     cap_drop=HOLDER_CAP_DROP)
            self.engine.start(cid)
            holder = {'id': cid, 'state': 'running', 'labels': holder_labels(spec),
                      'pid': (self.engine.inspect(cid) or {}).get('pid')}
            self.holders[spec.task] = holder
        if 'attach' in steps:
            if not holder.get('pid'):
                raise net.NetError('holder container %s has no process' % holder['id'][:12])
            net.attach(spec.netns, holder['pid'])
        if 'eni' in steps:
            found = net.find_mac(spec.eni_mac) or net.wait_mac(spec.eni_mac, spec.wait_timeout)
            net.move_to_netns(found[0], spec.netns)
        if 'configure' in steps:
            address, gateway = spec.address, spec.gateway
            if spec.dhcp:
                have = [i for i in net.describe(spec.netns)[0] if i['mac'] == spec.eni_mac and i['addresses']]
                if not have:
                    net.configure(spec.netns, spec.eni_mac, None, None, ())
                    ifname = net.find_mac(spec.eni_mac, spec.netns)[1]
                    lease = net.dhcp_lease(spec.netns, ifname, timeout=max(5, int(spec.wait_timeout)))
                    address = '%s/%d' % (lease['ip'], lease['prefix'])
                    gateway = gateway or lease['router']
                    if not spec.dns_servers and lease['dns']:
                        net.write_resolv(spec.netns, lease['dns'])
            net.configure(spec.netns, spec.eni_mac, address, gateway, spec.routes)
        if 'allocate' in steps:
            allocations = self.allocations()
            subnet = seen.get('link_subnet') if seen.get('link_subnet') not in \
                [v for k, v in allocations.items() if k != spec.netns] else None
            subnet = subnet or plan.allocate(allocations, spec.netns, net.host_link_subnets())
            self.store.put_link_allocation(spec.netns, subnet, now)
            allocations[spec.netns] = subnet
        if 'link' in steps:
            host_ip, task_ip = plan.link_ips(self.allocations()[spec.netns])
            net.add_credential_link(spec.netns, plan.host_ifname(spec.netns), host_ip, task_ip, plan.ENDPOINT)
        if 'unlink' in steps:
            net.delete_link(plan.host_ifname(spec.netns))
        if 'free' in steps:
            self.store.delete_link_allocation(spec.netns)
            self.allocations().pop(spec.netns, None)
        if 'resolv' in steps:
            if spec.dns_servers:
                net.write_resolv(spec.netns, spec.dns_servers)
            else:
                net.remove_resolv(spec.netns)

    # --- absent ----------------------------------------------------------------------------------

    def absent(self, task, mac=None, cluster=None):
        """Tear down the netns of `task`: the ENI back to the host, the link, the holder, the netns, the
        /30. `mac` defaults to the holder's drover.eni-mac label. Returns the steps done or planned."""
        holder = self.holders.get(task)
        if mac is None and holder is not None:
            mac = holder['labels'].get('drover.eni-mac')
        name = netns_name(task)
        seen = self.observe(task, mac)
        steps = plan.plan_absent(seen, name in self.allocations())
        if self.check_mode:
            return steps
        if 'eni_back' in steps:
            net.return_to_host(mac, name)
        if 'unlink' in steps:
            net.delete_link(plan.host_ifname(name))
        if 'holder_remove' in steps:
            self.engine.remove(seen['holder']['id'])
            self.holders.pop(task, None)
        if 'netns_remove' in steps:
            net.remove_netns(name)
        if 'free' in steps:
            self.store.delete_link_allocation(name)
            self.allocations().pop(name, None)
        if 'resolv_remove' in steps:
            net.remove_resolv(name)
        return steps


def converge(params, check_mode=False, diff=False):
    """The task_netns module's one call. Returns the result dict; raises TaskFailure."""
    state = params.get('state') or 'present'
    try:
        task = check_name(params.get('name'), 'name')
        cluster = check_name(params.get('cluster') or 'default', 'cluster')
        spec = net_spec(dict((k, params.get(k)) for k in NETNS_KEYS), task, cluster) if state == 'present' else None
    except SpecError as exc:
        raise TaskFailure(str(exc))
    engine, store, lock = open_host(params, check_mode)
    try:
        holders = engine.list_role(HOLDER_ROLE)
        other = [h for h in holders if h['labels'].get('drover.task') == task
                 and h['labels'].get('drover.cluster') != cluster]
        if other:
            raise TaskFailure('the netns of task %s belongs to cluster %s on this host, not %s'
                              % (task, other[0]['labels'].get('drover.cluster'), cluster))
        work = TaskNetwork(engine, store, check_mode, holders)
        before_seen = work.observe(task, spec.eni_mac if spec else None)
        before = work.view(task, before_seen) if before_seen['netns_exists'] or before_seen['holder'] else None
        if state == 'present':
            steps, view = work.present(spec, before_seen)
        else:
            steps = work.absent(task)
            view = None
        result = {'changed': bool(steps), 'steps': steps, 'netns': view}
        if diff:
            result['diff'] = {'before': before or {}, 'after': view or {}}
        return result
    except (net.NetError, EngineError, plan.PoolExhausted) as exc:
        raise TaskFailure('network setup failed: %s' % exc if state == 'present' else 'network teardown failed: %s' % exc)
    finally:
        store.close()
        if lock:
            lock.release()
        engine.close()
