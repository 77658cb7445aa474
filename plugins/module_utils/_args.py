# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs shared by the modules (their docs live in doc_fragments/host.py).

Owns: the options every module takes to reach the engine and the store, and the check for the
Docker SDK.
Must not: validate declarations (the spec modules do) or talk to anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.drover.fleet.plugins.module_utils._docker import HAS_DOCKER, DOCKER_IMPORT_ERROR
from ansible_collections.drover.fleet.plugins.module_utils._store import DEFAULT_STORE_PATH, LOCK_TIMEOUT


def host_args(lock=True):
    spec = dict(
        docker_host=dict(type='str'),
        timeout=dict(type='int', default=60),
        store_path=dict(type='path', default=DEFAULT_STORE_PATH),
    )
    if lock:
        spec['lock_timeout'] = dict(type='int', default=LOCK_TIMEOUT)
    return spec


def require_docker(module):
    if not HAS_DOCKER:
        module.fail_json(msg=missing_required_lib('docker'), exception=DOCKER_IMPORT_ERROR)
