# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # How gpu_pin and gpu_info find the host's GPUs.
    DOCUMENTATION = r'''
options:
  discovery:
    description:
      - How the host's GPUs are found.
      - V(auto) tries NVML, then C(nvidia-smi --query-gpu=uuid --format=csv,noheader), and finds no GPU when
        neither works.
      - V(nvml) and V(nvidia-smi) use only that way and fail when it does not work.
      - V(static) takes the GPUs from O(devices), for hosts without the NVIDIA stack.
    type: str
    choices: [auto, nvml, nvidia-smi, static]
    default: auto
  devices:
    description:
      - The host's GPU UUIDs in index order, with O(discovery=static) (required then, and refused otherwise).
      - Non-empty strings, each listed once.
    type: list
    elements: str
'''

    # How ecs_task and gh_runner_slot find the host's GPUs and hand pinned ones to a container.
    HOST = r'''
options:
  gpu_discovery:
    description:
      - How the host's GPUs are found, when a declared task container or runner profile asks for some (see M(drover.fleet.gpu_pin)).
      - V(auto) tries NVML, then C(nvidia-smi), then finds none; V(static) takes O(gpu_devices).
    type: str
    choices: [auto, nvml, nvidia-smi, static]
    default: auto
  gpu_devices:
    description: The GPU UUIDs of a host without the NVIDIA stack, with O(gpu_discovery=static).
    type: list
    elements: str
  gpu_delivery:
    description:
      - How pinned GPUs reach a task's container or a runner. V(device-request) is a Docker device request for the C(nvidia) driver
        (needs the NVIDIA container toolkit); V(env) sets only C(NVIDIA_VISIBLE_DEVICES); V(cdi) asks for the CDI
        devices C(nvidia.com/gpu=<uuid>) and needs Docker 25 or newer, so it is refused on older engines
        before anything changes.
      - Tasks (M(drover.fleet.ecs_task)) and runners (M(drover.fleet.gh_runner_slot)) share the host's GPU ledger, and
        a GPU is pinned to one of them at a time.
    type: str
    choices: [device-request, env, cdi]
    default: device-request
'''
