# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.ecs_placeholders and drover.fleet.ecs_render: the template placeholders of an ECS task definition,
listed and filled on the controller (module_utils/aws/template owns the rule; ecs_task refuses what is left).
Their documentation: ecs_placeholders.yml, ecs_render.yml beside this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.drover.fleet.plugins.module_utils.aws import model as _td_model
from ansible_collections.drover.fleet.plugins.module_utils.aws import template as _td_template
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError


def ecs_placeholders(task_definition):
    """[{field, text, name, style, whole}] for each placeholder of the document, in its order."""
    if not isinstance(task_definition, dict):
        raise AnsibleFilterError('ecs_placeholders: the task definition must be a mapping, got %s'
                                 % type(task_definition).__name__)
    return [{'field': p.field, 'text': p.text, 'name': p.name, 'style': p.style, 'whole': p.whole}
            for p in _td_template.find(task_definition)]


def ecs_render(task_definition, values=None, images=None, environment=None, strict=True):
    """The document with its placeholders filled; fails naming each placeholder left and value not used."""
    try:
        return _td_template.render(task_definition, values=values, images=images, environment=environment,
                                   strict=bool(strict), kind_of=_td_model.kind_at)
    except SpecError as err:
        raise AnsibleFilterError('ecs_render: %s' % err) from None


class FilterModule:
    """drover.fleet's filters for ECS task definitions kept as templates."""

    def filters(self):
        return {'ecs_placeholders': ecs_placeholders, 'ecs_render': ecs_render}
