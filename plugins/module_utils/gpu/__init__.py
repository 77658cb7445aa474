# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUs: which of the host's GPUs is pinned to which container.

Owns: discovery through NVML or nvidia-smi (nvml, the only file that talks to NVIDIA's library), the ledger as
pure functions (plan), and the pin pass that gpu_pin, gpu_info and ecs_task's own pass use (apply).
Must not: know tasks or pools beyond the key a pin names.
Layers: nvml (adapter) -> plan (decider) -> apply (pass). Imports host.
"""
