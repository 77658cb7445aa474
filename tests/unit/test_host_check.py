# -*- coding: utf-8 -*-
"""drover.fleet.host_info's core (host.check) and the pools a host holds (host.opening.held_pools)."""

from __future__ import absolute_import, division, print_function

import os
import sys

from ansible_collections.drover.fleet.plugins.module_utils.host import opening as _host
from ansible_collections.drover.fleet.plugins.module_utils.host import check as _host_check
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store


def test_missing_libraries_are_found_without_importing_them():
    name = 'drover_no_such_library_%d' % os.getpid()
    before = set(sys.modules)
    assert _host_check.missing_libraries(['json', name, 'sqlite3', 'a..b']) == [name, 'a..b']
    assert 'drover_no_such_library' not in ' '.join(set(sys.modules) - before)


def test_store_directory_and_its_mode(tmp_path):
    store_dir = tmp_path / 'state'
    assert _host_check.directory(str(store_dir), '0700') == {
        'path': str(store_dir), 'exists': False, 'mode': None, 'mode_ok': False}
    store_dir.mkdir()
    os.chmod(str(store_dir), 0o755)
    assert _host_check.directory(str(store_dir), '0700')['mode'] == '0755'
    assert _host_check.directory(str(store_dir), '0700')['mode_ok'] is False
    os.chmod(str(store_dir), 0o700)
    assert _host_check.directory(str(store_dir), '0700')['mode_ok'] is True
    assert _host_check.directory(str(store_dir), '700')['mode_ok'] is True
    assert _host_check.directory(str(store_dir), 'u=rwx,go=')['mode_ok'] is None
    assert _host_check.directory(str(store_dir), None)['mode_ok'] is True
    a_file = tmp_path / 'file'
    a_file.write_text('')
    assert _host_check.directory(str(a_file), '0700')['exists'] is False


def test_a_host_without_an_engine_is_not_ready_and_says_why(tmp_path):
    store_dir = tmp_path / 'state'
    store_dir.mkdir(mode=0o700)
    result = _host_check.check({
        'docker_host': 'unix://%s' % (tmp_path / 'no-engine.sock'), 'timeout': 2,
        'store_path': str(store_dir / 'store.db'), 'store_dir': None, 'store_dir_mode': '0700',
        'image': 'drover.local/busybox:1', 'libraries': ['json', 'drover_not_here']})
    assert result['ready'] is False
    assert result['needs'] == ['engine', 'libraries', 'image']
    assert result['engine']['answers'] is False
    assert 'no-engine.sock' in result['engine']['error']
    assert result['image'] == {'name': 'drover.local/busybox:1', 'present': None}
    assert result['libraries_missing'] == ['drover_not_here']
    assert result['store_dir']['path'] == str(store_dir) and result['store_dir']['mode_ok'] is True
    assert result['python']['executable'] == sys.executable
    assert result['changed'] is False
    assert not (store_dir / 'store.db').exists()


def test_held_pools_are_the_store_s_and_the_runner_containers_of_this_store(tmp_path):
    path = str(tmp_path / 'store.db')
    store = Store(path)
    try:
        assert _host.held_pools(store, [], path) == []
        store.put_pool('ci', 'octo/app', {}, 1000.0)
        mine = _host.store_scope(path)
        listing = [
            {'labels': {'drover.role': 'runner', 'drover.pool': 'build', 'drover.store': mine}},
            {'labels': {'drover.role': 'runner', 'drover.pool': 'legacy'}},             # before the label
            {'labels': {'drover.role': 'runner', 'drover.pool': 'theirs', 'drover.store': 'another'}},
            {'labels': {'drover.role': 'task', 'drover.pool': 'not-a-runner', 'drover.store': mine}},
        ]
        assert _host.held_pools(store, listing, path) == ['build', 'ci', 'legacy']
    finally:
        store.close()


def test_ecs_task_s_look_takes_the_engine_store_and_timeout_of_the_call(tmp_path):
    store_dir = tmp_path / 'state'
    store_dir.mkdir(mode=0o700)
    found = _host_check.look({
        'docker_host': 'unix://%s' % (tmp_path / 'no-engine.sock'), 'timeout': 2,
        'store_path': str(store_dir / 'store.db'),
        'host_check': {'store_dir': None, 'store_dir_mode': '0700', 'image': None, 'libraries': ['json']}})
    assert 'changed' not in found
    assert found['needs'] == ['engine'] and found['ready'] is False
    assert 'no-engine.sock' in found['engine']['error']
    assert found['store_dir'] == {'path': str(store_dir), 'exists': True, 'mode': '0700', 'mode_ok': True}
    assert 'image' not in found
