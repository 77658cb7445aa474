# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The key that seals the services' revision records, on the controller (drover.fleet.service_placement).

Each record the placement hands a host carries a seal, an HMAC under this key (services.deploy.seal), and a record a
host's look returns is taken only where its seal is right: the hosts keep the records, but none can write one that
the placement takes. The key is the inventory's `drover_services_records_key` (the placement's records_key: at
least MIN_GIVEN characters, from a vault or an AWX credential, where several controllers or AWX jobs, each in a
fresh container, place the same fleet), else a key made once on this controller: KEY_FILE under ANSIBLE_HOME,
KEY_HEX hexadecimal digits (the same key as `drover_services_records_key` set to those digits).

Owns: KEY_FILE (made once, mode 0600, in a directory of this user alone (0700) under directories no other user
can write; created aside with O_EXCL and linked into place, never through a link, never replaced; read back without
following a link: network.credtoken.key_file, as the host's credentials key) and the check of a key given in its place.
Must not: return, log, print or write the key anywhere else, or hand it to a host; an error names the file or the
option and the length, never the key.
"""

from __future__ import annotations

import binascii
import os

from ansible import constants as C

from ansible_collections.drover.fleet.plugins.module_utils._code_cache import _trusted
from ansible_collections.drover.fleet.plugins.module_utils.network.credtoken import HostKeyError, key_file

KEY_FILE = 'records.key'
KEY_HEX = 64                    # 32 random bytes, as hexadecimal digits
MIN_GIVEN = 16                  # the fewest characters of a key given in the inventory
HEX_DIGITS = frozenset(b'0123456789abcdef')


class RecordsKeyError(Exception):
    """The records key cannot be read, made or taken; the message names the file or the option, never the key."""


def key_path(home=None):
    """Where the controller's own key is kept: KEY_FILE in drover-fleet under ANSIBLE_HOME (or `home`)."""
    return os.path.join(home or C.ANSIBLE_HOME, 'drover-fleet', KEY_FILE)


def records_key(given=None, home=None, create=True):
    """The records key (bytes): `given` (the placement's records_key) where it is set, else KEY_FILE's, made when
    it is missing and `create` (else None)."""
    if given is not None:
        if len(given) < MIN_GIVEN:
            raise RecordsKeyError('records_key (drover_services_records_key) must be at least %d characters, it has '
                                  '%d' % (MIN_GIVEN, len(given)))
        return given.encode('utf-8')
    path = key_path(home)
    folder = os.path.dirname(path)
    if not create and not os.path.lexists(path):
        return None
    old = os.umask(0o077)
    try:
        os.makedirs(folder, 0o700, exist_ok=True)
    except OSError as exc:
        raise RecordsKeyError('cannot make %s for the services\' records key: %s' % (folder, exc.strerror))
    finally:
        os.umask(old)
    if not _trusted(folder, parents=True):
        raise RecordsKeyError('%s must be a directory of this user alone (mode 0700), below directories of this user '
                              'or root that no other user can write (or sticky ones): another user could read or '
                              'replace the services\' records key there; fix it, or set drover_services_records_key'
                              % folder)
    try:
        key = key_file(path, 'services\' records key', create=True, size=KEY_HEX,
                       new=lambda: binascii.hexlify(os.urandom(KEY_HEX // 2)))
    except (HostKeyError, OSError) as exc:
        raise RecordsKeyError(str(exc) if isinstance(exc, HostKeyError) else
                              'cannot make the services\' records key %s: %s' % (path, exc.strerror or exc))
    if not HEX_DIGITS.issuperset(key):
        raise RecordsKeyError('the services\' records key %s is not %d hexadecimal digits: move it aside, and a new '
                              'key is made (the hosts\' revision records are then taken as empty once)'
                              % (path, KEY_HEX))
    return key
