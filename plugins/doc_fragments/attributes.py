# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
'''

    ACTIONGROUP = r'''
options: {}
attributes:
  action_group:
    description: Use C(group/drover.fleet.fleet) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - drover.fleet.fleet
'''

    # An action plugin of the collection's that decides on the controller alone.
    CONTROLLER = r'''
options: {}
attributes:
  action:
    description: Runs as an action plugin on the controller.
    support: full
  async:
    description: Cannot run asynchronously.
    support: none
  platform:
    description: Runs on the controller, whatever the host.
    support: full
    platforms: all
'''

    INFO_MODULE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
'''
