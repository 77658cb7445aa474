# -*- coding: utf-8 -*-
"""Store loss and damage: deleted, every task and pin and credential is found again from the labels;
truncated or overwritten with garbage, every module fails with a message that names the file and says what to
do - never a traceback - and nothing on the host changes."""

from __future__ import absolute_import, division, print_function

import json
import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
from helpers import store_rows  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = 'drover.local/busybox:1'
ROLE = 'arn:aws:iam::123456789012:role/store'
GPUS = ['GPU-5708e000-0000-4000-8000-%012d' % i for i in range(1, 3)]


@pytest.fixture
def declared(module_runner, engine, tmp_path):
    cluster = 's%s' % uuid.uuid4().hex[:8]
    store_path = str(tmp_path / 'state' / 'store.db')
    args = {'cluster': cluster, 'purge': True, 'store_path': store_path, 'gpu_discovery': 'static',
            'gpu_devices': GPUS, 'gpu_delivery': 'env',
            'tasks': [{'name': cluster + '-a', 'task_role_arn': ROLE, 'cred_id': cluster + '-cred',
                       'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'gpu': 1}]},
                      {'name': cluster + '-b', 'restart': 'always',
                       'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600']}]}]}
    first = module_runner('ecs_task', args)
    assert not first.failed and [t['last_status'] for t in first['tasks']] == ['RUNNING', 'RUNNING'], first
    yield args
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store_path + suffix):
            os.unlink(store_path + suffix)
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % args['cluster']}):
        c.remove(force=True)


def boxes(engine, cluster):
    return sorted((c.name, c.id, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}))


def test_store_deleted_everything_found_again(module_runner, engine, declared):
    path = declared['store_path']
    before = boxes(engine, declared['cluster'])
    rows = store_rows(path)
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    again = module_runner('ecs_task', declared)
    assert not again.failed and not again['changed'], again
    assert boxes(engine, declared['cluster']) == before
    rebuilt = store_rows(path)
    # The pin and the credential registration are back, as they were.
    assert [r[0] for r in rebuilt['gpu_pins']] == [r[0] for r in rows['gpu_pins']]
    assert [r[:4] for r in rebuilt['credentials']] == [r[:4] for r in rows['credentials']]


@pytest.mark.parametrize('damage', ['truncated', 'garbage', 'empty-header'])
@pytest.mark.parametrize('module', ['ecs_task', 'ecs_task_info', 'gpu_info', 'gh_runner_info'])
def test_damaged_store_fails_clearly_and_changes_nothing(module_runner, engine, declared, damage, module):
    path = declared['store_path']
    # Fold the WAL into the file first, so that the file is the whole store.
    import sqlite3
    db = sqlite3.connect(path)
    db.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    db.close()
    size = os.path.getsize(path)
    with open(path, 'r+b') as handle:
        if damage == 'truncated':
            handle.truncate(size // 2)
        elif damage == 'garbage':
            handle.write(os.urandom(size))
        else:
            handle.write(b'\0' * 100)
    before = boxes(engine, declared['cluster'])
    args = declared if module == 'ecs_task' else {'store_path': path}
    if module == 'gpu_info':
        args = dict(args, discovery='static', devices=GPUS)
    for check in (True, False):
        r = module_runner(module, args, check=check)
        assert r.failed, (damage, module, r)
        assert path in r['msg'] and 'Traceback' not in r['msg'] and 'exception' not in r, r['msg']
        assert 'move it aside' in r['msg'] or 'damaged' in r['msg'], r['msg']
    assert boxes(engine, declared['cluster']) == before
    json.dumps(r)
