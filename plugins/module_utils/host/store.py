# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host store and the host lock.

Owns: the one SQLite database per host (schema version, migrations, file modes) and the
host-wide flock that serialises converges.
Must not: talk to Docker, GitHub or the network; decide anything. It stores what cannot be
read back from the engine (task runs, streaks, holds, ...) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import json
import os
import sqlite3
import time

from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils.host import metrics as _metrics

DEFAULT_STORE_PATH = '/var/lib/drover/store.db'
# How long a converge waits for another one to release the host lock.
LOCK_TIMEOUT = 60
# How long SQLite itself waits on a locked database before giving up (milliseconds).
BUSY_TIMEOUT_MS = 10000

# The files SQLite keeps next to the database.
SQLITE_SIDE_FILES = ('-wal', '-shm', '-journal')

# Each entry migrates the schema from version i to i + 1. Never edit a released entry:
# append a new one, so every store on every host reaches the same schema.
MIGRATIONS = (
    # 0 -> 1: task runs, with the restart streak and hold; an event outbox.
    """
    CREATE TABLE tasks (
        cluster        TEXT NOT NULL,
        name           TEXT NOT NULL,
        spec_hash      TEXT,
        desired_status TEXT NOT NULL,
        last_status    TEXT NOT NULL,
        stopped_reason TEXT,
        restart        TEXT NOT NULL DEFAULT 'never',
        started_at     REAL,
        stopped_at     REAL,
        streak         INTEGER NOT NULL DEFAULT 0,
        hold_until     REAL,
        containers     TEXT NOT NULL DEFAULT '[]',
        updated_at     REAL NOT NULL,
        PRIMARY KEY (cluster, name)
    );
    CREATE TABLE events (
        id      INTEGER PRIMARY KEY AUTOINCREMENT,
        at      REAL NOT NULL,
        kind    TEXT NOT NULL,
        subject TEXT NOT NULL,
        data    TEXT NOT NULL
    );
    """,
    # 1 -> 2: GPU pins, credential-link /30 allocations, task credential registrations.
    """
    CREATE TABLE gpu_pins (
        uuid      TEXT PRIMARY KEY,
        key       TEXT NOT NULL,
        task      TEXT NOT NULL,
        pinned_at REAL NOT NULL
    );
    CREATE INDEX gpu_pins_task ON gpu_pins (task);
    CREATE TABLE link_allocations (
        subnet       TEXT PRIMARY KEY,
        netns        TEXT NOT NULL UNIQUE,
        allocated_at REAL NOT NULL
    );
    CREATE TABLE credentials (
        cred_id       TEXT PRIMARY KEY,
        cluster       TEXT NOT NULL,
        task          TEXT NOT NULL,
        role_arn      TEXT NOT NULL,
        source_ip     TEXT,
        registered_at REAL NOT NULL
    );
    """,
    # 2 -> 3: runner pools (hold, streaks, where GitHub asked us to wait) and their slots.
    """
    CREATE TABLE pools (
        pool          TEXT PRIMARY KEY,
        owner         TEXT NOT NULL,
        failures      INTEGER NOT NULL DEFAULT 0,
        idle_exits    INTEGER NOT NULL DEFAULT 0,
        hold_until    REAL,
        hold_cause    TEXT,
        api_wait      REAL,
        updated_at    REAL NOT NULL
    );
    CREATE TABLE slots (
        pool          TEXT NOT NULL,
        idx           INTEGER NOT NULL,
        runner_name   TEXT NOT NULL,
        runner_id     INTEGER,
        container_id  TEXT,
        started_at    REAL,
        busy          INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (pool, idx)
    );
    """,
    # 3 -> 4: a credential-link /30 names its task (cluster and task: a task's identity; each task's network
    # has a namespace of its own). Rows of earlier releases keep NULL: their namespace is named after the
    # task alone, and is found through its holder's drover.netns label.
    """
    ALTER TABLE link_allocations ADD COLUMN cluster TEXT;
    ALTER TABLE link_allocations ADD COLUMN task TEXT;
    CREATE INDEX link_allocations_task ON link_allocations (cluster, task)
    """,
    # 4 -> 5: counters for the metrics file; they only go up (each event adds to its counters as it is stored).
    """
    CREATE TABLE counters (
        name   TEXT NOT NULL,
        labels TEXT NOT NULL,
        value  REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (name, labels)
    );
    """,
    # 5 -> 6: the revisions of the services this host runs instances of, as the controller's placement hands them
    # to the host (drover.fleet.service_placement): a revision's number, where its deployment stands, and its task
    # declaration without the registry password (what a rollback or a kept instance of it is declared with).
    """
    CREATE TABLE service_revisions (
        cluster     TEXT NOT NULL,
        service     TEXT NOT NULL,
        revision    TEXT NOT NULL,
        number      INTEGER NOT NULL,
        status      TEXT NOT NULL,
        rollback_of INTEGER,
        generation  INTEGER NOT NULL DEFAULT 0,
        declaration TEXT NOT NULL,
        updated_at  REAL NOT NULL,
        PRIMARY KEY (cluster, service, revision)
    );
    """,
    # 6 -> 7: each revision record's seal, the controller's HMAC over its fields (a record of an earlier release
    # has none: the placement does not take it, and hands the host sealed records again).
    """
    ALTER TABLE service_revisions ADD COLUMN seal TEXT
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

TASK_COLUMNS = ('cluster', 'name', 'spec_hash', 'desired_status', 'last_status', 'stopped_reason',
                'restart', 'started_at', 'stopped_at', 'streak', 'hold_until', 'containers', 'updated_at')


class StoreError(Exception):
    """The store cannot be used; the message names the file and what to do."""


class LockTimeout(Exception):
    pass


class HostLock:
    """A host-wide exclusive flock on `<store dir>/lock`, waited for at most `timeout` seconds."""

    def __init__(self, path, timeout=LOCK_TIMEOUT):
        self.path = path
        self.timeout = timeout
        self._fd = None

    def acquire(self):
        try:
            _ensure_dir(os.path.dirname(self.path))
            fd = _files.open_file(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError('host lock %s cannot be opened: %s' % (self.path, exc))
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(
                        'another converge holds the host lock %s; gave up after waiting %s s '
                        '(raise lock_timeout, or find the process holding it with: fuser %s)'
                        % (self.path, self.timeout, self.path))
                time.sleep(0.05)
        self._fd = fd
        return self

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _ensure_dir(path):
    """The store's directory: made 0700 when missing; refused when another user can write it (host.files)."""
    if path:
        _files.ensure_dir(path, 0o700)


def _refuse_links(path):
    """The database and SQLite's files next to it are never opened through a symbolic link."""
    for suffix in ('',) + SQLITE_SIDE_FILES:
        _files.refuse_link(path + suffix)


class Store:
    """The host store. `read_only` opens without creating or migrating anything (check mode)."""

    def __init__(self, path=DEFAULT_STORE_PATH, read_only=False, older_ok=False):
        self.path = path
        self.read_only = read_only
        self.version = SCHEMA_VERSION
        self.db = None
        try:
            if read_only:
                if os.path.lexists(path):
                    _files.check_dir(os.path.dirname(path))
                    _refuse_links(path)
                    self.db = sqlite3.connect('file:%s?mode=ro' % path, uri=True, timeout=BUSY_TIMEOUT_MS / 1000.0)
                else:
                    # Nothing stored yet: plan against an empty store held in memory.
                    self.db = sqlite3.connect(':memory:')
            else:
                _ensure_dir(os.path.dirname(path))
                _refuse_links(path)
                fd = _files.open_file(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    os.fchmod(fd, 0o600)
                finally:
                    os.close(fd)
                self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000.0, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute('PRAGMA busy_timeout = %d' % BUSY_TIMEOUT_MS)
            version = self.db.execute('PRAGMA user_version').fetchone()[0]
            if not read_only:
                self.db.execute('PRAGMA journal_mode = WAL')
                self.db.execute('PRAGMA synchronous = NORMAL')
            if version > SCHEMA_VERSION:
                raise StoreError('store %s has schema version %d, newer than this collection knows (%d): '
                                 'upgrade drover.fleet on this host' % (path, version, SCHEMA_VERSION))
            if version < SCHEMA_VERSION:
                if read_only and os.path.exists(path) and older_ok:
                    self.version = version      # read as it is: what a later migration adds reads as empty
                elif read_only and os.path.exists(path):
                    raise StoreError('store %s has schema version %d and needs a migration to %d, which check '
                                     'mode does not do: run once without check mode' % (path, version, SCHEMA_VERSION))
                else:
                    self._migrate(version)
            # Check every page now (the store is small: about a millisecond), so that a damaged file fails
            # here, with the file named, and not in the middle of a converge.
            problems = [r[0] for r in self.db.execute('PRAGMA quick_check').fetchall()]
            if problems != ['ok']:
                raise sqlite3.DatabaseError('; '.join(problems[:3]))
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError('store %s cannot be read (%s): it is damaged or not a drover store; move it aside '
                             'and converge again to rebuild it from the host' % (path, exc))
        except OSError as exc:
            self.close()
            raise StoreError('store %s cannot be opened: %s' % (path, exc))

    def _migrate(self, version):
        for step in range(version, SCHEMA_VERSION):
            self.db.execute('BEGIN IMMEDIATE')
            try:
                # executescript() would commit on its own: run the statements one by one inside the step.
                for statement in MIGRATIONS[step].split(';'):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute('PRAGMA user_version = %d' % (step + 1))
                self.db.execute('COMMIT')
            except Exception:
                self.db.execute('ROLLBACK')
                raise

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def schema_version(self):
        return self.db.execute('PRAGMA user_version').fetchone()[0]

    # --- tasks ---------------------------------------------------------------------------------

    def tasks(self, cluster=None):
        """Every stored task run, as dicts, `containers` decoded."""
        if cluster is None:
            rows = self.db.execute('SELECT * FROM tasks ORDER BY cluster, name').fetchall()
        else:
            rows = self.db.execute('SELECT * FROM tasks WHERE cluster = ? ORDER BY name', (cluster,)).fetchall()
        out = []
        for row in rows:
            record = dict(row)
            record['containers'] = json.loads(record['containers'] or '[]')
            out.append(record)
        return out

    def put_task(self, record, now):
        self._writable()
        values = dict(record)
        values['containers'] = json.dumps(values.get('containers') or [], sort_keys=True)
        values['updated_at'] = now
        values.setdefault('streak', 0)
        values.setdefault('restart', 'never')
        cols = ', '.join(TASK_COLUMNS)
        marks = ', '.join(['?'] * len(TASK_COLUMNS))
        self.db.execute('INSERT OR REPLACE INTO tasks (%s) VALUES (%s)' % (cols, marks),
                        tuple(values.get(c) for c in TASK_COLUMNS))

    def delete_task(self, cluster, name):
        self._writable()
        self.db.execute('DELETE FROM tasks WHERE cluster = ? AND name = ?', (cluster, name))

    # --- service revisions -----------------------------------------------------------------------

    REVISION_COLUMNS = ('cluster', 'service', 'revision', 'number', 'status', 'rollback_of', 'generation',
                        'declaration', 'seal')

    def service_revisions(self):
        """Every recorded service revision, as dicts, `declaration` decoded ([] in a store older than them; `seal`
        None in one older than seals)."""
        if self.version < 6:
            return []
        out = []
        for row in self.db.execute('SELECT * FROM service_revisions ORDER BY cluster, service, number'):
            record = dict((k, row[k] if k in row.keys() else None) for k in self.REVISION_COLUMNS)
            record['declaration'] = json.loads(record['declaration'])
            out.append(record)
        return out

    def set_service_revisions(self, records, now):
        """Each (cluster, service) that `records` names holds those records and no other; True when that
        changed a row."""
        self._writable()

        def row(r):
            return (r.get('number'), r.get('status'), r.get('rollback_of'), r.get('generation') or 0,
                    json.dumps(r['declaration'], sort_keys=True), r.get('seal'))

        wanted = dict(((r['cluster'], r['service'], r['revision']), row(r)) for r in records)
        services = set(k[:2] for k in wanted)
        have = dict(((r['cluster'], r['service'], r['revision']), row(r))
                    for r in self.service_revisions() if (r['cluster'], r['service']) in services)
        if have == wanted:
            return False
        self.db.execute('BEGIN IMMEDIATE')
        try:
            for key in set(have) - set(wanted):
                self.db.execute('DELETE FROM service_revisions WHERE cluster = ? AND service = ? AND revision = ?', key)
            for key, values in sorted(wanted.items()):
                if have.get(key) != values:
                    self.db.execute('INSERT OR REPLACE INTO service_revisions (%s, updated_at) VALUES (%s)'
                                    % (', '.join(self.REVISION_COLUMNS),
                                       ', '.join(['?'] * (len(self.REVISION_COLUMNS) + 1))),
                                    key + values + (now,))
            self.db.execute('COMMIT')
        except Exception:
            self.db.execute('ROLLBACK')
            raise
        return True

    # --- events outbox -------------------------------------------------------------------------

    def add_event(self, event):
        """Store an event and add it to its counters and histograms, in one transaction (they equal the events)."""
        self._writable()
        self.db.execute('BEGIN IMMEDIATE')
        try:
            self.db.execute('INSERT INTO events (at, kind, subject, data) VALUES (?, ?, ?, ?)',
                            (event['at'], event['event'], event.get('subject', ''), json.dumps(event, sort_keys=True)))
            for name, labels in _metrics.event_counters(event):
                self.bump(name, labels)
            for family, labels, seconds in _metrics.event_observations(event):
                for name, series, by in _metrics.histogram_counters(family, labels, seconds):
                    self.bump(name, series, by)
            self.db.execute('COMMIT')
        except Exception:
            self.db.execute('ROLLBACK')
            raise

    # --- counters (metrics) ----------------------------------------------------------------------

    def bump(self, name, labels, by=1):
        """Add `by` (at least 0) to a counter."""
        self._writable()
        key = (name, json.dumps(labels, sort_keys=True))
        # (Two statements, not an upsert: SQLite before 3.24 has none.)
        self.db.execute('INSERT OR IGNORE INTO counters (name, labels, value) VALUES (?, ?, 0)', key)
        self.db.execute('UPDATE counters SET value = value + ? WHERE name = ? AND labels = ?', (max(by, 0),) + key)

    def counters(self):
        """[(name, labels, value)] of every counter."""
        return [(r['name'], json.loads(r['labels']), r['value'])
                for r in self.db.execute('SELECT name, labels, value FROM counters ORDER BY name, labels')]

    # --- GPU pins --------------------------------------------------------------------------------

    def _writable(self):
        if self.read_only:
            raise StoreError('store %s is open read-only' % self.path)

    def gpu_pins(self):
        """Every pin: {uuid: (key, task)}."""
        return dict((r['uuid'], (r['key'], r['task'])) for r in self.db.execute('SELECT * FROM gpu_pins'))

    def set_gpu_pins(self, pins, now):
        """Replace the pins with `pins` ({uuid: (key, task)}), in one transaction."""
        self._writable()
        self.db.execute('BEGIN IMMEDIATE')
        try:
            self.db.execute('DELETE FROM gpu_pins')
            self.db.executemany('INSERT INTO gpu_pins (uuid, key, task, pinned_at) VALUES (?, ?, ?, ?)',
                                [(u, k, t, now) for u, (k, t) in sorted(pins.items())])
            self.db.execute('COMMIT')
        except Exception:
            self.db.execute('ROLLBACK')
            raise

    # --- credential-link /30 allocations -----------------------------------------------------------

    def link_allocations(self):
        """{netns: subnet}."""
        return dict((r['netns'], r['subnet']) for r in self.db.execute('SELECT * FROM link_allocations'))

    def link_allocation_rows(self):
        """Every allocation: [{subnet, netns, cluster, task, allocated_at}] (cluster and task None on rows of
        earlier releases)."""
        return [dict(r) for r in self.db.execute('SELECT * FROM link_allocations ORDER BY subnet')]

    def put_link_allocation(self, netns, subnet, now, cluster=None, task=None):
        self._writable()
        self.db.execute('INSERT OR REPLACE INTO link_allocations (subnet, netns, allocated_at, cluster, task) '
                        'VALUES (?, ?, ?, ?, ?)', (subnet, netns, now, cluster, task))

    def delete_link_allocation(self, netns):
        self._writable()
        self.db.execute('DELETE FROM link_allocations WHERE netns = ?', (netns,))

    # --- task credential registrations ----------------------------------------------------------------

    def credentials(self):
        return [dict(r) for r in self.db.execute('SELECT * FROM credentials ORDER BY cred_id')]

    def put_credential(self, cred_id, cluster, task, role_arn, source_ip, now):
        self._writable()
        self.db.execute('INSERT OR REPLACE INTO credentials (cred_id, cluster, task, role_arn, source_ip, '
                        'registered_at) VALUES (?, ?, ?, ?, ?, ?)', (cred_id, cluster, task, role_arn, source_ip, now))

    def delete_credentials(self, cluster, task):
        self._writable()
        self.db.execute('DELETE FROM credentials WHERE cluster = ? AND task = ?', (cluster, task))

    # --- runner pools ----------------------------------------------------------------------------------

    def pool(self, name):
        row = self.db.execute('SELECT * FROM pools WHERE pool = ?', (name,)).fetchone()
        return dict(row) if row else None

    def pools(self):
        return [dict(r) for r in self.db.execute('SELECT * FROM pools ORDER BY pool')]

    def put_pool(self, name, owner, state, now):
        self._writable()
        self.db.execute('INSERT OR REPLACE INTO pools (pool, owner, failures, idle_exits, hold_until, hold_cause, '
                        'api_wait, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                        (name, owner, state.get('failures') or 0, state.get('idle_exits') or 0, state.get('hold_until'),
                         state.get('hold_cause'), state.get('api_wait'), now))

    def slots(self, pool):
        return dict((r['idx'], dict(r)) for r in self.db.execute('SELECT * FROM slots WHERE pool = ?', (pool,)))

    def all_slots(self):
        """Every pool's slot rows."""
        return [dict(r) for r in self.db.execute('SELECT * FROM slots ORDER BY pool, idx')]

    def set_slots(self, pool, slots):
        """Replace the pool's slot rows with `slots` ({index: row}), in one transaction."""
        self._writable()
        self.db.execute('BEGIN IMMEDIATE')
        try:
            self.db.execute('DELETE FROM slots WHERE pool = ?', (pool,))
            self.db.executemany(
                'INSERT INTO slots (pool, idx, runner_name, runner_id, container_id, started_at, busy) '
                'VALUES (?, ?, ?, ?, ?, ?, ?)',
                [(pool, i, r['runner_name'], r.get('runner_id'), r.get('container_id'), r.get('started_at'),
                  1 if r.get('busy') else 0) for i, r in sorted(slots.items())])
            self.db.execute('COMMIT')
        except Exception:
            self.db.execute('ROLLBACK')
            raise

    def delete_pool(self, name):
        self._writable()
        self.db.execute('DELETE FROM slots WHERE pool = ?', (name,))
        self.db.execute('DELETE FROM pools WHERE pool = ?', (name,))
