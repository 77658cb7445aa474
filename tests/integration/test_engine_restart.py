# -*- coding: utf-8 -*-
"""The engine restarts under running tasks: the next converge finds every task from its labels, reports
what stopped, and never starts a duplicate. Runs last in its module: it restarts the real dockerd."""

from __future__ import absolute_import, division, print_function

import time

import docker

from helpers import container, restart_engine, statuses


def test_engine_restart_finds_every_task_and_starts_no_duplicate(engine, cluster, converge, store_path, tmp_path):
    never = dict(name='once', containers=[container('main')])
    always = dict(name='svc', restart='always', containers=[container('main')])
    first = [converge(**never), converge(**always)]
    assert [r['task']['last_status'] for r in first] == ['RUNNING', 'RUNNING']
    since = int(time.time())
    restart_engine()
    client = docker.from_env()
    try:
        # The engine stopped the containers on its way down; nothing started them again.
        assert set(statuses(client, cluster).values()) == {'exited'}
        after = [converge(**never), converge(**always)]
        for r in after:
            stopped = [e for e in r['events'] if e['event'] == 'task.stopped']
            assert len(stopped) == 1 and stopped[0]['reason'].startswith('container main exited ('), r['events']
        # `once` stays STOPPED; `svc` (restart always, its first stop) runs again in the same pass, once.
        assert after[0]['task']['last_status'] == 'STOPPED' and after[0]['task']['held_until'] is None
        assert after[1]['task']['last_status'] == 'RUNNING' and after[1]['task']['streak'] == 1
        assert [e['event'] for e in after[1]['events']] == ['task.stopped', 'task.running']
        assert statuses(client, cluster) == {'svc-main': 'running'}
        # Converging again changes nothing: no second run of `once`, no second container of `svc`.
        again = [converge(**never), converge(**always)]
        assert [r['changed'] for r in again] == [False, False]
        creates = client.api.events(since=since, until=int(time.time()) + 1, decode=True,
                                    filters={'type': 'container', 'event': 'create',
                                             'label': 'drover.cluster=%s' % cluster})
        assert [c['Actor']['Attributes']['name'] for c in creates] == ['svc-main']
        # Store lost as well: a fresh store finds nothing to adopt and restarts nothing by itself.
        fresh = str(tmp_path / 'fresh' / 'store.db')
        svc_running = converge(store_path=fresh, **always)
        assert svc_running['task']['last_status'] == 'RUNNING'
        assert statuses(client, cluster) == {'svc-main': 'running'}
    finally:
        client.close()
