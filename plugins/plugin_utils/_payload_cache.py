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

import ansible.module_utils
from ansible import constants as C
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.release import __version__ as ANSIBLE_VERSION

from ansible_collections.drover.fleet.plugins.module_utils._code_cache import _trusted

# <collection>/plugins/plugin_utils/_payload_cache.py -> <collection>/plugins
PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = (os.path.join(PLUGINS, 'module_utils'), os.path.dirname(os.path.abspath(ansible.module_utils.__file__)))
FQN = 'ansible_collections.drover.fleet.plugins.modules.'
SWITCH = 'DROVER_PAYLOAD_CACHE'


def payloads_dir():
    """Where payloads are kept: PAYLOADS under this user's ANSIBLE_HOME."""
    return os.path.join(C.ANSIBLE_HOME, 'drover-fleet', 'payloads')


def build_digest(module):
    """The digest of everything the payload of `module` (a module of the collection) is built from: the content of
    the module and of every module_utils file it could import, the collection's and ansible-core's."""
    digest = hashlib.sha256(('%s\0%s\0%s\0' % (ANSIBLE_VERSION, sys.version, module)).encode('utf-8'))
    files = [os.path.join(PLUGINS, 'modules', module + '.py')]
    for top in SOURCES:
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
    Returns how many were there to put back."""
    keep, run = keep or payloads_dir(), run or _run_folder()
    if not _trusted(keep, parents=True):
        return 0
    prefix = digest + '-'
    kept = _built([entry[len(prefix):] for entry in os.listdir(keep) if entry.startswith(prefix)], module)
    for name in kept:
        if not os.path.exists(os.path.join(run, name)):
            os.makedirs(run, exist_ok=True)
            _copy(os.path.join(keep, prefix + name), run, name)
    return len(kept)


def store(module, digest, keep=None, run=None):
    """Keep the payloads this run built for `module`, named by `digest`; drop those of other digests."""
    keep, run = keep or payloads_dir(), run or _run_folder()
    old = os.umask(0o077)
    try:
        os.makedirs(keep, exist_ok=True)
    finally:
        os.umask(old)
    if not _trusted(keep, parents=True):
        return
    for name in _built(os.listdir(run), module):
        _copy(os.path.join(run, name), keep, digest + '-' + name)
    for entry in os.listdir(keep):
        if entry[40:41] == '-' and not entry.startswith(digest) and _built([entry[41:]], module):
            os.unlink(os.path.join(keep, entry))


def before(module):
    """Before `module` runs: the build digest where this run is to build its payload (to keep it after the run);
    None where the run has it already (built, or put back from PAYLOADS) or where nothing is to be kept."""
    if os.environ.get(SWITCH, '1') == '0' or _built(_listing(_run_folder()), module):
        return None
    try:
        digest = build_digest(module)
        return None if restore(module, digest) else digest
    except OSError:
        return None


def after(module, digest):
    """After `module` ran: keep the payload the run built from `digest`, where the sources did not change
    meanwhile."""
    try:
        if build_digest(module) == digest:
            store(module, digest)
    except OSError:
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
        digest = before(module)
        result = super().run(tmp, task_vars)
        if digest:
            after(module, digest)
        return result
