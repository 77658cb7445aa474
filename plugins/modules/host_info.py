#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: host_info
short_description: Tell in one look whether a host has what drover.fleet's modules need
version_added: 0.1.0
description:
  - Asks the Docker engine for its version and, with O(image), whether it has that image; finds which of
    O(libraries) the module interpreter cannot import (without importing them); reads the mode of the store's
    directory. Returns what it found, what the host lacks (RV(needs)) and RV(ready) when it lacks nothing.
  - One module run instead of one per check. The C(drover.fleet.host) role runs it first and takes its longer
    path (install, build, the checks that name what is wrong) only on a host that is not RV(ready).
  - Changes nothing and takes no lock. A host that lacks something is no failure; only bad arguments fail.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.host
  - drover.fleet.attributes
  - drover.fleet.attributes.INFO_MODULE
  - drover.fleet.attributes.ACTIONGROUP
options:
  store_dir:
    description:
      - The directory of the host store; by default the directory of O(store_path).
    type: path
  store_dir_mode:
    description:
      - The mode the store's directory must have, in octal (for example V(0700)). A mode given another way is
        never found as it is (C(mode_ok) of RV(store_dir) is null), so the host is not RV(ready).
      - When not set, any mode will do.
    type: str
  image:
    description:
      - An image the engine must have (for example the netns holder image, V(drover.local/busybox:1)).
    type: str
  libraries:
    description:
      - The import names of the Python libraries the module interpreter must find.
    type: list
    elements: str
    default: [docker, pyroute2, github, pynvml]
notes:
  - Without the Docker SDK the engine is not asked (RV(engine.answers) is null) and the host is not RV(ready).
seealso:
  - module: drover.fleet.ecs_task
'''

EXAMPLES = r'''
- name: Look at the host
  drover.fleet.host_info:
    store_dir_mode: "0700"
    image: drover.local/busybox:1
  register: host

- name: Say what it lacks
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} lacks {{ host.needs | join(', ') or 'nothing' }}"
'''

RETURN = r'''
ready:
  description: True when the host lacks nothing of what was asked (RV(needs) is empty).
  returned: always
  type: bool
  sample: true
needs:
  description: What the host lacks, of V(engine), V(libraries), V(store_dir) and V(image).
  returned: always
  type: list
  elements: str
  sample: [image]
engine:
  description: The Docker engine.
  returned: always
  type: dict
  contains:
    answers:
      description: Whether it answered; null when it was not asked (no Docker SDK).
      type: bool
    version:
      description: The engine's version.
      type: str
    api_version:
      description: The engine's API version.
      type: str
    error:
      description: Why it did not answer.
      type: str
  sample: {answers: true, version: 20.10.24+dfsg1, api_version: '1.41', error: null}
libraries_missing:
  description: The names of O(libraries) the module interpreter cannot import.
  returned: always
  type: list
  elements: str
  sample: [pynvml]
store_dir:
  description:
    - The store's directory; C(mode) as an octal string; C(mode_ok) whether it is O(store_dir_mode) (null when
      that is not given in octal).
  returned: always
  type: dict
  sample: {path: /var/lib/drover, exists: true, mode: '0700', mode_ok: true}
image:
  description: The image of O(image), and whether the engine has it (null when the engine was not asked).
  returned: when O(image) is given
  type: dict
  sample: {name: drover.local/busybox:1, present: true}
python:
  description: The module interpreter (the Python the other modules run with).
  returned: always
  type: dict
  sample: {executable: /usr/bin/python3, version: 3.11.2}
'''

from ansible.module_utils.basic import AnsibleModule

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.host.check import check


def main():
    # The plain AnsibleModule: this module must run where the Docker SDK does not import, to say so.
    module = AnsibleModule(argument_spec=_argspecs.host_info_spec(), supports_check_mode=True)
    module.exit_json(**check(module.params))


if __name__ == '__main__':
    main()
