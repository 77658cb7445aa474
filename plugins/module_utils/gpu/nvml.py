# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU adapter: which GPUs this host has.

Owns: discovery of the host's GPU UUIDs, through NVML (nvidia-ml-py), through
`nvidia-smi --query-gpu=uuid --format=csv,noheader`, or from a declared static list; and the check
of such a list.
Must not: decide which GPU goes to whom (the ledger, gpu.plan, does), read or write the store, or
keep anything between calls. It is the only file that talks to NVML or runs nvidia-smi.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import importlib.util

# nvidia-ml-py is imported on first use (discovery): a converge that asks for no GPU never pays for it.
HAS_NVML = importlib.util.find_spec('pynvml') is not None
NVML_IMPORT_ERROR = None if HAS_NVML else 'No module named pynvml'
pynvml = None   # the library once loaded (or a stand-in a test puts here)


def _nvml():
    if pynvml is not None:
        return pynvml
    import pynvml as lib  # pylint: disable=import-outside-toplevel
    return lib


# Ways to find the host's GPUs. `auto` tries NVML, then nvidia-smi, then settles for none.
MODES = ('auto', 'nvml', 'nvidia-smi', 'static')
# What `discover` says it used; `none` is `auto` finding neither NVML nor nvidia-smi.
SOURCES = ('nvml', 'nvidia-smi', 'static', 'none')
# Seconds nvidia-smi may take to answer (it can hang on a wedged driver).
SMI_TIMEOUT = 10
SMI_COMMAND = ('nvidia-smi', '--query-gpu=uuid', '--format=csv,noheader')


class GpuError(Exception):
    """Discovery failed; the message says which way and why."""


def check_devices(devices, field='devices'):
    """A declared static list, checked: non-empty strings, each once. Returns a new list (order kept)."""
    if devices is None or not isinstance(devices, (list, tuple)):
        raise GpuError('%s: a list of GPU UUIDs is required with discovery=static' % field)
    if not devices:
        raise GpuError('%s: the list is empty; discovery=static needs at least one GPU UUID' % field)
    seen = set()
    out = []
    for index, uuid in enumerate(devices):
        if not isinstance(uuid, str) or not uuid.strip():
            raise GpuError('%s[%d]: a GPU UUID must be a non-empty string, got %r' % (field, index, uuid))
        uuid = uuid.strip()
        if uuid in seen:
            raise GpuError('%s[%d]: %s is listed twice' % (field, index, uuid))
        seen.add(uuid)
        out.append(uuid)
    return out


def _text(value):
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return str(value)


def discover_nvml():
    """UUIDs in NVML index order; raises GpuError when NVML cannot be used."""
    if not HAS_NVML:
        raise GpuError('gpu discovery nvml: the Python library nvidia-ml-py (import pynvml) is not installed '
                       'on this host; install it, or use discovery=nvidia-smi or static')
    nv = _nvml()
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise GpuError('gpu discovery nvml: NVML cannot start (%s): is the NVIDIA driver installed and loaded?'
                       % _text(exc))
    try:
        count = nv.nvmlDeviceGetCount()
        out = []
        for index in range(count):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            out.append(_text(nv.nvmlDeviceGetUUID(handle)).strip())
        return out
    except nv.NVMLError as exc:
        raise GpuError('gpu discovery nvml: %s' % _text(exc))
    finally:
        try:
            nv.nvmlShutdown()
        except nv.NVMLError:
            pass


def discover_smi(timeout=SMI_TIMEOUT):
    """UUIDs in nvidia-smi's (index) order; raises GpuError when nvidia-smi cannot be used."""
    try:
        proc = subprocess.run(list(SMI_COMMAND), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False)
    except OSError as exc:
        raise GpuError('gpu discovery nvidia-smi: cannot run nvidia-smi (%s): is the NVIDIA driver installed '
                       'and nvidia-smi on PATH?' % exc)
    except subprocess.TimeoutExpired:
        raise GpuError('gpu discovery nvidia-smi: no answer within %s s' % timeout)
    out = _text(proc.stdout)
    if proc.returncode != 0:
        said = (_text(proc.stderr).strip() or out.strip() or 'no output').splitlines()[-1]
        raise GpuError('gpu discovery nvidia-smi: exited %d: %s' % (proc.returncode, said))
    uuids = [line.strip() for line in out.splitlines() if line.strip()]
    for uuid in uuids:
        if not uuid.startswith(('GPU-', 'MIG-')):
            raise GpuError('gpu discovery nvidia-smi: unexpected output line %r' % uuid)
    return uuids


def discover(mode, devices=None, timeout=SMI_TIMEOUT):
    """The host's GPUs: (UUIDs in index order, source), source one of SOURCES.

    `auto` takes the first of NVML and nvidia-smi that works, else no GPUs (source `none`);
    `nvml` and `nvidia-smi` raise GpuError when they cannot be used; `static` checks and returns `devices`.
    """
    if mode == 'static':
        return check_devices(devices), 'static'
    if mode == 'nvml':
        return discover_nvml(), 'nvml'
    if mode == 'nvidia-smi':
        return discover_smi(timeout), 'nvidia-smi'
    if mode == 'auto':
        try:
            return discover_nvml(), 'nvml'
        except GpuError:
            pass
        try:
            return discover_smi(timeout), 'nvidia-smi'
        except GpuError:
            pass
        return [], 'none'
    raise GpuError('discovery: %r is not one of %s' % (mode, ', '.join(MODES)))
