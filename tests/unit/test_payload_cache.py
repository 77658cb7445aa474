# -*- coding: utf-8 -*-
"""Module payloads kept on the controller between runs (plugin_utils/_payload_cache.py), with real runs of Ansible:
the first run builds the payload and keeps it, the next one uses it without building, a changed source file
builds (and keeps) anew, and a folder that someone else may write, or DROVER_PAYLOAD_CACHE=0, is never used.
The module run is drover.fleet.gpu_info, which needs neither an engine nor a GPU."""

from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from ansible_collections.drover.fleet.plugins.plugin_utils import _payload_cache

COLLECTION = os.path.dirname(_payload_cache.PLUGINS)
ANSIBLE = os.path.join(os.path.dirname(sys.executable), 'ansible')
PAYLOAD = 'ansible_collections.drover.fleet.plugins.modules.gpu_info-ZIP_DEFLATED-none'


@pytest.fixture
def collection(tmp_path):
    """A copy of the collection, free to be changed."""
    root = tmp_path / 'collections'
    fleet = root / 'ansible_collections' / 'drover' / 'fleet'
    shutil.copytree(os.path.join(COLLECTION, 'plugins'), str(fleet / 'plugins'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    for name in ('galaxy.yml', 'meta'):
        (shutil.copytree if name == 'meta' else shutil.copy)(os.path.join(COLLECTION, name), str(fleet / name))
    return root


def run(tmp_path, collections, args=(), **env):
    """One run of gpu_info: (whether the run built the payload, whether it used one already there)."""
    out = subprocess.run(
        [ANSIBLE, '-i', 'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
         'localhost', '-m', 'drover.fleet.gpu_info'] + list(args),
        capture_output=True, text=True, check=False,
        env=dict(os.environ, ANSIBLE_HOME=str(tmp_path / 'home'), ANSIBLE_COLLECTIONS_PATH=str(collections),
                 ANSIBLE_DEBUG='1', ANSIBLE_NOCOLOR='1', **env))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(out.stdout[out.stdout.index('localhost | SUCCESS => ') + 23:].split('\n}\n')[0] + '\n}')
    assert result['source'] == 'none' and result['devices'] == []
    return 'ANSIBALLZ: Creating module' in out.stdout, 'ANSIBALLZ: using cached module' in out.stdout


def kept(tmp_path):
    folder = tmp_path / 'home' / 'drover-fleet' / 'payloads'
    return sorted(os.listdir(str(folder))) if folder.is_dir() else []


def test_the_next_run_uses_the_kept_payload_and_a_change_builds_anew(tmp_path, collection):
    assert run(tmp_path, collection) == (True, False)
    first = kept(tmp_path)
    assert [name[41:] for name in first] == [PAYLOAD]
    folder = tmp_path / 'home' / 'drover-fleet' / 'payloads'
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / first[0]).stat().st_mode) == 0o600

    assert run(tmp_path, collection) == (False, True)          # not built: the kept one
    assert kept(tmp_path) == first

    utils = collection / 'ansible_collections' / 'drover' / 'fleet' / 'plugins' / 'module_utils' / 'gpu/nvml.py'
    utils.write_text(utils.read_text() + '\n# changed\n')
    assert run(tmp_path, collection) == (True, False)          # another source: built, kept in place of the old
    second = kept(tmp_path)
    assert [name[41:] for name in second] == [PAYLOAD] and second != first
    assert run(tmp_path, collection) == (False, True)


def test_a_folder_someone_else_may_write_or_the_switch_off_is_not_used(tmp_path, collection):
    assert run(tmp_path, collection) == (True, False)
    assert run(tmp_path, collection, DROVER_PAYLOAD_CACHE='0') == (True, False)
    folder = tmp_path / 'home' / 'drover-fleet' / 'payloads'
    for mode, where in ((0o770, folder), (0o777, folder.parent)):
        os.chmod(str(where), mode)
        assert run(tmp_path, collection) == (True, False)
        os.chmod(str(where), 0o700)
    assert run(tmp_path, collection) == (False, True)


def test_another_compression_is_kept_beside_and_another_module_utils_folder_builds_anew(tmp_path, collection):
    assert run(tmp_path, collection) == (True, False)
    stored = PAYLOAD.replace('ZIP_DEFLATED', 'ZIP_STORED')
    stored_run = ('-e', 'ansible_module_compression=ZIP_STORED')
    assert run(tmp_path, collection, stored_run) == (True, False)
    assert sorted(name[41:] for name in kept(tmp_path)) == sorted([PAYLOAD, stored])
    assert run(tmp_path, collection, stored_run) == (False, True)
    assert run(tmp_path, collection) == (False, True)
    # a folder Ansible looks in for module_utils before its own: what it holds may stand in the payload
    extra = tmp_path / 'module_utils'
    extra.mkdir()
    (extra / 'site_helpers.py').write_text('HELPER = 1\n')
    assert run(tmp_path, collection, ANSIBLE_MODULE_UTILS=str(extra)) == (True, False)
    assert run(tmp_path, collection, ANSIBLE_MODULE_UTILS=str(extra)) == (False, True)
