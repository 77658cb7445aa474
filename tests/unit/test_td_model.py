# -*- coding: utf-8 -*-
"""ECS task definitions by AWS's own model: cleaning, numbers and booleans as strings, placeholders, the
model's report with the paths named, and the real task definitions of ../shared/ecs-task-definitions."""

from __future__ import absolute_import, division, print_function

import collections
import copy
import glob
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.aws import model
from ansible_collections.drover.fleet.plugins.module_utils.aws import template as _td_template
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, '..', 'shared', 'ecs-task-definitions')
# Measured on the corpus of 120 (botocore 1.44.8): 75 valid by the model. A change that refuses a valid
# document fails here; raise the floor when the corpus or the rules let more through.
CORPUS_VALID_FLOOR = 75
IMG = 'drover.local/busybox:1'


def td(**container):
    c = {'name': 'web', 'image': IMG}
    c.update(container)
    return {'family': 'web', 'containerDefinitions': [c]}


def refused(doc, *words, **kw):
    with pytest.raises(SpecError) as err:
        model.normalize(doc, **kw)
    for word in words:
        assert word in str(err.value), str(err.value)
    return str(err.value)


def test_a_minimal_task_definition_is_returned_as_it_is():
    doc = td(cpu=256, memory=64, essential=True)
    assert model.normalize(doc) == doc


def test_normalize_returns_a_new_dict_and_leaves_the_input_alone():
    doc = td(portMappings=[{'containerPort': '80'}], environment=None)
    before = copy.deepcopy(doc)
    out = model.normalize(doc)
    assert doc == before
    assert out['containerDefinitions'][0]['portMappings'] == [{'containerPort': 80}]
    assert out['containerDefinitions'] is not doc['containerDefinitions']


def test_wrapper_is_unwrapped_and_its_tags_kept():
    tags = [{'key': 'team', 'value': 'a'}]
    out = model.normalize({'taskDefinition': td(), 'tags': tags, 'ResponseMetadata': {'HTTPStatusCode': 200}})
    assert out == dict(td(), tags=tags)
    assert model.normalize({'taskDefinition': td()}) == td()


def test_wrapper_with_another_key_beside_it_is_refused():
    refused({'taskDefinition': td(), 'family': 'x'}, 'Unknown parameter in task_definition: "family"',
            'taskDefinition, tags')


def test_wrapper_that_is_not_a_mapping_is_refused():
    refused({'taskDefinition': 'web'}, 'task_definition.taskDefinition must be a mapping', 'got str')


def test_output_only_fields_are_dropped():
    doc = dict(td(), taskDefinitionArn='arn:aws:ecs:eu-west-1:123456789012:task-definition/web:3', revision=3,
               status='ACTIVE', requiresAttributes=[{'name': 'com.amazonaws.ecs.capability.docker-remote-api.1.18'}],
               compatibilities=['EC2', 'FARGATE'], registeredAt='2026-01-01T00:00:00Z',
               registeredBy='arn:aws:iam::123456789012:root', deregisteredAt=1767225600.5)
    assert model.normalize(doc) == td()


def test_nulls_empty_lists_and_empty_mappings_are_dropped_at_every_depth():
    doc = dict(td(environment=None, mountPoints=[], dockerLabels={}, hostname=None,
                  logConfiguration={'logDriver': 'awslogs', 'options': None, 'secretOptions': []},
                  linuxParameters={'capabilities': {'add': [], 'drop': None}}),
               cpu=None, memory=None, volumes=[], placementConstraints=[], tags=None)
    assert model.normalize(doc) == td(logConfiguration={'logDriver': 'awslogs'})


def test_a_null_element_of_a_list_is_kept_and_refused_by_the_model():
    refused(td(command=['sleep', None]), 'Invalid type for parameter task_definition.containerDefinitions[0].command[1]',
            'value: None')


@pytest.mark.parametrize('container,member,expected', [
    ({'cpu': '256'}, ('cpu',), 256),
    ({'memory': ' 512 '}, ('memory',), 512),
    ({'memoryReservation': '128'}, ('memoryReservation',), 128),
    ({'portMappings': [{'containerPort': '8080', 'hostPort': '0'}]}, ('portMappings', 0, 'containerPort'), 8080),
    ({'portMappings': [{'containerPort': '8080', 'hostPort': '0'}]}, ('portMappings', 0, 'hostPort'), 0),
    ({'ulimits': [{'name': 'nofile', 'softLimit': '-1', 'hardLimit': '-1'}]}, ('ulimits', 0, 'softLimit'), -1),
    ({'healthCheck': {'command': ['CMD', 'true'], 'retries': '3'}}, ('healthCheck', 'retries'), 3),
    ({'restartPolicy': {'enabled': 'true', 'ignoredExitCodes': ['0', '143']}}, ('restartPolicy', 'ignoredExitCodes'),
     [0, 143]),
    ({'essential': 'false'}, ('essential',), False),
    ({'essential': ' True '}, ('essential',), True),
    ({'mountPoints': [{'sourceVolume': 'd', 'containerPath': '/d', 'readOnly': 'TRUE'}]},
     ('mountPoints', 0, 'readOnly'), True),
])
def test_numbers_and_booleans_written_as_strings_are_taken(container, member, expected):
    value = model.normalize(td(**container))['containerDefinitions'][0]
    for part in member:
        value = value[part]
    assert value == expected and type(value) is type(expected)


def test_task_level_cpu_and_memory_stay_strings():
    out = model.normalize(dict(td(), cpu='1 vCPU', memory='512'))
    assert (out['cpu'], out['memory']) == ('1 vCPU', '512')


def test_task_level_cpu_as_a_number_is_refused_by_the_model():
    refused(dict(td(), cpu=256), 'Invalid type for parameter task_definition.cpu, value: 256, type: int, valid types: str')


@pytest.mark.parametrize('container,words', [
    ({'cpu': 'lots'}, ("task_definition.containerDefinitions[0].cpu must be an integer, got 'lots'",)),
    ({'memory': '0.5'}, ("task_definition.containerDefinitions[0].memory must be an integer, got '0.5'",)),
    ({'memory': '512m'}, ("containerDefinitions[0].memory must be an integer, got '512m'",)),
    ({'portMappings': [{'containerPort': '80/tcp'}]},
     ("task_definition.containerDefinitions[0].portMappings[0].containerPort must be an integer, got '80/tcp'",)),
    ({'cpu': True}, ('task_definition.containerDefinitions[0].cpu must be an integer, got True',)),
    ({'essential': 'yes'}, ("task_definition.containerDefinitions[0].essential must be true or false, got 'yes'",)),
])
def test_a_string_that_is_not_a_number_or_boolean_is_refused_naming_field_and_value(container, words):
    refused(td(**container), *words)


def test_every_bad_value_is_named_in_one_message():
    message = refused(td(cpu='x', memory='y'), 'containerDefinitions[0].cpu', 'containerDefinitions[0].memory')
    assert message.count('; ') == 1


def test_unknown_keys_are_named_with_their_path():
    refused(dict(td(colour='red'), flavour='x'),
            'Unknown parameter in task_definition: "flavour", must be one of: family,',
            'Unknown parameter in task_definition.containerDefinitions[0]: "colour", must be one of: name, image,')


def test_unknown_key_at_depth():
    refused(td(portMappings=[{'containerPort': 80, 'port': 80}]),
            'Unknown parameter in task_definition.containerDefinitions[0].portMappings[0]: "port"')


def test_the_field_given_starts_every_path():
    refused(td(colour='red'), 'Unknown parameter in tasks[2].task_definition.containerDefinitions[0]: "colour"',
            field='tasks[2].task_definition')


@pytest.mark.parametrize('doc,words', [
    ({'containerDefinitions': [{'name': 'a', 'image': IMG}]}, ('Missing required parameter in task_definition: "family"',)),
    ({'family': 'web'}, ('Missing required parameter in task_definition: "containerDefinitions"',)),
    ({'family': 'web', 'containerDefinitions': []}, ('Missing required parameter in task_definition: "containerDefinitions"',)),
    (td(healthCheck={'interval': 5}),
     ('Missing required parameter in task_definition.containerDefinitions[0].healthCheck: "command"',)),
    (td(logConfiguration={'options': {'a': 'b'}}),
     ('Missing required parameter in task_definition.containerDefinitions[0].logConfiguration: "logDriver"',)),
    (td(ulimits=[{'name': 'nofile', 'softLimit': 1}]),
     ('Missing required parameter in task_definition.containerDefinitions[0].ulimits[0]: "hardLimit"',)),
])
def test_missing_required_members_are_named(doc, words):
    refused(doc, *words)


def test_the_model_requires_no_name_or_image_of_a_container():
    # The model leaves these to the caller's own rules.
    assert model.normalize({'family': 'web', 'containerDefinitions': [{'cpu': 1}]}) == {
        'family': 'web', 'containerDefinitions': [{'cpu': 1}]}


@pytest.mark.parametrize('doc,words', [
    (td(command='sleep 60'),
     ("Invalid type for parameter task_definition.containerDefinitions[0].command, value: sleep 60, type: str, "
      "valid types: list, tuple",)),
    (td(environment={'A': 'b'}), ('task_definition.containerDefinitions[0].environment, value: ',
                                  'type: dict, valid types: list, tuple')),
    (td(environment=[{'name': 'A', 'value': 1}]),
     ('Invalid type for parameter task_definition.containerDefinitions[0].environment[0].value, value: 1, type: int, '
      'valid types: str',)),
    (td(linuxParameters={'capabilities': {'add': 'NET_ADMIN'}}),
     ('task_definition.containerDefinitions[0].linuxParameters.capabilities.add, value: NET_ADMIN',)),
    (td(dockerLabels={'a': 1}), ('task_definition.containerDefinitions[0].dockerLabels.a, value: 1, type: int',)),
    ({'family': 'web', 'containerDefinitions': {'name': 'a'}},
     ('Invalid type for parameter task_definition.containerDefinitions, value: ',)),
    (dict(td(), volumes=[{'name': 'd', 'efsVolumeConfiguration': {'fileSystemId': 'fs-1', 'transitEncryptionPort': 'x'}}]),
     ("task_definition.volumes[0].efsVolumeConfiguration.transitEncryptionPort must be an integer, got 'x'",)),
])
def test_wrong_types_at_depth_are_named(doc, words):
    refused(doc, *words)


def test_many_errors_are_capped():
    doc = td(**dict(('x%d' % i, 1) for i in range(15)))
    message = refused(doc, 'and 5 more')
    assert message.count('Unknown parameter') == model.MAX_ERRORS


@pytest.mark.parametrize('doc,path,value', [
    (td(image='<IMAGE1_NAME>'), 'containerDefinitions[0].image', "'<IMAGE1_NAME>'"),
    (td(image='${IMAGE}'), 'containerDefinitions[0].image', "'${IMAGE}'"),
    (dict(td(), family='$NAME'), 'family', "'$NAME'"),
    (td(image='{{ image }}'), 'containerDefinitions[0].image', "'{{ image }}'"),
    (dict(td(), executionRoleArn='$$$EXECUTION_ROLE$$$'), 'executionRoleArn', "'$$$EXECUTION_ROLE$$$'"),
    (td(image='#{Image}'), 'containerDefinitions[0].image', "'#{Image}'"),
    (td(image='%IMAGE%'), 'containerDefinitions[0].image', "'%IMAGE%'"),
    (td(image='{image}'), 'containerDefinitions[0].image', "'{image}'"),
    (td(image='${{ secrets.IMAGE }}'), 'containerDefinitions[0].image', "'${{ secrets.IMAGE }}'"),
    # Inside a longer value, where nothing would expand it.
    (td(image='123456789012.dkr.ecr.${REGION}.amazonaws.com/app'), 'containerDefinitions[0].image', '${REGION}'),
    (td(image='app:{{VERSION}}'), 'containerDefinitions[0].image', "'app:{{VERSION}}'"),
    (td(image='app:%VERSION%'), 'containerDefinitions[0].image', "'app:%VERSION%'"),
    (dict(td(), taskRoleArn='arn:aws:iam::<account>:role/web'), 'taskRoleArn', "'arn:aws:iam::<account>:role/web'"),
    (td(logConfiguration={'logDriver': 'awslogs', 'options': {'awslogs-group': '/ecs/${family}'}}),
     'containerDefinitions[0].logConfiguration.options.awslogs-group', "'/ecs/${family}'"),
    # Free text read by the program: whole values only.
    (td(environment=[{'name': 'DB', 'value': '${DATABASE_URL}'}]), 'containerDefinitions[0].environment[0].value',
     "'${DATABASE_URL}'"),
    (td(environment=[{'name': 'DB', 'value': '$DATABASE_URL'}]), 'containerDefinitions[0].environment[0].value',
     "'$DATABASE_URL'"),
    (td(dockerLabels={'team': '{{ team }}'}), 'containerDefinitions[0].dockerLabels.team', "'{{ team }}'"),
    # Command-like arrays: a whole element that only a template engine would fill in.
    (td(command=['{{command}}']), 'containerDefinitions[0].command[0]', "'{{command}}'"),
    (td(entryPoint=['<ENTRYPOINT>']), 'containerDefinitions[0].entryPoint[0]', "'<ENTRYPOINT>'"),
    (td(healthCheck={'command': ['CMD-SHELL', '$$$CHECK$$$']}), 'containerDefinitions[0].healthCheck.command[1]',
     "'$$$CHECK$$$'"),
    # Before the model: a placeholder where a number goes is named a placeholder.
    (td(cpu='${container_cpu}'), 'containerDefinitions[0].cpu', "'${container_cpu}'"),
    (td(environment=['${environment_variables}']), 'containerDefinitions[0].environment[0]',
     "'${environment_variables}'"),
])
def test_placeholders_are_refused_naming_field_and_value(doc, path, value):
    message = refused(doc, 'task_definition.%s is a template placeholder left in the file: ' % path, value)
    assert 'Invalid type' not in message and 'must be an integer' not in message


@pytest.mark.parametrize('container', [
    {'command': ['sh', '-c', "echo $HOME"]},
    {'command': ['sh', '-c', 'exec app --port=${PORT} --name "$NAME"']},
    {'command': ['sh', '-c', '$CMD']},
    {'command': ['sh', '-c', '${CMD}']},
    {'entryPoint': ['/bin/sh', '-c', 'echo "<html><body>hi</body></html>" > /www/index.html']},
    {'healthCheck': {'command': ['CMD-SHELL', 'curl -f http://localhost:$PORT/ || exit 1']}},
    {'command': ['docker', 'inspect', '--format', '{{.State.Health.Status}}', 'x']},
    {'environment': [{'name': 'PASSWORD', 'value': 'pa$$word'}, {'name': 'GREETING', 'value': 'Hello {{name}}!'},
                     {'name': 'SPRING_URL', 'value': 'jdbc:postgresql://${DB_HOST}/app'},
                     {'name': 'HTML', 'value': '<b>bold</b>'}]},
    {'logConfiguration': {'logDriver': 'json-file', 'options': {'tag': '{{.ImageName}}/{{.Name}}/{{.ID}}'}}},
    {'logConfiguration': {'logDriver': 'awslogs', 'options': {'awslogs-datetime-format': '%Y%m%d %H:%M:%S'}}},
    {'logConfiguration': {'logDriver': 'awsfirelens', 'options': {'log_group_name': '/ecs/$(ecs_cluster)/app'}}},
    {'dockerLabels': {'traefik.http.routers.web.rule': 'Host(`example.com`) && PathPrefix(`/$api`)'}},
])
def test_legitimate_values_are_not_placeholders(container):
    model.normalize(td(**container))


def test_a_container_definition_that_is_a_string_is_refused_naming_it():
    doc = {'family': 'web', 'containerDefinitions': [{'name': 'a', 'image': IMG}, '$ENVOY_CONTAINER_JSON']}
    message = refused(doc, 'task_definition.containerDefinitions[1] is a string, not a container definition (a mapping): '
                      "'$ENVOY_CONTAINER_JSON'")
    # Named once, as a string where a definition goes; the filter that fills it (a whole definition) is named.
    assert 'placeholder left' not in message and message.endswith('(%s)' % _td_template.HINT)


def test_a_bare_list_is_refused():
    refused([{'name': 'a', 'image': IMG}],
            'task_definition is a list: give it as containerDefinitions of a task definition with a family')


@pytest.mark.parametrize('doc,kind', [('web', 'str'), (None, 'NoneType'), (3, 'int')])
def test_a_task_definition_that_is_not_a_mapping_is_refused(doc, kind):
    refused(doc, 'task_definition must be a mapping (a task definition), got %s' % kind)


def test_next_release_fields_are_found_but_not_refused():
    doc = {'family': 'web', 'containerDefinitions': [
        {'name': 'a', 'image': IMG, 'essential': True},
        {'name': 'b', 'image': IMG, 'dependsOn': [{'containerName': 'a', 'condition': 'START'}],
         'secrets': [{'name': 'S', 'valueFrom': 'arn:aws:ssm:eu-west-1:123456789012:parameter/s'}],
         'environmentFiles': [{'type': 's3', 'value': 'arn:aws:s3:::b/e.env'}],
         'repositoryCredentials': {'credentialsParameter': 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:r'},
         'restartPolicy': {'enabled': True}, 'firelensConfiguration': {'type': 'fluentbit'},
         'logConfiguration': {'logDriver': 'awsfirelens',
                              'secretOptions': [{'name': 'k', 'valueFrom': 'arn:aws:ssm:eu-west-1:1:parameter/k'}]}},
        {'name': 'c', 'image': IMG, 'logConfiguration': {'logDriver': 'awslogs'}},
    ]}
    out = model.normalize(doc)
    # Every container field of the contract is handled now: none is left for a later release.
    assert model.FIELDS_NEXT == model.LOG_FIELDS_NEXT == model.LOG_DRIVERS_NEXT == ()
    assert model.next_release_fields(out) == [] and model.next_release_fields(out, field='x') == []


def test_botocore_is_there_and_its_version_is_told():
    import botocore
    assert model.HAS_BOTOCORE is True and model.BOTOCORE_IMPORT_ERROR is None
    assert model.model_version() == botocore.__version__


def test_the_model_is_read_once(monkeypatch):
    import botocore.loaders
    model.normalize(td())
    calls = []
    monkeypatch.setattr(botocore.loaders.Loader, 'load_service_model', lambda *a, **kw: calls.append(a))
    for family in ('a', 'b', 'c'):
        model.normalize(dict(td(), family=family))
    assert calls == [] and model.input_shape() is model.input_shape()


def test_checking_a_document_never_imports_a_session_of_botocore():
    """The model and the validator alone: a session would import the client stack (tens of ms a pass)."""
    code = ('import sys; from ansible_collections.drover.fleet.plugins.module_utils.aws import model as m; '
            'm.normalize({"family": "w", "containerDefinitions": [{"name": "w", "image": "i", "memory": 64}]}); '
            'print(sorted(k for k in sys.modules if k in ("botocore.session", "botocore.client", "botocore.model")))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout
    assert out.strip() == "['botocore.model']"


def _corpus():
    if not os.path.isdir(CORPUS):
        pytest.skip('no corpus at %s' % CORPUS)
    docs = {}
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path) as f:
            docs[os.path.basename(path)[:-len('.json')]] = json.load(f)
    return docs


def _kind(message):
    first = message.split('; ')[0]
    for words, kind in (('placeholder', 'placeholder'), ('not a container definition', 'placeholder'),
                        ('Unknown parameter', 'unknown key'), ('Invalid type', 'type'), ('must be an integer', 'type'),
                        ('must be true or false', 'type'), ('Missing required', 'missing')):
        if words in first:
            return kind
    return 'other'


def test_corpus_every_document_is_normalized_or_refused_with_a_spec_error():
    docs = _corpus()
    valid, refusals = [], collections.defaultdict(list)
    for name, doc in docs.items():
        try:
            out = model.normalize(doc)
        except SpecError as err:
            refusals[_kind(str(err))].append(name)
        else:
            valid.append(name)
            assert model.normalize(out) == out, name
            model.next_release_fields(out)
    print('corpus: %d documents, %d valid by the model of botocore %s' % (len(docs), len(valid), model.model_version()))
    for kind in ('placeholder', 'unknown key', 'type', 'missing', 'other'):
        print('refused, %s: %d %s' % (kind, len(refusals[kind]), ' '.join(refusals[kind])))
    assert len(docs) >= 120
    assert len(valid) >= CORPUS_VALID_FLOOR
    # The two documents whose container definitions a shell placeholder stood for.
    assert '059' in refusals['placeholder'] and '060' in refusals['placeholder']


def test_empty_strings_and_objects_are_taken_as_absent_with_one_warning_naming_them():
    """What --generate-cli-skeleton and templates leave: "" and {} in optional fields, as if absent."""
    doc = td(hostname='', user='', linuxParameters={'capabilities': {}}, environment=[{'name': 'EMPTY', 'value': ''}],
             dockerLabels={'empty': ''}, logConfiguration={'logDriver': 'json-file', 'options': {}})
    doc.update(taskRoleArn='', executionRoleArn='', pidMode='')
    warnings = []
    out = model.normalize(doc, warnings=warnings)
    c = out['containerDefinitions'][0]
    assert not set(out) & {'taskRoleArn', 'executionRoleArn', 'pidMode'}
    assert not set(c) & {'hostname', 'user', 'linuxParameters'} and c['logConfiguration'] == {'logDriver': 'json-file'}
    # An environment variable and a label may be empty: kept.
    assert c['environment'] == [{'name': 'EMPTY', 'value': ''}] and c['dockerLabels'] == {'empty': ''}
    assert warnings == ['empty values taken as absent, as a skeleton or a template leaves them: '
                        'task_definition.containerDefinitions[0].hostname, '
                        'task_definition.containerDefinitions[0].linuxParameters, '
                        'task_definition.containerDefinitions[0].linuxParameters.capabilities, '
                        'task_definition.containerDefinitions[0].logConfiguration.options, '
                        'task_definition.containerDefinitions[0].user, task_definition.executionRoleArn, '
                        'task_definition.pidMode, task_definition.taskRoleArn']
    assert model.normalize(td(), warnings=warnings) and len(warnings) == 1       # nothing empty: no warning


def test_an_empty_required_field_is_still_refused():
    with pytest.raises(SpecError, match='family'):
        model.normalize(dict(td(), family=''))
