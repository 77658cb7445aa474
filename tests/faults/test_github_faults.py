# -*- coding: utf-8 -*-
"""Bursts of GitHub faults over several passes of gh_runner_slot (two pools in one call, against the GitHub
stand-in): 5xx answers, timeouts, rate limits with a reset (403 and 429), busy deletes and truncated JSON,
seeded, mixed with runners killed under the pools and the warm count changed between passes.

After every pass of a burst: the module returned a result (no traceback, not failed); a pool whose listing of
runners or queued jobs could not be read (a faulted answer, or no request at all while GitHub's reset has not
come) registered no runner, started none and stopped none; every faulted answer of a pool's requests shows in
the result as a warning and a `github.error` or `github.rate_limited` event; every runner container is one a
slot holds; the token is in no result. When the stand-in recovers (faults cleared, the burst's holds run out)
one pass reaches the declared state with nothing left over, and the next one changes nothing.

FAULT_TRIALS bursts (default 3; `make test` runs 2), `make faults` runs 20; FAULT_SEED seeds them."""

from __future__ import absolute_import, division, print_function

import json
import os
import random
import time
import uuid

import pytest

from poolrig import PoolRig, run
from sweep import register  # pylint: disable=wrong-import-order
from helpers import warnings_of  # pylint: disable=wrong-import-order

TRIALS = int(os.environ.get('FAULT_TRIALS', '3'))
SEED = int(os.environ.get('FAULT_SEED', str(int(time.time()))))
TOKEN = register('ghp_sentinel_bursts_%s' % uuid.uuid4().hex)
PASSES = 6
FAILING = ('server_error', 'rate_limit', 'slow', 'truncated')


@pytest.fixture
def rig(engine, tmp_path):
    made = PoolRig(tmp_path, TOKEN, scale='queued', warm=2, idle_timeout=1, github_timeout=1)
    yield made
    made.close(engine)


def inject(rig, rng):
    """None to two faults of random kinds, counts (1-2) and targets; returns what was injected."""
    made = []
    for dummy in range(rng.randint(0, 2)):
        kind = rng.choice(('server_error', 'rate_limit', 'busy_delete', 'slow', 'truncated'))
        where = rng.choice((None, '/actions/runners', 'generate-jitconfig', '/actions/runs', rig.repos['a'],
                            rig.repos['b']))
        extra = {}
        if kind == 'server_error':
            extra['status'] = rng.choice((500, 502, 503, 504))
        elif kind == 'rate_limit':
            extra.update(status=rng.choice((403, 429)), reset_in=1)
        elif kind == 'slow':
            extra['delay'] = 1.5
        made.append(rig.standin.fail(kind, count=rng.randint(1, 2), path=where, **extra))
    return made


def unread(requests, repo):
    """Whether a pass could not read the pool's listings: the runners listing or the queued runs listing
    (with their jobs) was not asked for, or one of its answers was faulted."""
    runners = [r for r in requests if r['method'] == 'GET' and r['path'] == '/repos/%s/actions/runners' % repo]
    runs = [r for r in requests if r['method'] == 'GET' and r['path'].startswith('/repos/%s/actions/runs' % repo)]
    bad = [r for r in runners + runs if r.get('fault') in FAILING or (r.get('status') or 0) >= 400]
    return not runners or not runs or bool(bad)


@pytest.mark.parametrize('number', range(TRIALS))
def test_fault_burst_decides_nothing_then_converges(engine, rig, tmp_path, number):
    rng = random.Random(SEED * 1000 + 700 + number)
    rig.since = int(time.time()) - 1
    first = run(rig.args, tmp_path, 'first')
    rig.check_converged(engine, first, 'seed %d burst %d: before the burst' % (SEED, number))
    args = dict(rig.args)
    tally = {'unread': 0, 'faulted answers': 0, 'events': 0, 'starts': 0, 'stops': 0}
    for step in range(PASSES):
        faults = inject(rig, rng)
        action = rng.choice(('kill', 'warm1', 'warm2', 'warm1', 'warm2', 'none'))
        running = sorted(n for n, status in rig.boxes(engine).items() if status == 'running')
        if action == 'kill' and running:
            engine.containers.get(rng.choice(running)).kill()
        elif action.startswith('warm'):
            args['warm'] = int(action[-1])
        context = 'seed %d burst %d pass %d: %s, %s' % (SEED, number, step, action, faults)
        before = rig.boxes(engine)
        mark = len(rig.standin.requests)
        result, text = run(args, tmp_path, 'burst', raw=True)
        assert 'Traceback' not in text, (context, text[-3000:])
        assert not result.get('failed'), (context, result.get('msg'))
        assert TOKEN not in json.dumps(result), context
        time.sleep(1.0)      # a slow answer (1.5 s) is logged when it is sent, after the client gave up (1 s)
        requests = list(rig.standin.requests[mark:])
        held = set(s['runner_name'] for p in result['pools'] for s in p['slots'] if s['runner_name'])
        assert set(rig.boxes(engine)) == held, (context, 'containers outside slots', rig.boxes(engine), held)
        for letter in 'ab':
            repo, name = rig.repos[letter], rig.pool(letter)
            view = [p for p in result['pools'] if p['name'] == name][0]
            mine = [r for r in requests if r['path'].startswith('/repos/%s/' % repo)]
            events = [e for e in result['events'] if e['pool'] == name]
            tally['starts'] += len(view['started'])
            tally['stops'] += len(view['stopped'])
            if unread(mine, repo):
                tally['unread'] += 1
                assert (view['started'], view['stopped']) == ([], []), (context, name, view)
                assert not [r for r in mine if r['method'] == 'POST'], (context, name, 'registered on an unread listing')
                assert set(n for n in rig.boxes(engine) if n.startswith('drover-k%s-k%s' % (rig.tag, letter))) <= set(
                    before), (context, name, 'a container started on an unread listing')
            faulted = [r for r in mine if r.get('fault') in FAILING]
            if faulted:
                said = [e for e in events if e['event'] in ('github.error', 'github.rate_limited')]
                tally['faulted answers'] += len(faulted)
                tally['events'] += len(said)
                assert said, (context, name, 'faulted answers without an event', faulted, events)
                # ... and each such event has its warning, naming the pool and saying what failed.
                for e in said:
                    text = e['error'] if e['event'] == 'github.error' else 'rate limited until %s' % e['until']
                    assert [w for w in warnings_of(result) if w.startswith('pool %s: ' % name) and text in w], (
                        context, name, e, warnings_of(result))

    print('seed %d burst %d: %d passes x 2 pools, %s' % (SEED, number, PASSES, tally))
    # The stand-in recovers: no more faults, GitHub's resets come, and the burst's holds run out.
    rig.standin.clear_faults()
    time.sleep(2.2)
    rig.expire_holds()
    final = dict(args, warm=2)
    context = 'seed %d burst %d: after the burst' % (SEED, number)
    recovered = run(final, tmp_path, 'recovered')
    assert warnings_of(recovered) == [], (context, warnings_of(recovered))
    rig.check_converged(engine, recovered, context)
    again = run(final, tmp_path, 'again')
    assert not again['changed'], (context, again['events'])
