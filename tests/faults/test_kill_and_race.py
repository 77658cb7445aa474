# -*- coding: utf-8 -*-
"""Faults, as users' hosts will deal them: the ecs_task module process SIGKILLed at a random moment of a
converge (seeded), and two converges started at once. After each trial the declared state must be reached by
the next converge, nothing may exist that the declaration does not account for (containers, netns holders,
network namespaces, credential links, /30 allocations, GPU pins, credential registrations), no container may
have been started twice, and the store must pass `PRAGMA integrity_check`.

FAULT_TRIALS kill trials and FAULT_RACES races (default 3 each; `make test` runs 2 each); `make faults` runs
20 of each. FAULT_SEED (default: the time) seeds the kill moments; every failure prints it.
"""

from __future__ import absolute_import, division, print_function

import os
import random
import signal
import sqlite3
import time
import uuid

import docker
import pytest

from procs import module_process, result_of
from netfix import FakeEni, ip  # pylint: disable=wrong-import-order

IMAGE = 'drover.local/busybox:1'
ROLE = 'arn:aws:iam::123456789012:role/fault'
GPUS = ['GPU-fa017000-0000-4000-8000-%012d' % i for i in range(1, 4)]
TRIALS = int(os.environ.get('FAULT_TRIALS', '3'))
RACES = int(os.environ.get('FAULT_RACES', '3'))
SEED = int(os.environ.get('FAULT_SEED', str(int(time.time()))))
_SUBNETS = list(range(120, 250))


def declaration(cluster, eni, store_path):
    """The declared set: a plain task, a two-container task with a role, an awsvpc task with a role, and a
    GPU task from a static list, in one cluster, with purge."""
    def box(name, **kw):
        return dict({'name': name, 'image': IMAGE, 'command': ['sleep', '3600']}, **kw)
    return {
        'cluster': cluster, 'purge': True, 'store_path': store_path,
        'gpu_discovery': 'static', 'gpu_devices': GPUS, 'gpu_delivery': 'env',
        'tasks': [
            {'name': cluster + '-plain', 'restart': 'always', 'containers': [box('main')]},
            {'name': cluster + '-pair', 'task_role_arn': ROLE,
             'containers': [box('main'), box('side', essential=False)]},
            {'name': cluster + '-vpc', 'task_role_arn': ROLE, 'network_mode': 'awsvpc',
             'awsvpc': {'eni_mac': eni.mac, 'address': eni.address(), 'gateway': eni.gateway, 'wait_timeout': 5},
             'containers': [box('main')]},
            {'name': cluster + '-gpu', 'containers': [box('main', gpu=1)]},
        ],
    }


def expected(cluster):
    """The container names of the declared set (task names carry the cluster: names are host-wide)."""
    return set(cluster + n for n in ('-plain-main', '-pair-main', '-pair-side', '-vpc-main', '-gpu-main'))


def converge(args, tmp_path, tag):
    """ecs_task's result, from a process of its own."""
    return result_of(module_process('ecs_task', args, tmp_path, tag))


def engine_view(engine, cluster):
    """Every container of the cluster and every holder of its tasks: name -> (status, labels). Right after a
    kill, the engine may still finish a removal the module asked for: a container listed but gone before it
    could be inspected means the listing is taken again."""
    for attempt in range(10):
        try:
            return dict((c.name, (c.status, c.labels))
                        for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}))
        except docker.errors.NotFound:
            if attempt == 9:
                raise
            time.sleep(0.3)
    return {}


def starts(engine, cluster, since):
    """container name -> how many times the engine started a container of that name, since `since`."""
    counts = {}
    for ev in engine.api.events(since=since, until=int(time.time()) + 1, decode=True,
                                filters={'type': 'container', 'event': 'start', 'label': 'drover.cluster=%s' % cluster}):
        name = ev['Actor']['Attributes'].get('name')
        counts[name] = counts.get(name, 0) + 1
    return counts


def store_view(path):
    db = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    try:
        assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
        return {
            'pins': sorted(r[0] for r in db.execute('SELECT * FROM gpu_pins')),
            'pin_rows': db.execute('SELECT COUNT(*) FROM gpu_pins').fetchone()[0],
            'links': db.execute('SELECT COUNT(*) FROM link_allocations').fetchone()[0],
            'creds': sorted(r[0] for r in db.execute('SELECT task FROM credentials')),
            'tasks': sorted((r[0], r[1]) for r in db.execute('SELECT name, last_status FROM tasks')),
        }
    finally:
        db.close()


def netns_of(cluster):
    out = ip('netns', 'list').stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.startswith('drover-%s-' % cluster))


def cred_links():
    out = ip('-o', 'link', 'show').stdout
    return sorted(line.split(': ')[1].split('@')[0] for line in out.splitlines() if line.split(': ')[1].startswith('dv'))


def check_converged(engine, cluster, store_path, result, context):
    assert not result.get('failed'), (context, result.get('msg'))
    assert sorted((t['name'], t['last_status']) for t in result['tasks']) == sorted(
        (cluster + n, 'RUNNING') for n in ('-gpu', '-pair', '-plain', '-vpc')), (context, result['tasks'])
    view = engine_view(engine, cluster)
    tasks = dict((n, v) for n, v in view.items() if v[1].get('drover.role') == 'task')
    holders = dict((n, v) for n, v in view.items() if v[1].get('drover.role') == 'netns-holder')
    assert set(tasks) == expected(cluster), (context, sorted(view))
    assert all(v[0] == 'running' for v in tasks.values()), (context, view)
    assert len(holders) == 1 and list(holders.values())[0][0] == 'running', (context, sorted(view))
    stored = store_view(store_path)
    assert stored['pin_rows'] == 1, (context, stored)
    assert stored['links'] == 1 and len(cred_links()) == 1, (context, stored, cred_links())
    assert stored['creds'] == [cluster + '-pair', cluster + '-vpc'], (context, stored)
    assert len(netns_of(cluster)) == 1, (context, netns_of(cluster))


def check_gone(engine, cluster, store_path, context):
    assert engine_view(engine, cluster) == {}, context
    stored = store_view(store_path)
    assert (stored['pin_rows'], stored['links'], stored['creds'], stored['tasks']) == (0, 0, [], []), (context, stored)
    assert netns_of(cluster) == [] and cred_links() == [], (context, netns_of(cluster), cred_links())


@pytest.fixture
def trial(engine, tmp_path):
    """A cluster, a store and a plugged stand-in ENI of the trial's own; everything goes afterwards."""
    cluster = 'f%s' % uuid.uuid4().hex[:6]
    eni = FakeEni(_SUBNETS.pop(0))
    eni.plug()
    store_path = str(tmp_path / 'state' / 'store.db')
    yield cluster, eni, store_path
    args = declaration(cluster, eni, store_path)
    converge(dict(args, tasks=[]), tmp_path, 'cleanup')
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        c.remove(force=True)
    eni.unplug()


@pytest.mark.parametrize('number', range(TRIALS))
def test_killed_converge_then_converged(engine, trial, tmp_path, number):
    cluster, eni, store_path = trial
    rng = random.Random(SEED * 1000 + number)
    delay = rng.uniform(0.0, 3.0)
    context = 'seed %d trial %d: killed after %.2f s' % (SEED, number, delay)
    args = declaration(cluster, eni, store_path)
    since = int(time.time()) - 1
    victim = module_process('ecs_task', args, tmp_path, 'victim')
    time.sleep(delay)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)
    made = sorted(n for n, v in engine_view(engine, cluster).items())
    print('%s; the killed converge had made %d of 6 containers' % (context, len(made)))

    result = converge(args, tmp_path, 'after')
    check_converged(engine, cluster, store_path, result, context)
    counts = starts(engine, cluster, since)
    # The engine keeps its last 256 events: the window must still hold a start of every declared container.
    assert expected(cluster) <= set(counts), (context, 'starts missing from the engine events', sorted(counts))
    twice = dict((n, k) for n, k in counts.items() if k > 1)
    assert twice == {}, (context, 'started twice', twice)
    again = converge(args, tmp_path, 'again')
    assert not again['changed'], (context, again.get('events'))

    gone = converge(dict(args, tasks=[]), tmp_path, 'purge')
    assert gone['changed'], context
    check_gone(engine, cluster, store_path, context)


@pytest.mark.parametrize('number', range(RACES))
def test_two_converges_at_once(engine, trial, tmp_path, number):
    cluster, eni, store_path = trial
    context = 'race %d' % number
    args = declaration(cluster, eni, store_path)
    since = int(time.time()) - 1
    processes = [module_process('ecs_task', args, tmp_path, tag) for tag in ('one', 'two')]   # both start first
    results = [result_of(p) for p in processes]
    assert [r.get('failed', False) for r in results] == [False, False], (context, [r.get('msg') for r in results])
    # The lock serialised them: one started everything, the other found it done.
    assert sorted(r['changed'] for r in results) == [False, True], (context, [r['changed'] for r in results])
    check_converged(engine, cluster, store_path, [r for r in results if r['changed']][0], context)
    assert dict((n, k) for n, k in starts(engine, cluster, since).items() if k > 1) == {}, context
    assert set(starts(engine, cluster, since)) == expected(cluster) | set(
        n for n, v in engine_view(engine, cluster).items() if v[1].get('drover.role') == 'netns-holder'), context
