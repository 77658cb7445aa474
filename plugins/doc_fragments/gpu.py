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
