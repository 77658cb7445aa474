# -*- coding: utf-8 -*-
"""Kill trials for runner pools: gh_runner_slot, over two pools in one call against the GitHub stand-in, is
SIGKILLed at a seeded random moment of a pass that starts their runners; the next pass must reach the
declared state with nothing left over: every registration at the stand-in held by a slot, no runner
container outside a slot, no JIT config file without a live runner, no container started twice."""

from __future__ import absolute_import, division, print_function

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEV = os.path.join(ROOT, 'collection', 'dev')
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))
from github_standin.server import StandIn  # noqa: E402  pylint: disable=wrong-import-position

TRIALS = int(os.environ.get('FAULT_TRIALS', '3'))
SEED = int(os.environ.get('FAULT_SEED', str(int(time.time()))))
TOKEN = 'ghp_sentinel_faults_%s' % uuid.uuid4().hex
RUNNER_IMAGE = 'drover.local/runner:1'


def module_process(args, tmp_path, tag):
    path = str(tmp_path / ('args-%s.json' % tag))
    with open(path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=False, _ansible_diff=False)}, handle)
    return subprocess.Popen([sys.executable, '-m', 'ansible_collections.drover.fleet.plugins.modules.gh_runner_slot',
                             path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=DEV),
                            text=True)


def run(args, tmp_path, tag):
    out, err = module_process(args, tmp_path, tag).communicate(timeout=300)
    try:
        return json.loads(out[out.index('{'):])
    except ValueError:
        raise AssertionError('no result: %s %s' % (out[-2000:], err[-2000:]))


@pytest.fixture
def pools(engine, tmp_path):
    tag = uuid.uuid4().hex[:6]
    standin = StandIn(token=TOKEN).start()
    standin.add_repo('octo/a%s' % tag)
    standin.add_repo('octo/b%s' % tag)
    store_path = str(tmp_path / 'state' / 'store.db')
    args = {'store_path': store_path, 'api_url': standin.url, 'token': TOKEN, 'machine_id': 'k' + tag,
            'labels': ['self-hosted', 'linux'], 'scale': 'fixed',
            'pools': [{'pool': 'k%s%s' % (tag, p), 'repository': 'octo/%s%s' % (p, tag),
                       'profile': {'name': 'k' + p, 'image': RUNNER_IMAGE, 'slots': 2, 'network_mode': 'host',
                                   'memory': 64, 'environment': {'DROVER_POLL_SECONDS': '30'}}} for p in 'ab']}
    yield args, standin, tag
    try:
        run(dict(args, pools=[], purge=True, kill_busy=True), tmp_path, 'cleanup')
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.role=runner'}):
            if c.labels.get('drover.pool', '').startswith('k' + tag):
                c.remove(force=True)
        standin.stop()
    assert standin.violations == [], standin.violations


def runner_boxes(engine, tag):
    return dict((c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.role=runner'})
                if c.labels.get('drover.pool', '').startswith('k' + tag))


def starts(engine, since, tag):
    counts = {}
    for ev in engine.api.events(since=since, until=int(time.time()) + 1, decode=True,
                                filters={'type': 'container', 'event': 'start', 'label': 'drover.role=runner'}):
        name = ev['Actor']['Attributes'].get('name', '')
        if ev['Actor']['Attributes'].get('drover.pool', '').startswith('k' + tag):
            counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.parametrize('number', range(TRIALS))
def test_killed_pool_pass_then_converged(engine, pools, tmp_path, number):
    args, standin, tag = pools
    delay = random.Random(SEED * 1000 + 500 + number).uniform(0.0, 2.5)
    context = 'seed %d pool trial %d: killed after %.2f s' % (SEED, number, delay)
    since = int(time.time()) - 1
    victim = module_process(args, tmp_path, 'victim')
    time.sleep(delay)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)

    after = run(args, tmp_path, 'after')
    assert not after.get('failed'), (context, after.get('msg'))
    slots = [s for p in after['pools'] for s in p['slots']]
    held = sorted(s['runner_name'] for s in slots if s['runner_name'])
    assert len(held) == 4, (context, slots)
    # Every registration at the stand-in is one a slot holds (orphans of the killed pass deleted).
    registered = sorted(r['name'] for r in standin.state()['runners'])
    assert registered == held, (context, registered, held)
    # Every runner container is one a slot holds, running.
    assert runner_boxes(engine, tag) == dict((n, 'running') for n in held), (context, runner_boxes(engine, tag))
    # No JIT config file without its live runner.
    jit_dir = os.path.join(os.path.dirname(args['store_path']), 'jit')
    assert sorted(os.listdir(jit_dir)) == held, (context, sorted(os.listdir(jit_dir)), held)
    twice = dict((n, k) for n, k in starts(engine, since, tag).items() if k > 1)
    assert twice == {}, (context, 'started twice', twice)
    assert TOKEN not in json.dumps(after)
