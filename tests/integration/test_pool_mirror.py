# -*- coding: utf-8 -*-
"""gh_runner_slot's `mirror` on the real engine: a registry pull-through mirror for the slot engines of a
`docker: rootless` pool, with a token-authenticated registry of this machine standing in for Docker Hub
(upstream_registry.py). A job's `docker pull busybox:1` goes through the mirror and nowhere else; the other slot's
pull of the same image costs the upstream no blob; a push to the mirror is refused; its upstream password reaches
no job; a mirror stopped, or one that cannot start, holds no runner back, and the next pass makes it again."""

from __future__ import absolute_import, division, print_function

import ipaddress
import os
import re
import stat
import subprocess
import uuid

import pytest

from helpers import wait_for, warnings_of
from sweep import register
from test_pool_docker import REPO, STANDIN_HOST, pool_runner
from test_pool_docker import TOKEN as POOL_TOKEN
from upstream_registry import Upstream

TOKEN = POOL_TOKEN          # the token pool_runner passes: the standin fixture serves REPO with this module's TOKEN

HUB_USER = 'hubuser'
HUB_PASSWORD = register('hub-pw-%s' % uuid.uuid4().hex)
PULL = ('docker pull -q busybox:1 >/dev/null 2>&1 && echo "pulled: $(docker run --rm busybox:1 echo from-the-hub)" '
        '|| echo "pull failed"; ')


@pytest.fixture
def upstream(engine):
    hub = Upstream(engine, STANDIN_HOST(), HUB_USER, HUB_PASSWORD)
    try:
        hub.populate('drover.local/busybox:1', 'library/busybox:1')
        url = hub.serve()
        yield hub, url
    finally:
        hub.close()


def _output(engine, name, timeout=120, until=None):
    box = engine.containers.get(name)
    if until is None:
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=timeout)
    else:
        wait_for(lambda: box.reload() or until in box.logs().decode('utf-8', 'replace'), timeout=timeout)
    return box.logs().decode('utf-8', 'replace')


def _in_slot_2(engine, standin, labels, run, script, said):
    """A job `script` started in slot 2 by a pass (`run`), while slot 1 is busy, and run to its end, saying `said`:
    (the pass's result, its output)."""
    standin.queue_job(REPO, labels, name='two', script=script)
    result = run()
    assert len(result['started']) == 1 and result['started'][0].split('-')[-2] == '2', warnings_of(result)
    out = _output(engine, result['started'][0])
    assert said in out, out
    return result, out


def _post(url):
    done = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', url],
                          capture_output=True, text=True, check=False, timeout=30)
    return done.stdout


def _mirror_box(engine):
    boxes = engine.containers.list(all=True, filters={'label': 'drover.role=mirror'})
    return boxes[0] if len(boxes) == 1 else None


def test_jobs_pull_through_the_mirror_only(engine, standin, module_runner, store_path, pool_name, upstream):
    hub, url = upstream
    mirror = dict(enabled=True, upstream=url, username=HUB_USER, password=HUB_PASSWORD)
    config = os.path.join(os.path.dirname(store_path), 'mirror')
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=2, memory=1024)
    labels = ['self-hosted', pool_name]
    try:
        # Slot 1 pulls through the mirror (then tries to read the mirror's configuration through its engine, and
        # stays busy, so that the next job goes to slot 2).
        standin.queue_job(REPO, labels, name='one', script=PULL + (
            'echo "config: $(docker run --rm -v %s:/c busybox:1 ls /c 2>&1 | head -1)"; env | sort; sleep 20'
            % config))
        first = run(mirror=mirror)
        assert len(first['started']) == 1, first
        kinds = [e['event'] for e in first['events']]
        assert kinds.index('mirror.started') < kinds.index('runner.started'), kinds
        # at its address on the pools' network (the test engine numbers its networks from 198.18.0.0/15)
        assert first['mirror']['url'] and ipaddress.ip_address(first['mirror']['url'][7:].split(':')[0]) in \
            ipaddress.ip_network('198.18.0.0/15'), first['mirror']
        one = _output(engine, first['started'][0], until='config: ')
        assert 'pulled: from-the-hub' in one, one
        assert re.search(r'config: .*(Permission denied|permission denied)', one), one
        fetched = hub.blob_fetches()
        assert fetched >= 1, fetched
        assert hub.tokens.issued >= 1 and hub.tokens.refused == 0

        # Slot 2 pulls the same image: the mirror serves it, the upstream serves no blob again.
        second, two = _in_slot_2(engine, standin, labels, lambda: run(mirror=mirror), PULL, 'pulled: from-the-hub')
        assert hub.blob_fetches() == fetched
        assert not [e for e in second['events'] if e['event'].startswith('mirror.')], second['events']

        # Read-only to jobs: the mirror refuses a push (the registry API's first step of one).
        box = _mirror_box(engine)
        [address] = [n['IPAddress'] for n in box.attrs['NetworkSettings']['Networks'].values()]
        assert _post('http://%s:5000/v2/library/busybox/blobs/uploads/' % address) == '405'
        # No published host port; the password is in no label, environment, command line, log or job output, and
        # only root reads the file that holds it.
        assert not box.attrs['HostConfig'].get('PortBindings') and not box.attrs['NetworkSettings']['Ports'].get(
            '5000/tcp'), box.attrs['NetworkSettings']['Ports']
        seen = repr((box.attrs['Config'], box.attrs['HostConfig'])) + box.logs().decode('utf-8', 'replace')
        assert HUB_PASSWORD not in seen and HUB_PASSWORD not in one + two
        [conf] = [os.path.join(config, f) for f in os.listdir(config)]
        st = os.stat(conf)
        assert (st.st_uid, stat.S_IMODE(st.st_mode), stat.S_IMODE(os.stat(config).st_mode)) == (0, 0o600, 0o700)

        # The mirror stopped mid-run: the next pass tells it, starts the runner all the same, and makes it again.
        _output(engine, first['started'][0])
        box.stop(timeout=2)
        standin.queue_job(REPO, labels, name='three', script=PULL)
        third = run(mirror=mirror)
        assert len(third['started']) == 1, third
        [down] = [e for e in third['events'] if e['event'] == 'mirror.down']
        assert 'exited' in down['reason'], down
        assert [e['event'] for e in third['events']].count('mirror.started') == 1, third['events']
        assert _mirror_box(engine).status == 'running'
        assert 'pulled: from-the-hub' in _output(engine, third['started'][0])

        # A mirror that cannot start (its image is missing) holds no runner back either.
        run(mirror=mirror)
        standin.queue_job(REPO, labels, name='four', script='echo ran')
        fourth = run(mirror=dict(mirror, image='drover.local/no-such-registry:1'))
        assert len(fourth['started']) == 1, fourth
        [down] = [e for e in fourth['events'] if e['event'] == 'mirror.down']
        assert 'drover.local/no-such-registry:1' in down['reason'], down
        assert any('registry mirror' in w for w in warnings_of(fourth)), fourth
        assert 'completed with result: Succeeded' in _output(engine, fourth['started'][0])

        # Without the mirror, the pull has nowhere to go (the Hub is not reachable from here): the mirror was the way.
        run(mirror=mirror)
        standin.queue_job(REPO, labels, name='five', script=PULL)
        fifth = run(mirror=dict(enabled=False))
        assert 'mirror.removed' in [e['event'] for e in fifth['events']], fifth['events']
        assert _mirror_box(engine) is None and not os.listdir(config)
        assert engine.volumes.list(filters={'label': 'drover.role=mirror'}) == []
        assert 'pull failed' in _output(engine, fifth['started'][0])
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
    assert _mirror_box(engine) is None


# A build whose base image is Docker Hub's busybox:1, with BuildKit (docker build's default in a runner: the runner has
# DOCKER_BUILDKIT=1), on a slot whose engine never pulled it.
BUILD_FROM_HUB = ('mkdir -p ctx && printf "FROM busybox:1\\nRUN echo built-on-the-hub-s > /made\\n" > ctx/Dockerfile && '
                  'docker build -q -t made:1 ctx >/dev/null 2>build.err && '
                  'echo "build: $(docker run --rm made:1 cat /made)" || { echo "build failed"; cat build.err; }')


def test_a_build_s_base_comes_through_the_mirror_on_a_fresh_slot(
        engine, standin, module_runner, store_path, pool_name, upstream):
    """BuildKit asks a registry mirror over HTTPS unless the engine takes it as an insecure registry (the mirror
    speaks plain HTTP): a fresh slot's first build pulls its base through the mirror, and the other slot's build
    costs the upstream no blob."""
    hub, url = upstream
    mirror = dict(enabled=True, upstream=url, username=HUB_USER, password=HUB_PASSWORD)
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=2, memory=1024)
    labels = ['self-hosted', pool_name]
    try:
        standin.queue_job(REPO, labels, name='one', script=BUILD_FROM_HUB + '; sleep 10')
        first = run(mirror=mirror)
        assert len(first['started']) == 1, first
        one = _output(engine, first['started'][0], until='build')
        assert 'build: built-on-the-hub-s' in one, one
        fetched = hub.blob_fetches()
        assert fetched >= 1, fetched
        # the other slot, while the first runs: its engine is fresh too
        _in_slot_2(engine, standin, labels, lambda: run(mirror=mirror), BUILD_FROM_HUB, 'build: built-on-the-hub-s')
        assert hub.blob_fetches() == fetched
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True, mirror=dict(enabled=False))
