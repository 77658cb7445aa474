# -*- coding: utf-8 -*-
"""Salt suite fixtures: a masterless minion of the test's own (salt-call --local from the Salt venv, .venv-salt,
with a generated config under tmp_path: file_client local, its own root_dir, cachedir, file_roots and
pillar_roots), its event bus (bus.py), the real Docker engine, and the GitHub stand-in."""

from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'salt', 'src'))
sys.path.insert(0, os.path.join(ROOT, 'hack'))

import salt_minion  # noqa: E402  pylint: disable=wrong-import-position
from sweep import SWEEP  # noqa: E402  pylint: disable=wrong-import-position
# pylint: disable-next=unused-import,wrong-import-position
from shared_fixtures import cluster, engine, fake_eni, netns_cleanup, pool_name, standin, store_path  # noqa: E402,F401

SALT_VENV = os.environ.get('DROVER_SALT_VENV', os.path.join(ROOT, '.venv-salt'))
SALT_CALL = os.path.join(SALT_VENV, 'bin', 'salt-call')
SALT_PY = os.path.join(SALT_VENV, 'bin', 'python')


class Minion:
    """A masterless minion: its config dir, pillar and salt-call."""

    def __init__(self, base):
        if not os.path.exists(SALT_CALL):
            pytest.fail('%s not found: make salt-venv' % SALT_CALL)
        self.base = base
        # Salt puts its paths under root_dir, and a socket's path must fit in 107 bytes: root_dir is a short
        # directory of its own (swept for secrets, then removed, after the test).
        self.root = tempfile.mkdtemp(prefix='drover-salt-')
        self.conf = salt_minion.write(base, 'drover-test', root_dir=self.root,
                                      file_roots=[os.path.join(base, 'states')])
        self.pillar({})

    def sls_path(self, name):
        """Where a test writes a state file of its own, run as drover_test.<name>."""
        path = os.path.join(self.base, 'states', 'drover_test')
        os.makedirs(path, exist_ok=True)
        return os.path.join(path, name + '.sls')

    def pillar(self, drover):
        """Set the pillar key `drover` (written as the user's input: not swept)."""
        SWEEP.given(salt_minion.write_pillar(self.base, drover))

    def call(self, *args, env=None):
        """salt-call --local with `args`; its JSON result (the `local` key). Every output is swept for secrets."""
        run_env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
        run_env.update(env or {})
        proc = subprocess.run([SALT_CALL, '--local', '-c', self.conf, '--out=json', '--log-level=quiet'] + list(args),
                              capture_output=True, text=True, env=run_env, timeout=120, check=False)
        SWEEP.look(proc.stdout + proc.stderr, 'salt-call %s' % ' '.join(args))
        try:
            return json.loads(proc.stdout)['local']
        except (ValueError, KeyError):
            raise AssertionError('salt-call %s: no JSON result: %s %s' % (args, proc.stdout[-2000:], proc.stderr[-2000:]))

    def apply(self, test=False):
        """state.apply drover: {state id: state return}."""
        out = self.call('state.apply', 'drover', 'test=%s' % test)
        assert isinstance(out, dict), out
        return dict((v.get('__id__', k), v) for k, v in out.items())


@pytest.fixture
def minion(tmp_path):
    made = Minion(str(tmp_path / 'salt'))
    yield made
    SWEEP.files(made.root)
    shutil.rmtree(made.root, ignore_errors=True)


class Bus:
    """The minion's event bus (bus.py in the Salt venv): the events fired while it runs."""

    def __init__(self, minion):
        self.proc = subprocess.Popen([SALT_PY, os.path.join(HERE, 'bus.py'), minion.conf], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        import select
        if not select.select([self.proc.stdout], [], [], 30)[0]:
            self.proc.kill()
            raise AssertionError('bus.py: no event bus within 30 s')
        ready = self.proc.stdout.readline()
        assert json.loads(ready) == {'ready': True}, ready
        self.lines = []
        # A thread reads the lines (select on the pipe would miss those already in the reader's buffer).
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def events(self, count, timeout=10):
        """The first `count` events (tag, data) seen (fewer if they do not come within `timeout` s)."""
        import time
        deadline = time.time() + timeout
        while len(self.lines) < count and time.time() < deadline:
            time.sleep(0.05)
        return [(e['tag'], e['data']) for e in self.lines]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture
def bus(minion):
    listening = Bus(minion)
    yield listening
    listening.close()
