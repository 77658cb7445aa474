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
  - B(Deployments.) A service's revision is a digest of the task it declares (its task keys; the registry password
    left out). When it changes, each pass replaces old instances with new ones within C(deployment) -
    C(minimum_healthy_percent) of C(desired_count) stay healthy (rounded up), at most C(maximum_percent) run (rounded
    down) - and an old one stops only as new ones turn healthy (or run, without a health check). The
    C(circuit_breaker) counts the new revision's failed runs (each instance's restart streak); at half the desired
    count (at least 3, at most 200) the revision is marked failed and, with C(rollback), the last revision that
    completed is brought back the same way. The hosts keep each service's revision records (RV(revisions), written
    by their converge, read back by M(drover.fleet.ecs_task_info)), and each instance carries its revision as the
    label C(drover.revision).
  - Keeps nothing between runs but its records key (O(records_key)) - where the services stand is read from the
    hosts - so AWX jobs and timers on different controllers agree where they hold the same key. Runs on the
    controller and changes nothing. The playbook C(drover.fleet.services) runs it between a look at every host and
    each host's converge.
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
        C(placement_strategy), C(deployment), and the keys of a task of C(drover_tasks) - C(containers) or
        C(task_definition), C(network_mode), C(registry_auth)...) and C(revisions) (the revision records it keeps,
        M(drover.fleet.ecs_task_info)'s C(service_revisions); taken only as O(records_key) says).
      - A host may instead carry its C(look) as it is - the result of M(drover.fleet.ecs_task_info) (failed or
        unreachable where the host is down) or M(drover.fleet.ecs_task)'s C(look) - with no C(up), C(down_reason),
        C(tasks) or C(revisions); these are read from the look, and its C(capacity) then overrides the look's
        (C(drover_capacity)). C(playbooks/tasks/services.yml) hands each host over so.
      - Mutually exclusive with O(report).
      - The services are those the hosts declare; a service may use only the hosts that declare it. One declared
        differently by two hosts, or with a field it cannot take, is not placed (a warning says why), and its
        instances stay where they run.
    type: list
    elements: dict
  report:
    description:
      - A placement's C(public) part (the result of a run with O(hosts)), returned as it is - its C(services),
        C(events), C(report), C(deploying), C(down), C(unplaced) and C(warnings), none of the declarations - so that
        a task that is not C(no_log) hands them to the C(drover.fleet.events) callback (events and recap).
    type: dict
  complete:
    description:
      - Whether the play reaches every host of the inventory that declares services. When it does not (C(--limit),
        a subset), nothing is placed - each host keeps the instances it runs.
    type: bool
    default: true
  records_key:
    description:
      - The key (at least 16 characters) that seals the revision records handed to the hosts (RV(revisions), each
        with its C(seal), an HMAC-SHA256 of its fields) - C(playbooks/tasks/services.yml) passes the inventory
        variable C(drover_services_records_key). Set it (from a vault or an AWX credential) where several
        controllers, or AWX jobs (each in a fresh container), place the same fleet.
      - Unset, the controller's own key - C(~/.ansible/drover-fleet/records.key) under C(ANSIBLE_HOME), 64
        hexadecimal digits, made once (mode 0600 in a directory of this user alone, mode 0700) and read back on
        later runs.
      - A host's records are taken only where their seal is right under this key, from the hosts that declare the
        service, and their revision is the digest of their declaration; others are dropped with a warning naming
        the host, the service and the count. A new key (or the records of an earlier release, unsealed) makes
        the hosts' history empty once - the next pass starts the declared revision's records anew (as revision 1).
      - Never returned, logged or handed to a host.
    type: str
notes:
  - Not yet - canaries, Nomad's C(auto_promote), a deployment forced without a change (declare a new revision
    instead - any change of the task, for example an environment variable).
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
answered:
  description: The hosts whose look answered (up), each of which converges its tasks with its share.
  returned: with O(hosts)
  type: list
  elements: str
  sample: [web1]
placement:
  description: Each host's share, as task declarations for C(drover_tasks) (hosts that are up).
  returned: with O(hosts)
  type: dict
  sample: {web1: [{name: web-0, cluster: default, containers: [{name: main, image: 'drover.local/busybox:1'}]}]}
clusters:
  description: The clusters each host converges for the services (so that an instance no longer placed there stops).
  returned: with O(hosts)
  type: dict
  sample: {web1: [default]}
services:
  description:
    - Per service placed - C(placed) (instances of the revision it converges to), C(older) (those of other revisions
      kept this pass), C(healthy) and C(running) (as the look found them), C(revision) (the number of
      the revision its instances converge to) and C(declared_revision), C(deployment) (C(in_progress),
      C(completed), C(rolling_back), C(rolled_back), C(failed)), C(failures) and C(failure_threshold) (the circuit
      breaker), the instances C(started) and C(stopped) (C(<instance>@<host>)), C(unplaced), and C(failure)
      (where its deployment did not complete - C(rolling_back), C(rolled_back), C(failed) - which revision failed
      and where the service stands; else null).
    - 'A C(failure) reads C(web: revision 3 failed (circuit breaker: 3/3\); rolled back, runs 2/2 healthy on revision
      2).'
  returned: always
  type: list
  elements: dict
revisions:
  description:
    - The revision records each host keeps (of the services it declares) - C(cluster), C(service), C(revision),
      C(number), C(status), C(rollback_of), C(generation), C(declaration) (without the registry password) and
      C(seal) (under O(records_key)); its converge writes them (M(drover.fleet.ecs_task)'s
      O(drover.fleet.ecs_task#module:service_revisions)).
  returned: with O(hosts)
  type: dict
deploying:
  description: The services whose deployment (or rollback) is under way; C(drover.fleet.deploy) runs passes until none is.
  returned: always
  type: list
  elements: str
events:
  description:
    - C(service.deployment.started), C(service.deployment.completed) (with C(rollback_of) when a rollback
      completed), C(service.deployment.failed) (with the C(reason)) and C(service.deployment.rolled_back) (C(revision),
      C(to_revision)), each with C(cluster), C(service) and C(subject) (C(service/<cluster>/<name>)).
  returned: always
  type: list
  elements: dict
public:
  description: What O(report) takes - the result without its declarations.
  returned: with O(hosts)
  type: dict
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
  description:
    - "A line per service (C(web: 9/9 healthy, revision 7, 9/9 placed)), one per host down, and the warnings; nothing
      of the declarations."
  returned: always
  type: list
  elements: str
'''
