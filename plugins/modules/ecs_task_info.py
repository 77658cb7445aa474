#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: ecs_task_info
short_description: List the ECS-style tasks of a Docker host
version_added: 0.1.0
description:
  - Returns the host's tasks (all of them, a cluster's, or one) in the shape M(drover.fleet.ecs_task)
    returns them. That is what the host store remembers, with the containers as the Docker engine shows them now.
  - Changes nothing, not even the store, and takes no lock.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.host
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.ACTIONGROUP
options:
  cluster:
    description: Only the tasks of this cluster.
    type: str
  name:
    description: Only the task of this name.
    type: str
  gpus:
    description:
      - Count the host's GPUs into RV(capacity) (C(gpus)) - those O(gpu_discovery) finds, less those the GPU ledger
        pins to runners of M(drover.fleet.gh_runner_slot) (tasks' pins are their own declarations' count).
    type: bool
    default: false
  gpu_discovery:
    description: How the host's GPUs are found with O(gpus), as M(drover.fleet.ecs_task)'s O(drover.fleet.ecs_task#module:gpu_discovery).
    type: str
    choices: [auto, nvml, nvidia-smi, static]
    default: auto
  gpu_devices:
    description: The GPU UUIDs with O(gpu_discovery=static).
    type: list
    elements: str
seealso:
  - module: drover.fleet.ecs_task
'''

EXAMPLES = r'''
- name: Every task on the host
  drover.fleet.ecs_task_info:
  register: host_tasks

- name: One task
  drover.fleet.ecs_task_info:
    cluster: prod
    name: web
  register: web

- name: Tasks whose last run stopped
  ansible.builtin.debug:
    msg: "{{ host_tasks.tasks | selectattr('last_status', 'equalto', 'STOPPED') | map(attribute='name') }}"
'''

RETURN = r'''
tasks:
  description: The tasks, sorted by cluster and name, each in the shape of M(drover.fleet.ecs_task)'s C(task).
  returned: always
  type: list
  elements: dict
  sample:
    - name: web
      cluster: default
      last_status: RUNNING
      desired_status: RUNNING
      stopped_reason: null
      started_at: '2026-12-02T14:22:28Z'
      stopped_at: null
      restart: never
      streak: 0
      held_until: null
      health_status: UNKNOWN
      containers:
        - {name: main, image: 'drover.local/busybox:1', runtime_id: 3f2c..., last_status: RUNNING,
           exit_code: null, gpu_ids: [], health_status: UNKNOWN,
           network_bindings: [{bind_ip: 0.0.0.0, container_port: 8080, host_port: 32768, protocol: tcp}]}
service_revisions:
  description:
    - The revision records of services the host store keeps (M(drover.fleet.ecs_task)'s
      O(drover.fleet.ecs_task#module:service_revisions), each with the controller's C(seal), null in a record of an
      earlier release), for M(drover.fleet.service_placement); each task view has
      C(revision) (its label C(drover.revision), else null) and C(health_checked) (whether an essential container
      has a health check).
  returned: always
  type: list
  elements: dict
capacity:
  description:
    - What the engine's host has, for placing services (M(drover.fleet.service_placement)) - C(cpu) in CPU units
      (1,024 a core, as ECS counts) and C(memory) in MiB; with O(gpus), C(gpus).
  returned: always
  type: dict
  sample: {cpu: 4096, memory: 15990, gpus: 2}
'''

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module, require_docker
from ansible_collections.drover.fleet.plugins.module_utils.tasks.apply import TaskFailure, info


def main():
    module = make_module(argument_spec=_argspecs.ecs_task_info_spec(), supports_check_mode=True)
    require_docker(module)
    try:
        result = info(module.params)
    except TaskFailure as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
