#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_pin
short_description: Pin a host's GPUs to task containers, in a ledger that survives restarts
version_added: 0.1.0
description:
  - Keeps the host's GPU ledger, which GPU (by UUID) is pinned to which container of which task, so
    that no GPU is ever given to two containers.
  - A pin is keyed C(<task>/<container>). O(state=present) pins O(count) GPUs to that key, all or nothing,
    lowest-index free GPUs first. Pinning a key that already holds O(count) GPUs returns the same ones;
    a new count keeps what the key holds, up to the count, and takes free GPUs for the rest.
  - >-
    When fewer than O(count) GPUs are free, nothing is reserved and the key keeps what it held. By default
    this is best effort (a warning C(gpu ledger: requested N GPUs, M free), RV(gpu_ids) empty, nothing
    changed); with O(strict=true) the module fails with that message. M counts the free GPUs and those the
    key already holds.
  - O(state=absent) releases every pin of O(task), or only the pins of O(container) when it is given.
  - The host's GPUs are found through NVML or C(nvidia-smi), or declared with O(discovery=static) on hosts
    without the NVIDIA stack. The pins live in the host store, O(store_path), and survive restarts of the
    host and of the controller. A pinned GPU that is no longer discovered stays pinned and is reported in
    RV(stale) until its task is released.
  - Needs no Docker engine. Changes on one host are serialised by the host lock.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.gpu
  - drover.fleet.attributes
  - drover.fleet.attributes.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Plans the pins and reports them; takes no lock and writes nothing, the store included.
  diff_mode:
    support: full
    details:
      - Returns the pins of every key before and after.
  idempotent:
    support: full
requirements:
  - nvidia-ml-py on the managed host for O(discovery=nvml) (O(discovery=auto) uses it when present).
  - C(nvidia-smi) on the managed host for O(discovery=nvidia-smi).
options:
  task:
    description:
      - The task whose GPUs are pinned or released. Any string without C(/).
    type: str
    required: true
  container:
    description:
      - The container of O(task) the GPUs are pinned to; the pin key is C(<task>/<container>).
      - Required with O(state=present). With O(state=absent), releases only this container's pins.
    type: str
  count:
    description:
      - How many GPUs the container holds; V(0) releases its pins.
      - Required with O(state=present); not used with O(state=absent).
    type: int
  state:
    description:
      - V(present) pins O(count) GPUs to O(container); V(absent) releases the pins of O(container), or of
        every container of O(task) when O(container) is not given.
    type: str
    choices: [present, absent]
    default: present
  strict:
    description:
      - With V(false), a short ledger is best effort; with V(true), it fails the module.
    type: bool
    default: false
  store_path:
    description:
      - The host store, an SQLite database that holds the pins.
      - Created on first use with mode C(0600) in a directory of mode C(0700). The host lock is a file
        beside it named after it with C(.lock) appended.
    type: path
    default: /var/lib/drover/store.db
  lock_timeout:
    description:
      - Seconds to wait for another converge on the same host to release the host lock, before failing.
    type: int
    default: 60
seealso:
  - module: drover.fleet.gpu_info
  - module: drover.fleet.ecs_task
'''

EXAMPLES = r'''
- name: Pin two GPUs to the trainer container of task train-42
  drover.fleet.gpu_pin:
    task: train-42
    container: trainer
    count: 2
  register: pin

- name: Hand them to the container
  ansible.builtin.debug:
    msg: "NVIDIA_VISIBLE_DEVICES={{ pin.gpu_ids | join(',') }}"

- name: Fail instead of running without GPUs when too few are free
  drover.fleet.gpu_pin:
    task: train-42
    container: trainer
    count: 2
    strict: true

- name: A host without the NVIDIA stack, its GPUs declared
  drover.fleet.gpu_pin:
    task: sim
    container: main
    count: 1
    discovery: static
    devices:
      - GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f
      - GPU-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d

- name: Release every GPU of the task
  drover.fleet.gpu_pin:
    task: train-42
    state: absent
'''

RETURN = r'''
gpu_ids:
  description:
    - The UUIDs pinned to O(container), in device order.
    - Empty with O(state=absent), and when a short ledger was met with best effort.
  returned: always
  type: list
  elements: str
  sample: [GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f]
free:
  description: The discovered GPUs pinned to nobody, in device order.
  returned: always
  type: list
  elements: str
  sample: [GPU-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d]
pinned:
  description: Every pin key of the host with its UUIDs, in device order.
  returned: always
  type: dict
  sample: {train-42/trainer: [GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f]}
stale:
  description: Pinned UUIDs that are not discovered (any more); kept until their task is released.
  returned: always
  type: list
  elements: str
  sample: []
devices:
  description: The host's GPU UUIDs, in index order.
  returned: always
  type: list
  elements: str
  sample: [GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f, GPU-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d]
source:
  description:
    - How the GPUs were found, C(nvml), C(nvidia-smi) or C(static); C(none) when O(discovery=auto) found
      neither NVML nor C(nvidia-smi).
  returned: always
  type: str
  sample: nvml
'''

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module
from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import GpuFailure, converge


def main():
    module = make_module(argument_spec=_argspecs.gpu_pin_spec(), supports_check_mode=True)
    try:
        result = converge(module.params, check_mode=module.check_mode, diff=module._diff)
    except GpuFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    for warning in result.pop('warnings', []):
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
