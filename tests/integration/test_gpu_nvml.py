# -*- coding: utf-8 -*-
"""GPU discovery: against the host's real NVIDIA driver when it has one (skipped, with the NVML error as
the reason, where it has not), and the fall-backs of `auto` against a stand-in NVML and nvidia-smi."""

from __future__ import absolute_import, division, print_function

import os
import shutil
import stat

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.gpu import nvml as _gpu

FAKE = ['GPU-00000000-0000-0000-0000-000000000001', 'GPU-00000000-0000-0000-0000-000000000002']


@pytest.fixture
def nvidia_driver():
    """Skip unless NVML starts on this host."""
    try:
        import pynvml
    except ImportError as exc:
        pytest.skip('nvidia-ml-py is not installed: %s' % exc)
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip('no NVIDIA driver on this host: %s' % exc)
    pynvml.nvmlShutdown()


def test_nvml_discovery_on_a_real_device(nvidia_driver, module_runner, tmp_path):
    uuids, source = _gpu.discover('nvml')
    assert source == 'nvml'
    assert len(uuids) >= 1, 'NVML started but found no GPU'
    for uuid in uuids:
        assert uuid.startswith('GPU-'), uuid
    assert len(set(uuids)) == len(uuids)
    assert _gpu.discover('auto') == (uuids, 'nvml')
    if shutil.which('nvidia-smi'):
        assert _gpu.discover('nvidia-smi') == (uuids, 'nvidia-smi')
    store = str(tmp_path / 'store.db')
    info = module_runner('gpu_info', {'discovery': 'nvml', 'store_path': store})
    assert not info.failed, info.get('msg')
    assert info['devices'] == uuids and info['free'] == uuids and info['source'] == 'nvml'
    pinned = module_runner('gpu_pin', {'discovery': 'nvml', 'store_path': store, 'task': 't', 'container': 'c',
                                       'count': 1, 'strict': True})
    assert not pinned.failed, pinned.get('msg')
    assert pinned['gpu_ids'] == uuids[:1] and pinned['free'] == uuids[1:]


# --- stand-ins: these run on every host ---------------------------------------------------------------

class FakeNvml:
    """Enough of pynvml for discovery: two devices, UUIDs as bytes (as pynvml returns them)."""

    class NVMLError(Exception):
        pass

    def __init__(self, fail_init=False):
        self.fail_init = fail_init
        self.calls = []

    def nvmlInit(self):
        self.calls.append('init')
        if self.fail_init:
            raise self.NVMLError('Driver Not Loaded')

    def nvmlShutdown(self):
        self.calls.append('shutdown')

    def nvmlDeviceGetCount(self):
        return len(FAKE)

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetUUID(self, handle):
        return FAKE[handle].encode()


@pytest.fixture
def fake_nvml(monkeypatch):
    def install(fail_init=False):
        fake = FakeNvml(fail_init)
        monkeypatch.setattr(_gpu, 'pynvml', fake)
        monkeypatch.setattr(_gpu, 'HAS_NVML', True)
        return fake
    return install


@pytest.fixture
def fake_smi(monkeypatch, tmp_path):
    """Make PATH hold only an nvidia-smi stand-in printing `out` and exiting `rc`, or no nvidia-smi at all."""
    def install(out=None, rc=0):
        bin_dir = tmp_path / 'bin'
        bin_dir.mkdir(exist_ok=True)
        if out is not None:
            script = bin_dir / 'nvidia-smi'
            # Shell builtins only: PATH holds nothing else, so that a real nvidia-smi is never found.
            lines = ' '.join("'%s'" % line for line in out.splitlines())
            script.write_text('#!/bin/sh\n[ "$*" = "--query-gpu=uuid --format=csv,noheader" ] || exit 9\n'
                              "printf '%%s\\n' %s\nexit %d\n" % (lines, rc))
            script.chmod(script.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv('PATH', str(bin_dir))
    return install


def test_nvml_stand_in_decodes_and_shuts_down(fake_nvml):
    fake = fake_nvml()
    assert _gpu.discover('nvml') == (FAKE, 'nvml')
    assert fake.calls == ['init', 'shutdown']


def test_nvml_without_the_library(monkeypatch):
    monkeypatch.setattr(_gpu, 'HAS_NVML', False)
    with pytest.raises(_gpu.GpuError, match='nvidia-ml-py'):
        _gpu.discover('nvml')


def test_auto_falls_back_to_nvidia_smi(fake_nvml, fake_smi):
    fake_nvml(fail_init=True)
    fake_smi('\n'.join(FAKE))
    assert _gpu.discover('auto') == (FAKE, 'nvidia-smi')
    with pytest.raises(_gpu.GpuError, match='Driver Not Loaded'):
        _gpu.discover('nvml')


def test_auto_finds_none_when_neither_works(fake_nvml, fake_smi):
    fake_nvml(fail_init=True)
    fake_smi()
    assert _gpu.discover('auto') == ([], 'none')
    with pytest.raises(_gpu.GpuError, match='nvidia-smi on PATH'):
        _gpu.discover('nvidia-smi')


def test_nvidia_smi_failure_is_reported(fake_smi):
    fake_smi('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.', rc=9)
    with pytest.raises(_gpu.GpuError, match='exited 9: NVIDIA-SMI has failed'):
        _gpu.discover('nvidia-smi')


def test_nvidia_smi_garbage_is_refused(fake_smi):
    fake_smi('uuid\nGPU-1')
    with pytest.raises(_gpu.GpuError, match='unexpected output'):
        _gpu.discover('nvidia-smi')


def test_static_list_is_checked():
    assert _gpu.discover('static', FAKE) == (FAKE, 'static')
    for bad, why in (([], 'empty'), (None, 'required'), ([FAKE[0], FAKE[0]], 'twice'), (['', FAKE[0]], 'non-empty'),
                     ([3], 'non-empty')):
        with pytest.raises(_gpu.GpuError, match=why):
            _gpu.discover('static', bad)
    with pytest.raises(_gpu.GpuError, match='discovery'):
        _gpu.discover('cuda')


def test_modules_use_discovery_auto_without_a_driver(fake_nvml, fake_smi, module_runner, tmp_path):
    fake_nvml(fail_init=True)
    fake_smi('\n'.join(FAKE))
    store = str(tmp_path / 'store.db')
    r = module_runner('gpu_pin', {'task': 't', 'container': 'c', 'count': 2, 'store_path': store})
    assert not r.failed and r['source'] == 'nvidia-smi' and r['gpu_ids'] == FAKE
    assert os.path.exists(store)
