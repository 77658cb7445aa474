# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a runner image gives its pool's pass: the user its runner runs as, and (profile.docker rootless) its externals
folder for the slot engines.

The runner binds its externals folder (node and the tools, at `<the image's working directory>/externals`) read-only
at /__e in a `container:` job's containers; the slot engine resolves that path on the host (pools.slot_engine's view of
the filesystem binds this module's copy there).

Owns: the image's user as (uid, gid) (pools.plan.image_ids resolves it from the image's own /etc/passwd and
/etc/group, read here); the copies of runner images' externals under EXTERNALS_ROOT, one per image ID, made whole or
not at all (a temporary folder renamed), every file root's and none writable by others, through tarfile's data
filter; forgetting copies no pass used for EXTERNALS_UNUSED_DAYS. Must not: start anything from the image (its files come through a
container made from it and never started), or write outside a copy.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import posixpath
import shutil
import tarfile
import time

from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.pools.plan import image_ids
from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import SLOTS_ROOT

EXTERNALS_ROOT = os.path.join(SLOTS_ROOT, '.externals')   # root's copies of runner images' externals, by image ID
EXTERNALS_UNUSED_DAYS = 7               # a copy no pass used for this long goes (an image the pools left)


class RunnerImageError(Exception):
    """What a runner image gives cannot be had."""


def image_owner(engine, image, labels):
    """The (uid, gid) the image's containers run as, or None for root: its USER, a name or a lone uid resolved through
    the image's own /etc/passwd and /etc/group (read from a container made from it and never started, labelled
    `labels`). Raises EngineError (a user or group the image lacks is named)."""
    user = engine.image_user(image) or ''
    name, dummy, group = user.partition(':')
    files = {}
    if name not in ('', 'root', '0') and not (name.isdigit() and group.isdigit()):
        files = engine.image_files(image, ('/etc/passwd', '/etc/group'), labels)
    try:
        return image_ids(user, files.get('/etc/passwd'), files.get('/etc/group'))
    except ValueError as exc:
        raise EngineError('runner image %s: %s' % (image, exc))


def runner_externals(engine, image, labels, now=None):
    """(where the runner's externals folder is in the runner image `image`, the host's copy of it), or None where the
    image has none. The runner's folder is the image's working directory (the runner image contract, docs/
    gh_runner_slot.md); its externals are copied out of the image once per image ID, under EXTERNALS_ROOT: every file
    root's, no file group- or world-writable, nothing that is not a plain file, folder or link inside the copy
    (Python's tarfile data filter), so that a slot's user reads it and can change nothing in it. A copy no pass has
    used for EXTERNALS_UNUSED_DAYS goes. Raises RunnerImageError (an image whose externals cannot be copied)."""
    found = engine.image_workdir(image)
    if found is None or not found[1].startswith('/'):
        return None
    image_id, workdir = found
    at = posixpath.normpath(posixpath.join(workdir, 'externals'))
    if at == '/externals' or not hasattr(tarfile, 'data_filter'):
        return None             # (a runner at / would have the engine's whole root copied; Python < 3.8.17: no filter)
    try:
        if not os.path.isdir(EXTERNALS_ROOT):
            os.makedirs(EXTERNALS_ROOT, 0o711)
        os.chmod(os.path.dirname(EXTERNALS_ROOT), 0o711)
        os.chmod(EXTERNALS_ROOT, 0o711)
        dest = os.path.join(EXTERNALS_ROOT, image_id.split(':')[-1][:32])
        if not os.path.isdir(dest):
            _copy_externals(engine, image, at, dest, labels)
        os.utime(dest, (now, now) if now is not None else None)
        _forget_externals(dest, now if now is not None else time.time())
    except (OSError, tarfile.TarError, EngineError) as exc:
        raise RunnerImageError('the externals of runner image %s (%s): %s' % (image, at, exc))
    copy = os.path.join(dest, 'externals')
    return (at, copy) if os.path.isdir(copy) else None


def _copy_externals(engine, image, at, dest, labels):
    """The image's `at` copied to dest/externals (dest made whole: nothing half copied is ever used); dest empty
    where the image has no such folder."""
    tmp = '%s.%d.tmp' % (dest, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp, 0o700)
    try:
        with engine.unstarted(image, dict(labels, **{'drover.role': 'externals-copy'})) as box:
            stream = engine.archive(box, at)
            if stream is not None:
                with tarfile.open(fileobj=_Chunks(stream), mode='r|') as tar:
                    tar.extractall(tmp, filter=_root_owned)
        os.chmod(tmp, 0o755)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _root_owned(member, path):
    """A member of a runner image's externals as it may be written: tarfile's data filter (inside the copy, no
    device, no setuid, nothing group- or world-writable), then root's."""
    member = tarfile.data_filter(member, path)
    return member.replace(uid=0, gid=0, uname='root', gname='root', deep=False)


def _forget_externals(used, now):
    """The copies of other images' externals that no pass used for EXTERNALS_UNUSED_DAYS, removed."""
    for name in os.listdir(EXTERNALS_ROOT):
        path = os.path.join(EXTERNALS_ROOT, name)
        try:
            if path != used and now - os.lstat(path).st_mtime > EXTERNALS_UNUSED_DAYS * 86400:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


class _Chunks:
    """A file to read from an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks):
        self.chunks, self.chunk, self.at = iter(chunks), b'', 0

    def read(self, size=-1):
        parts, want = [], size
        while want != 0:
            if self.at >= len(self.chunk):
                try:
                    self.chunk, self.at = next(self.chunks), 0
                except StopIteration:
                    break
                continue
            end = len(self.chunk) if want < 0 else min(len(self.chunk), self.at + want)
            parts.append(self.chunk[self.at:end])
            if want > 0:
                want -= end - self.at
            self.at = end
        return b''.join(parts)
