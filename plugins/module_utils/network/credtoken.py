# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-task credential tokens: the host key and the token each task with a role is given.

A task's containers find `AWS_CONTAINER_AUTHORIZATION_TOKEN=<token>` in their environment; the AWS SDKs send
it as the `Authorization` header of their credential fetches, and the credentials endpoint
(roles/host/files/drover_credentials.py, which computes the same token the same way) answers only a fetch
that carries it, from the owner's address. The token is HMAC-SHA256 of the registration (credential ID,
cluster, task, role) under the host key: a random 32-byte file next to the host store (`credentials.key`,
mode 0600, made once), so nothing about it is stored, and a task adopted after the store was lost gets the
same token again from its labels.

Owns: the key file (made once, read without following links), how such a key file is made and read (key_file,
which the services' records key of the controller shares: plugin_utils/_records_key.py) and the token formula.
Must not: return, log or store a token or the key; the token only ever goes into its task's containers'
environment.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import hmac
import os
import stat

KEY_FILE = 'credentials.key'
KEY_BYTES = 32
TOKEN_VAR = 'AWS_CONTAINER_AUTHORIZATION_TOKEN'
FULL_URI_VAR = 'AWS_CONTAINER_CREDENTIALS_FULL_URI'
KEY_LABEL = 'drover.cred-key'       # which host key the task's token was made with (its fingerprint, not the key)


class HostKeyError(Exception):
    """The host key cannot be read or made; the message names the file, never its content."""


def key_path(store_path):
    return os.path.join(os.path.dirname(store_path), KEY_FILE)


def _read(path, what, size):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise HostKeyError('cannot read the %s %s: %s' % (what, path, exc.strerror))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.geteuid():
            raise HostKeyError('the %s %s must be a regular file of this user, mode 0600' % (what, path))
        data = os.read(fd, size + 1)
    finally:
        os.close(fd)
    if len(data) != size:
        raise HostKeyError('the %s %s is not %d bytes long' % (what, path, size))
    return data


def key_file(path, what, create=False, size=KEY_BYTES, new=None):
    """The key in the file `path` (`size` bytes), made (once, 0600, atomically: written aside with O_EXCL, linked
    into place) when missing and `create`, of `new()` (else random bytes); None when missing. It is read without
    following a link, from a regular file of this user, mode 0600, alone. `what` names it in an error (HostKeyError),
    never its content."""
    key = _read(path, what, size)
    if key is not None or not create:
        return key
    tmp = '%s.%d.tmp' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    try:
        os.write(fd, new() if new else os.urandom(size))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)              # never replaces a key another process made meanwhile
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise HostKeyError('cannot make the %s %s: %s' % (what, path, exc.strerror))
    finally:
        os.unlink(tmp)
    return _read(path, what, size)


def host_key(store_path, create=False):
    """The host key (bytes), made (once, 0600, atomically) when missing and `create`; None when missing."""
    return key_file(key_path(store_path), 'host credentials key', create)


def token(key, cred_id, cluster, task, role_arn):
    """The task's token: hex HMAC-SHA256 of its registration under the host key (the endpoint's formula)."""
    message = '\0'.join(('drover-credentials-token-v1', cred_id, cluster, task, role_arn)).encode('utf-8')
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def fingerprint(key):
    """Names a host key without revealing it: what containers are labelled with (KEY_LABEL)."""
    return hashlib.sha256(b'drover-credentials-key-id\0' + key).hexdigest()[:16]
