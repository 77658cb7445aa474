# -*- coding: utf-8 -*-
"""What the runner-pool fault tests share: gh_runner_slot run as Ansible runs it (a process of its own, its
arguments in a file), two pools of their own against an in-process GitHub stand-in, and views of the engine."""

from __future__ import absolute_import, division, print_function

import json
import os
import sqlite3
import time
import uuid

from procs import module_process, result_of
from github_standin.server import StandIn  # pylint: disable=wrong-import-order

RUNNER_IMAGE = 'drover.local/runner:1'


def run(args, tmp_path, tag, raw=False):
    """gh_runner_slot's result; with raw, (result, stdout + stderr)."""
    return result_of(module_process('gh_runner_slot', args, tmp_path, tag), raw=raw)


class PoolRig:
    """Two pools (`k<tag>a`, `k<tag>b`, 2 slots each) of repositories of their own at a fresh stand-in, and a
    store of their own; `close()` drains them and checks that the stand-in saw no OpenAPI violation."""

    def __init__(self, tmp_path, token, **pool_args):
        self.tag = uuid.uuid4().hex[:6]
        self.tmp_path = tmp_path
        self.token = token
        self.standin = StandIn(token=token).start()
        self.repos = dict((p, 'octo/%s%s' % (p, self.tag)) for p in 'ab')
        for repo in self.repos.values():
            self.standin.add_repo(repo)
        self.store_path = str(tmp_path / 'state' / 'store.db')
        self.args = dict({
            'store_path': self.store_path, 'api_url': self.standin.url, 'token': token,
            'machine_id': 'k' + self.tag, 'labels': ['self-hosted', 'linux'], 'scale': 'fixed',
            'allow_host_network': True,
            'pools': [{'pool': self.pool(p), 'repository': self.repos[p],
                       'profile': {'name': 'k' + p, 'image': RUNNER_IMAGE, 'slots': 2, 'network_mode': 'host',
                                   'memory': 64, 'environment': {'DROVER_POLL_SECONDS': '30'}}} for p in 'ab']},
            **pool_args)

    def pool(self, letter):
        return 'k%s%s' % (self.tag, letter)

    @property
    def jit_dir(self):
        return os.path.join(os.path.dirname(self.store_path), 'jit')

    def close(self, engine):
        try:
            self.standin.clear_faults()
            run(dict(self.args, pools=[], purge=True, kill_busy=True), self.tmp_path, 'cleanup')
        finally:
            for c in engine.containers.list(all=True, filters={'label': 'drover.role=runner'}):
                if c.labels.get('drover.pool', '').startswith('k' + self.tag):
                    c.remove(force=True)
            self.standin.stop()
        assert self.standin.violations == [], self.standin.violations

    def boxes(self, engine):
        """name -> status of this rig's runner containers."""
        return dict((c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.role=runner'})
                    if c.labels.get('drover.pool', '').startswith('k' + self.tag))

    def starts(self, engine, since):
        """name -> how many times the engine started a runner container of this rig since `since`."""
        counts = {}
        for ev in engine.api.events(since=since, until=int(time.time()) + 1, decode=True,
                                    filters={'type': 'container', 'event': 'start', 'label': 'drover.role=runner'}):
            name = ev['Actor']['Attributes'].get('name', '')
            if ev['Actor']['Attributes'].get('drover.pool', '').startswith('k' + self.tag):
                counts[name] = counts.get(name, 0) + 1
        return counts

    def expire_holds(self):
        """Let the holds of the pools run out, as time would (a hold lasts 30 s or more)."""
        db = sqlite3.connect(self.store_path)
        try:
            db.execute('UPDATE pools SET hold_until = ? WHERE hold_until IS NOT NULL', (time.time() - 1,))
            db.commit()
        finally:
            db.close()

    def check_converged(self, engine, result, context, per_pool=2):
        """Every slot holds a running runner that is registered, and nothing else exists: no other
        registration at the stand-in, no other runner container, no JIT config file of no live runner."""
        assert not result.get('failed'), (context, result.get('msg'))
        slots = [s for p in result['pools'] for s in p['slots']]
        held = sorted(s['runner_name'] for s in slots if s['runner_name'])
        assert len(held) == 2 * per_pool, (context, slots)
        registered = sorted(r['name'] for r in self.standin.state()['runners'])
        assert registered == held, (context, 'registrations', registered, held)
        assert self.boxes(engine) == dict((n, 'running') for n in held), (context, self.boxes(engine))
        assert sorted(os.listdir(self.jit_dir)) == held, (context, sorted(os.listdir(self.jit_dir)), held)
        counted = self.starts(engine, self.since)
        twice = dict((n, k) for n, k in counted.items() if k > 1)
        assert twice == {}, (context, 'started twice', twice)
        # The engine keeps its last 256 events: the window still holds the start of every runner held now.
        assert set(held) <= set(counted), (context, 'starts missing from the engine events', held, counted)
        assert self.token not in json.dumps(result)
        db = sqlite3.connect('file:%s?mode=ro' % self.store_path, uri=True)
        try:
            assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok', context
        finally:
            db.close()
        return held

    since = 0
