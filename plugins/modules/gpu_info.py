#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_info
short_description: List a host's GPUs and the ledger of their pins
version_added: 0.1.0
description:
  - Returns the host's GPUs (their UUIDs, in index order), which are free, which are pinned to which
    container (C(<task>/<container>)), and the pins whose GPU is no longer discovered, as
    M(drover.fleet.gpu_pin) returns them.
  - Changes nothing, not even the store, and takes no lock. Needs no Docker engine.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.gpu
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.ACTIONGROUP
requirements:
  - nvidia-ml-py on the managed host for O(discovery=nvml) (O(discovery=auto) uses it when present).
  - C(nvidia-smi) on the managed host for O(discovery=nvidia-smi).
options:
  store_path:
    description:
      - The host store, an SQLite database that holds the pins. Read only; a missing store means no pins.
    type: path
    default: /var/lib/drover/store.db
seealso:
  - module: drover.fleet.gpu_pin
'''

EXAMPLES = r'''
- name: The host's GPUs and pins
  drover.fleet.gpu_info:
  register: gpus

- name: How many GPUs are free
  ansible.builtin.debug:
    msg: "{{ gpus.free | length }} of {{ gpus.devices | length }} GPUs free ({{ gpus.source }})"

- name: A host without the NVIDIA stack
  drover.fleet.gpu_info:
    discovery: static
    devices: [GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f]
'''

RETURN = r'''
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
pinned:
  description: Every pin key of the host with its UUIDs, in device order.
  returned: always
  type: dict
  sample: {train-42/trainer: [GPU-5f1c3a0e-7f3e-4c5a-9d7e-1a2b3c4d5e6f]}
free:
  description: The discovered GPUs pinned to nobody, in device order.
  returned: always
  type: list
  elements: str
  sample: [GPU-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d]
stale:
  description: Pinned UUIDs that are not discovered (any more); kept until their task is released.
  returned: always
  type: list
  elements: str
  sample: []
'''

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module
from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import GpuFailure, info


def main():
    module = make_module(argument_spec=_argspecs.gpu_info_spec(), supports_check_mode=True)
    try:
        result = info(module.params)
    except GpuFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
