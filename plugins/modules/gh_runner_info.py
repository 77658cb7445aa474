#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: gh_runner_info
short_description: List the GitHub Actions runner pools of a Docker host
version_added: 0.1.0
description:
  - Returns the host's runner pools as the host store and the Docker engine show them, with their slots
    and holds. Talks to no GitHub, changes nothing, and takes no lock.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.host
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.ACTIONGROUP
options:
  pool:
    description: Only this pool.
    type: str
seealso:
  - module: drover.fleet.gh_runner_slot
'''

EXAMPLES = r'''
- name: The host's pools
  drover.fleet.gh_runner_info:
  register: pools

- name: Pools held back now
  ansible.builtin.debug:
    msg: "{{ pools.pools | selectattr('hold.until') | map(attribute='name') }}"
'''

RETURN = r'''
pools:
  description: Each pool with C(name), C(owner), C(slots), C(hold), C(records) and C(caches).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The pool.
      type: str
    owner:
      description: The repository or organization it serves.
      type: str
    slots:
      description: Occupied slots, each with C(index), C(runner_name), C(runner_id), C(container_id), C(busy), C(started_at), C(container_state).
      type: list
      elements: dict
    hold:
      description: C(until) and C(cause) while held, and the C(failures) and C(idle_exits) streaks.
      type: dict
    caches:
      description:
        - The pool's caches (O(drover.fleet.gh_runner_slot#module:profile.caches)), each slot's own volume and each
          snapshot generation, each with C(name), C(slot) (null for a snapshot), C(snapshot) (its generation, null
          for a slot's volume), C(path), C(volume) and C(size) (bytes of its files; null when its volume cannot be
          read). A volume deeper than 100 levels or of more than 500000 entries is sized by what a walk reaches, with
          a warning that counts what it left out.
      type: list
      elements: dict
    records:
      description:
        - The pool's records of failed jobs (O(drover.fleet.gh_runner_slot#module:profile.records)), oldest first, each
          with C(image), C(runner_name), C(repository), C(job), C(result), C(created_at), C(size) (bytes) and
          C(output) (the stored output's path, null when it is gone).
      type: list
      elements: dict
'''

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module, require_docker
from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import info
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure


def main():
    module = make_module(argument_spec=_argspecs.gh_runner_info_spec(), supports_check_mode=True)
    require_docker(module)
    try:
        result = info(module.params)
    except TaskFailure as exc:
        module.fail_json(msg=exc.msg)
    for warning in result.pop('warnings', []):
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
