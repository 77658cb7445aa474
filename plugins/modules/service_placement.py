#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: service_placement
short_description: Place services' tasks on the hosts of a fleet, once, on the controller
version_added: 0.1.0
description:
  - Decides where each task instance of each service the hosts declare runs, from what a play found on every host
    in O(hosts) (C(capacity) and C(tasks) from M(drover.fleet.ecs_task_info), its C(attributes), whether its
    engine answered) and the tasks the inventory declares there. Returns each host's share as task declarations
    (RV(placement)), which M(drover.fleet.ecs_task) (the C(drover.fleet.tasks) role) converges with the host's own.
  - ECS's model - C(desired_count); C(placement_constraints) C(distinctInstance) and C(memberOf) (the cluster
    query language over the hosts' attributes); C(placement_strategy) applied in order, C(spread) by
    C(instanceId) or C(attribute:<name>), C(binpack) by C(cpu) or C(memory), C(random) (the same on every
    controller). A host's capacity, less its declared tasks, is never exceeded; what cannot be placed is told
    with the reason on each host (RV(unplaced)).
  - A task instance is the task C(<service>-<index>) in the service's C(cluster). A host whose engine did not
    answer (C(up=false)) runs nothing - its instances are placed again elsewhere; when it returns, the excess over
    C(desired_count) stops.
  - Keeps nothing between runs (where the services stand is read from the hosts), so AWX jobs and timers on
    different controllers agree. Runs on the controller and changes nothing. The playbook C(drover.fleet.services)
    runs it between a look at every host and each host's converge.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.CONTROLLER
options:
  hosts:
    description:
      - Every host of the play, each with C(name), C(up) (its look answered), C(down_reason), C(capacity) (C(cpu)
        units, C(memory) MiB, C(gpus)), C(attributes), C(tasks) (what it runs, as M(drover.fleet.ecs_task_info) returns
        them), C(declared) (its C(drover_tasks)), C(cluster) (its C(drover_tasks_cluster)) and C(services) (its
        C(drover_services) - each C(name), C(cluster), C(desired_count), C(placement_constraints),
        C(placement_strategy), and the keys of a task of C(drover_tasks) - C(containers) or C(task_definition),
        C(network_mode), C(registry_auth)...).
      - The services are those the hosts declare; a service may use only the hosts that declare it. One declared
        differently by two hosts, or with a field it cannot take, is not placed (a warning says why), and its
        instances stay where they run.
    type: list
    elements: dict
    required: true
  complete:
    description:
      - Whether the play reaches every host of the inventory that declares services. When it does not (C(--limit),
        a subset), nothing is placed - each host keeps the instances it runs.
    type: bool
    default: true
notes:
  - Not yet - deployments (a new revision replaced in steps, health-gated, rolled back); every instance runs the
    service's current declaration.
seealso:
  - module: drover.fleet.ecs_task_info
  - module: drover.fleet.ecs_task
'''

EXAMPLES = r'''
- name: Place the services of the fleet
  drover.fleet.service_placement:
    hosts:
      - name: web1
        up: true
        capacity: {cpu: 4096, memory: 8192}
        attributes: {zone: a}
        tasks: []
        declared: []
        services:
          - {name: web, desired_count: 2, containers: [{name: main, image: "drover.local/busybox:1", memory: 64}]}
  run_once: true
  register: placed
'''

RETURN = r'''
placement:
  description: Each host's share, as task declarations for C(drover_tasks) (hosts that are up).
  returned: always
  type: dict
  sample: {web1: [{name: web-0, cluster: default, containers: [{name: main, image: 'drover.local/busybox:1'}]}]}
clusters:
  description: The clusters each host converges for the services (so that an instance no longer placed there stops).
  returned: always
  type: dict
  sample: {web1: [default]}
services:
  description: Per service placed - C(placed), the instances C(started) and C(stopped) (C(<instance>@<host>)), C(unplaced).
  returned: always
  type: list
  elements: dict
unplaced:
  description: Per service that could not be placed whole - C(count), and C(reasons) per host.
  returned: always
  type: dict
  sample: {web: {count: 2, reasons: {web1: distinctInstance, web2: not enough memory}}}
down:
  description: The hosts that take no instance this pass, and why (unreachable, the look's error).
  returned: always
  type: dict
report:
  description: A line per service (C(web 9/9 placed)), one per host down, and the warnings; nothing of the declarations.
  returned: always
  type: list
  elements: str
'''
