# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's module payloads kept on the controller from one run to the next.

Before a module runs, Ansible builds its payload (AnsiballZ: the module and every module_utils file it imports,
found by parsing each one) and keeps it for the rest of that ansible-playbook run only, in the run's own
temporary folder. For this collection's modules the build costs about half a second, every run: a timer's
reconcile or an AWX schedule pays it each time for the same files. The action plugin of each host-side module
(PayloadCachedAction) keeps the payload Ansible built in PAYLOADS, named by a digest of everything it was built
from, and puts it back into the next run's folder before the module runs: Ansible then uses it as it uses its
own within a run.

Owns: PAYLOADS (under ANSIBLE_HOME) - one file per module, build digest and payload file name; another digest's
file of the same module is removed when a new one is kept.
The digest covers ansible-core's version, the controller's Python, and the content of the module and of every
module_utils file of the collection and of ansible-core (about 5 ms, once per module and run). Must not: change what a module does, or
fail a run: on any error, where ANSIBLE_HOME is not this user's alone, or with DROVER_PAYLOAD_CACHE=0, Ansible
builds the payload as it always does.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time

import ansible.executor.module_common
import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.release import __version__ as ANSIBLE_VERSION

from ansible_collections.drover.fleet.plugins.module_utils._code_cache import _trusted

# <collection>/plugins/plugin_utils/_payload_cache.py -> <collection>/plugins
PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = (os.path.join(PLUGINS, 'module_utils'), os.path.dirname(os.path.abspath(ansible.module_utils.__file__)))
# what builds the payload (and writes the kept file's format)
BUILDER = os.path.abspath(ansible.executor.module_common.__file__)
FQN = 'ansible_collections.drover.fleet.plugins.modules.'
SWITCH = 'DROVER_PAYLOAD_CACHE'


def payloads_dir():
    """Where payloads are kept: PAYLOADS under this user's ANSIBLE_HOME."""
    return os.path.join(C.ANSIBLE_HOME, 'drover-fleet', 'payloads')


def _search_paths():
    """The module_utils folders Ansible looks in before its own (ANSIBLE_MODULE_UTILS, those beside the playbook and
    its roles): a file there may stand for one of ansible-core's in the payload."""
    from ansible.plugins.loader import module_utils_loader
    return [p for p in module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]  # pylint: disable=protected-access


def build_digest(module):
    """The digest of everything the payload of `module` (a module of the collection) is built from: the content of
    the module, of every module_utils file it could import (the collection's, ansible-core's and those of the folders
    Ansible looks in first) and of ansible-core's payload builder."""
    digest = hashlib.sha256(('%s\0%s\0%s\0' % (ANSIBLE_VERSION, sys.version, module)).encode('utf-8'))
    files = [os.path.join(PLUGINS, 'modules', module + '.py'), BUILDER]
    for top in list(SOURCES) + _search_paths():
        for folder, dirs, names in os.walk(top):
            dirs.sort()
            files.extend(os.path.join(folder, name) for name in sorted(names) if name.endswith('.py'))
    for name in files:
        with open(name, 'rb') as handle:
            data = handle.read()
        digest.update(b'%d:%s%d:' % (len(name), name.encode('utf-8'), len(data)) + data)
    return digest.hexdigest()[:40]


def _run_folder():
    """The run's own payload folder (Ansible's, in its temporary folder for this run)."""
    return os.path.join(C.DEFAULT_LOCAL_TMP, 'ansiballz_cache')


def _built(names, module):
    """Of `names`, those of payload files Ansible builds for `module` (one per compression and extension set)."""
    prefix = FQN + module + '-'
    return [name for name in names if name.startswith(prefix) and not name.endswith(('.lock', '-part'))]


def _copy(source, folder, name):
    """`source` into `folder` as `name`, whole (written aside, then renamed) and this user's alone."""
    with open(source, 'rb') as handle:
        data = handle.read()
    fd, work = tempfile.mkstemp(prefix='.new-', dir=folder)
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(work, os.path.join(folder, name))
    except BaseException:
        os.unlink(work)
        raise


def restore(module, digest, keep=None, run=None):
    """Put the kept payloads of `module` built from `digest` into this run's folder, where the run has none yet.
    Returns their names."""
    keep, run = keep or payloads_dir(), run or _run_folder()
    if not _trusted(keep, parents=True):
        return []
    prefix = digest + '-'
    kept = _built([entry[len(prefix):] for entry in os.listdir(keep) if entry.startswith(prefix)], module)
    for name in kept:
        if not os.path.exists(os.path.join(run, name)):
            os.makedirs(run, exist_ok=True)
            _copy(os.path.join(keep, prefix + name), run, name)
    return kept


def store(module, digest, keep=None, run=None, kept=()):
    """Keep the payloads this run built for `module` (those not `kept` already), named by `digest`; drop those of
    other digests, and what a write cut short left."""
    keep, run = keep or payloads_dir(), run or _run_folder()
    old = os.umask(0o077)
    try:
        os.makedirs(keep, exist_ok=True)
    finally:
        os.umask(old)
    if not _trusted(keep, parents=True):
        return
    for name in _built(_listing(run), module):
        if name not in kept:
            _copy(os.path.join(run, name), keep, digest + '-' + name)
    hour_ago = time.time() - 3600
    for entry in os.listdir(keep):
        path = os.path.join(keep, entry)
        if (entry[40:41] == '-' and not entry.startswith(digest) and _built([entry[41:]], module)) or \
                (entry.startswith('.new-') and os.lstat(path).st_mtime < hour_ago):
            os.unlink(path)


def before(module):
    """Before `module` runs: (the build digest, the payloads put back) where this run has no payload of it yet;
    None where it has (or where nothing is kept)."""
    if os.environ.get(SWITCH, '1') == '0' or _built(_listing(_run_folder()), module):
        return None
    try:
        digest = build_digest(module)
        return digest, restore(module, digest)
    except Exception:                       # pylint: disable=broad-except
        return None


def after(module, done):
    """After `module` ran: keep the payloads the run built that were not kept (another compression or extension set
    than the one put back, or none was), where the sources did not change meanwhile."""
    digest, kept = done
    try:
        if any(name not in kept for name in _built(_listing(_run_folder()), module)) and \
                build_digest(module) == digest:
            store(module, digest, kept=kept)
    except Exception:                       # pylint: disable=broad-except
        pass


def _listing(folder):
    """The names in `folder`; none where it is not there."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


class PayloadCachedAction(NormalAction):
    """A module of the collection run as Ansible runs any module, its payload kept from one run to the next."""

    def run(self, tmp=None, task_vars=None):
        module = (self._task.resolved_action or self._task.action).rpartition('.')[2]
        done = before(module)
        result = super().run(tmp, task_vars)
        if done:
            after(module, done)
        return result
