# -*- coding: utf-8 -*-
"""The Docker engine stopped and started again under a declared set of tasks (a plain task with restart
`always`, a two-container task with a role, an awsvpc task, a GPU task) and two runner pools, then converged:
every task comes back by its restart policy (the `always` one runs again, once; the others are reported
STOPPED and released: network, credential link, /30, GPU pin and credential registration gone); every runner
slot whose container the engine stopped is released and its registration deleted at the stand-in, and the
slots are filled again (at once, or when the hold its ended runners made runs out); nothing is created twice;
a second converge changes nothing.

FAULT_RESTARTS (default 1) engine restarts run in `make test`, `make faults` runs 3."""

from __future__ import absolute_import, division, print_function

import os
import time
import uuid

import pytest

from poolrig import PoolRig, run
from sweep import register  # pylint: disable=wrong-import-order
from helpers import restart_engine  # pylint: disable=wrong-import-order
from netfix import FakeEni  # pylint: disable=wrong-import-order
from test_kill_and_race import (cred_links, converge, declaration, engine_view,  # pylint: disable=wrong-import-order
                                netns_of, store_view)

RESTARTS = int(os.environ.get('FAULT_RESTARTS', '1'))
TOKEN = register('ghp_sentinel_restart_%s' % uuid.uuid4().hex)


@pytest.fixture
def world(engine, tmp_path):
    cluster = 'f%s' % uuid.uuid4().hex[:6]
    eni = FakeEni(110)
    eni.plug()
    rig = PoolRig(tmp_path, TOKEN)
    store_path = str(tmp_path / 'state' / 'store.db')
    yield cluster, eni, store_path, rig
    import docker
    client = docker.from_env()         # the engine was restarted: a client of its own
    try:
        converge(dict(declaration(cluster, eni, store_path), tasks=[]), tmp_path, 'cleanup')
        rig.close(client)
        for c in client.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
            c.remove(force=True)
    finally:
        client.close()
        eni.unplug()


def creates(client, since, cluster, rig):
    """name -> how many times the engine created it since `since`: the cluster's containers and the rig's runners."""
    out = {}
    for ev in client.api.events(since=since, until=int(time.time()) + 1, decode=True,
                                filters={'type': 'container', 'event': 'create'}):
        attrs = ev['Actor']['Attributes']
        if attrs.get('drover.cluster') == cluster or attrs.get('drover.pool', '').startswith('k' + rig.tag):
            out[attrs.get('name')] = out.get(attrs.get('name'), 0) + 1
    return out


@pytest.mark.parametrize('number', range(RESTARTS))
def test_engine_restart_under_tasks_and_runners(engine, world, tmp_path, number):
    import docker
    cluster, eni, store_path, rig = world
    context = 'engine restart %d' % number
    args = declaration(cluster, eni, store_path)
    up = converge(args, tmp_path, 'up')
    assert not up.get('failed'), up.get('msg')
    first = run(rig.args, tmp_path, 'pools-up')
    runners_before = rig.check_converged(engine, first, context)

    since = int(time.time())
    restart_engine()
    client = docker.from_env()
    try:
        stopped = engine_view(client, cluster)
        assert stopped and all(v[0] == 'exited' for v in stopped.values()), (context, stopped)
        assert set(rig.boxes(client).values()) == {'exited'}, (context, rig.boxes(client))

        after = converge(args, tmp_path, 'after')
        assert not after.get('failed'), (context, after.get('msg'))
        status = dict((t['name'], t['last_status']) for t in after['tasks'])
        assert status == {cluster + '-plain': 'RUNNING', cluster + '-pair': 'STOPPED', cluster + '-vpc': 'STOPPED',
                          cluster + '-gpu': 'STOPPED'}, (context, status)
        view = engine_view(client, cluster)
        assert dict((n, v[0]) for n, v in view.items()) == {cluster + '-plain-main': 'running'}, (context, view)
        stored = store_view(store_path)
        assert (stored['pin_rows'], stored['links'], stored['creds']) == (0, 0, []), (context, stored)
        assert netns_of(cluster) == [] and cred_links() == [], (context, netns_of(cluster), cred_links())

        pools = run(rig.args, tmp_path, 'pools-after')
        assert not pools.get('failed'), (context, pools.get('msg'))
        assert sorted(pools['released']) == runners_before, (context, pools['released'])
        names = set(r['name'] for r in rig.standin.state()['runners'])
        assert not names & set(runners_before), (context, 'old registrations left', names)
        held = [p for p in pools['pools'] if p['hold']['until']]
        print('%s: %d runners released, pools held: %s' % (context, len(pools['released']), [p['hold'] for p in held]))
        if held:
            # Runners that ended without a job make a hold (behaviour.md); it runs out, then the slots fill.
            assert all(p['hold']['cause'] in ('no job', 'idle exits') for p in held), (context, held)
            rig.expire_holds()
            pools = run(rig.args, tmp_path, 'pools-filled')
        rig.since = since
        runners_after = rig.check_converged(client, pools, context)
        assert not set(runners_after) & set(runners_before), context

        again = converge(args, tmp_path, 'again')
        assert not again['changed'], (context, again.get('events'))
        assert not run(rig.args, tmp_path, 'pools-again')['changed'], context
        made = creates(client, since, cluster, rig)
        assert dict((n, k) for n, k in made.items() if k > 1) == {}, (context, 'created twice', made)
        assert made.get(cluster + '-plain-main') == 1 and len(made) == 1 + len(runners_after), (context, made)
    finally:
        client.close()
