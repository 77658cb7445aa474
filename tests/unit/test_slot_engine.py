# -*- coding: utf-8 -*-
"""The slot engine's file handling, without an engine: what root reads and makes in a slot's directory is never
what the slot's user (a job, through its engine) put there."""

from __future__ import absolute_import, division, print_function

import json
import os
import socket
import stat
import subprocess
import time

from ansible_collections.drover.fleet.plugins.module_utils.pools import slot_engine as se

NOBODY = 65534


def test_root_reads_only_its_own_regular_files(tmp_path):
    own = tmp_path / 'daemon.json'
    own.write_text('{}\n')
    assert se._read_root_file(str(own)) == '{}\n'
    fifo = tmp_path / 'fifo'
    os.mkfifo(str(fifo))
    started = time.monotonic()
    assert se._read_root_file(str(fifo)) is None            # not waited on
    assert time.monotonic() - started < 1
    link = tmp_path / 'link'
    link.symlink_to(own)
    assert se._read_root_file(str(link)) is None            # never through a link
    theirs = tmp_path / 'theirs'
    theirs.write_text('{"registry-mirrors": ["http://elsewhere"]}')
    os.chown(str(theirs), NOBODY, NOBODY)
    assert se._read_root_file(str(theirs)) is None          # a file another user made
    big = tmp_path / 'big'
    big.write_bytes(b'x' * (se.ROOT_FILE_MAX + 10))
    assert len(se._read_root_file(str(big))) == se.ROOT_FILE_MAX
    assert se._read_root_file(str(tmp_path / 'missing')) is None


def test_a_folder_is_made_never_through_a_link(tmp_path):
    target = tmp_path / 'root-only'
    target.mkdir(mode=0o700)
    place = tmp_path / 'home'
    place.symlink_to(target)
    assert se._own_dir(str(place), NOBODY, NOBODY, 0o700) == -1     # the link removed, a folder made
    assert not os.path.islink(str(place))
    info = os.lstat(str(place))
    assert stat.S_ISDIR(info.st_mode) and (info.st_uid, info.st_gid) == (NOBODY, NOBODY)
    assert os.stat(str(target)).st_uid == 0                          # what the link named is as it was
    # a file where a folder goes, and a folder that is another user's: made root's
    (tmp_path / 'run').write_text('x')
    assert se._own_dir(str(tmp_path / 'run'), 0, 0, 0o711) == -1
    assert se._own_dir(str(place), 0, 0, 0o711) == NOBODY
    info = os.lstat(str(place))
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o711)


def test_the_engine_is_known_by_the_process_root_started(tmp_path):
    slot = se.SlotEngine(None, 'scope', 'pool', 0, 'image', {}, root=str(tmp_path))
    os.makedirs(slot.dir)
    proc = subprocess.Popen(['sleep', '30'])
    try:
        record = {'pid': proc.pid, 'start': se._start_time(proc.pid)}
        with open(slot.pid_file, 'w') as handle:
            json.dump(record, handle)
        assert slot._engine() == proc.pid
        # the same pid with another start time is another process; a bare pid (what an earlier release wrote, or a
        # job) names none; so does a record another user owns
        with open(slot.pid_file, 'w') as handle:
            json.dump(dict(record, start=record['start'] - 1), handle)
        assert slot._engine() is None
        with open(slot.pid_file, 'w') as handle:
            handle.write('%d\n' % proc.pid)
        assert slot._engine() is None
        with open(slot.pid_file, 'w') as handle:
            json.dump(record, handle)
        os.chown(slot.pid_file, NOBODY, NOBODY)
        assert slot._engine() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_socket_is_proven_by_its_listener(tmp_path):
    """A socket whose listener is not the engine's dockerd (here: this test's own) is never linked for use."""
    slot = se.SlotEngine(None, 'scope', 'pool', 0, 'image', {}, root=str(tmp_path))
    os.makedirs(slot.run_dir)
    slot.ids = (os.getuid(), os.getgid())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(slot.socket)
    listener.listen(1)
    proc = subprocess.Popen(['sleep', '30'])
    try:
        assert se._listener(slot.socket)[0] == os.getpid()
        with open(slot.pid_file, 'w') as handle:
            json.dump({'pid': proc.pid, 'start': se._start_time(proc.pid)}, handle)
        assert slot._prove_socket() is None and not os.path.lexists(slot.socket_link)
        # a link at the socket's place is not followed (its target is this test's own socket)
        os.unlink(slot.socket)
        os.symlink(str(tmp_path / 'elsewhere.sock'), slot.socket)
        assert slot._prove_socket() is None and not os.path.lexists(slot.socket_link)
        assert sorted(os.listdir(slot.dir)) == ['engine.pid', 'run']
    finally:
        listener.close()
        proc.kill()
        proc.wait()


def test_only_images_pulled_from_docker_hub_stay_and_under_root_s_name_alone():
    pulled = {'Id': 'sha256:' + 'ab' * 32, 'RepoTags': ['busybox:1'], 'RepoDigests': ['busybox@sha256:' + 'cd' * 32]}
    assert se.kept_image(pulled) == 'drover-kept:' + ('ab' * 32)[:20]
    assert se.kept_image(pulled, keep_pulled=False) is None               # a pool of forks' jobs keeps none
    for name in ('library/node', 'docker.io/library/node', 'index.docker.io/user/app', 'user/app'):
        assert se.kept_image(dict(pulled, RepoDigests=[name + '@sha256:' + 'cd' * 32])), name
    # built, tagged or loaded (no digest), or pulled from another registry (a job's own, or any): it goes
    for digests in ([], None, ['<none>@<none>'], ['localhost:5000/node@sha256:' + 'cd' * 32],
                    ['ghcr.io/o/node@sha256:' + 'cd' * 32], ['registry.example/node@sha256:' + 'cd' * 32]):
        assert se.kept_image(dict(pulled, RepoDigests=digests)) is None, digests
