# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.validate_roles: the variables of several of the collection's roles checked in one task.

Each role's own entry point (meta/argument_specs.yml) is the spec, checked the way Ansible checks a role's
variables when the role runs (ansible.module_utils.common.arg_spec, with its messages); the playbooks check
every role they run in one task instead of one per role. Runs on the controller only.
"""

from __future__ import annotations

import os

import yaml

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase

# <collection>/plugins/action/validate_roles.py -> <collection>/roles
ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'roles')
PREFIX = 'drover.fleet.'
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def role_options(role, entry_point):
    """The options of one role's entry point, from its meta/argument_specs.yml."""
    name = role[len(PREFIX):] if role.startswith(PREFIX) else role
    path = os.path.join(ROLES_DIR, name, 'meta', 'argument_specs.yml')
    if '/' in name or not os.path.isfile(path):
        raise AnsibleActionFail('roles: %r is not a role of drover.fleet with an argument spec' % role)
    with open(path) as handle:
        specs = (yaml.load(handle, Loader=_LOADER) or {}).get('argument_specs') or {}
    if entry_point not in specs:
        raise AnsibleActionFail('entry_point: the role %s has no entry point %r (it has: %s)'
                                % (role, entry_point, ', '.join(sorted(specs))))
    return specs[entry_point].get('options') or {}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec={
            'roles': {'type': 'list', 'elements': 'str', 'required': True},
            'entry_point': {'type': 'str', 'default': 'validate'},
        })
        specs = [(role, role_options(role, args['entry_point'])) for role in args['roles']]
        # every variable any of the roles declares, templated once, as Ansible does for a role's own check
        names = set(name for dummy, options in specs for name in options if name in task_vars)
        values = self._templar.template(dict((name, task_vars[name]) for name in names))
        errors = []
        for role, options in specs:
            found = ArgumentSpecValidator(options).validate(
                dict((name, values[name]) for name in options if name in values), validate_role_argument_spec=True)
            # a no_log option's value never in a message (none of today's could put it there: kept so)
            messages = remove_values(found.error_messages, found._no_log_values)
            errors.extend(message for message in messages if message not in errors)
        result['changed'] = False
        result['validated_roles'] = [role for role, dummy in specs]
        if errors:
            result['failed'] = True
            result['argument_errors'] = errors
            result['msg'] = 'Validation of arguments failed:\n%s' % '\n'.join(errors)
        else:
            result['msg'] = 'The variables of %s are valid' % ', '.join(role for role, dummy in specs)
        return result
