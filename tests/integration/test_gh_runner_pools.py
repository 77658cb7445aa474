# -*- coding: utf-8 -*-
"""gh_runner_slot over many pools in one call (`pools`, `purge`) and holds from outside the host
(`hold_until`), on the real engine against the GitHub stand-in; the engine's API calls are counted through
bench/apiproxy.py's proxy in front of the engine's socket."""

from __future__ import absolute_import, division, print_function

import json
import os
import sys
import time
import uuid

import pytest

from helpers import host_snapshot, store_rows, wait_for, warnings_of
from sweep import register

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'bench'))
from apiproxy import CountingProxy  # noqa: E402  pylint: disable=wrong-import-position

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'
OTHER = 'octo/web'


@pytest.fixture
def pools(module_runner, store_path, standin, pool_name, engine):
    """Run gh_runner_slot with `pools`: entries are (suffix, options); the pools are named <pool_name><suffix>."""
    standin.add_repo(OTHER)
    names = []

    def run(entries, check=False, **args):
        params = dict(labels=['self-hosted', 'linux'], api_url=standin.url, store_path=store_path,
                      machine_id='mid' + pool_name, token=TOKEN, allow_host_network=True,
                      profile=dict(name='small', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64,
                                   environment={'DROVER_JOB_SECONDS': '1'}))
        params['pools'] = []
        for suffix, options in entries:
            names.append(pool_name + suffix)
            entry = dict(options, pool=pool_name + suffix)
            if 'profile' not in entry:
                # Runner names carry the profile's name: one host's pools need profiles of their own.
                entry['profile'] = dict(params['profile'], name='small' + suffix)
            params['pools'].append(entry)
        params.update(args)
        return module_runner('gh_runner_slot', dict((k, v) for k, v in params.items() if v is not None), check=check)
    yield run
    for name in set(names):
        for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % name}):
            c.remove(force=True)


def runners_of(engine, prefix):
    return sorted(c.name for c in engine.containers.list(all=True, filters={'label': 'drover.role=runner'})
                  if c.labels.get('drover.pool', '').startswith(prefix))


def posts_and_deletes(standin):
    return [r for r in standin.requests if r['method'] in ('POST', 'DELETE') and '/_standin/' not in r['path']]


def test_many_pools_one_pass_one_listing(engine, standin, pools, pool_name, tmp_path):
    big = {'name': 'big', 'image': RUNNER_IMAGE, 'slots': 2, 'network_mode': 'host', 'memory': 64}
    entries = [('a', {'repository': REPO}),
               ('b', {'repository': OTHER, 'scale': 'fixed', 'labels': ['gpu'], 'profile': big})]
    first = pools(entries)
    assert first['changed'], warnings_of(first)
    assert [p['name'] for p in first['pools']] == [pool_name + 'a', pool_name + 'b']
    assert [len(p['started']) for p in first['pools']] == [1, 2]
    assert sorted(first['started']) == sorted(first['pools'][0]['started'] + first['pools'][1]['started'])
    assert [e['event'] for e in first['events']] == ['runner.started'] * 3
    assert first['pools'][1]['owner'] == OTHER and first['pools'][0]['queued'] == 0
    b_runner = standin.runner_by_name(first['pools'][1]['started'][0])
    assert 'gpu' in [l['name'] for l in b_runner['labels']] and 'linux' not in [l['name'] for l in b_runner['labels']]
    for name in first['started']:
        wait_for(lambda n=name: (standin.runner_by_name(n) or {}).get('status') == 'online')
    # A second pass with nothing to do, through a proxy that counts the engine's API calls.
    proxy = CountingProxy(str(tmp_path / 'docker.sock')).start()
    try:
        del standin.requests[:]
        second = pools(entries, docker_host='unix://%s' % proxy.listen)
        calls = [(m, t.split('?')[0]) for dummy, m, t in proxy.snapshot()['calls']]
    finally:
        proxy.stop()
    assert not second['changed'], second
    assert [[s['state'] for s in p['slots']] for p in second['pools']] == [['idle'], ['idle', 'idle']]
    listings = [c for c in calls if c[1].endswith('/containers/json')]
    assert len(listings) == 1, calls
    assert all(m == 'GET' for m, dummy in calls), calls
    assert posts_and_deletes(standin) == []
    runner_listings = [r['path'] for r in standin.calls(method='GET') if r['path'].endswith('/actions/runners')]
    assert sorted(runner_listings) == ['/repos/%s/actions/runners' % REPO, '/repos/%s/actions/runners' % OTHER]


def test_purge_drains_pools_no_longer_declared(engine, standin, pools, pool_name, store_path):
    both = pools([('a', {'repository': REPO}), ('b', {'repository': OTHER})])
    assert len(both['started']) == 2, warnings_of(both)
    gone = both['pools'][1]['started'][0]
    wait_for(lambda: (standin.runner_by_name(gone) or {}).get('status') == 'online')
    check = pools([('a', {'repository': REPO})], purge=True, check=True)
    assert [p['name'] for p in check['pools']] == [pool_name + 'a', pool_name + 'b']
    assert check['stopped'] == [gone] and runners_of(engine, pool_name) == sorted(both['started'])
    one = pools([('a', {'repository': REPO})], purge=True)
    assert one['changed'] and one['stopped'] == [gone], warnings_of(one)
    assert [p['name'] for p in one['pools']] == [pool_name + 'a', pool_name + 'b']
    assert runners_of(engine, pool_name) == [both['pools'][0]['started'][0]]
    assert standin.runner_by_name(gone) is None
    assert [r[0] for r in store_rows(store_path)['pools']] == [pool_name + 'a']
    again = pools([('a', {'repository': REPO})], purge=True)
    assert not again['changed'] and [p['name'] for p in again['pools']] == [pool_name + 'a']


def test_hold_until_holds_the_pool_and_is_not_stored(engine, standin, pools, pool_name, store_path):
    until = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() + 3600))
    held = pools([('a', {'repository': REPO, 'hold_until': until})])
    view = held['pools'][0]
    assert held['started'] == [] and posts_and_deletes(standin) == []
    assert view['hold'] == {'until': until, 'cause': 'fleet', 'failures': 0, 'idle_exits': 0}
    assert runners_of(engine, pool_name) == []
    # pool, owner, failures, idle_exits, hold_until, hold_cause: the fleet's hold is not the pool's own.
    assert [r[:6] for r in store_rows(store_path)['pools']] == [(pool_name + 'a', REPO, 0, 0, None, None)]
    past = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() - 1))
    free = pools([('a', {'repository': REPO, 'hold_until': past})])
    assert len(free['started']) == 1 and free['pools'][0]['hold']['until'] is None, warnings_of(free)


@pytest.mark.parametrize('bad,words', [
    ({'labels': []}, ('pools[1] (pool ', 'b): labels must name at least one label',)),
    ({'repository': 'noowner'}, ('pools[1] (pool ', "b): repository must be owner/name, got 'noowner'")),
    ({'hold_until': 'tomorrow'}, ('pools[1] (pool ', 'b): hold_until must be a UTC time')),
    ({'slots': 3}, ('pools[1] (pool ', 'b): unsupported keys: slots')),
    ({'scale': 'sometimes'}, ('pools[1] (pool ', 'b): value of scale must be one of: queued, fixed, got: sometimes')),
    ({'warm': 'many'}, ('pools[1] (pool ', "b): argument 'warm' is of type", 'int')),
    ({'profile': {'name': 'smalla', 'image': RUNNER_IMAGE, 'slots': 1}},
     ('pools[1] (pool ', 'b): profile.name smalla is also the profile of pools[0] (pool ', 'a); runner names')),
])
def test_bad_entry_fails_the_call_and_changes_nothing(engine, standin, pools, pool_name, store_path, bad, words):
    name = pools([('a', {'repository': REPO})])['started'][0]
    wait_for(lambda: (standin.runner_by_name(name) or {}).get('status') == 'online')
    scope = 'drover.role=runner'
    before = (host_snapshot(engine, store_path, scope), json.dumps(standin.state(), sort_keys=True))
    r = pools([('a', {'repository': REPO, 'warm': 2}), ('b', dict({'repository': OTHER}, **bad))])
    assert r.failed and all(w in r['msg'] for w in words), r.get('msg')
    assert (host_snapshot(engine, store_path, scope), json.dumps(standin.state(), sort_keys=True)) == before


def test_a_token_given_in_an_entry_never_leaves(engine, standin, pools, pool_name):
    r = pools([('a', {'repository': REPO, 'token': TOKEN})], token=None)
    assert len(r['started']) == 1, warnings_of(r)
    assert TOKEN not in json.dumps(r)
    missing = pools([('a', {'repository': REPO})], token=None)
    assert missing.failed and missing['msg'].startswith('pools[0] (pool %sa): GitHub auth' % pool_name)


def test_entries_are_converted_as_the_module_options_are(engine, standin, pools, pool_name):
    # Values that come out of templates as strings are taken as a one-pool call takes them.
    r = pools([('a', {'repository': REPO, 'warm': '0', 'kill_busy': 'no',
                      'profile': {'name': 'conv', 'image': RUNNER_IMAGE, 'slots': '2', 'memory': '64',
                                  'network_mode': 'host'}})])
    assert not r.failed and r['started'] == [], r.get('msg')
    assert [s['state'] for s in r['pools'][0]['slots']] == ['free', 'free']


def test_two_stores_on_one_engine_keep_their_own_runners(engine, standin, module_runner, pool_name, tmp_path):
    """Two stores (two inventories, or a demo beside a test) on one engine, with a pool of the same name: each
    adopts and drains only the runners it started (label drover.store)."""
    def run(store, mid, pools, **args):
        params = dict(api_url=standin.url, token=TOKEN, store_path=str(tmp_path / store / 'store.db'),
                      machine_id=mid, purge=True, pools=pools, labels=['self-hosted', 'linux'], allow_host_network=True)
        params.update(args)
        return module_runner('gh_runner_slot', params)

    pool = {'pool': pool_name, 'repository': REPO, 'warm': 1,
            'profile': {'name': 'small', 'image': RUNNER_IMAGE, 'slots': 1, 'network_mode': 'host', 'memory': 64,
                        'environment': {'DROVER_JOB_SECONDS': '1'}}}
    try:
        a = run('a', 'mida' + pool_name[-6:], [pool])
        assert len(a['started']) == 1, warnings_of(a)
        b = run('b', 'midb' + pool_name[-6:], [pool])
        assert len(b['started']) == 1, (b, warnings_of(b))           # B does not take A's runner for its own
        assert a['started'] != b['started']
        for name in a['started'] + b['started']:
            wait_for(lambda n=name: (standin.runner_by_name(n) or {}).get('status') == 'online')
        labels = dict((c.name, c.labels.get('drover.store')) for c in
                      engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}))
        assert sorted(labels) == sorted(a['started'] + b['started']) and len(set(labels.values())) == 2, labels
        # A declares no pool any more: it drains its own runner only
        drained = run('a', 'mida' + pool_name[-6:], [])
        assert drained['stopped'] + drained['released'] and a['started'][0] in drained['stopped'], drained
        left = sorted(c.name for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}))
        assert left == b['started'], left
        assert standin.runner_by_name(b['started'][0]) is not None
        again = run('b', 'midb' + pool_name[-6:], [pool])
        assert not again['changed'] and again['started'] == [] and again['stopped'] == [], again
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}):
            c.remove(force=True)
