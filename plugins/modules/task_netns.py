#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: task_netns
short_description: Build and tear down an awsvpc task network namespace around a hot-plugged ENI
version_added: 0.1.0
description:
  - Converges the network namespace of one task, in the manner of the ECS awsvpc network mode.
  - A network is the task's, O(cluster) and O(name) together. Its namespace is
    C(drover-<start of name>-<digest>) (the first 24 characters of O(name), then 10 hex digits of the SHA-1 of
    C(<cluster>/<name>)), so tasks named alike in two clusters never share a namespace, holder, link or /30.
    A namespace made by an earlier release (C(drover-<name>)) is found through its holder's C(drover.netns) label.
  - O(state=present) waits for the ENI (found by its MAC address) to appear on the host, starts a holder
    container with no network that owns the task's network namespace, bind-mounts that namespace under
    C(/run/netns) so C(ip netns exec) works, moves the ENI in, brings C(lo) and the ENI up,
    addresses the ENI (static, or DHCP with C(udhcpc) inside the namespace) and adds the default route.
  - The credential link is a veth pair, host side on the host and task side (C(drover-cred)) in the
    namespace, each on a /30 allocated from 169.254.0.0/16 and kept in the host store (no two tasks ever
    share one, and none that a credential registration still names is handed out), with a route in the
    namespace to 169.254.170.2/32 via the host side.
  - The credential link carries traffic to and from the credentials endpoint only. iptables rules in the
    filter table keyed to its host side (C(INPUT); C(FORWARD), and C(DOCKER-USER) where the engine made it)
    admit TCP to 169.254.170.2 ports 80 and 51679 and replies to what the host opened, and drop the rest;
    IPv6 is off on the host side. They are added when missing and removed with the link. The host needs
    C(iptables).
  - Containers join the namespace with the Docker network mode C(container:<holder>); M(drover.fleet.ecs_task)
    does this for tasks whose C(network_mode) is C(awsvpc).
  - O(state=absent) returns the ENI to the host (down, with its MAC), removes the credential link and its
    filter rules, the holder and the namespace, and frees the /30. Absent on a network already gone changes
    nothing. The network of a M(drover.fleet.ecs_task) task is refused, changing nothing; it goes with its task.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.host
  - drover.fleet.host.LOCK
  - drover.fleet.attributes
  - drover.fleet.attributes.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Reports the steps it would take; touches neither the host's links nor the store.
  diff_mode:
    support: full
  idempotent:
    support: full
options:
  name:
    description: The task the network belongs to (with O(cluster)).
    type: str
    required: true
  cluster:
    description: The task's cluster. A task is its cluster and its name; recorded on the holder container's labels.
    type: str
    default: default
  eni_mac:
    description: The MAC address of the ENI. Required with O(state=present).
    type: str
  address:
    description: The ENI's address with its prefix length (CIDR). Mutually exclusive with O(dhcp).
    type: str
  dhcp:
    description: Address the ENI by DHCP (C(udhcpc) from busybox, run inside the namespace).
    type: bool
    default: false
  gateway:
    description: The default gateway. With O(dhcp), defaults to the router the lease names.
    type: str
  routes:
    description: Further routes in the namespace.
    type: list
    elements: dict
    suboptions:
      dst:
        description: The destination network (CIDR).
        type: str
        required: true
      gateway:
        description: The next hop; defaults to O(gateway).
        type: str
  dns_servers:
    description:
      - Name servers, written to C(/etc/netns/<namespace>/resolv.conf) and given to the holder container,
        whose C(/etc/resolv.conf) the task's containers share.
    type: list
    elements: str
  credential_link:
    description: Build the credential link (the veth pair and the route to 169.254.170.2/32).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the ENI to appear on the host.
    type: int
    default: 30
  holder_image:
    description:
      - The holder container's image; it must have C(sleep).
      - The drover.fleet.host role builds the default on the host (role variable C(drover_host_busybox_image)).
        An image the host lacks is pulled; one that cannot be fails the module before the network changes, with a
        message that names it.
    type: str
    default: drover.local/busybox:1
  state:
    description: Whether the network should exist.
    type: str
    choices: [present, absent]
    default: present
seealso:
  - module: drover.fleet.ecs_task
'''

EXAMPLES = r'''
- name: A task network around a hot-plugged ENI, static address
  drover.fleet.task_netns:
    name: web
    eni_mac: "02:00:c6:12:00:10"
    address: 198.18.7.2/24
    gateway: 198.18.7.1
    dns_servers: [198.18.7.1]

- name: The same, addressed by DHCP
  drover.fleet.task_netns:
    name: web
    eni_mac: "02:00:c6:12:00:10"
    dhcp: true

- name: Tear it down; the ENI goes back to the host
  drover.fleet.task_netns:
    name: web
    state: absent
'''

RETURN = r'''
netns:
  description: The network namespace, after the change (or as planned, in check mode). Null when absent.
  returned: always
  type: dict
  contains:
    name:
      description: The namespace's name, as C(ip netns list) shows it.
      type: str
      sample: drover-web-5887b1109c
    path:
      description: Its bind mount.
      type: str
      sample: /run/netns/drover-web-6c1f0a3bd2
    holder_id:
      description: The holder container's ID.
      type: str
    interfaces:
      description: The interfaces in the namespace, each with C(name), C(mac) and C(addresses) (CIDRs).
      type: list
      elements: dict
    credential_link:
      description: C(host_ip) and C(task_ip) of the credential link.
      type: dict
    dns_servers:
      description: The name servers of the namespace's resolv.conf.
      type: list
      elements: str
steps:
  description: The steps taken (or planned in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: [holder, attach, eni, configure, allocate, link, guard]
'''

from ansible.module_utils.basic import missing_required_lib

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module, require_docker
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure
from ansible_collections.drover.fleet.plugins.module_utils.network import apply as _apply_netns
from ansible_collections.drover.fleet.plugins.module_utils.network.netlink import HAS_PYROUTE2, PYROUTE2_IMPORT_ERROR


def main():
    module = make_module(
        argument_spec=_argspecs.task_netns_spec(),
        supports_check_mode=True,
        **_argspecs.TASK_NETNS_RULES
    )
    require_docker(module)
    if not HAS_PYROUTE2:
        module.fail_json(msg=missing_required_lib('pyroute2'), exception=PYROUTE2_IMPORT_ERROR)
    try:
        result = _apply_netns.converge(module.params, check_mode=module.check_mode, diff=module._diff)
    except TaskFailure as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
