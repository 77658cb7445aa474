# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own files on a host or controller: the store, its lock, JIT configs, the event log, and the
size-bounded directories a container may write on the host (a FireLens router's socket directory).

Owns: the rule for the directories these files live in, and opening them without following a symbolic
link. The rule: the directory that holds such a file belongs to this user or to root and only its owner
may write it; every directory above it (as written and as resolved) belongs to this user or to root and
only its owner may write it, unless it is sticky (as /tmp is, where no one can rename or remove what
another made). Then no other user can put a link or a file of theirs where one of ours goes. Also walking,
sizing, trimming and copying a tree a job wrote (a cache volume) within bounds, counting what is left out.
Must not: decide anything else (what a left-out count means for a pool is its caller's). Raises UnsafePath (an
OSError) with the path named; the mounts raise OSError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import itertools
import os
import shutil
import stat
import subprocess

MOUNT_TIMEOUT = 15


class UnsafePath(OSError):
    """A file or directory the collection would use is one another user could change; the message says which."""


def _trusted(st):
    return st.st_uid in (0, os.geteuid())


def _above(path):
    out = []
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return out
        out.append(parent)
        path = parent


def _check_above(path):
    """Every directory above `path` and `path` itself (as written and as resolved) may be sticky, as /tmp."""
    path = os.path.abspath(path)
    for above in [path] + _above(path) + [os.path.realpath(path)] + _above(os.path.realpath(path)):
        st = os.stat(above)
        if not _trusted(st):
            raise UnsafePath('%s belongs to uid %d, neither root nor this user (uid %d): that user could replace '
                             'what lies below it' % (above, st.st_uid, os.geteuid()))
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise UnsafePath('%s is writable by other users (mode %04o, not sticky): they could replace what lies '
                             'below it; remove their write access (chmod go-w %s)'
                             % (above, stat.S_IMODE(st.st_mode), above))


def check_dir(path):
    """Refuse the directory `path` for our files unless no other user can write it or a directory above it."""
    path = os.path.abspath(path)
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath('%s is not a directory' % path)
    if st.st_mode & 0o022 or not _trusted(st):
        raise UnsafePath('%s is writable by another user (mode %04o, uid %d): another user could put a link '
                         'there in place of a file of ours; make it writable by its owner only (chmod go-w %s), '
                         'or choose another directory' % (path, stat.S_IMODE(st.st_mode), st.st_uid, path))
    _check_above(os.path.dirname(path))
    _check_above(os.path.dirname(os.path.realpath(path)))
    return path


def ensure_dir(path, mode=0o700):
    """Make the directory `path` (with `mode`) when it is missing, then check it as check_dir does."""
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        existing = os.path.dirname(path)
        while not os.path.isdir(existing):
            existing = os.path.dirname(existing)
        _check_above(existing)
        # exist_ok: two first runs on a host make it at once.
        os.makedirs(path, mode, exist_ok=True)
        os.chmod(path, mode)
    return check_dir(path)


def own_dir(path, uid, gid, mode=None):
    """A directory's owner (and `mode`) set through its own descriptor, never through a link: a link at `path` is an
    OSError (ELOOP). Returns its stat from before."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0))
    try:
        had = os.fstat(fd)
        if (had.st_uid, had.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)
        if mode is not None and stat.S_IMODE(had.st_mode) != mode:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return had


def refuse_link(path):
    """Refuse `path` when it is there and is not a regular file (a symbolic link above all)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return
        raise
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath('%s is a symbolic link: refusing to follow it (remove it; the file is made anew)' % path)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath('%s is not a regular file' % path)


def open_file(path, flags, mode=0o600):
    """os.open without following a symbolic link at `path`, and only onto a regular file: a descriptor."""
    refuse_link(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath('%s is a symbolic link: refusing to follow it (remove it; the file is made anew)'
                             % path)
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath('%s is not a regular file' % path)
    return fd


def write_whole(path, text, mode=0o600, sync=False):
    """Replace the file at `path` whole: a temporary file beside it (never through a link), written (flushed to
    disk with `sync`), given `mode`, renamed over it. A failure (OSError) leaves the previous file and no
    temporary one; one left by a process of the same pid that died mid-write is replaced."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, '.%s.%d.tmp' % (name, os.getpid()))
    try:
        os.unlink(tmp)
    except OSError:
        pass
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def mount_bounded(path, size_kib, inodes, mode=0o755):
    """Mount a tmpfs of its own at the directory `path` (at most `size_kib` KiB and `inodes` files; no devices,
    set-user-ID bits or programs), unless one is there already: what a container writes there through a bind
    fills that mount, never the host's /run. Returns whether it mounted one."""
    if os.path.ismount(path):
        return False
    options = 'size=%dk,nr_inodes=%d,mode=%04o,nosuid,nodev,noexec' % (size_kib, inodes, mode)
    _mount_command(['mount', '-t', 'tmpfs', '-o', options, 'drover', path])
    return True


def unmount(path):
    """Unmount what is mounted at `path` (detached at once, gone when no process uses it); nothing when none is."""
    if os.path.ismount(path):
        _mount_command(['umount', '--lazy', path])


def _mount_command(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=MOUNT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError('%s failed: %s' % (' '.join(argv[:1]), exc))
    if done.returncode != 0:
        raise OSError('%s %s failed: %s' % (argv[0], argv[-1], (done.stderr.strip().splitlines() or ['exit %d' % done.returncode])[-1]))


# The bounds of a walk of a tree that a job shaped (a cache volume, walked as root on the host to trim, copy or
# size it). A job makes that tree as deep and as wide as it likes: a walk that recursed failed (RecursionError)
# for every pool of the pass, and one that kept every entry would take the module's memory. What lies beyond a
# bound is left out and counted; the callers warn.
# Levels below the root: caches nest tens of levels at most (node_modules, ~/.m2, Go's module cache), and a path
# that deep is near PATH_MAX (4096 bytes) with short names already.
TREE_DEPTH = 100
# Entries looked at in one walk: their paths take some 100 MB at most; past that, a tree is too big to copy or
# trim in one pass anyway.
TREE_ENTRIES = 500000


def left_out_said(count):
    """What a walk's left-out count means, for a warning."""
    return ('the walk left out %d (a directory deeper than %d levels, with all it holds, counts as one; so does an '
            'entry past the first %d, or one that cannot be read)' % (count, TREE_DEPTH, TREE_ENTRIES))


class TreeWalk:
    """The entries under the directory `root` (a directory of the host's), top-down and without recursion; a link
    is never followed. Iterating yields (path, its lstat, its level: 1 for root's own entries). It does not enter a
    directory at level TREE_DEPTH and stops after TREE_ENTRIES entries; `left_out` counts what it left: each
    directory not entered or not listed (whatever it holds), each entry past the bound or that could not be read (a
    path longer than the system takes). Raises OSError when `root` itself cannot be listed."""

    def __init__(self, root):
        self.root = root
        self.left_out = 0

    def __iter__(self):
        taken = 0
        pending = [(self.root, 0)]
        while pending:
            folder, level = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    # at most one entry past the bound is read: a directory of millions costs nothing more
                    found = list(itertools.islice(listing, TREE_ENTRIES - taken + 1))
            except OSError:
                if level == 0:
                    raise
                self.left_out += 1
                continue
            for at, entry in enumerate(found):
                if taken >= TREE_ENTRIES:
                    self.left_out += len(found) - at + len(pending)
                    return
                taken += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    self.left_out += 1
                    continue
                if stat.S_ISDIR(info.st_mode) and level + 1 >= TREE_DEPTH:
                    self.left_out += 1
                    continue
                yield entry.path, info, level + 1
                if stat.S_ISDIR(info.st_mode):
                    pending.append((entry.path, level + 1))


def tree_files(root):
    """([(path, size, mtime)] of the regular files under `root` (a directory of the host's), left out: TreeWalk's
    count); links are not followed, and count as nothing."""
    walk = TreeWalk(root)
    out = [(path, info.st_size, info.st_mtime) for path, info, dummy in walk if stat.S_ISREG(info.st_mode)]
    return out, walk.left_out


def trim_tree(root, limit):
    """Remove the oldest files under `root` (by modification time) until what is left is at most `limit` bytes.
    Call it only while nothing writes there. Returns (files removed, bytes removed, left out: what the walk did not
    look at, TreeWalk's count; the tree may hold more than `limit` then)."""
    files, left_out = tree_files(root)
    total = sum(size for dummy, size, dummy in files)
    removed, freed = 0, 0
    for path, size, dummy in sorted(files, key=lambda f: (f[2], f[0])):
        if total <= limit:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
        freed += size
    return removed, freed, left_out


def tree_size(root):
    """(bytes of the regular files under `root` (links not followed), left out: what the walk did not look at,
    TreeWalk's count)."""
    files, left_out = tree_files(root)
    return sum(size for dummy, size, dummy in files), left_out


def copy_tree(src, dst):
    """Copy what is under `src` into the empty directory `dst`, both directories of the host's: directories,
    regular files and symbolic links (copied as links, never followed), owners, modes (without setuid and setgid)
    and modification times. Anything else (a device node, a FIFO, a socket) is left out: the copy reads nothing a
    job could not read itself. Call it only while nothing writes under `src`. Returns (files, bytes, left out,
    beyond): left out, what the copy does not take (a device node...); beyond, what it did not reach: TreeWalk's
    count, and each entry whose name under `dst` is too long for the system (with all a directory holds)."""
    files, size, skipped = 0, 0, 0
    walk = TreeWalk(src)
    lost = set()            # directories of src not made under dst: what they hold is not copied either
    folders = []            # (directory made, its source's lstat): owner, mode and times set last, deepest first
    for source, info, dummy in walk:
        is_dir = stat.S_ISDIR(info.st_mode)
        if os.path.dirname(source) in lost:
            walk.left_out += 1
            if is_dir:
                lost.add(source)
            continue
        target = os.path.join(dst, source[len(src):].lstrip(os.sep))
        try:
            made = _copy_entry(source, target, info)
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            walk.left_out += 1
            if is_dir:
                lost.add(source)
            continue
        if made is None:
            skipped += 1
        elif is_dir:
            folders.append((target, info))
        elif made:
            files, size = files + 1, size + info.st_size
    for target, info in reversed(folders):
        _finish(target, info)
    return files, size, skipped, walk.left_out


def _copy_entry(source, target, info):
    """Make `target` as the entry `source` (lstat `info`): True for a regular file copied, False for a directory
    (its owner, mode and times are set once what it holds is copied) or a link, None for what is left out."""
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(target, 0o700)
        return False
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), target)
        os.lchown(target, info.st_uid, info.st_gid)
        return False
    if not stat.S_ISREG(info.st_mode):
        return None
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, 'rb') as reader:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(open_file(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), 'wb') as writer:
            shutil.copyfileobj(reader, writer, 1024 * 1024)
    _finish(target, info)
    return True


def _finish(target, info):
    """Give `target` the owner, mode (without setuid and setgid) and times of the entry whose lstat is `info`."""
    os.chown(target, info.st_uid, info.st_gid)
    os.chmod(target, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
