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
  - Decides where each task instance of each service in O(services) runs, from what a play found on every host
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
  services:
    description:
      - The services, each with C(name), C(cluster) (default V(default)), C(task_definition) or C(containers) (as
        in C(drover_tasks)), C(desired_count) (default 1), C(placement_constraints) and C(placement_strategy) (as ECS
        writes them), and optionally C(cpu) (CPU units), C(memory) (MiB) and C(gpus) a task takes; by default the
        task's own (task-level, else the sum of its containers').
    type: list
    elements: dict
    required: true
  hosts:
    description:
      - Every host the services may use, each with C(name), C(up), C(capacity) (C(cpu) units, C(memory) MiB,
        C(gpus)), C(attributes), C(tasks) (what it runs, as M(drover.fleet.ecs_task_info) returns them), C(declared)
        (its C(drover_tasks)) and C(cluster) (its C(drover_tasks_cluster)).
    type: list
    elements: dict
    required: true
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
    services: "{{ drover_services }}"
    hosts:
      - {name: web1, up: true, capacity: {cpu: 4096, memory: 8192}, attributes: {zone: a}, tasks: [], declared: []}
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
  description: Per service - C(placed), the instances C(started), C(stopped) and C(lost) (C(<instance>@<host>)), C(unplaced).
  returned: always
  type: list
  elements: dict
unplaced:
  description: Per service that could not be placed whole - C(count), and C(reasons) per host.
  returned: always
  type: dict
  sample: {web: {count: 2, reasons: {web1: distinctInstance, web2: not enough memory}}}
'''
