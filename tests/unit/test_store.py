# -*- coding: utf-8 -*-
"""The host store and lock, on real SQLite files."""

from __future__ import absolute_import, division, print_function

import os
import sqlite3
import stat
import threading
import time

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.host import store as _store
from ansible_collections.drover.fleet.plugins.module_utils.host.store import HostLock, LockTimeout, Store, StoreError

RECORD = {'cluster': 'c', 'name': 'web', 'spec_hash': 'abc', 'desired_status': 'RUNNING', 'last_status': 'RUNNING',
          'stopped_reason': None, 'restart': 'always', 'started_at': 1.0, 'stopped_at': None, 'streak': 2,
          'hold_until': None, 'containers': [{'name': 'main', 'exit_code': None}]}


def test_fresh_store_modes_schema_and_wal(tmp_path):
    path = str(tmp_path / 'state' / 'store.db')
    with Store(path) as store:
        assert store.schema_version() == _store.SCHEMA_VERSION
        assert store.db.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_round_trip_and_delete(tmp_path):
    path = str(tmp_path / 'store.db')
    with Store(path) as store:
        store.put_task(RECORD, 5.0)
    with Store(path, read_only=True) as store:
        rows = store.tasks()
        assert len(rows) == 1 and rows[0]['containers'] == RECORD['containers'] and rows[0]['updated_at'] == 5.0
        with pytest.raises(StoreError):
            store.put_task(RECORD, 6.0)
    with Store(path) as store:
        store.delete_task('c', 'web')
        assert store.tasks() == []


def test_read_only_without_a_file_creates_nothing(tmp_path):
    path = str(tmp_path / 'none' / 'store.db')
    with Store(path, read_only=True) as store:
        assert store.tasks() == []
    assert not (tmp_path / 'none').exists()


def test_damaged_file_is_named(tmp_path):
    path = str(tmp_path / 'store.db')
    with open(path, 'wb') as handle:
        handle.write(b'this is not a database' * 100)
    with pytest.raises(StoreError) as err:
        Store(path)
    assert path in str(err.value) and 'move it aside' in str(err.value)


def test_newer_schema_is_refused(tmp_path):
    path = str(tmp_path / 'store.db')
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute('PRAGMA user_version = %d' % (_store.SCHEMA_VERSION + 1))
    db.close()
    with pytest.raises(StoreError) as err:
        Store(path)
    assert 'newer than this collection knows' in str(err.value)


def test_check_mode_does_not_migrate(tmp_path):
    path = str(tmp_path / 'store.db')
    sqlite3.connect(path).close()
    with pytest.raises(StoreError) as err:
        Store(path, read_only=True)
    assert 'check mode' in str(err.value)
    with Store(path) as store:
        assert store.schema_version() == _store.SCHEMA_VERSION


def test_lock_waits_then_fails_with_the_file_named(tmp_path):
    path = str(tmp_path / 'store.db.lock')
    held = HostLock(path).acquire()
    started = time.monotonic()
    with pytest.raises(LockTimeout) as err:
        HostLock(path, timeout=0.3).acquire()
    assert time.monotonic() - started >= 0.3
    assert path in str(err.value)
    released = []
    threading.Timer(0.2, lambda: (held.release(), released.append(True))).start()
    with HostLock(path, timeout=5):
        assert released == [True]


def test_events_outbox(tmp_path):
    with Store(str(tmp_path / 'store.db')) as store:
        store.add_event({'event': 'task.running', 'at': '2026-01-01T00:00:00Z', 'subject': 'task/c/web'})
        rows = [tuple(r) for r in store.db.execute('SELECT kind, subject FROM events')]
        assert rows == [('task.running', 'task/c/web')]


def test_two_first_runs_make_the_store_directory_at_once(tmp_path, monkeypatch):
    """Found by the long race run of tests/faults (race 1 of 20: one of two first converges on a host died with
    FileExistsError, printing no result): the other run made the directory between the look and the make."""
    state = tmp_path / 'state'
    state.mkdir()
    real_isdir, looked = os.path.isdir, []

    def isdir(path):                 # the first look misses it: the other run made it just after
        if path == str(state) and not looked:
            looked.append(path)
            return False
        return real_isdir(path)
    monkeypatch.setattr(_store.os.path, 'isdir', isdir)
    lock = HostLock(str(state / 'store.db.lock'), timeout=1).acquire()
    lock.release()
    assert looked and stat.S_IMODE(os.stat(str(state)).st_mode) == 0o700


# --- never through a symbolic link, never in a directory another user can write ----------------------------

def _victim(tmp_path):
    """A file of another's, elsewhere: its mode and text must stay as they are."""
    other = tmp_path / 'elsewhere'
    other.mkdir()
    victim = other / 'theirs'
    victim.write_text('not yours\n')
    os.chmod(str(victim), 0o644)
    return victim


def _untouched(victim):
    return stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o644 and victim.read_text() == 'not yours\n'


@pytest.mark.parametrize('link', ['store.db', 'store.db-wal', 'store.db-shm', 'store.db-journal'])
@pytest.mark.parametrize('read_only', [False, True])
def test_a_link_at_the_store_is_refused(tmp_path, link, read_only):
    state = tmp_path / 'state'
    state.mkdir(mode=0o700)
    victim = _victim(tmp_path)
    if link != 'store.db':
        Store(str(state / 'store.db')).close()
    os.symlink(str(victim), str(state / link))
    with pytest.raises(StoreError) as err:
        Store(str(state / 'store.db'), read_only=read_only)
    assert str(state / link) in str(err.value) and 'symbolic link' in str(err.value), str(err.value)
    assert _untouched(victim)


def test_a_dangling_link_at_the_store_creates_nothing(tmp_path):
    state = tmp_path / 'state'
    state.mkdir(mode=0o700)
    target = tmp_path / 'elsewhere' / 'made.db'
    target.parent.mkdir()
    os.symlink(str(target), str(state / 'store.db'))
    for read_only in (True, False):
        with pytest.raises(StoreError, match='symbolic link'):
            Store(str(state / 'store.db'), read_only=read_only)
    assert not target.exists()


def test_a_link_at_the_lock_is_refused(tmp_path):
    state = tmp_path / 'state'
    state.mkdir(mode=0o700)
    victim = _victim(tmp_path)
    os.symlink(str(victim), str(state / 'store.db.lock'))
    with pytest.raises(StoreError) as err:
        HostLock(str(state / 'store.db.lock'), timeout=1).acquire()
    assert 'host lock %s' % (state / 'store.db.lock') in str(err.value) and 'symbolic link' in str(err.value)
    assert _untouched(victim)


@pytest.mark.parametrize('mode', [0o777, 0o775, 0o1777, 0o757])
def test_a_store_directory_others_can_write_is_refused(tmp_path, mode):
    state = tmp_path / 'state'
    state.mkdir()
    os.chmod(str(state), mode)
    with pytest.raises(StoreError) as err:
        Store(str(state / 'store.db'))
    assert str(state) in str(err.value) and 'writable by another user' in str(err.value), str(err.value)
    with pytest.raises(StoreError, match='writable by another user'):
        HostLock(str(state / 'store.db.lock'), timeout=1).acquire()
    Store(str(state / 'store.db'), read_only=True).close()          # nothing stored: nothing opened there
    assert os.listdir(str(state)) == []
    assert stat.S_IMODE(os.stat(str(state)).st_mode) == mode        # left as it is
    # a store made in a directory that others were given write access to later
    os.chmod(str(state), 0o700)
    Store(str(state / 'store.db')).close()
    os.chmod(str(state), mode)
    for read_only in (True, False):
        with pytest.raises(StoreError, match='writable by another user'):
            Store(str(state / 'store.db'), read_only=read_only)


def test_a_directory_above_others_can_write_is_refused_unless_sticky(tmp_path):
    shared = tmp_path / 'shared'
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(StoreError) as err:
        Store(str(shared / 'state' / 'store.db'))
    assert '%s is writable by other users' % shared in str(err.value), str(err.value)
    assert not (shared / 'state').exists()
    os.chmod(str(shared), 0o1777)                                    # sticky, as /tmp
    Store(str(shared / 'state' / 'store.db')).close()
    assert stat.S_IMODE(os.stat(str(shared / 'state')).st_mode) == 0o700
    # a link to a directory is followed, and where it leads is checked too
    os.chmod(str(shared / 'state'), 0o777)
    os.symlink(str(shared / 'state'), str(tmp_path / 'via'))
    with pytest.raises(StoreError, match='writable by another user'):
        Store(str(tmp_path / 'via' / 'store.db'))


def test_a_store_of_schema_3_migrates_its_link_allocations(tmp_path):
    """Allocations made before they named their task keep their rows (cluster and task NULL); new ones
    name cluster and task."""
    path = str(tmp_path / 'store.db')
    db = sqlite3.connect(path)
    for step in _store.MIGRATIONS[:3]:
        db.executescript(step)
    db.execute("INSERT INTO link_allocations (subnet, netns, allocated_at) VALUES ('169.254.1.0/30', 'drover-web', 1.0)")
    db.execute('PRAGMA user_version = 3')
    db.commit()
    db.close()
    with Store(path) as store:
        assert store.schema_version() == _store.SCHEMA_VERSION >= 4
        assert store.link_allocations() == {'drover-web': '169.254.1.0/30'}
        store.put_link_allocation('drover-web-0123456789', '169.254.1.4/30', 2.0, 'b', 'web')
        rows = store.link_allocation_rows()
    assert [(r['netns'], r['cluster'], r['task']) for r in rows] == [
        ('drover-web', None, None), ('drover-web-0123456789', 'b', 'web')]


def _revision(revision, number, status='completed', service='web'):
    return {'cluster': 'c', 'service': service, 'revision': revision, 'number': number, 'status': status,
            'rollback_of': None, 'declaration': {'containers': [{'name': 'main', 'image': 'i:%d' % number}]}}


def test_service_revisions_each_service_named_holds_the_records_given(tmp_path):
    path = str(tmp_path / 'store.db')
    with Store(path) as store:
        assert store.set_service_revisions([_revision('a', 1), _revision('b', 2, 'in_progress'),
                                            _revision('x', 1, service='api')], 10.0) is True
        assert store.set_service_revisions([_revision('a', 1), _revision('b', 2, 'in_progress')], 11.0) is False
        # web's records replaced (a gone, b completed, c new); api's untouched (not named)
        assert store.set_service_revisions([_revision('b', 2), _revision('c', 3, 'in_progress')], 12.0) is True
        rows = [(r['service'], r['revision'], r['number'], r['status']) for r in store.service_revisions()]
    assert rows == [('api', 'x', 1, 'completed'), ('web', 'b', 2, 'completed'), ('web', 'c', 3, 'in_progress')]
    with Store(path, read_only=True) as store:
        assert store.service_revisions()[2]['declaration'] == _revision('c', 3)['declaration']


def _as_of_schema(path, version, undo):
    """The store at `path` as a release of schema `version` left it (`undo`: a statement that takes away what came
    after)."""
    db = sqlite3.connect(path)
    db.execute(undo)
    db.execute('PRAGMA user_version = %d' % version)
    db.commit()
    db.close()


def test_a_store_of_records_without_seals_is_migrated_and_keeps_them(tmp_path):
    """A store of the release before seals (schema 6): its records read with `seal` None (the placement does not
    take them, and hands the host sealed ones), as it is and once migrated; a seal given is kept."""
    path = str(tmp_path / 'store.db')
    with Store(path) as store:
        store.set_service_revisions([_revision('a', 1)], 10.0)
    _as_of_schema(path, 6, 'ALTER TABLE service_revisions DROP COLUMN seal')
    with Store(path, read_only=True, older_ok=True) as store:
        assert [(r['revision'], r['seal']) for r in store.service_revisions()] == [('a', None)]
    with Store(path) as store:
        assert store.schema_version() == _store.SCHEMA_VERSION
        assert [(r['revision'], r['seal']) for r in store.service_revisions()] == [('a', None)]
        assert store.set_service_revisions([dict(_revision('a', 1), seal='ab' * 32)], 11.0) is True
        assert store.set_service_revisions([dict(_revision('a', 1), seal='ab' * 32)], 12.0) is False
        assert [r['seal'] for r in store.service_revisions()] == ['ab' * 32]


def test_an_older_store_is_read_as_it_is_where_that_is_asked(tmp_path):
    """ecs_task_info (the services' look) reads a store that no converge has migrated yet: its revisions read as
    none, its tasks as they are, and nothing is written."""
    path = str(tmp_path / 'store.db')
    with Store(path) as store:
        store.put_task(RECORD, 1.0)
    _as_of_schema(path, 5, 'DROP TABLE service_revisions')
    with Store(path, read_only=True, older_ok=True) as store:
        assert store.service_revisions() == [] and [t['name'] for t in store.tasks()] == ['web']
        assert store.schema_version() == 5
    with pytest.raises(StoreError):
        Store(path, read_only=True)
