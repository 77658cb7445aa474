#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: validate_roles
short_description: Check the variables of several drover.fleet roles in one task
version_added: 0.1.0
description:
  - Checks the host's variables against the argument spec of an entry point of each role in O(roles) (the
    role's C(meta/argument_specs.yml)), the check Ansible makes before a role's tasks run, with the same
    messages. A variable the host does not have (neither set nor the default of a role the play imports) is not
    checked, unless the spec requires it.
  - One task for every role a playbook runs, instead of one per role; C(drover.fleet.converge) and
    C(drover.fleet.reconcile) check their roles this way before anything runs.
  - Runs on the controller; changes nothing.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.CONTROLLER
options:
  roles:
    description:
      - The roles of this collection whose variables are checked, by name (V(host)) or by FQCN
        (V(drover.fleet.host)).
    type: list
    elements: str
    required: true
  entry_point:
    description:
      - The entry point of each role whose spec is used; every role of this collection has V(validate), with
        the options of its V(main).
    type: str
    default: validate
notes:
  - Each role's own check stays where the role runs on its own (its C(main) or C(validate) entry point);
    import a role with C(rolespec_validate=false) after this task so that it is not checked twice, and with
    C(public=true) where the play reads the role's variables.
seealso:
  - module: ansible.builtin.validate_argument_spec
'''

EXAMPLES = r'''
- name: Check the variables of every role before any of them runs
  drover.fleet.validate_roles:
    roles: [host, tasks, runner_pools]

- name: Bring the roles' variables into the play without checking them again
  ansible.builtin.import_role:
    name: drover.fleet.tasks
    tasks_from: validate
    rolespec_validate: false
    public: true
'''

RETURN = r'''
validated_roles:
  description: The roles whose variables were checked.
  returned: always
  type: list
  elements: str
  sample: [host, tasks, runner_pools]
argument_errors:
  description: What is wrong, one message for each variable or field, each naming it.
  returned: failure
  type: list
  elements: str
  sample: ["value of restart must be one of: always, on-failure, never, got: sometimes found in drover_tasks"]
'''
