# -*- coding: utf-8 -*-
"""The module_utils byte code cache (_code_cache): a package imported from a zip, as Ansible's payload has it, is
imported from the cache's copy once it exists; a changed file makes another copy; a cache directory that someone
else may write is never used. Each case runs in a Python of its own, as a module run does."""

from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

from ansible_collections.drover.fleet.plugins.module_utils import _code_cache

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the cache is root\'s alone')

SOURCE = _code_cache.__file__

# what a module run does: its payload on sys.path, the cache imported first, then the other module_utils
RUN = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import pkg._code_cache as cc
import pkg.work
import pkg.sub.deep
print(json.dumps({'used': cc.USED, 'work': pkg.work.__file__, 'cached': pkg.work.__cached__,
                  'deep': pkg.sub.deep.__file__, 'deep_cached': pkg.sub.deep.__cached__}))
'''


def payload(tmp_path, value):
    path = tmp_path / ('payload-%s.zip' % value)
    with open(SOURCE) as f:
        cache = f.read().replace("CACHE_ROOT = '/var/cache/drover-fleet/module_utils'",
                                 'CACHE_ROOT = %r' % str(tmp_path / 'cache' / 'module_utils'))
    with zipfile.ZipFile(str(path), 'w') as z:
        z.writestr('pkg/__init__.py', '')
        z.writestr('pkg/_code_cache.py', cache)
        z.writestr('pkg/work.py', 'VALUE = %r\n' % value)
        z.writestr('pkg/sub/__init__.py', '')                          # a package by concern (tasks/, pools/...)
        z.writestr('pkg/sub/deep.py', 'VALUE = %r\n' % value)
    return str(path)


def run(path):
    out = subprocess.run([sys.executable, '-c', RUN, path], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
    return json.loads(out.stdout)


def test_the_second_run_imports_the_cached_byte_code(tmp_path):
    first = run(payload(tmp_path, 'one'))
    root = str(tmp_path / 'cache' / 'module_utils')
    assert first['used'] and os.path.dirname(first['used']) == root
    assert first['work'] == os.path.join(first['used'], 'work.py')
    assert os.stat(first['used']).st_mode & 0o777 == 0o700
    assert os.path.isfile(first['cached'])                              # compiled, PYTHONDONTWRITEBYTECODE or not
    assert first['deep'] == os.path.join(first['used'], 'sub', 'deep.py')   # a package's module too
    assert os.path.isfile(first['deep_cached'])
    assert run(payload(tmp_path, 'one')) == first
    second = run(payload(tmp_path, 'two'))                              # another content: another copy
    assert second['used'] != first['used'] and sorted(os.listdir(root)) == sorted(
        ['.lock'] + [os.path.basename(p) for p in (first['used'], second['used'])])
    # a copy not used for a week goes when another is written; the one in use stays
    week = time.time() - 8 * 86400
    os.utime(first['used'], (week, week))
    third = run(payload(tmp_path, 'three'))
    assert sorted(os.listdir(root)) == sorted(
        ['.lock'] + [os.path.basename(p) for p in (second['used'], third['used'])])


def test_a_copy_cut_short_or_a_link_is_not_used(tmp_path):
    path = payload(tmp_path, 'one')
    used = run(path)['used']
    with open(os.path.join(used, 'work.py'), 'w') as f:             # (a power cut before the data reached the disk)
        f.write('')
    out = run(path)
    assert out['used'] is None and '.zip' in out['work']
    shutil.rmtree(used)
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir(mode=0o700)
    (elsewhere / 'work.py').write_text('VALUE = "planted"\n')
    os.symlink(str(elsewhere), used)
    out = run(path)
    assert out['used'] is None and '.zip' in out['work']


def test_a_cache_someone_else_may_write_is_not_used(tmp_path):
    path = payload(tmp_path, 'one')
    used = run(path)['used']
    for where in (os.path.dirname(used), str(tmp_path / 'cache'), used):
        os.chmod(where, 0o777)
        out = run(path)
        assert out['used'] is None and '.zip' in out['work'], where   # the payload's own files
        os.chmod(where, 0o700)
    assert run(path)['used'] == used


def test_outside_a_payload_nothing_changes():
    assert _code_cache.use() is None                                    # this package is a folder, not a zip
    assert not any(p.startswith(_code_cache.CACHE_ROOT) for p in _code_cache.sys.modules[
        _code_cache.PACKAGE].__path__)
