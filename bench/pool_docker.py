# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: what Docker for jobs costs a pool (gh_runner_slot profile.docker rootless, and its registry mirror).

On the real engine, as root, with what the host role's drover_host_slot_engines installs (and the registry
image). Two parts, each side by side with its anchor in the same run:

- pass: one pool of 2 slots, warm 2, the test runner image, against the GitHub stand-in
  (tests/fixtures/github_standin), converged in this process as the module does (pools.apply.converge):
  `start`, the pass that registers and starts both runners on a host where the pool has nothing (with rootless:
  each slot's user, directory, holder, cgroup and engine, cold); `noop`, the next pass (both idle: nothing to
  do); then the pool is drained with its slot engines' data. The anchor: the same pool with docker none.
- pull: a registry of this machine stands in for Docker Hub, holding an image of --size MiB (random bytes, so
  nothing compresses); the host's pools' mirror in front of it, and two slot engines using it as their
  registry mirror. `first`: slot 1's engine pulls the image (the mirror fetches it upstream); `second`: slot 2's
  engine pulls it (the mirror has it). The anchor: the host's engine pulling it from the registry itself.
- build: a job's first build, a 3-step Dockerfile on Docker Hub's busybox:1 (the stand-in, through the mirror) with
  BuildKit: `cold` on a fresh slot engine, `warm` on the same slot after it was emptied as after a job (the Hub's
  base kept, the build cache gone). The anchor: the host's engine building it on a local base, no build cache.

Reported: medians of --rounds, seconds, and the ratios. Nothing is asserted.

    python bench/pool_docker.py [--rounds 5] [--size 64] [--parts pass,pull,build]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))

import docker  # noqa: E402

from ansible_collections.drover.fleet.plugins.module_utils.pools import apply as _apply_pool  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils._docker import Engine  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.pools.mirror import HostMirror, mirror_spec  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import SlotEngine  # noqa: E402

HOLDER = 'drover.local/busybox:1'
RUNNER_IMAGE = 'drover.local/runner:1'
REPO = 'bench/docker'
TOKEN = 'ghp_pooldockerbench_%d' % os.getpid()


def timed(call):
    began = time.monotonic()
    result = call()
    return time.monotonic() - began, result


def gateway(client):
    return client.networks.get('bridge').attrs['IPAM']['Config'][0]['Gateway']


# --- pass ----------------------------------------------------------------------------------------------------

def one_round(url, mode):
    """(start, noop) seconds of a new pool of 2 warm slots with profile.docker `mode`; the pool drained after."""
    state = tempfile.mkdtemp(prefix='drover-bench-pass-')
    pool = 'bench%s' % uuid.uuid4().hex[:8]
    params = dict(pool=pool, repository=REPO, labels=['self-hosted', pool], token=TOKEN, api_url=url, warm=2,
                  machine_id='mid' + pool[5:], store_path=os.path.join(state, 'store.db'), state='present',
                  profile=dict(name='b', image=RUNNER_IMAGE, slots=2, memory=1024, docker=mode,
                               environment={'DROVER_IDLE_SECONDS': '600'}))
    try:
        start, first = timed(lambda: _apply_pool.converge(dict(params)))
        if len(first['started']) != 2:
            raise RuntimeError('the pass started %r: %r' % (first['started'], first.get('warnings')))
        noop, again = timed(lambda: _apply_pool.converge(dict(params)))
        if again['changed']:
            raise RuntimeError('the second pass changed something: %r' % again)
        return start, noop
    finally:
        _apply_pool.converge(dict(params, state='absent', kill_busy=True, purge_caches=True))
        shutil.rmtree(state, ignore_errors=True)


def bench_pass(rounds):
    from github_standin.server import StandIn
    client = docker.from_env()
    standin = StandIn(host=gateway(client), token=TOKEN).start()
    standin.add_repo(REPO)
    rows = {'none': {'start': [], 'noop': []}, 'rootless': {'start': [], 'noop': []}}
    try:
        for dummy in range(rounds):
            for mode in ('none', 'rootless'):
                start, noop = one_round(standin.url, mode)
                rows[mode]['start'].append(start)
                rows[mode]['noop'].append(noop)
    finally:
        standin.stop()
        client.close()
    print('pass: a pool of 2 warm slots, %d rounds (medians, seconds; ratio rootless / none)' % rounds)
    for step in ('start', 'noop'):
        base, value = statistics.median(rows['none'][step]), statistics.median(rows['rootless'][step])
        print('  %-6s none %.3f s  rootless %.3f s  %.2fx' % (step, base, value, value / base))
    return rows


# --- pull ----------------------------------------------------------------------------------------------------

def big_image(client, size_mib):
    """A local image of busybox and size_mib MiB of random bytes (docker import: no registry to pull from)."""
    ref = 'drover.local/bench-big:%d' % size_mib
    try:
        client.images.get(ref)
        return ref
    except docker.errors.ImageNotFound:
        pass
    work = tempfile.mkdtemp(prefix='drover-bench-big-')
    try:
        box = client.containers.create(HOLDER, command=['true'])
        try:
            with open(os.path.join(work, 'base.tar'), 'wb') as handle:
                for chunk in box.export():
                    handle.write(chunk)
        finally:
            box.remove()
        root = os.path.join(work, 'root')
        os.mkdir(root)
        subprocess.run(['tar', '-C', root, '-xf', os.path.join(work, 'base.tar')], check=True)
        with open(os.path.join(root, 'blob'), 'wb') as handle:
            for dummy in range(size_mib):
                handle.write(os.urandom(1 << 20))
        tar = subprocess.Popen(['tar', '-C', root, '-c', '.'], stdout=subprocess.PIPE)
        subprocess.run(['docker', 'import', '-', ref], stdin=tar.stdout, check=True, stdout=subprocess.DEVNULL)
        tar.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ref


def pull_round(engine, client, hub, name):
    """(anchor, first, second) seconds: the host's engine from the registry, slot 1 and slot 2 through a new
    mirror."""
    direct = '%s/library/%s' % (hub.serve(auth=False, loopback=True)[7:], name)
    anchor, dummy = timed(lambda: client.api.pull(direct))
    client.images.remove(direct)
    url = hub.serve(auth=False)                     # on the bridge's gateway, where the mirror reaches it
    scope = uuid.uuid4().hex[:8]
    state = tempfile.mkdtemp(prefix='drover-bench-mirror-')
    events, warnings = [], []
    mirror = HostMirror(engine, scope, state, time.time(), events, warnings)
    pool = 'bench%s' % scope
    slots = []
    try:
        mirror_url = mirror.ensure(mirror_spec({'enabled': True, 'upstream': url}))
        if not mirror_url:
            raise RuntimeError('the mirror did not start: %r %r' % (events, warnings))
        for idx in (0, 1):
            slot = SlotEngine(engine, scope, pool, idx, HOLDER, {'drover.pool': pool, 'drover.slot': str(idx + 1)},
                              memory=1024, mirrors=[mirror_url])
            slots.append(slot)
            slot.ensure()
        pulls, fetched = [], []
        for slot in slots:
            slot_client = slot.client(timeout=300)
            before = hub.blob_fetches()
            try:
                pulls.append(timed(lambda c=slot_client: c.pull(name))[0])
                slot_client.inspect_image(name)
            finally:
                slot_client.close()
            fetched.append(hub.blob_fetches() - before)
        return anchor, pulls, fetched
    finally:
        for slot in slots:
            slot.remove(keep_data=False)
        mirror.remove(purge=True)
        shutil.rmtree(state, ignore_errors=True)


def bench_pull(rounds, size_mib):
    from upstream_registry import Upstream
    engine = Engine(None, timeout=300)
    client = docker.from_env(timeout=300)
    ref = big_image(client, size_mib)
    name = 'benchbig:%d' % size_mib
    hub = Upstream(client, gateway(client), 'unused', 'unused')
    rows = {'anchor': [], 'first': [], 'second': [], 'fetched': []}
    try:
        hub.populate(ref, 'library/' + name)
        client.images.remove(ref)                      # the host engine too pulls every layer from the registry
        for dummy in range(rounds):
            anchor, pulls, fetched = pull_round(engine, client, hub, name)
            rows['anchor'].append(anchor)
            rows['first'].append(pulls[0])
            rows['second'].append(pulls[1])
            rows['fetched'].append(fetched)
    finally:
        hub.close()
        engine.close()
        client.close()
    first, second = statistics.median(rows['first']), statistics.median(rows['second'])
    anchor = statistics.median(rows['anchor'])
    print('pull: an image of %d MiB, %d rounds (medians, seconds)' % (size_mib, rounds))
    print('  anchor (the host engine, from the registry itself) %.3f s' % anchor)
    print('  first  (slot 1, the mirror fetching it)            %.3f s  %.2fx the anchor' % (first, first / anchor))
    print('  second (slot 2, from the mirror)                   %.3f s  %.2fx the first' % (second, second / first))
    print('  blobs fetched from the registry by the mirror, first and second pull, per round: %s' % rows['fetched'])
    return rows


# Debian's docker CLI (docker.io, as in the runner image: its BuildKit builds need no buildx plugin)
DOCKER_CLI = '/usr/bin/docker'
# A job's first build: three steps on Docker Hub's busybox:1 (through the mirror), with BuildKit.
DOCKERFILE = 'FROM %s\nRUN echo one > /one\nRUN echo two > /two\nCOPY three /three\n'


def docker_build(host, base, tag, *more):
    """Seconds of `docker build` (the CLI, BuildKit) of DOCKERFILE on `base` against the engine at `host`."""
    ctx = tempfile.mkdtemp(prefix='drover-bench-build-')
    try:
        with open(os.path.join(ctx, 'Dockerfile'), 'w') as handle:
            handle.write(DOCKERFILE % base)
        with open(os.path.join(ctx, 'three'), 'w') as handle:
            handle.write('three\n')
        env = dict(os.environ, DOCKER_HOST=host, DOCKER_BUILDKIT='1')
        argv = [DOCKER_CLI, 'build', '-q', '-t', tag] + list(more) + [ctx]
        seconds, done = timed(lambda: subprocess.run(argv, env=env, capture_output=True, text=True, check=False))
        if done.returncode != 0:
            raise RuntimeError('docker build failed: %s' % done.stderr[-2000:])
        return seconds
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def build_round(engine, client, hub):
    """(anchor, cold, warm) seconds: the host's engine building on a local base (no build cache); a fresh slot
    engine's first build (its base through a new mirror); the same slot's build after it was emptied as after a
    job (the Hub's base kept, the build cache gone)."""
    client.images.get(HOLDER).tag('drover-bench-base', 'local')
    try:
        anchor = docker_build('unix:///var/run/docker.sock', 'drover-bench-base:local', 'drover-bench-made:1',
                              '--no-cache')
        client.images.remove('drover-bench-made:1')
    finally:
        client.images.remove('drover-bench-base:local')
    url = hub.serve(auth=False)
    scope = uuid.uuid4().hex[:8]
    state = tempfile.mkdtemp(prefix='drover-bench-mirror-')
    events, warnings = [], []
    mirror = HostMirror(engine, scope, state, time.time(), events, warnings)
    pool = 'bench%s' % scope
    slot = None
    try:
        mirror_url = mirror.ensure(mirror_spec({'enabled': True, 'upstream': url}))
        if not mirror_url:
            raise RuntimeError('the mirror did not start: %r %r' % (events, warnings))
        slot = SlotEngine(engine, scope, pool, 0, HOLDER, {'drover.pool': pool, 'drover.slot': '1'}, memory=1024,
                          mirrors=[mirror_url])
        slot.ensure()
        host = 'unix://%s' % slot.socket_link
        cold = docker_build(host, 'busybox:1', 'made:1')
        problems = slot.empty()
        if problems:
            raise RuntimeError('the slot was not emptied: %s' % problems)
        warm = docker_build(host, 'busybox:1', 'made:1')
        return anchor, cold, warm
    finally:
        if slot is not None:
            slot.remove(keep_data=False)
        mirror.remove(purge=True)
        shutil.rmtree(state, ignore_errors=True)


def bench_build(rounds):
    from upstream_registry import Upstream
    engine = Engine(None, timeout=300)
    client = docker.from_env(timeout=300)
    hub = Upstream(client, gateway(client), 'unused', 'unused')
    rows = {'anchor': [], 'cold': [], 'warm': []}
    try:
        hub.populate(HOLDER, 'library/busybox:1')
        for dummy in range(rounds):
            anchor, cold, warm = build_round(engine, client, hub)
            rows['anchor'].append(anchor)
            rows['cold'].append(cold)
            rows['warm'].append(warm)
    finally:
        hub.close()
        engine.close()
        client.close()
    anchor, cold, warm = (statistics.median(rows[k]) for k in ('anchor', 'cold', 'warm'))
    print('build: a 3-step Dockerfile on busybox:1 with BuildKit, %d rounds (medians, seconds)' % rounds)
    print('  anchor (the host engine, a local base, no build cache) %.3f s' % anchor)
    print('  cold   (a fresh slot engine, the base through the mirror) %.3f s  %.2fx the anchor' % (cold, cold / anchor))
    print('  warm   (the same slot after a job: the base kept)     %.3f s  %.2fx the anchor' % (warm, warm / anchor))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--size', type=int, default=64, help='MiB of the pulled image')
    parser.add_argument('--parts', default='pass,pull,build')
    args = parser.parse_args()
    parts = args.parts.split(',')
    if 'pass' in parts:
        bench_pass(args.rounds)
    if 'pull' in parts:
        bench_pull(args.rounds, args.size)
    if 'build' in parts:
        bench_build(args.rounds)


if __name__ == '__main__':
    main()
