#!/usr/bin/env python3
"""Write plugins/doc_fragments/containers.py (the documentation of ecs_task's `containers`) from the table of
container settings (plugins/module_utils/_container_settings.py). `--check`: exit 1 when the file is not what
the table makes (a unit test runs it so)."""

import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, 'plugins', 'doc_fragments', 'containers.py')

HEADER = '''# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Made by hack/gen-docs.py from plugins/module_utils/_container_settings.py: change the table, then run it.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # ecs_task's containers: one entry per row of the table of container settings.
    DOCUMENTATION = r\'\'\'
'''


def render():
    sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
    from ansible_collections.drover.fleet.plugins.module_utils import _container_settings as settings
    doc = {'options': {'containers': {
        'description': [
            'The task\'s containers, started in this order.',
            'Required with O(state=running) unless O(task_definition) is given.',
            'At most 10, as in an ECS task definition. Each setting says the field of an ECS container definition '
            'it is; a change to any of them replaces the task\'s containers.',
        ],
        'type': 'list', 'elements': 'dict', 'suboptions': settings.documentation()}}}
    body = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False, width=116, allow_unicode=True)
    return HEADER + body + "'''\n"


def main():
    text = render()
    if '--check' in sys.argv:
        with open(TARGET) as f:
            if f.read() != text:
                sys.stderr.write('%s is not what the table of container settings makes: run hack/gen-docs.py\n'
                                 % os.path.relpath(TARGET, ROOT))
                return 1
        return 0
    with open(TARGET, 'w') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
