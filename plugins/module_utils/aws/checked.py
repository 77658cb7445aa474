# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Task definitions already checked by AWS's model on this host, kept so that the next pass does not check them
again.

Checking a task definition (aws.model.normalize) imports botocore and reads its ECS model, about a tenth of a
second for each module run that declares one, and the result depends only on the document, the code that checks
it and botocore's version. The repeated converge declares the same documents pass after pass: the cleaned
document (and its warning) is kept in a file named by the digest of what was declared, in a folder named by the
digests of the collection's module_utils and botocore's version, and read back instead of checked.

Owns: ROOT - one folder per code and botocore version, root's alone (0700), one file per document (0600,
written whole: aside, then renamed); a folder or a document not used for KEEP_DAYS is removed when another is
made. With models of one's own for botocore (~/.aws/models, AWS_DATA_PATH), nothing is kept.
Must not: keep a document that was refused (every refusal is checked again, with its message), or be used by
anyone but root, where ROOT or any directory above it is someone else's or written by someone else (it would
let them decide what a document says), or fail a module run: on any error the document is checked as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import tempfile
import time

from ansible_collections.drover.fleet.plugins.module_utils import _code_cache
from ansible_collections.drover.fleet.plugins.module_utils.aws import model as _td_model

ROOT = '/var/cache/drover-fleet/checked'
KEEP_DAYS = 7


def _code_digest():
    """The digest of the collection's module_utils that run here: the byte code cache's, where the module runs
    from it; else a digest of the files beside this one."""
    if _code_cache.USED:
        return os.path.basename(_code_cache.USED)
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith('.py'):
            with open(os.path.join(here, name), 'rb') as handle:
                data = handle.read()
            digest.update(b'%d:%s%d:' % (len(name), name.encode('utf-8'), len(data)) + data)
    return digest.hexdigest()[:40]


def _folder(root):
    """This code's folder under `root`, made where it is not there; None where it is not to be used."""
    if os.geteuid() != 0 or not _td_model.HAS_BOTOCORE or os.environ.get('AWS_DATA_PATH') or \
            os.path.isdir(os.path.expanduser(os.path.join('~', '.aws', 'models'))):
        return None                         # (models of one's own, which botocore would read first: checked each time)
    folder = os.path.join(root, '%s-%s' % (_code_digest(), _td_model.model_version()))
    old = os.umask(0o077)
    try:
        made = not os.path.isdir(folder)
        if made:
            os.makedirs(folder, exist_ok=True)
    finally:
        os.umask(old)
    if not _code_cache._trusted(root, parents=True) or not _code_cache._trusted(folder):
        return None
    now = time.time()
    if made:
        for entry in os.listdir(root):
            path = os.path.join(root, entry)
            if path != folder and os.lstat(path).st_mtime < now - KEEP_DAYS * 86400:
                shutil.rmtree(path, ignore_errors=True)
    elif os.lstat(folder).st_mtime < now - 86400:
        os.utime(folder)                    # (in use: kept)
    return folder


class Checked:
    """aws.model.normalize, with the documents it took kept in `root` (opened on the first document)."""

    def __init__(self, root=ROOT):
        self.root = root
        self._opened = []

    def folder(self):
        if not self._opened:
            try:
                self._opened.append(_folder(self.root))
            except (OSError, ValueError):
                self._opened.append(None)
        return self._opened[0]

    def __call__(self, td, field='task_definition', warnings=None):
        try:
            key = hashlib.sha256(json.dumps([td, field], sort_keys=True, separators=(',', ':'),
                                            allow_nan=False).encode('utf-8')).hexdigest()
        except (TypeError, ValueError):     # not a JSON document: checked, not kept
            return _td_model.normalize(td, field, warnings)
        folder = self.folder()
        path = os.path.join(folder, key + '.json') if folder else None
        if path:
            try:
                with open(path) as handle:
                    kept = json.load(handle)
                    if os.fstat(handle.fileno()).st_mtime < time.time() - 86400:
                        os.utime(path)      # (in use: kept)
                if warnings is not None:
                    warnings.extend(kept['warnings'])
                return kept['document']
            except (OSError, ValueError, KeyError, TypeError):
                pass
        mine = []
        document = _td_model.normalize(td, field, mine)
        if warnings is not None:
            warnings.extend(mine)
        if path:
            try:
                _write(folder, path, json.dumps({'document': document, 'warnings': mine}))
                _prune(folder)
            except (OSError, TypeError, ValueError):
                pass
        return document


def _prune(folder):
    """Remove the documents not read for KEEP_DAYS (each new image tag of a deployment is a new document), and what
    a write cut short left."""
    old = time.time() - KEEP_DAYS * 86400
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        try:
            when = os.lstat(path).st_mtime
            if when < old or (entry.startswith('.new-') and when < time.time() - 3600):
                os.unlink(path)
        except OSError:
            pass


def _write(folder, path, text):
    fd, work = tempfile.mkstemp(prefix='.new-', dir=folder)
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
        os.rename(work, path)
    except BaseException:
        os.unlink(work)
        raise
