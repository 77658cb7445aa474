# -*- coding: utf-8 -*-
"""Caches of runner pools (profile.caches) on the real engine, against the GitHub stand-in, with jobs that run
scripts: a slot's cache outlives its ephemeral runners, another pool never sees it, max_size is kept while the slot
is vacant, and a store made again finds the caches by their labels."""

from __future__ import absolute_import, division, print_function

import http.server
import os
import re
import threading
import time
import uuid

import pytest

from helpers import wait_for, warnings_of
from sweep import register

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'
MIB = 1024 * 1024
SIZE = 200 * MIB
RATE = 20 * MIB                     # bytes a second


class Upstream:
    """A local download server (a package index, a toolchain mirror) that serves one file of SIZE bytes at RATE,
    counting what it served."""

    def __init__(self):
        self.served = 0
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):                       # noqa: N802 (the handler's name)
                self.send_response(200)
                self.send_header('Content-Length', str(SIZE))
                self.end_headers()
                chunk = b'\0' * MIB
                started = time.monotonic()
                sent = 0
                while sent < SIZE:
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    upstream.served += len(chunk)
                    ahead = sent / float(RATE) - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)

            def log_message(self, *args):
                pass
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d/big' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    server = Upstream()
    yield server
    server.stop()


@pytest.fixture
def cache_volumes(engine):
    made = []
    yield made
    for name in made:
        for volume in engine.volumes.list(filters={'label': 'drover.pool=%s' % name}):
            volume.remove(force=True)


def pool_runner(module_runner, standin, store_path, pool, caches, slots=1):
    def run(**kw):
        params = dict(pool=pool, labels=['self-hosted', pool], token=TOKEN, api_url=standin.url,
                      store_path=store_path, machine_id='mid' + pool, warm=0, allow_host_network=True,
                      repository=REPO, profile=dict(name='small', image=RUNNER_IMAGE, slots=slots, network_mode='host',
                                                    memory=512, caches=caches,
                                                    environment={'DROVER_JOB_SECONDS': '0.1'}))
        params.update(kw)
        return module_runner('gh_runner_slot', params)
    return run


def job(engine, standin, run, pool, script, name='job'):
    """Queue a job with `script`, run its runner to its end: (the runner's output, the pass's result that
    collected it)."""
    standin.queue_job(REPO, ['self-hosted', pool], name=name, script=script)
    started = run()['started']
    assert len(started) == 1, started
    box = engine.containers.get(started[0])
    wait_for(lambda: box.reload() or box.status == 'exited', timeout=120)
    output = box.logs().decode('utf-8', 'replace')
    collected = run()
    assert collected['released'] == started, collected['released']
    return output, collected


FETCH = ('if [ -f /cache/big ]; then echo "cache: hit"; else echo "cache: miss"; '
         'wget -q -O /cache/big %s || exit 1; fi; time cp /cache/big /tmp/big; test "$(wc -c < /tmp/big)" -eq %d')


def restore_seconds(output):
    found = re.search(r'real\s+(\d+)m\s*([\d.]+)s', output)
    assert found, output
    return int(found.group(1)) * 60 + float(found.group(2))


def test_a_slot_s_cache_outlives_its_runners_and_another_pool_never_sees_it(
        engine, standin, module_runner, store_path, pool_name, upstream, cache_volumes, tmp_path):
    other = pool_name + 'b'
    cache_volumes.extend([pool_name, other])
    caches = [{'name': 'deps', 'path': '/cache'}]
    run = pool_runner(module_runner, standin, store_path, pool_name, caches)
    script = FETCH % (upstream.url, SIZE)

    began = time.monotonic()
    first, dummy = job(engine, standin, run, pool_name, script, 'first')
    assert 'cache: miss' in first and time.monotonic() - began >= SIZE / RATE, first
    assert upstream.served == SIZE
    second, collected = job(engine, standin, run, pool_name, script, 'second')
    assert 'cache: hit' in second and restore_seconds(second) < 1.0, second
    assert upstream.served == SIZE                               # nothing fetched again
    ended = [e for e in collected['events'] if e['event'] == 'runner.ended'][0]
    assert ended['result'] == 'Succeeded'

    # another pool, a cache of the same name and path: a volume of its own, empty
    run_b = pool_runner(module_runner, standin, store_path, other, caches)
    seen, collected = job(engine, standin, run_b, other, 'ls -A /cache; test ! -e /cache/big', 'other')
    assert [e for e in collected['events'] if e['event'] == 'runner.ended'][0]['result'] == 'Succeeded', seen

    info = module_runner('gh_runner_info', dict(store_path=store_path, pool=pool_name))
    [shown] = info['pools'][0]['caches']
    assert (shown['name'], shown['slot'], shown['path'], shown['size']) == ('deps', 1, '/cache', SIZE)

    # the store lost: the next runner of the slot finds the cache again by its labels
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store_path + suffix):
            os.unlink(store_path + suffix)
    third, dummy = job(engine, standin, run, pool_name, script, 'third')
    assert 'cache: hit' in third and upstream.served == SIZE, third

    # drained without purge_caches: the cache stays; with it, it goes
    run(state='absent')
    assert [v.name for v in engine.volumes.list(filters={'label': 'drover.pool=%s' % pool_name})]
    run(state='absent', purge_caches=True)
    assert engine.volumes.list(filters={'label': 'drover.pool=%s' % pool_name}) == []


def test_max_size_is_kept_while_the_slot_is_vacant(engine, standin, module_runner, store_path, pool_name,
                                                   cache_volumes):
    cache_volumes.append(pool_name)
    run = pool_runner(module_runner, standin, store_path, pool_name, [{'name': 'deps', 'path': '/cache', 'max_size': 2}])
    script = ('for f in one two three; do dd if=/dev/zero of=/cache/$f bs=1024 count=1024 2>/dev/null; '
              'sleep 1.1; done; ln -s / /cache/root')
    dummy, collected = job(engine, standin, run, pool_name, script)
    [trimmed] = [e for e in collected['events'] if e['event'] == 'cache.trimmed']
    assert (trimmed['cache'], trimmed['slot'], trimmed['files'], trimmed['bytes']) == ('deps', 1, 1, MIB)
    listing, dummy = job(engine, standin, run, pool_name, 'ls /cache')
    names = listing.split()
    assert 'one' not in names and 'two' in names and 'three' in names, listing
    info = module_runner('gh_runner_info', dict(store_path=store_path, pool=pool_name))
    assert info['pools'][0]['caches'][0]['size'] == 2 * MIB
    assert os.path.isdir('/etc')                                    # the link was never followed


# A job that deepens its cache 1,000 levels (a walk that recursed failed the pass for every pool).
DEEPEN = ('cd /mods && echo top > top && i=0; while [ $i -lt 1000 ]; do mkdir d && cd d || exit 1; i=$((i + 1)); '
          'done; echo deep > f')


def test_a_cache_a_job_made_1000_levels_deep_is_walked_to_a_bound_and_told(
        engine, standin, module_runner, store_path, pool_name, cache_volumes):
    cache_volumes.append(pool_name)
    caches = [{'name': 'mods', 'path': '/mods', 'scope': 'pool', 'mode': 'ro', 'seed_from': 'slot1', 'max_size': 1}]
    run = pool_runner(module_runner, standin, store_path, pool_name, caches)
    output, collected = job(engine, standin, run, pool_name, DEEPEN, 'deepen')
    assert not collected.get('failed'), collected
    assert [e['result'] for e in collected['events'] if e['event'] == 'runner.ended'] == ['Succeeded'], output
    said = 'the walk left out 1 (a directory deeper than 100 levels, with all it holds, counts as one'
    warnings = warnings_of(collected)
    assert [w for w in warnings if 'cache mods' in w and 'more than max_size' in w and said in w], warnings
    assert [w for w in warnings if 'cache mods' in w and 'snapshot of slot 1 was not made' in w and said in w], warnings
    # no partial snapshot: the first (empty) generation stays the one runners mount
    assert 'cache.seeded' not in [e['event'] for e in collected['events']]
    assert [n.rsplit('-', 1)[-1] for n in snapshot_names(engine, pool_name)] == ['g1']
    info = module_runner('gh_runner_info', dict(store_path=store_path, pool=pool_name))
    [shown] = [c for c in info['pools'][0]['caches'] if c['slot'] == 1]
    assert shown['size'] == len('top\n'), shown                 # the walk reached the top, not the deepest file
    assert [w for w in warnings_of(info) if said in w], info
    # the pool goes on: the next job runs, with the cache as the last one left it
    output, collected = job(engine, standin, run, pool_name, 'cat /mods/top', 'next')
    assert 'top' in output and [e['result'] for e in collected['events'] if e['event'] == 'runner.ended'] == [
        'Succeeded'], output


# A job that writes where it may (slot 1 of a slot1-seeded snapshot writes its own volume), and otherwise reads
# the snapshot twice, some seconds apart, after trying to write it.
# The writer also leaves what a hostile job would: a FIFO (a copy that opened it would hang, or read what another
# writer sends) and a link to a host path (a copy that followed it would take the host's file into the snapshot).
SEEDED = ('if touch /mods/probe 2>/tmp/err; then echo "writer: $WORD" ; echo "$WORD" > /mods/word; '
          'rm -f /mods/pipe /mods/host-shadow; mkfifo /mods/pipe; ln -s /etc/shadow /mods/host-shadow; '
          'else cat /tmp/err; echo "first read: $(cat /mods/word 2>/dev/null)"; sleep 6; '
          'echo "second read: $(cat /mods/word 2>/dev/null)"; fi')


def runs(engine, run, standin, pool, words):
    """Queue one job per word (WORD set in its script), start their runners in one pass, collect them: {slot: the
    runner's output}; with a pass run every second meanwhile, as a timer would."""
    for word in words:
        standin.queue_job(REPO, ['self-hosted', pool], name='job-' + word, script='WORD=%s; %s' % (word, SEEDED))
    started = run()['started']
    assert len(started) == len(words), started
    boxes = dict((int(name.split('-')[-2]), engine.containers.get(name)) for name in started)
    events = []

    def ended():
        events.extend(run()['events'])
        return all(b.reload() or b.status == 'exited' for b in boxes.values()) or \
            set(e.get('runner_name') for e in events if e['event'] == 'runner.ended') == set(started)
    outputs = {}
    deadline = time.monotonic() + 120
    while len(outputs) < len(boxes) and time.monotonic() < deadline:
        for slot, box in boxes.items():
            try:
                box.reload()
            except Exception:                   # collected (removed) by a pass: its output was read before
                continue
            if box.status == 'exited' and slot not in outputs:
                outputs[slot] = box.logs().decode('utf-8', 'replace')
        events.extend(run()['events'])
        time.sleep(0.5)
    wait_for(lambda: set(e.get('runner_name') for e in events + run()['events']
                         if e['event'] == 'runner.ended') >= set(started), timeout=30)
    return outputs, events


def snapshot_names(engine, pool):
    return sorted(v.name for v in engine.volumes.list(filters={'label': ['drover.pool=%s' % pool, 'drover.snapshot']}))


def test_a_pool_snapshot_seeded_from_slot_1_never_changes_under_a_running_job(
        engine, standin, module_runner, store_path, pool_name, cache_volumes):
    """seed_from slot1: slot 1 writes its own volume; after a job there, a new snapshot generation is copied, which
    runners started later mount read-only (EROFS), while a running one keeps its own; an older generation goes once
    no container mounts it; a pool of forks reads another pool's snapshot and cannot write it; a store made again
    finds the snapshot by its labels."""
    forks = pool_name + 'f'
    cache_volumes.extend([pool_name, forks])
    caches = [{'name': 'mods', 'path': '/mods', 'scope': 'pool', 'mode': 'ro', 'seed_from': 'slot1'}]
    run = pool_runner(module_runner, standin, store_path, pool_name, caches, slots=2)

    outputs, events = runs(engine, run, standin, pool_name, ['one'])
    assert 'writer: one' in outputs[1], outputs
    [seeded] = [e for e in events if e['event'] == 'cache.seeded']
    assert (seeded['cache'], seeded['generation'], seeded['left_out']) == ('mods', 2, 1), seeded     # the FIFO
    snapshot = engine.volumes.get(snapshot_names(engine, pool_name)[0]).attrs['Mountpoint']
    assert sorted(os.listdir(snapshot)) == ['host-shadow', 'probe', 'word']
    assert os.readlink(os.path.join(snapshot, 'host-shadow')) == '/etc/shadow'     # a link, never followed
    assert snapshot_names(engine, pool_name) == ['drover-cache-%s-%s-mods-g2' % (seeded_scope(engine, pool_name),
                                                                                 pool_name)]

    # slot 1 writes "two" while slot 2's job reads "one" twice, seconds apart: its snapshot never changes
    outputs, events = runs(engine, run, standin, pool_name, ['two', 'x2'])
    writer, reader = outputs[1], outputs[2]
    assert re.search(r'writer: (two|x2)', writer), outputs
    assert 'Read-only file system' in reader, reader
    assert 'first read: one' in reader and 'second read: one' in reader, reader
    assert [e['generation'] for e in events if e['event'] == 'cache.seeded'] == [3], events
    written = re.search(r'writer: (\w+)', writer).group(1)
    # the generation slot 2 mounted went with its runner
    wait_for(lambda: run() and len(snapshot_names(engine, pool_name)) == 1, timeout=30)

    outputs, dummy = runs(engine, run, standin, pool_name, ['three', 'x3'])
    assert 'first read: %s' % written in outputs[2], outputs

    # a pool serving forks' pull requests: the snapshot of the first pool, read-only
    run_f = pool_runner(module_runner, standin, store_path, forks,
                        [{'name': 'mods', 'path': '/mods', 'scope': 'pool', 'seed_from': 'pool:%s' % pool_name}])
    outputs, dummy = runs(engine, lambda **kw: run_f(pull_requests_from_forks=True, **kw), standin, forks, ['f1'])
    assert 'Read-only file system' in outputs[1] and re.search(r'first read: (three|x3)', outputs[1]), outputs
    refused = run_f(pull_requests_from_forks=True, profile=dict(
        name='small', image=RUNNER_IMAGE, slots=1, caches=[{'name': 'mods', 'path': '/mods'}]))
    assert refused.get('failed') and 'pull_requests_from_forks takes read-only caches only' in refused['msg']

    info = module_runner('gh_runner_info', dict(store_path=store_path, pool=pool_name))
    shown = sorted(((c['slot'], c['snapshot'], c['size']) for c in info['pools'][0]['caches']), key=repr)
    assert [(s, g) for s, g, dummy in shown] == [(1, None), (None, 4)], shown
    assert all(size > 0 for dummy, dummy, size in shown)

    # the store lost: slot 2's next job reads the same snapshot, found by its labels
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store_path + suffix):
            os.unlink(store_path + suffix)
    outputs, dummy = runs(engine, run, standin, pool_name, ['four', 'x4'])
    assert re.search(r'first read: (three|x3)', outputs[2]), outputs
    for name in (pool_name, forks):
        pool_runner(module_runner, standin, store_path, name, caches)(state='absent', purge_caches=True)
    assert engine.volumes.list(filters={'label': 'drover.pool=%s' % pool_name}) == []


def seeded_scope(engine, pool):
    [volume] = engine.volumes.list(filters={'label': ['drover.pool=%s' % pool, 'drover.slot=1']})
    return volume.name.split('-')[2]
