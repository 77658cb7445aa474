# -*- coding: utf-8 -*-
"""Jobs as GitHub runs them in a `docker: rootless` pool with the mirror on, on the real engine: a `container:` job
(the runner image makes its network, its service and its job container as the real runner does, with the runner's
externals read-only at /__e and /var/run/docker.sock bound in) runs its step inside its container, reaches its
service by name, and its socket - and a Docker action's, bound from it - is the slot's own engine, never the host's.
Images come from a registry of this machine standing in for Docker Hub, through the pools' mirror."""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from helpers import ansible_env, wait_for
from sweep import given, look
from test_pool_docker import REPO, STANDIN_HOST, pool_runner
from test_pool_docker import TOKEN as POOL_TOKEN
from test_pool_mirror import BUILD_FROM_HUB, HUB_PASSWORD, HUB_USER
from upstream_registry import Upstream

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
TOKEN = POOL_TOKEN          # the token pool_runner passes: the standin fixture serves REPO with this module's TOKEN

# The step, in the job's container: what the externals hold (and that they are read-only), where it runs, the
# service by its name, and the engine at /var/run/docker.sock - and through it, a Docker action's container with
# the socket bound in, as the runner runs one.
STEP = ('echo "externals: $(cat /__e/drover.txt)"; '
        'touch /__e/x 2>/dev/null && echo "externals: writable" || echo "externals: read-only"; '
        'echo "step in: $PWD $(cat /proc/1/cmdline | tr "\\000" " ")"; '
        'for i in $(seq 1 50); do wget -q -O /tmp/got http://db:8080/index.html 2>/dev/null && break; sleep 0.2; done; '
        'echo "service: $(cat /tmp/got)"; '
        'echo "socket sees: $(docker ps --format "{{.Names}}" | sed "s/_[0-9a-f]*$//" | sort | tr "\\n" " ")"; '
        'echo "action sees: $(docker run --rm -v /var/run/docker.sock:/var/run/docker.sock --entrypoint docker '
        'drover-runner:1 info --format "{{.SecurityOptions}}" 2>&1 | grep -o rootless)"')
SERVICE = ('busybox:1', 'mkdir -p /w && echo hello-from-db > /w/index.html && exec httpd -f -p 8080 -h /w')


class _Hub(str):
    """The stand-in's URL, with the stand-in itself (`upstream`)."""

    def __new__(cls, url, upstream):
        made = str.__new__(cls, url)
        made.upstream = upstream
        return made


@pytest.fixture
def hub(engine):
    """The Docker Hub stand-in with busybox:1 and the runner image (a docker CLI) as drover-runner:1."""
    upstream = Upstream(engine, STANDIN_HOST(), HUB_USER, HUB_PASSWORD)
    try:
        upstream.populate('drover.local/busybox:1', 'library/busybox:1')
        upstream.populate('drover.local/runner:1', 'library/drover-runner:1')
        yield _Hub(upstream.serve(), upstream)
    finally:
        upstream.close()


@pytest.fixture(params=['/runner', '/home/runner'])
def runner_image(request, engine):
    """The test runner image as it is (the runner in /runner, a folder the host lacks), and as the actions-runner
    image lays it out (in /home/runner, its working directory, below a folder the host has)."""
    if request.param == '/runner':
        yield 'drover.local/runner:1', '/runner'
        return
    dockerfile = ('FROM drover.local/runner:1\nRUN mkdir -p /home/runner && cp -a /runner/. /home/runner/\n'
                  'WORKDIR /home/runner\nENTRYPOINT ["/home/runner/run.sh"]\n')
    tag = 'drover.local/runner-home:1'
    engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True)
    try:
        yield tag, '/home/runner'
    finally:
        engine.images.remove(tag, force=True)


def test_a_container_job_runs_in_its_container_reaches_its_service_and_the_slot_engine(
        engine, standin, module_runner, store_path, pool_name, hub, runner_image):
    image, root = runner_image
    mirror = dict(enabled=True, upstream=hub, username=HUB_USER, password=HUB_PASSWORD)
    pool = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)

    def run(**kw):
        profile = dict(name='dind', image=image, slots=1, memory=1024, docker='rootless',
                       environment={'DROVER_JOB_SECONDS': '0.1'})
        return pool(mirror=mirror, profile=profile, **kw)

    labels = ['self-hosted', pool_name]
    try:
        standin.queue_job(REPO, labels, name='ctr', script=STEP, container='drover-runner:1',
                          services={'db': SERVICE})
        first = run()
        assert len(first['started']) == 1, first
        box = engine.containers.get(first['started'][0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=180)
        out = box.logs().decode('utf-8', 'replace')
        assert 'externals: drover runner externals' in out and 'externals: read-only' in out, out
        # the step ran in the job container (its PID 1 is the runner's `tail -f /dev/null`), in /__w
        assert re.search(r'step in: /__w tail -f /dev/null', out), out
        assert 'service: hello-from-db' in out, out
        # the socket is the slot engine: it runs the job's container and its service, and nothing of the host
        assert 'socket sees: db job ' in out, out
        assert 'action sees: rootless' in out, out
        assert 'completed with result: Succeeded' in out, out
        # nothing of the job on the host's engine (its containers and network carry the runner's label): the
        # socket the runner and the job's containers used was the slot engine's
        assert engine.containers.list(all=True, filters={'label': 'drover-standin-job'}) == []
        assert engine.networks.list(filters={'label': 'drover-standin-job'}) == []

        # The externals' copy is root's, nothing in it writable but by root, and it is what the image holds.
        copies = [os.path.join(root, name) for root, dirs, files in os.walk('/var/lib/drover-slots/.externals')
                  for name in dirs + files]
        assert any(p.endswith('/externals/drover.txt') for p in copies), copies
        assert not os.path.exists(root), root           # nothing of it made on the host
        for path in copies:
            info = os.lstat(path)
            assert info.st_uid == 0 and not stat.S_IMODE(info.st_mode) & 0o022, (path, oct(info.st_mode))
        collected = run()
        assert collected['released'] == first['started'], collected
    finally:
        # (the mirror goes too, and with it its configuration, which holds the upstream's password)
        pool(mirror=dict(enabled=False), state='absent', kill_busy=True)
        pool(mirror=dict(enabled=False), state='absent', purge_caches=True)
    assert not os.listdir(os.path.join(os.path.dirname(store_path), 'mirror'))


@pytest.fixture
def runner_as_1001(engine):
    """The test runner image as actions-runner runs: its user `runner` (1001, group 121), the runner's folder its."""
    dockerfile = ('FROM drover.local/runner:1\n'
                  'RUN echo "runner:x:1001:121::/runner:/bin/sh" >> /etc/passwd && echo "docker:x:121:" >> /etc/group'
                  ' && chown -R 1001:121 /runner\nUSER runner\n')
    tag = 'drover.local/runner-1001:1'
    engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        engine.images.remove(tag, force=True)


def test_a_runner_image_of_a_user_of_its_own_reads_its_config_and_writes_its_cache(
        engine, standin, module_runner, store_path, pool_name, runner_as_1001):
    """A `docker: none` pool whose runner image runs as `runner` (uid 1001): the runner reads its JIT config (0400,
    that user's alone), and a job writes the slot's cache (its root that user's), which the slot's next job reads."""
    caches = [{'name': 'deps', 'path': '/cache', 'scope': 'slot'}]
    pool = pool_runner(module_runner, standin, store_path, pool_name)

    def run(**kw):
        return pool(profile=dict(name='plain', image=runner_as_1001, slots=1, memory=256, caches=caches,
                                 environment={'DROVER_JOB_SECONDS': '0.1'}), **kw)

    def job(name, script):
        standin.queue_job(REPO, ['self-hosted', pool_name], name=name, script=script)
        started = run()['started']
        assert len(started) == 1, started
        box = engine.containers.get(started[0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=120)
        return box.logs().decode('utf-8', 'replace')

    try:
        wrote = job('write', 'echo "user: $(id -u):$(id -g)"; echo "jit: $(stat -c %u:%a /runner/.jitconfig)"; '
                             'echo "from the first job" > /cache/kept && echo "cache: written"')
        # the runner read its JIT config (that user's alone, 0400) and took the job
        assert 'user: 1001:121' in wrote and 'jit: 1001:400' in wrote and 'Succeeded' in wrote, wrote
        assert 'cache: written' in wrote, wrote
        read = job('read', 'echo "cache: $(cat /cache/kept)"')
        assert 'cache: from the first job' in read, read
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)


def test_through_the_role_a_build_a_cache_and_a_container_job(engine, standin, store_path, pool_name, hub, tmp_path):
    """The documented way: drover.fleet.pools over an inventory whose pool has profile.docker rootless (2 slots), a
    slot cache and the mirror (drover_pools_mirror). The first job builds FROM busybox:1 with BuildKit on its fresh
    slot (the base through the mirror) and writes its cache as the slot's user; while it runs, the second builds on
    the other fresh slot, and the upstream serves no blob for it; then a `container:` job reaches its service by name
    and the slot engine through the socket; the last reads what the first jobs left in its slot's cache."""
    inventory = given(tmp_path / 'inventory.json')
    labels = ['self-hosted', pool_name]

    def write(state='present', mirror=True):
        host = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                'drover_store_path': store_path,
                'drover_pools_defaults': {'api_url': standin.url, 'token': TOKEN, 'machine_id': 'mid' + pool_name,
                                          'github_timeout': 60},
                'drover_pools_mirror': dict(enabled=True, upstream=hub, username=HUB_USER, password=HUB_PASSWORD)
                if mirror else {'enabled': False},
                'drover_pools': [{'pool': pool_name, 'repository': REPO, 'labels': labels, 'warm': 0, 'state': state,
                                  'kill_busy': True, 'purge_caches': state == 'absent', 'profile': {
                                      'name': 'dind', 'image': 'drover.local/runner:1', 'slots': 2, 'memory': 1024,
                                      'docker': 'rootless', 'environment': {'DROVER_JOB_SECONDS': '0.1'},
                                      'caches': [{'name': 'deps', 'path': '/cache', 'scope': 'slot'}]}}]}
        inventory.write_text(json.dumps({'all': {'hosts': {'localhost': host}}}))

    def play():
        done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), 'drover.fleet.pools'], cwd=str(tmp_path),
                              env=ansible_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
        out = done.stdout + done.stderr
        look(out, 'ansible-playbook output')
        assert done.returncode == 0, out[-5000:]
        return out

    def runners():
        return dict((c.id, c) for c in engine.containers.list(all=True, filters={'label': [
            'drover.pool=%s' % pool_name, 'drover.role=runner']}))

    def start(name, **queued):
        """The job queued and a play run: the runner it started."""
        before = runners()
        standin.queue_job(REPO, labels, name=name, **queued)
        play()
        [box] = [c for i, c in runners().items() if i not in before]
        return box

    def job(name, **queued):
        box = start(name, **queued)
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=180)
        return box.logs().decode('utf-8', 'replace')

    write()
    keep = '; echo "user: $(id -u)"; echo kept-by-build > /cache/kept'
    try:
        first = start('build', script=BUILD_FROM_HUB + keep + '; sleep 15')
        wait_for(lambda: re.search(r'build: |build failed', first.logs().decode('utf-8', 'replace')), timeout=120)
        built = first.logs().decode('utf-8', 'replace')
        assert 'build: built-on-the-hub-s' in built and 'user: 0' not in built, built
        fetched = hub.upstream.blob_fetches()
        assert fetched >= 1                             # (the mirror fetched the base: its first pull)
        # the other slot, fresh too, while the first runs: its build's base comes from the mirror alone
        second = start('build2', script=BUILD_FROM_HUB + keep)
        assert second.labels['drover.slot'] != first.labels['drover.slot'], second.labels
        wait_for(lambda: second.reload() or second.status == 'exited', timeout=180)
        again = second.logs().decode('utf-8', 'replace')
        assert 'build: built-on-the-hub-s' in again, again
        assert hub.upstream.blob_fetches() == fetched
        wait_for(lambda: first.reload() or first.status == 'exited', timeout=120)
        contained = job('ctr', script=STEP, container='drover-runner:1', services={'db': SERVICE})
        assert 'service: hello-from-db' in contained and 'socket sees: db job ' in contained, contained
        assert 'externals: read-only' in contained and 'action sees: rootless' in contained, contained
        read = job('read', script='echo "cache: $(cat /cache/kept)"')
        assert 'cache: kept-by-build' in read, read
        assert 'completed with result: Succeeded' in read, read
    finally:
        write(state='absent', mirror=False)
        play()
    assert engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}) == []
    assert engine.containers.list(all=True, filters={'label': 'drover.role=mirror'}) == []
