# -*- coding: utf-8 -*-
"""Task definitions kept as templates: the filters drover.fleet.ecs_placeholders and drover.fleet.ecs_render
(plugins/filter/ecs_template.py over module_utils/aws/template.py), and what ecs_task says of what is left."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.drover.fleet.plugins.filter.ecs_template import FilterModule
from ansible_collections.drover.fleet.plugins.module_utils.aws import model as _td_model
from ansible_collections.drover.fleet.plugins.module_utils.aws import template as _td_template
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

FILTERS = FilterModule().filters()
placeholders = FILTERS['ecs_placeholders']
render = FILTERS['ecs_render']
IMG = 'drover.local/busybox:1'


def td(**container):
    c = {'name': 'web', 'image': IMG, 'memory': 128}
    c.update(container)
    return {'family': 'web', 'containerDefinitions': [c]}


# Each style: where it stands, the text the filter reports, the variable it names.
STYLES = [
    ('${IMAGE}', '${IMAGE}', 'IMAGE', 'shell-braces'),
    ('${IMAGE:-busybox}', '${IMAGE:-busybox}', 'IMAGE', 'shell-braces'),
    ('$IMAGE', '$IMAGE', 'IMAGE', 'shell'),
    ('${{ secrets.IMAGE }}', '${{ secrets.IMAGE }}', 'secrets.IMAGE', 'github'),
    ('{{ image }}', '{{ image }}', 'image', 'mustache'),
    ('{{ must_env `IMAGE` }}', '{{ must_env `IMAGE` }}', 'IMAGE', 'mustache'),
    ('{{ .Env.IMAGE }}', '{{ .Env.IMAGE }}', 'IMAGE', 'mustache'),
    ('<IMAGE1_NAME>', '<IMAGE1_NAME>', 'IMAGE1_NAME', 'angle'),
    ('__IMAGE__', '__IMAGE__', 'IMAGE', 'underscores'),
    ('#{Image}', '#{Image}', 'Image', 'hash-braces'),
    ('%IMAGE%', '%IMAGE%', 'IMAGE', 'percent'),
    ('$$$IMAGE$$$', '$$$IMAGE$$$', 'IMAGE', 'dollars'),
    ('{image}', '{image}', 'image', 'braces'),
]


@pytest.mark.parametrize('value,text,name,style', STYLES)
def test_each_style_is_found_where_it_stands(value, text, name, style):
    found = placeholders(td(image=value))
    assert found == [{'field': 'containerDefinitions[0].image', 'text': text, 'name': name, 'style': style,
                      'whole': True}]


@pytest.mark.parametrize('template,inside', [
    ('registry.example.com/app:${TAG}', '${TAG}'),
    ('registry.example.com/app:__TAG__', '__TAG__'),
    ('registry.example.com/$SERVICE-service:1', '$SERVICE'),
    ('{{DOCKER_REPO}}/app:1', '{{DOCKER_REPO}}'),
    ('<account>.dkr.ecr.us-east-1.amazonaws.com/app:1', '<account>'),
    ('{account}.dkr.ecr.us-east-1.amazonaws.com/app:1', '{account}'),
    ('app:%VERSION%', '%VERSION%'),
])
def test_a_placeholder_inside_a_longer_value_is_found_and_filled(template, inside):
    found = placeholders(td(image=template))
    assert [(f['text'], f['whole']) for f in found] == [(inside, False)]
    out = render(td(image=template), values={found[0]['name']: 'x1'})
    assert out['containerDefinitions'][0]['image'] == template.replace(inside, 'x1')


@pytest.mark.parametrize('container', [
    {'command': ['sh', '-c', '$CMD ${ARGS}']},                      # a shell expands these
    {'command': ['$CMD']},
    {'healthCheck': {'command': ['CMD-SHELL', 'test -n "${PORT}"']}},
    {'environment': [{'name': 'URL', 'value': 'http://${HOST}:8080'}]},    # the application may expand it
    {'dockerLabels': {'tpl': 'a {{x}} b'}},
    {'logConfiguration': {'logDriver': 'syslog', 'options': {'tag': '{{.ImageName}}/{{.Name}}/{{.ID}}'}}},
    {'logConfiguration': {'logDriver': 'json-file', 'options': {'x': '%Y%m%d', 'y': '^\\$foo', 'z': 'cost$'}}},
    {'environment': [{'name': 'PYTHON', 'value': '__main__'}]},
])
def test_what_is_not_a_placeholder(container):
    assert placeholders(td(**container)) == []
    assert render(td(**container)) == td(**container)


def test_whole_values_in_commands_and_free_text_are_found():
    doc = td(command=['{{command}}'], environment=[{'name': 'A', 'value': '${A}'}],
             dockerLabels={'team': '<TEAM>'})
    assert [(f['field'], f['name']) for f in placeholders(doc)] == [
        ('containerDefinitions[0].command[0]', 'command'),
        ('containerDefinitions[0].environment[0].value', 'A'),
        ('containerDefinitions[0].dockerLabels.team', 'TEAM')]


def test_a_placeholder_that_makes_up_a_number_field_becomes_a_number():
    doc = td(cpu='${CPU}', memory='{{ memory }}', portMappings=[{'containerPort': '<PORT>'}], essential='$ESSENTIAL')
    doc['cpu'] = '${TASK_CPU}'
    out = render(doc, values={'CPU': '256', 'memory': 512, 'PORT': '8080', 'ESSENTIAL': 'true', 'TASK_CPU': 1024})
    c = out['containerDefinitions'][0]
    assert (c['cpu'], c['memory'], c['portMappings'][0]['containerPort'], c['essential']) == (256, 512, 8080, True)
    assert out['cpu'] == '1024'             # the task's cpu is a string in the model: "1024", as AWS takes it
    _td_model.normalize(out)


def test_a_whole_container_definition_and_a_spliced_list():
    doc = {'family': 'app', 'containerDefinitions': [{'name': 'app', 'image': IMG, 'memory': 128,
                                                      'environment': ['${environment_variables}'],
                                                      'mountPoints': ['${mount_points}']},
                                                     '$ENVOY_CONTAINER_JSON']}
    envoy = {'name': 'envoy', 'image': IMG, 'memory': 64}
    out = render(doc, values={'environment_variables': [{'name': 'A', 'value': '1'}, {'name': 'B', 'value': '2'}],
                              'mount_points': [], 'ENVOY_CONTAINER_JSON': envoy})
    assert out['containerDefinitions'][1] == envoy
    assert out['containerDefinitions'][0]['environment'] == [{'name': 'A', 'value': '1'}, {'name': 'B', 'value': '2'}]
    assert out['containerDefinitions'][0]['mountPoints'] == []
    assert doc['containerDefinitions'][1] == '$ENVOY_CONTAINER_JSON'        # the input is left as it was
    _td_model.normalize(out)


def test_images_and_environment_by_container_name_as_the_render_action_sets_them():
    doc = td(image='<IMAGE1_NAME>', environment=[{'name': 'RELEASE', 'value': 'old'}, {'name': 'KEEP', 'value': 'k'}])
    out = render(doc, images={'web': 'registry.example.com/web:7'}, environment={'web': {'RELEASE': 7, 'NEW': 'n'}})
    c = out['containerDefinitions'][0]
    assert c['image'] == 'registry.example.com/web:7'
    assert c['environment'] == [{'name': 'RELEASE', 'value': '7'}, {'name': 'KEEP', 'value': 'k'},
                                {'name': 'NEW', 'value': 'n'}]


def test_defaults_the_template_gives_fill_what_is_not_given():
    out = render(td(image='${IMAGE:-%s}' % IMG, user='{{ env `APP_USER` `nobody` }}'))
    assert (out['containerDefinitions'][0]['image'], out['containerDefinitions'][0]['user']) == (IMG, 'nobody')


def test_every_placeholder_left_and_every_value_unused_is_named():
    doc = td(image='${REPO}:${TAG}', user='<USER>')
    with pytest.raises(AnsibleFilterError) as err:
        render(doc, values={'REPO': 'app', 'TGA': '1', 'spare': 2})
    assert str(err.value) == ('ecs_render: placeholders left unfilled: containerDefinitions[0].image ${TAG} (TAG), '
                              'containerDefinitions[0].user <USER> (USER); values that no placeholder uses: TGA, spare')


def test_not_strict_lets_unused_values_and_unknown_containers_pass_but_never_a_placeholder():
    doc = td(image='${IMAGE}')
    out = render(doc, values={'IMAGE': IMG, 'OTHER': 1}, images={'sidecar': 'x:1'}, strict=False)
    assert out['containerDefinitions'][0]['image'] == IMG
    with pytest.raises(AnsibleFilterError, match=r'placeholders left unfilled: containerDefinitions\[0\]\.image'):
        render(doc, values={'OTHER': 1}, strict=False)
    with pytest.raises(AnsibleFilterError, match='images.sidecar: the task definition has no container sidecar '
                                                 r'\(containers: web\)'):
        render(doc, values={'IMAGE': IMG}, images={'sidecar': 'x:1'})


def test_a_mapping_cannot_go_inside_a_longer_value():
    with pytest.raises(AnsibleFilterError, match=r'values.TAG is a dict, but containerDefinitions\[0\]\.image uses it '
                                                 'inside a longer value'):
        render(td(image='app:${TAG}'), values={'TAG': {'a': 1}})


def test_a_wrapper_is_read_through_and_kept():
    doc = {'taskDefinition': td(image='<IMAGE1_NAME>'), 'tags': [{'key': 'team', 'value': 'a'}]}
    assert [f['field'] for f in placeholders(doc)] == ['taskDefinition.containerDefinitions[0].image']
    out = render(doc, images={'web': IMG})
    assert out['taskDefinition']['containerDefinitions'][0]['image'] == IMG and out['tags'] == doc['tags']


def test_bad_arguments_are_named():
    with pytest.raises(AnsibleFilterError, match='values must be a mapping, got list'):
        render(td(), values=['a'])
    with pytest.raises(AnsibleFilterError, match='ecs_placeholders: the task definition must be a mapping, got str'):
        placeholders('web')


def test_ecs_task_names_the_filter_that_fills_what_is_left():
    with pytest.raises(SpecError) as err:
        _td_model.normalize(td(image='<IMAGE1_NAME>'))
    assert str(err.value) == ("task_definition.containerDefinitions[0].image is a template placeholder left in the "
                              "file: '<IMAGE1_NAME>' (%s)" % _td_template.HINT)
    assert 'drover.fleet.ecs_render' in _td_template.HINT


def test_what_ecs_task_refuses_is_what_the_filter_lists():
    """One rule: each placeholder ecs_placeholders lists is a field ecs_task names, and nothing else."""
    doc = td(image='app:__TAG__', user='$USER', command=['sh', '-c', '$X'], hostname='{{host}}',
             environment=[{'name': 'A', 'value': 'x ${A}'}])
    with pytest.raises(SpecError) as err:
        _td_model.normalize(doc)
    named = sorted(set(w.split(' is a template placeholder')[0][len('task_definition.'):]
                       for w in str(err.value)[:-len(' (%s)' % _td_template.HINT)].split('; ')))
    assert named == sorted(set(f['field'] for f in placeholders(doc))) == [
        'containerDefinitions[0].hostname', 'containerDefinitions[0].image', 'containerDefinitions[0].user']
