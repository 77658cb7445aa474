# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Where the module finds the Docker engine and the host store.
    DOCUMENTATION = r'''
options:
  docker_host:
    description:
      - The Docker engine's address, for example V(unix:///var/run/docker.sock) or V(tcp://127.0.0.1:2375).
      - When not set, the environment (E(DOCKER_HOST)) and then the default socket are used.
    type: str
  timeout:
    description:
      - Seconds to wait for any one answer of the Docker engine.
    type: int
    default: 60
  store_path:
    description:
      - The host store, an SQLite database of what cannot be read back from the engine; an absolute path.
      - Created on first use with mode C(0600) in a directory of mode C(0700). The host lock is a file
        beside it named after it with C(.lock) appended.
      - Neither is opened through a symbolic link, and both are refused in a directory that a user other than
        its owner (or root) can write, or below a directory that another user can write and that is not sticky.
    type: path
    default: /var/lib/drover/store.db
requirements:
  - docker (the Docker SDK for Python) >= 7.1
  - A Docker engine on the managed host.
'''

    LOCK = r'''
options:
  lock_timeout:
    description:
      - Seconds to wait for another converge on the same host to release the host lock, before failing.
    type: int
    default: 60
'''
