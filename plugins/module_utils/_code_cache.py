# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's module_utils imported from the managed host's disk, with Python's byte code cache, instead of
compiled from the module's payload on every run.

Ansible sends a module with the module_utils it imports in a zip, which Python imports with zipimport: every
source file is compiled on every run (zipimport never writes byte code), about a tenth of a second for the
collection's files. On import, this module copies the collection's module_utils out of the payload once per
content (a directory named by the digest of the files, under CACHE_ROOT, root's alone), compiles them there for
the running interpreter, and puts that directory ahead of the payload on the package's search path: the next run
of the same code imports that byte code.

Owns: CACHE_ROOT - one directory per content, written whole (fsync'd, then renamed into place), with a mark once
compiled for an interpreter; one not used for KEEP_DAYS is removed when another is written, while no module run
holds the cache (a shared lock each run keeps until it ends).
Must not: import anything of the collection, or fail or slow a module run: outside a payload (tests, Salt), as a
user other than root, with a byte code prefix elsewhere (PYTHONPYCACHEPREFIX), or on any error, the payload's
import stays as it is. It trusts a copy only when the copy and CACHE_ROOT are root's alone (0700) and every
directory above them is root's and written by nobody else (or sticky, as /tmp), and the copy's files have the
sizes of the payload's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import stat
import sys
import time
import zipfile

CACHE_ROOT = '/var/cache/drover-fleet/module_utils'
KEEP_DAYS = 7
PACKAGE_DEPTH = 2                           # module_utils/<package>/<module>.py, and one level more at most
PACKAGE = __name__.rpartition('.')[0]
_HELD = []                                  # the cache's lock, held while this process runs


def _payload(path):
    """(the zip, the package's folder in it) where `path` is a folder inside a zip file, else (None, None)."""
    archive, inner = path, []
    while archive and not os.path.isfile(archive):
        archive, tail = os.path.split(archive)
        if not tail:
            return None, None
        inner.insert(0, tail)
    if not archive or not inner or not zipfile.is_zipfile(archive):
        return None, None
    return archive, '/'.join(inner)


def _trusted(path, parents=False):
    """Whether `path` is a real directory of this user alone (0700); with `parents`, every directory above it is
    this user's or root's and written by nobody else, or sticky (/tmp: nobody else can move what is in it)."""
    above = False
    while True:
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in ((os.geteuid(), 0) if above else (os.geteuid(),)):
            return False
        if st.st_mode & (0o022 if above else 0o077) and not (above and st.st_mode & stat.S_ISVTX):
            return False
        up = os.path.dirname(path)
        if not parents or up == path:
            return True
        path, above = up, True


def _whole(target, files):
    """Whether the copy holds every file, at its size (a copy cut short is never used)."""
    try:
        return all(os.lstat(os.path.join(target, name)).st_size == len(data) for name, data in files.items())
    except OSError:
        return False


def _write(root, target, files):
    """The files into `target`, whole or not at all (a run beside this one may write the same)."""
    import shutil
    import tempfile
    work = tempfile.mkdtemp(prefix='.new-', dir=root)
    try:
        for name, data in files.items():
            folder = os.path.dirname(os.path.join(work, name))
            if not os.path.isdir(folder):   # a package's folder (tasks/, pools/...)
                os.makedirs(folder, 0o700)
            fd = os.open(os.path.join(work, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        # every folder written, the deepest first and `work` last (it sorts before the folders below it)
        for folder in sorted(set(os.path.dirname(os.path.join(work, name)) for name in files) | {work}, reverse=True):
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        try:
            os.rename(work, target)
        except OSError:                     # written meanwhile by another run
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prune(root, target):
    """Remove the copies not used for KEEP_DAYS, while no module run holds the cache."""
    import fcntl
    import shutil
    fd = os.open(os.path.join(root, '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:                         # in use: another time
        os.close(fd)
        return
    try:
        old = time.time() - KEEP_DAYS * 86400
        for entry in os.listdir(root):
            path = os.path.join(root, entry)
            if path != target and entry != '.lock' and os.lstat(path).st_mtime < old:
                shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def _hold(root):
    """A shared lock on the cache for the rest of this process: no copy is removed under its imports."""
    import fcntl
    fd = os.open(os.path.join(root, '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:                         # a prune under way: the payload this time
        os.close(fd)
        return False
    _HELD.append(fd)
    return True


def use(root=CACHE_ROOT, package=None):
    """Put the cached copy of `package`'s files (this module's package by default) ahead of the payload on its
    search path. Returns the directory used, or None where the payload's import stays."""
    package = sys.modules.get(package or PACKAGE)
    try:
        if package is None or os.geteuid() != 0 or getattr(sys, 'pycache_prefix', None) or \
                not getattr(package, '__path__', None):
            return None
        archive, inner = _payload(list(package.__path__)[0])
        if archive is None:
            return None
        digest, files = hashlib.sha256(), {}
        with zipfile.ZipFile(archive) as z:
            for name in sorted(z.namelist()):
                rest = name[len(inner) + 1:]
                if name.startswith(inner + '/') and rest.endswith('.py') and '__pycache__' not in rest.split('/'):
                    files[rest] = z.read(name)
                    for part in (rest.encode('utf-8'), files[rest]):
                        digest.update(b'%d:' % len(part) + part)
        target = os.path.join(root, digest.hexdigest()[:40])
        old = os.umask(0o077)
        try:
            if not os.path.isdir(root):
                os.makedirs(root, exist_ok=True)
            if not _trusted(root, parents=True):
                return None
            if not os.path.lexists(target):
                _write(root, target, files)
                _prune(root, target)
            if not _hold(root) or not _trusted(target) or not _whole(target, files):
                return None
            if os.lstat(target).st_mtime < time.time() - 86400:
                try:
                    os.utime(target)        # (in use: kept)
                except OSError:
                    pass
            _compiled(target)
        finally:
            os.umask(old)
        package.__path__.insert(0, target)
        return target
    except Exception:                       # pylint: disable=broad-except
        return None


def _compiled(target):
    """The copy compiled for this interpreter, once (an import would not write the byte code with
    PYTHONDONTWRITEBYTECODE); a mark tells it was compiled whole."""
    import importlib.util
    tag = os.path.basename(importlib.util.cache_from_source(os.path.join(target, '__init__.py')))
    mark = os.path.join(target, '.compiled-' + tag)
    if os.path.exists(mark):
        return
    import compileall
    if compileall.compile_dir(target, maxlevels=PACKAGE_DEPTH, quiet=2):
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o600))


# the directory in use, or None
USED = use()
