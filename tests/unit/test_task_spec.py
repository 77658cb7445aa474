# -*- coding: utf-8 -*-
"""Declarations: every rule, with the field named in the message."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.tasks.spec import SpecError

IMG = 'drover.local/busybox:1'


def one(**kw):
    raw = {'name': 'web', 'containers': [{'name': 'main', 'image': IMG}]}
    raw.update(kw)
    return spec.task_set(raw)[0][0]


def refused(params, *words):
    with pytest.raises(SpecError) as err:
        spec.task_set(params)
    for word in words:
        assert word in str(err.value), str(err.value)
    return str(err.value)


def test_defaults():
    t = one()
    assert (t.cluster, t.network_mode, t.state, t.restart, t.pull) == ('default', 'bridge', 'running', 'never', 'missing')
    c = t.containers[0]
    assert c.essential is True and c.gpu == 0 and c.command is None and c.environment == ()


def test_environment_values_become_strings_and_order_does_not_matter():
    a = one(containers=[{'name': 'm', 'image': IMG, 'environment': {'A': 1, 'B': True, 'C': None}}])
    assert dict(a.containers[0].environment) == {'A': '1', 'B': 'true', 'C': ''}
    b = one(containers=[{'name': 'm', 'image': IMG, 'environment': {'C': None, 'B': True, 'A': 1}}])
    assert a.spec_hash == b.spec_hash


@pytest.mark.parametrize('change', [
    {'image': 'drover.local/busybox:2'}, {'command': ['sleep', '1']}, {'environment': {'X': 'y'}},
    {'memory': 64}, {'cpu': 512}, {'essential': True, 'entrypoint': ['sh']},
])
def test_spec_hash_changes_with_what_replaces_a_task(change):
    base = {'name': 'm', 'image': IMG}
    assert one(containers=[base]).spec_hash != one(containers=[dict(base, **change)]).spec_hash


def test_spec_hash_ignores_restart_and_pull():
    assert one().spec_hash == one(restart='always', pull='always').spec_hash


@pytest.mark.parametrize('params,words', [
    ({'name': 'web', 'containers': [{'name': 'main'}]}, ('containers[0].image', 'required')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG}, {'name': 'a', 'image': IMG}]},
     ('containers[1].name', 'used twice')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'memory': 4}]}, ('containers[0].memory', 'at least 6')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'command': 'sleep 60'}]},
     ('containers[0].command', 'list of strings')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'entrypoint': {'a': 1}}]},
     ('containers[0].entrypoint', 'list')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': 'Not Valid'}]}, ('containers[0].image', 'not a valid image')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'gpu': -1}]}, ('containers[0].gpu', 'at least 0')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'cpu': -5}]}, ('containers[0].cpu', 'at least 2')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'essential': False}]}, ('essential',)),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'volumes': ['/x']}]},
     ('containers[0]', 'unsupported keys: volumes')),
    ({'name': 'web/x', 'containers': [{'name': 'a', 'image': IMG}]}, ('name', 'not a valid name')),
    ({'name': 'web', 'containers': []}, ('containers', 'required')),
    ({'name': 'web'}, ('containers', 'required')),
    ({'name': 'web', 'purge': True, 'containers': [{'name': 'a', 'image': IMG}]}, ('purge', 'tasks')),
    ({'name': 'web', 'network_mode': 'none', 'containers': [
        {'name': 'a', 'image': IMG, 'port_mappings': [{'container_port': 80}]}]}, ('port_mappings', 'bridge')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'port_mappings': [{'container_port': 70000}]}]},
     ('port_mappings[0].container_port', 'at most 65535')),
    ({'name': 'web', 'network_mode': 'awsvpc', 'awsvpc': {'address': '198.18.9.2/24'},
      'containers': [{'name': 'a', 'image': IMG}]}, ('awsvpc.address', 'awsvpc.eni_mac')),
    ({'name': 'web', 'restart': 'sometimes', 'containers': [{'name': 'a', 'image': IMG}]}, ('restart',)),
    ({'tasks': 'web'}, ('tasks', 'list')),
    ({'tasks': [{'name': 'a', 'containers': [{'name': 'm', 'image': IMG}], 'colour': 'red'}]},
     ('tasks[0]', 'unsupported keys: colour')),
    ({'tasks': [], 'name': 'x'}, ('tasks is mutually exclusive with name',)),
    ({'name': 'web', 'registry_auth': {'registry': 'r.example', 'username': 'u'}, 'containers': [
        {'name': 'a', 'image': IMG}]}, ('registry_auth.password', 'required')),
    ({'name': 'web', 'task_role_arn': 'a role', 'containers': [{'name': 'a', 'image': IMG}]}, ('task_role_arn', 'ARN')),
    ({'tasks': [{'name': 'a', 'containers': [{'name': 'm', 'image': IMG}]},
                {'name': 'a', 'containers': [{'name': 'm', 'image': IMG, 'command': ['x']}]}]},
     ('tasks[1]', 'second time')),
])
def test_bad_declarations_name_the_field(params, words):
    refused(params, *words)


def test_stop_wins_over_start_in_one_set():
    tasks, purge = spec.task_set({'tasks': [
        {'name': 'a', 'containers': [{'name': 'm', 'image': IMG}]},
        {'name': 'a', 'state': 'stopped'},
    ], 'purge': True, 'cluster': 'blue'})
    assert [(t.cluster, t.name, t.state) for t in tasks] == [('blue', 'a', 'stopped')]
    assert purge == 'blue'


TD = {
    'taskDefinitionArn': 'arn:aws:ecs:eu-west-1:123456789012:task-definition/web:3',
    'family': 'web', 'revision': 3, 'status': 'ACTIVE', 'networkMode': 'bridge',
    'volumes': [], 'placementConstraints': [], 'requiresAttributes': [{'name': 'x'}],
    'compatibilities': ['EC2'], 'registeredAt': '2026-01-01T00:00:00Z',
    'containerDefinitions': [{
        'name': 'httpd', 'image': IMG, 'cpu': 256, 'memory': 64, 'essential': True,
        'command': ['httpd', '-f'], 'entryPoint': [], 'environment': [{'name': 'A', 'value': 'b'}],
        'portMappings': [{'containerPort': 80, 'hostPort': 0, 'protocol': 'tcp'}],
        'mountPoints': [], 'volumesFrom': [], 'resourceRequirements': [{'type': 'GPU', 'value': '1'}],
    }],
}


def test_task_definition_as_aws_returns_it():
    t = spec.task_set({'task_definition': TD})[0][0]
    assert t.name == 'web' and t.network_mode == 'bridge'
    c = t.containers[0]
    assert (c.name, c.cpu, c.memory, c.command, c.gpu) == ('httpd', 256, 64, ('httpd', '-f'), 1)
    assert dict(c.environment) == {'A': 'b'}
    assert c.port_mappings == (settings.PortMapping(80, None, 'tcp'),)
    same = spec.task_set({'name': 'web', 'containers': [{
        'name': 'httpd', 'image': IMG, 'cpu': 256, 'memory': 64, 'command': ['httpd', '-f'], 'entrypoint': [],
        'environment': {'A': 'b'}, 'port_mappings': [{'container_port': 80}], 'gpu': 1}]})[0][0]
    assert same.spec_hash == t.spec_hash


@pytest.mark.parametrize('td,words', [
    (dict(TD, proxyConfiguration={'containerName': 'envoy'}), ('task_definition', 'proxyConfiguration')),
    (dict(TD, containerDefinitions=[dict(TD['containerDefinitions'][0], mountPoints=[{'x': 1}])]),
     ('containerDefinitions[0].mountPoints[0]', 'x')),
    (dict(TD, containerDefinitions=[dict(TD['containerDefinitions'][0], dependsOn=[{'containerName': 'db', 'condition': 'START'}])]),
     ('containerDefinitions[0].dependsOn[0].containerName', "'db' is not another container of the task")),
    (dict(TD, containerDefinitions=[dict(TD['containerDefinitions'][0],
                                         resourceRequirements=[{'type': 'InferenceAccelerator', 'value': 'x'}])]),
     ('resourceRequirements[0]', 'GPU')),
    (dict(TD, containerDefinitions=[]), ('Missing required parameter in task_definition', 'containerDefinitions')),
])
def test_task_definition_refuses_what_it_cannot_do(td, words):
    refused({'task_definition': td}, *words)


def test_a_container_field_refused_here_is_named_before_what_the_task_level_asks():
    td = dict(TD, proxyConfiguration={'containerName': 'envoy'},
              containerDefinitions=[dict(TD['containerDefinitions'][0], credentialSpecs=['credentialspec:x'])])
    refused({'task_definition': td}, 'task_definition.containerDefinitions[0].credentialSpecs', 'Windows')


@pytest.mark.parametrize('key,field', [('taskRoleArn', 'task_definition.taskRoleArn'),
                                       ('executionRoleArn', 'task_definition.executionRoleArn')])
def test_a_role_of_the_task_definition_that_is_no_arn_is_named_where_it_is(key, field):
    refused({'task_definition': dict(TD, **{key: 'ecs task role'})}, field, 'ecs task role')
    refused({'tasks': [{'task_definition': dict(TD, **{key: 'ecs task role'})}]}, 'tasks[0].' + field)


def test_task_definition_network_mode_must_agree():
    refused({'task_definition': TD, 'network_mode': 'host'}, 'contradicts')


def test_ecr_registry_auth_and_host_names():
    from ansible_collections.drover.fleet.plugins.module_utils.aws import calls as aws
    ecr = '123456789012.dkr.ecr.eu-west-1.amazonaws.com'
    t = spec.task({'name': 'web', 'registry_auth': {'registry': ecr, 'ecr': True},
                   'containers': [{'name': 'a', 'image': IMG}]})
    assert t.registry_auth == spec.RegistryAuth(ecr, None, None, True)
    # The host's (or the execution role's) ECR token goes to ECR alone, never to a registry the task names.
    for other in ('r.example:5000', '127.0.0.1:5000', 'evil.example/123456789012.dkr.ecr.eu-west-1.amazonaws.com',
                  '123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example'):
        with pytest.raises(SpecError) as err:
            spec.task({'name': 'web', 'registry_auth': {'registry': other, 'ecr': True},
                       'containers': [{'name': 'a', 'image': IMG}]})
        assert str(err.value) == ('registry_auth.registry %s is not an ECR registry (<account>.dkr.ecr.<region>.'
                                  'amazonaws.com): an ECR token is handed to ECR alone' % other)
    assert aws.ecr_registry(ecr) == ('123456789012', 'eu-west-1')
    assert aws.ecr_registry(ecr + ':5000') == ('123456789012', 'eu-west-1')       # AWS's name, whatever the port
    assert aws.ecr_registry('123456789012.dkr-ecr.eu-west-1.on.aws') == ('123456789012', 'eu-west-1')   # dual-stack
    assert aws.ecr_registry('123456789012.dkr-ecr.eu-west-1.on.aws.evil.example') is None
    assert aws.ecr_registry('123456789012.dkr.ecr-fips.us-east-1.amazonaws.com') == ('123456789012', 'us-east-1')
    assert aws.ecr_registry('123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn') == ('123456789012', 'cn-north-1')
    for other in ('registry.example.com', '12345.dkr.ecr.eu-west-1.amazonaws.com', 'dkr.ecr.amazonaws.com', ''):
        assert aws.ecr_registry(other) is None


# --- patterns end at the very end of the value; bounds as ECS has them ---------------------------------------

ROLE = 'arn:aws:iam::123456789012:role/web'


@pytest.mark.parametrize('params,words', [
    ({'name': 'web\n', 'containers': [{'name': 'a', 'image': IMG}]}, ('name', 'not a valid name')),
    ({'name': 'web', 'cluster': 'x\n', 'containers': [{'name': 'a', 'image': IMG}]}, ('cluster', 'not a valid name')),
    ({'tasks': [{'name': 'web', 'containers': [{'name': 'a', 'image': IMG}]}], 'cluster': 'x\n', 'purge': True},
     ('cluster', 'not a valid name')),
    ({'name': 'web', 'containers': [{'name': 'a\n', 'image': IMG}]}, ('containers[0].name', 'not a valid name')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG + '\n'}]}, ('containers[0].image', 'not a valid image')),
    ({'name': 'web', 'task_role_arn': ROLE, 'cred_id': 'web-creds\n', 'containers': [{'name': 'a', 'image': IMG}]},
     ('cred_id',)),
])
def test_a_trailing_newline_is_refused(params, words):
    refused(params, *words)


def test_an_image_tag_is_ascii():
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': 'drover.local/busybox:\u00e9t\u00e9'}]},
            'containers[0].image', 'not a valid image')


def boxes(n):
    return [{'name': 'c%d' % i, 'image': IMG} for i in range(n)]


def test_at_most_ten_containers_per_task():
    assert len(one(containers=boxes(10)).containers) == 10
    msg = refused({'name': 'web', 'containers': boxes(11)}, 'containers lists 11 containers', 'at most 10')
    assert msg.startswith('containers ')
    refused({'tasks': [{'name': 'a', 'containers': boxes(300)}]}, 'tasks[0].containers', 'at most 10')
    refused({'task_definition': dict(TD, containerDefinitions=[dict(TD['containerDefinitions'][0], name='c%d' % i)
                                                               for i in range(11)])},
            'task_definition.containerDefinitions', 'at most 10')


def test_environment_command_and_stop_reason_are_bounded():
    # 64 KiB of NAME=value strings (each counted with its terminating NUL) pass; a byte more does not
    fits = {'A': 'x' * (settings.MAX_ENVIRONMENT_BYTES - len('A=') - 1)}
    assert one(containers=[{'name': 'a', 'image': IMG, 'environment': fits}]).containers[0].environment
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'environment': dict(fits, B='')}]},
            'containers[0].environment', 'at most 65536')
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'environment': {'BIG': 'x' * 10 ** 7}}]},
            'containers[0].environment', 'at most 65536')
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': IMG,
                                            'environment': dict(('V%d' % i, 'x' * 100) for i in range(1000))}]},
            'containers[0].environment', 'at most 65536')
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'command': ['x' * 70000]}]},
            'containers[0].command', 'at most 65536')
    refused({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'entrypoint': ['sh'] * 40000}]},
            'containers[0].entrypoint', 'at most 65536')
    td = dict(TD, containerDefinitions=[dict(TD['containerDefinitions'][0],
                                             environment=[{'name': 'BIG', 'value': 'x' * 70000}])])
    refused({'task_definition': td}, 'task_definition.containerDefinitions[0].environment', 'at most 65536')
    assert one(state='stopped', stop_reason='r' * 255).stop_reason == 'r' * 255
    refused({'name': 'web', 'state': 'stopped', 'stop_reason': 'r' * 256}, 'stop_reason', 'at most 255')


def test_the_containers_documentation_is_what_the_table_makes():
    """plugins/doc_fragments/containers.py is written from the table of container settings (hack/gen-docs.py):
    a row changed without running it fails here."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, os.path.join(root, 'hack', 'gen-docs.py'), '--check'],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def test_every_setting_is_in_the_argument_spec_the_docs_and_the_hash():
    spec_opts = settings.argument_spec()
    docs = settings.documentation()
    assert list(spec_opts) == list(docs) == list(settings.OPTIONS)
    for option, entry in spec_opts.items():
        assert docs[option]['type'] == entry['type'], option
        if 'options' in entry:
            assert sorted(docs[option]['suboptions']) == sorted(entry['options']), option


def box(name, **kw):
    return dict({'name': name, 'image': IMG}, **kw)


def test_containers_start_after_the_ones_they_link_to_or_take_volumes_from():
    t = spec.task_set({'name': 'web', 'containers': [
        box('main', links=['db:database'], volumes_from=[{'source_container': 'data'}]),
        box('side'), box('data', links=['db']), box('db')]})[0][0]
    assert [c.name for c in settings.start_order(t.containers)] == ['db', 'data', 'main', 'side']
    assert [c.name for c in t.containers] == ['main', 'side', 'data', 'db']       # the declaration's order kept


def test_containers_that_need_each_other_are_refused():
    refused({'name': 'web', 'containers': [box('a', links=['b']), box('b', volumes_from=[{'source_container': 'a'}])]},
            'containers[0].links', 'containers[0].volumes_from', 'cycle', 'a -> b -> a')
    refused({'name': 'web', 'containers': [box('a', links=['b']), box('b', links=['c']), box('c', links=['b'])]},
            'containers[1].links', 'b -> c -> b')
    cycle = [box('a', volumesFrom=[{'sourceContainer': 'b'}]), box('b', volumesFrom=[{'sourceContainer': 'a'}])]
    refused({'task_definition': {'family': 'web', 'containerDefinitions': cycle}},
            'containerDefinitions[0].volumesFrom', 'cycle')


def test_references_in_a_task_definition_are_named_as_ecs_names_them():
    selfish = box('a', volumesFrom=[{'sourceContainer': 'a'}])
    refused({'task_definition': {'family': 'web', 'containerDefinitions': [selfish]}},
            'task_definition.containerDefinitions[0].volumesFrom[0].sourceContainer')
    unmounted = box('a', mountPoints=[{'sourceVolume': 'v', 'containerPath': '/v'}])
    refused({'task_definition': {'family': 'web', 'containerDefinitions': [unmounted]}},
            'task_definition.containerDefinitions[0].mountPoints[0].sourceVolume')
    refused({'name': 'web', 'containers': [box('a', volumes_from=[{'source_container': 'a'}])]},
            'containers[0].volumes_from[0].source_container')


def test_docker_labels_of_the_collections_namespace_are_left_out_with_a_warning():
    t = one(containers=[box('main', docker_labels={'team': 'blue', 'drover.cred-id': 'x', 'drover.gpus': 'GPU-1'})])
    assert len(t.warnings) == 1 and 'containers[0].docker_labels: drover.cred-id, drover.gpus are' in t.warnings[0]
    labels = settings.render(t.containers[0], 'web', {'main': 'web-main'}, {})[2]
    assert labels == {'team': 'blue'}
    assert one(containers=[box('main', docker_labels={'team': 'blue'})]).warnings == ()


@pytest.mark.parametrize('native,ecs,native_field,ecs_field', [
    ({'ulimits': [{'name': 'nofile', 'soft_limit': 2, 'hard_limit': 1}]},
     {'ulimits': [{'name': 'nofile', 'softLimit': 2, 'hardLimit': 1}]},
     'ulimits[0].hard_limit', 'ulimits[0].hardLimit'),
    ({'tmpfs': [{'container_path': 'x', 'size': 1}]}, {'linuxParameters': {'tmpfs': [{'containerPath': 'x', 'size': 1}]}},
     'tmpfs[0].container_path', 'linuxParameters.tmpfs[0].containerPath'),
    ({'tmpfs': [{'container_path': '/x', 'size': 0}]}, {'linuxParameters': {'tmpfs': [{'containerPath': '/x', 'size': 0}]}},
     'tmpfs[0].size', 'linuxParameters.tmpfs[0].size'),
    ({'devices': [{'host_path': '/etc/x'}]}, {'linuxParameters': {'devices': [{'hostPath': '/etc/x'}]}},
     'devices[0].host_path', 'linuxParameters.devices[0].hostPath'),
    ({'devices': [{'host_path': '/dev/x', 'container_path': 'x'}]},
     {'linuxParameters': {'devices': [{'hostPath': '/dev/x', 'containerPath': 'x'}]}},
     'devices[0].container_path', 'linuxParameters.devices[0].containerPath'),
    ({'devices': [{'host_path': '/dev/x', 'permissions': ['all']}]},
     {'linuxParameters': {'devices': [{'hostPath': '/dev/x', 'permissions': ['all']}]}},
     'devices[0].permissions', 'linuxParameters.devices[0].permissions'),
    ({'health_check': {'command': ['true']}}, {'healthCheck': {'command': ['true']}},
     'health_check.command', 'healthCheck.command'),
    ({'health_check': {'command': ['NONE'], 'start_period': 301}}, {'healthCheck': {'command': ['NONE'], 'startPeriod': 301}},
     'health_check.start_period', 'healthCheck.startPeriod'),
    ({'extra_hosts': [{'hostname': 'a', 'ip_address': 'nope'}]}, {'extraHosts': [{'hostname': 'a', 'ipAddress': 'nope'}]},
     'extra_hosts[0].ip_address', 'extraHosts[0].ipAddress'),
    ({'system_controls': [{'namespace': 'x', 'value': '1'}]}, {'systemControls': [{'namespace': 'x', 'value': '1'}]},
     'system_controls[0].namespace', 'systemControls[0].namespace'),
])
def test_a_bad_member_is_named_in_the_words_of_its_form(native, ecs, native_field, ecs_field):
    refused({'name': 'web', 'containers': [box('main', **native)]}, 'containers[0].%s ' % native_field)
    refused({'task_definition': {'family': 'web', 'containerDefinitions': [box('main', **ecs)]}},
            'task_definition.containerDefinitions[0].%s ' % ecs_field)


@pytest.mark.parametrize('role,ok', [('ecsTaskRole', True), ('ECS-task-full-access', True),
                                     ('arn:aws:iam::123456789012:role/app', True), ('role with space', False),
                                     ('x' * 65, False), ('role/path', False)])
def test_a_task_role_is_an_arn_or_a_role_name(role, ok):
    td = {'family': 'web', 'taskRoleArn': role, 'containerDefinitions': [{'name': 'a', 'image': IMG}]}
    if ok:
        assert spec.task_set({'task_definition': td})[0][0].task_role_arn == role
    else:
        refused({'task_definition': td}, 'task_definition.taskRoleArn', 'role name')


def test_restart_policy_is_checked_naming_the_field():
    box = {'name': 'main', 'image': 'drover.local/busybox:1'}
    ok = spec.task_set({'name': 'web', 'containers': [dict(box, restart_policy={
        'enabled': True, 'ignored_exit_codes': [0, '143'], 'restart_attempt_period': 60})]})[0][0]
    assert dict(ok.containers[0].restart_policy) == {'enabled': True, 'ignored_exit_codes': (0, 143),
                                                     'restart_attempt_period': 60}
    refused({'name': 'web', 'containers': [dict(box, restart_policy={'enabled': True, 'restart_attempt_period': 59})]},
            'containers[0].restart_policy.restart_attempt_period must be from 60 to 1800, got 59')
    refused({'name': 'web', 'containers': [dict(box, restart_policy={'enabled': True, 'ignored_exit_codes': ['x']})]},
            'containers[0].restart_policy.ignored_exit_codes[0] must be a whole number')
    refused({'name': 'web', 'containers': [dict(box, restart_policy={'enabled': True,
                                                                     'ignored_exit_codes': list(range(51))})]},
            'containers[0].restart_policy.ignored_exit_codes has 51 codes: at most 50')
    refused({'name': 'web', 'containers': [box, dict(box, name='side', essential=False,
                                                     restart_policy={'enabled': True})]},
            'containers[1].restart_policy: container side is not essential')
    td = {'family': 'web', 'containerDefinitions': [dict(box, restartPolicy={'enabled': True,
                                                                             'restartAttemptPeriod': 2000})]}
    refused({'task_definition': td},
            'task_definition.containerDefinitions[0].restartPolicy.restartAttemptPeriod must be from 60 to 1800')


def _td_ports(mappings, mode='bridge'):
    return {'family': 'web', 'networkMode': mode,
            'containerDefinitions': [{'name': 'web', 'image': IMG, 'memory': 64, 'portMappings': mappings}]}


@pytest.mark.parametrize('mode,hosts', [('bridge', [None, None, None]), ('awsvpc', [8000, 8001, 8002]),
                                        ('host', [8000, 8001, 8002])])
def test_a_container_port_range_is_published_a_port_each(mode, hosts):
    """ECS's containerPortRange: each port on a free host port (bridge: ECS assigns a host port range), on the
    same port where the task has a namespace of its own or the host's."""
    t = spec.task_set({'task_definition': _td_ports([{'containerPortRange': '8000-8002', 'protocol': 'udp'}], mode),
                       'allow_host_network': True})[0][0]
    assert t.containers[0].port_mappings == tuple(
        settings.PortMapping(8000 + i, host, 'udp') for i, host in enumerate(hosts))
    option = one(containers=[{'name': 'm', 'image': IMG, 'port_mappings': [{'container_port_range': '10-11'}]}])
    assert [p.container_port for p in option.containers[0].port_mappings] == [10, 11]


@pytest.mark.parametrize('mappings,words', [
    ([{'containerPortRange': '8000-8002', 'containerPort': 8000}],
     'task_definition.containerDefinitions[0].portMappings[0]: a mapping gives containerPortRange or containerPort, '
     'not both'),
    ([{'containerPortRange': '8000-8002', 'hostPort': 8000}], 'containerPortRange or hostPort, not both'),
    ([{'containerPortRange': '9000-8000'}], 'task_definition.containerDefinitions[0].portMappings[0].containerPortRange '
                                            'must be a range of ports, first-last'),
    ([{'containerPortRange': '1-65535'}], 'a container publishes at most 1024 ports on this host'),
    ([{'containerPortRange': '8000-8001'}, {'containerPort': 8001}], 'maps the same port twice (8001/tcp)'),
])
def test_a_wrong_port_range_is_refused_naming_it(mappings, words):
    refused({'task_definition': _td_ports(mappings)}, words)


@pytest.mark.parametrize('mappings,mode,words', [
    ([{'containerPort': 80, 'hostPort': 70000}], 'bridge',
     'task_definition.containerDefinitions[0].portMappings[0].hostPort must be at most 65535'),
    ([{'containerPort': 80, 'hostPort': 81}], 'awsvpc',
     'task_definition.containerDefinitions[0].portMappings[0].hostPort 81 differs from its containerPort 80: with '
     'network_mode awsvpc a port is published on the same host port (leave hostPort out, or give 80)'),
    ([{'protocol': 'tcp'}], 'bridge',
     'task_definition.containerDefinitions[0].portMappings[0].containerPort is required (or containerPortRange)'),
])
def test_port_messages_name_fields_as_the_document_does(mappings, mode, words):
    message = refused({'task_definition': _td_ports(mappings, mode)}, words)
    assert not [w for w in ('host_port', 'container_port', 'port_mappings') if w in message], message


def test_awsvpc_port_clash_is_named_as_the_document_does():
    td = {'family': 'web', 'networkMode': 'awsvpc', 'containerDefinitions': [
        {'name': n, 'image': IMG, 'memory': 64, 'portMappings': [{'containerPort': 80}]} for n in ('a', 'b')]}
    refused({'task_definition': td}, 'task_definition.containerDefinitions[1].portMappings[0]: port 80/tcp is mapped '
                                     'by container a too')
