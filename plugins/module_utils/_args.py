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

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

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


def _not_mapping(value, spec):
    if value is None:
        return False
    if spec.get('type') == 'dict':
        return not isinstance(value, dict)
    return not isinstance(value, list) or any(not isinstance(item, dict) for item in value)


def make_module(**kwargs):
    """AnsibleModule(**kwargs); but an option with sub-options given a value that is not a mapping (or a list
    of them) fails with a message that names it, not with a traceback: ansible-core (2.19) looks into the
    sub-options before it checks the value's type."""
    try:
        module = AnsibleModule(**kwargs)
    except (TypeError, AttributeError) as exc:
        spec = kwargs.get('argument_spec') or {}
        # Every option taken as it is (no sub-option is looked into), the top-level secrets still hidden.
        loose = dict((k, {'type': 'raw', 'no_log': bool(v.get('no_log'))}) for k, v in spec.items())
        bare = AnsibleModule(argument_spec=loose, supports_check_mode=True)
        bad = sorted(k for k, v in spec.items() if v.get('options') and _not_mapping(bare.params.get(k), v))
        if not bad:
            raise
        what = '; '.join('%s must be %s, got %s' % (
            k, 'a mapping' if spec[k].get('type') == 'dict' else 'a list of mappings',
            type(bare.params[k]).__name__) for k in bad)
        # No module argument is echoed: nested ones were not checked, so no_log ones among them are not hidden.
        bare.fail_json(msg=what, invocation={'module_args': {}}, exception_type=exc.__class__.__name__)
        return None
    store_path = module.params.get('store_path')
    if store_path is not None and not os.path.isabs(store_path):
        # A relative store would be a new, empty one in whatever directory the module runs in.
        module.fail_json(msg='store_path must be an absolute path, got %r' % store_path)
    return module
