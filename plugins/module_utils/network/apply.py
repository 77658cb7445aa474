# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task networks: observe, plan, apply — shared by task_netns and ecs_task's awsvpc tasks.

Owns: gathering what the host shows of a task's netns (holder, namespace, ENI, links, DNS, the /30
allocation), the holder image (on the host or pulled before anything is built, else a failure that names it),
carrying out the decider's steps in order, and rolling a fresh build back when a step fails.
Must not: decide which steps (the decider does) or talk to netlink or Docker other than through adapters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.drover.fleet.plugins.module_utils.network import netlink as net
from ansible_collections.drover.fleet.plugins.module_utils.network import plan
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure, open_host
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import (
    NETNS_KEYS, bridge_backed, holder_name, legacy_netns_name, net_spec, netns_name)
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import NAME_RE, SpecError, check_name

HOLDER_ROLE = 'netns-holder'
HOLDER_COMMAND = ('sleep', '2147483647')
# The holder only sleeps; it never needs raw sockets (a task's containers have their own capabilities).
HOLDER_CAP_DROP = ('NET_RAW',)


# drover.owner on a holder: the module whose network it is (ecs_task's go only with their task).
OWNER_LABEL = 'drover.owner'


def holder_labels(spec, owner):
    """The labels of a holder: enough to find its task and namespace, and its ENI when it has one."""
    labels = {'drover.role': HOLDER_ROLE, 'drover.task': spec.task, 'drover.cluster': spec.cluster,
              'drover.netns': spec.netns, OWNER_LABEL: owner}
    if spec.eni_mac is not None:
        labels['drover.eni-mac'] = spec.eni_mac
    return labels


# The option that names the holder image, per module (as a message names it).
HOLDER_IMAGE_OPTION = {'ecs_task': 'awsvpc.holder_image', 'task_netns': 'holder_image'}


def holder_image_missing(image, why, who='the task network', owner='ecs_task'):
    """The failure of a network whose holder image is neither on the host nor to be pulled: it names the image
    and where it comes from (the drover.fleet.host role builds it on the host; no registry serves it)."""
    return ('%s needs the netns holder image %s, which is not on this host and could not be pulled (%s): the '
            'drover.fleet.host role installs it (role variable drover_host_busybox_image); run that role on this '
            'host, or set %s to an image the host has' % (who, image, why, HOLDER_IMAGE_OPTION[owner]))


def ensure_holder_image(engine, image, who='the task network', owner='ecs_task'):
    """The holder image on the host, pulled when it is missing; raises NetError (holder_image_missing) when it
    cannot be, before anything of a network is made."""
    if engine.image_present(image):
        return
    try:
        engine.pull(image)
    except EngineError as exc:
        raise net.NetError(holder_image_missing(image, exc, who, owner))


def check_holder_images(engine, needs, check_mode):
    """The holder images of the networks a pass is to build, made sure of before the pass changes anything.
    `needs`: (who, image) pairs, one per network to build. Outside check mode a missing image is pulled, and one
    that cannot be raises NetError naming it; check mode pulls nothing and returns a warning per missing image."""
    warnings, seen = [], set()
    for who, image in needs:
        if image in seen:
            continue
        seen.add(image)
        if not check_mode:
            ensure_holder_image(engine, image, who)
        elif not engine.image_present(image):
            warnings.append('%s needs the netns holder image %s, which is not on this host: a converge pulls it, '
                            'and fails if it cannot (the drover.fleet.host role installs it)' % (who, image))
    return warnings


def holder_key(holder):
    """The task a holder belongs to: (cluster, task), from its labels."""
    labels = holder['labels']
    return (labels.get('drover.cluster') or 'default', labels.get('drover.task') or '')


class TaskNetwork:
    """Builds and tears down task netns on one host; `holders` is the pass's one listing of holders. A task
    is its cluster and its name: each (cluster, task) has a namespace, holder, link and /30 of its own."""

    def __init__(self, engine, store, check_mode, holders, clock=time.time, owner='task_netns'):
        self.engine = engine
        self.owner = owner
        self.store = store
        self.check_mode = check_mode
        self.clock = clock
        self.holders = dict((holder_key(h), h) for h in holders)
        self._allocations = None

    def allocations(self):
        if self._allocations is None:
            self._allocations = self.store.link_allocations()
        return self._allocations

    def holder(self, cluster, task):
        return self.holders.get((cluster, task))

    def netns_of(self, cluster, task):
        """The namespace of a task: the one its holder names (a holder of an earlier release names one
        without the cluster), else the one derived from cluster and task."""
        holder = self.holder(cluster, task)
        named = holder['labels'].get('drover.netns') if holder is not None else None
        if named and named.startswith('drover-') and NAME_RE.match(named):
            return named
        return netns_name(cluster, task)

    def _claimed(self, name):
        return any(h['labels'].get('drover.netns') == name for h in self.holders.values())

    def has_network(self, cluster, task):
        return self.holder(cluster, task) is not None or net.netns_exists(self.netns_of(cluster, task))

    def observe(self, name, holder, mac):
        """What the host shows of netns `name` (held by `holder`, a listing entry or None)."""
        ifname = plan.host_ifname(name)
        listing = net.filter_rules()
        seen = {'holder': holder, 'netns_exists': net.netns_exists(name), 'attached': False, 'eni': None,
                'interfaces': [], 'routes': [], 'host_link': net.host_link_exists(ifname),
                'resolv': net.read_resolv(name), 'link_subnet': None,
                'guard_rules': net.link_guard_present(ifname, listing),
                'guarded': net.link_guarded(ifname, listing, plan.ENDPOINT)}
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

    def observe_task(self, cluster, task, mac):
        return self.observe(self.netns_of(cluster, task), self.holder(cluster, task), mac)

    def view(self, name, seen):
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

    def _sweep_guards(self):
        """Filter rules of credential links no longer on the host go (a namespace deleted by hand takes its
        link with it, never the rules)."""
        if self.check_mode:
            return
        listing = net.filter_rules()
        for ifname in net.orphan_guards(listing):
            net.remove_link_guard(ifname, listing)

    # --- present ---------------------------------------------------------------------------------

    def present(self, spec, seen=None, labels=None):
        """Build or repair the netns; returns (steps done or planned, view). Raises NetError/EngineError;
        a failed fresh build leaves nothing behind. `labels`: more labels for a holder made now (a
        bridge-backed task's credential ID: the endpoint knows the task's containers by its address)."""
        spec = spec._replace(netns=self.netns_of(spec.cluster, spec.task))
        seen = seen or self.observe(spec.netns, self.holder(spec.cluster, spec.task), spec.eni_mac)
        steps = plan.plan_present(spec, seen, self.allocations())
        if self.check_mode or not steps:
            return steps, self.view(spec.netns, seen)
        if 'holder' in steps:
            # Before anything of the network is made or removed: a host without the image changes nothing.
            ensure_holder_image(self.engine, spec.holder_image, 'task %s/%s' % (spec.cluster, spec.task), self.owner)
        fresh = not seen['netns_exists'] and seen['holder'] is None
        try:
            self._build(spec, seen, steps, labels)
        except (net.NetError, EngineError, plan.PoolExhausted):
            if fresh:
                self.absent(spec.cluster, spec.task, spec.eni_mac)
            raise
        return steps, self.view(spec.netns, self.observe(spec.netns, self.holder(spec.cluster, spec.task),
                                                         spec.eni_mac))

    def _build(self, spec, seen, steps, extra_labels=None):
        now = self.clock()
        holder = seen['holder']
        key = (spec.cluster, spec.task)
        if 'holder' in steps:
            if seen['eni'] == 'ns':
                net.return_to_host(spec.eni_mac, spec.netns)     # never let the ENI die with an old netns
            if holder is not None:
                self.engine.remove(holder['id'])
            labels = dict(extra_labels or {}, **holder_labels(spec, self.owner))
            # Around an ENI the holder has no network of the engine's; without one it is on the engine's
            # default bridge network and publishes the task's ports.
            bridged = bridge_backed(spec)
            cid = self.engine.create(holder_name(spec.cluster, spec.task), spec.holder_image, labels,
                                     command=HOLDER_COMMAND, network_mode=None if bridged else 'none',
                                     dns=spec.dns_servers, cap_drop=HOLDER_CAP_DROP,
                                     ports=spec.ports if bridged else None)
            # Known before it starts: a start that fails (a published port taken) leaves it to the rollback.
            self.holders[key] = {'id': cid, 'state': 'created', 'labels': labels}
            self.engine.start(cid)
            holder = {'id': cid, 'state': 'running', 'labels': labels,
                      'pid': (self.engine.inspect(cid) or {}).get('pid')}
            self.holders[key] = holder
        if 'attach' in steps:
            if not holder.get('pid'):
                raise net.NetError('holder container %s has no process' % holder['id'][:12])
            net.attach(spec.netns, holder['pid'])
        if 'eni' in steps:
            found = net.find_mac(spec.eni_mac) or net.wait_mac(spec.eni_mac, spec.wait_timeout)
            why = net.host_use(found[0])
            if why:
                # A declaration naming the host's uplink (or docker0) would take the host off its network.
                raise net.NetError('the interface %s with MAC %s is not an ENI to move into the task\'s network: %s'
                                   % (found[1], spec.eni_mac, why))
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
            in_use = net.host_link_subnets() | plan.registered_subnets(
                [c for c in self.store.credentials() if (c['cluster'], c['task']) != key])
            subnet = subnet or plan.allocate(allocations, spec.netns, in_use)
            self.store.put_link_allocation(spec.netns, subnet, now, spec.cluster, spec.task)
            allocations[spec.netns] = subnet
        if 'link' in steps:
            host_ip, task_ip = plan.link_ips(self.allocations()[spec.netns])
            net.add_credential_link(spec.netns, plan.host_ifname(spec.netns), host_ip, task_ip, plan.ENDPOINT)
        if 'guard' in steps:
            net.add_link_guard(plan.host_ifname(spec.netns), plan.ENDPOINT)
        if 'unlink' in steps:
            net.delete_link(plan.host_ifname(spec.netns))
        if 'unguard' in steps:
            net.remove_link_guard(plan.host_ifname(spec.netns))
        if 'free' in steps:
            self.store.delete_link_allocation(spec.netns)
            self.allocations().pop(spec.netns, None)
        if 'resolv' in steps:
            if spec.dns_servers:
                net.write_resolv(spec.netns, spec.dns_servers)
            else:
                net.remove_resolv(spec.netns)
        self._sweep_guards()

    # --- absent ----------------------------------------------------------------------------------

    def _teardown_name(self, cluster, task, mac):
        """The namespace to tear down for a task: its holder's, else the one derived from cluster and task;
        else a namespace an earlier release named after the task alone, when no holder claims it and it holds
        the task's ENI (or the ENI is not known): never another task's."""
        name = self.netns_of(cluster, task)
        if self.holder(cluster, task) is not None or net.netns_exists(name):
            return name
        legacy = legacy_netns_name(task)
        if net.netns_exists(legacy) and not self._claimed(legacy) and (mac is None or net.find_mac(mac, legacy)):
            return legacy
        return name

    def absent(self, cluster, task, mac=None):
        """Tear down the netns of task `cluster`/`task`: the ENI back to the host, the link and its filter,
        the holder, the netns, the /30. `mac` defaults to the holder's drover.eni-mac label. Returns the steps
        done or planned."""
        holder = self.holder(cluster, task)
        if mac is None and holder is not None:
            mac = holder['labels'].get('drover.eni-mac')
        name = self._teardown_name(cluster, task, mac)
        seen = self.observe(name, holder, mac)
        steps = plan.plan_absent(seen, name in self.allocations())
        if self.check_mode:
            return steps
        if 'eni_back' in steps:
            net.return_to_host(mac, name)
        if 'unlink' in steps:
            net.delete_link(plan.host_ifname(name))
        if 'unguard' in steps:
            net.remove_link_guard(plan.host_ifname(name))
        if 'holder_remove' in steps:
            self.engine.remove(seen['holder']['id'])
            self.holders.pop((cluster, task), None)
        if 'netns_remove' in steps:
            net.remove_netns(name)
        if 'free' in steps:
            self.store.delete_link_allocation(name)
            self.allocations().pop(name, None)
        if 'resolv_remove' in steps:
            net.remove_resolv(name)
        self._sweep_guards()
        return steps


# The drover.role of ecs_task's containers (tasks.look.ROLE; written again so that task_netns need not ship tasks.look).
TASK_ROLE = 'task'


def _refuse_a_task_network(engine, store, holders, cluster, task):
    """task_netns is the module of networks of their own: the network of an ecs_task task goes only with its
    task. Its holder says so (drover.owner); a holder made before that label is the task's when the task has
    containers on the engine or a run the store holds as not stopped."""
    holder = [h for h in holders if holder_key(h) == (cluster, task)]
    owner = holder[0]['labels'].get(OWNER_LABEL) if holder else None
    if not holder or owner == 'task_netns':
        return
    running = [c['name'] for c in engine.list_role(TASK_ROLE)
               if (c['labels'].get('drover.cluster'), c['labels'].get('drover.task')) == (cluster, task)]
    stored = [r for r in store.tasks(cluster) if r['name'] == task and r['last_status'] != 'STOPPED']
    if owner == 'ecs_task' or running or stored:
        raise TaskFailure('the network of task %s in cluster %s (netns %s) belongs to an ecs_task task: task_netns '
                          'does not remove it; stop or remove the task with drover.fleet.ecs_task, which tears its '
                          'network down' % (task, cluster, holder[0]['labels'].get('drover.netns')))


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
        if state == 'absent':
            _refuse_a_task_network(engine, store, holders, cluster, task)
        work = TaskNetwork(engine, store, check_mode, holders)
        name = work.netns_of(cluster, task)
        before_seen = work.observe(name, work.holder(cluster, task), spec.eni_mac if spec else None)
        before = work.view(name, before_seen) if before_seen['netns_exists'] or before_seen['holder'] else None
        if state == 'present':
            steps, view = work.present(spec, before_seen)
        else:
            steps = work.absent(cluster, task)
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
