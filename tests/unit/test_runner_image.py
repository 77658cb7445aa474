# -*- coding: utf-8 -*-
"""A runner image's externals for the slot engines (pools.runner_image): copied once per image, root's and read-only to
the slot, and nothing a hostile image holds written outside the copy."""

from __future__ import absolute_import, division, print_function

import contextlib
import io
import os
import stat
import tarfile

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.pools import runner_image as ri


class _ImageEngine:
    """An engine with one runner image whose working directory is /runner and whose externals are `members`
    [(TarInfo, bytes or None)], served as the engine's archive stream (in small chunks)."""

    def __init__(self, members, workdir='/runner'):
        self.members, self.workdir, self.made, self.removed = members, workdir, [], []

    def image_workdir(self, ref):
        return ('sha256:' + 'ab' * 32, self.workdir) if ref == 'runner:1' else None

    @contextlib.contextmanager
    def unstarted(self, image, labels):
        self.made.append((image, labels))
        try:
            yield 'cid'
        finally:
            self.removed.append('cid')

    def archive(self, cid, path):
        assert (cid, path) == ('cid', self.workdir + '/externals')
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode='w') as tar:
            for info, data in self.members:
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
        raw = out.getvalue()
        return (raw[i:i + 700] for i in range(0, len(raw), 700))


def _member(name, kind=tarfile.REGTYPE, data=None, mode=0o644, link='', uid=1001):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid, info.gid = kind, mode, link, uid, uid
    info.size = len(data) if data is not None else 0
    return info, data


def test_a_runner_image_s_externals_are_copied_once_root_s_and_read_only_to_the_slot(tmp_path, monkeypatch):
    monkeypatch.setattr(ri, 'EXTERNALS_ROOT', str(tmp_path / 'slots' / '.externals'))
    engine = _ImageEngine([_member('externals', tarfile.DIRTYPE, mode=0o777),
                           _member('externals/node20/bin/node', data=b'#!/bin/sh\n', mode=0o4777),
                           _member('externals/node20/bin/npm', tarfile.SYMTYPE, link='node')])
    found = ri.runner_externals(engine, 'runner:1', {'drover.pool': 'ci'}, now=1_800_000_000)
    assert found is not None
    at, copy = found[0], found[1]
    assert at == '/runner/externals' and copy.startswith(str(tmp_path / 'slots' / '.externals'))
    node = os.path.join(copy, 'node20', 'bin', 'node')
    with open(node) as handle:
        assert handle.read() == '#!/bin/sh\n'
    for path in (copy, node):
        info = os.lstat(path)
        # root's, and nothing in it the slot's user (or any other) may change; no setuid
        assert info.st_uid == 0 and not stat.S_IMODE(info.st_mode) & 0o7022, (path, oct(info.st_mode))
    assert os.readlink(os.path.join(copy, 'node20', 'bin', 'npm')) == 'node'
    # the copying container was never started, and is gone
    assert engine.removed == ['cid'] and engine.made[0][1]['drover.role'] == 'externals-copy'
    # once a image: the next pass copies nothing
    assert ri.runner_externals(engine, 'runner:1', {}, now=1_800_000_060) == (at, copy)
    assert len(engine.made) == 1
    # an image of no working directory, or none of that name: nothing
    assert ri.runner_externals(_ImageEngine([], workdir=''), 'runner:1', {}) is None
    assert ri.runner_externals(engine, 'other:1', {}) is None


def test_a_hostile_runner_image_s_externals_write_nothing_outside_their_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(ri, 'EXTERNALS_ROOT', str(tmp_path / 'slots' / '.externals'))
    outside = tmp_path / 'outside'
    outside.mkdir()
    for members in ([_member('externals/escape', tarfile.SYMTYPE, link=str(outside)),
                     _member('externals/escape/pwned', data=b'x')],
                    [_member('externals/up', tarfile.SYMTYPE, link='../../../outside')],
                    [_member('externals/../../outside/pwned', data=b'x')],
                    [_member('externals/dev', tarfile.CHRTYPE)]):
        engine = _ImageEngine(members)
        with pytest.raises(ri.RunnerImageError) as exc:
            ri.runner_externals(engine, 'runner:1', {})
        assert 'runner:1' in str(exc.value)
        assert os.listdir(str(outside)) == [] and engine.removed == ['cid']
        # nothing half copied is kept (the next pass tries again)
        assert os.listdir(ri.EXTERNALS_ROOT) == []
