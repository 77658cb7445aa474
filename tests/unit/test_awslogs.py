# -*- coding: utf-8 -*-
"""awslogs: the host's log policy (mapped to local by default, served with aws_logs), the options a task may
declare, and the engine options they become (ECS's stream naming, the module's region and endpoint, the
execution role's credential path)."""

from __future__ import absolute_import, division, print_function

import glob
import json
import os

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.aws import awslogs
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IMG = 'drover.local/busybox:1'
CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), '..', 'shared',
                      'ecs-task-definitions')
GOOD = {'awslogs-group': '/ecs/web', 'awslogs-region': 'eu-west-1', 'awslogs-stream-prefix': 'web'}


def td(options, driver='awslogs'):
    return {'family': 'web', 'containerDefinitions': [{
        'name': 'main', 'image': IMG, 'logConfiguration': {'logDriver': driver, 'options': options}}]}


def decl(options, host, driver='awslogs'):
    return spec.task({'name': 'web', 'task_definition': td(options, driver)}, host=host)


def log_of(task):
    config = dict(task.containers[0].log_configuration)
    return config['log_driver'], dict(config.get('options') or ())


def test_default_policy_maps_awslogs_to_local_with_a_warning():
    for host in ({}, {'aws_logs': False}, {'aws_logs': False, 'log_drivers': ['local']}):
        task = decl(GOOD, host)
        assert log_of(task) == ('local', {})
        assert len(task.warnings) == 1 and 'awslogs cannot be served on this host' in task.warnings[0]
        assert 'logConfiguration.logDriver' in task.warnings[0]
        assert not awslogs.served(task.containers)


def test_aws_logs_serves_awslogs_whatever_the_map_and_the_allowed_list():
    for host in ({'aws_logs': True}, {'aws_logs': True, 'log_drivers': ['local'], 'log_driver_map': {'awslogs': 'local'}}):
        task = decl(GOOD, host)
        assert log_of(task) == ('awslogs', GOOD) and list(task.warnings) == []
        assert awslogs.served(task.containers)
    # The other mappings stay.
    task = decl({}, {'aws_logs': True}, driver='splunk')
    assert log_of(task) == ('local', {}) and [w for w in task.warnings if 'splunk' in w]
    # A served awslogs changes the task (its spec hash), as a changed driver does.
    assert decl(GOOD, {'aws_logs': True}).spec_hash != decl(GOOD, {}).spec_hash


@pytest.mark.parametrize('options, words', [
    ({'awslogs-region': 'r'}, ['options.awslogs-group is required']),
    ({'awslogs-group': 'g'}, ['options.awslogs-region is required', "module's aws_region"]),
    (dict(GOOD, **{'awslogs-credentials-endpoint': '/v2/credentials/other'}), ['options.awslogs-credentials-endpoint is set by']),
    (dict(GOOD, **{'awslogs-stream': 's'}), ['options.awslogs-stream is set by']),
    (dict(GOOD, tag='t'), ['options.tag is set by']),
    (dict(GOOD, **{'awslogs-colour': 'blue'}), ['options.awslogs-colour is not an option', 'awslogs-stream-prefix']),
    (dict(GOOD, **{'awslogs-create-group': 'yes'}), ['options.awslogs-create-group must be true or false']),
    (dict(GOOD, **{'awslogs-stream-prefix': 'a:b'}), ['options.awslogs-stream-prefix must be']),
])
def test_bad_options_are_refused_naming_the_field(options, words):
    with pytest.raises(SpecError) as err:
        decl(options, {'aws_logs': True})
    assert str(err.value).startswith('task_definition.containerDefinitions[0].logConfiguration.options.'), str(err.value)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_the_region_may_come_from_the_module():
    task = decl({'awslogs-group': 'g'}, {'aws_logs': True, 'region': 'eu-central-1'})
    assert log_of(task) == ('awslogs', {'awslogs-group': 'g'})


def test_the_native_form_names_its_own_fields():
    raw = {'name': 'web', 'containers': [{'name': 'main', 'image': IMG, 'log_configuration': {
        'log_driver': 'awslogs', 'options': {'awslogs-region': 'r'}}}]}
    with pytest.raises(SpecError) as err:
        spec.task(raw, host={'aws_logs': True})
    assert 'containers[0].log_configuration.options.awslogs-group is required' in str(err.value)
    bool_opt = {'awslogs-group': 'g', 'awslogs-region': 'r', 'awslogs-create-group': True}
    raw['containers'][0]['log_configuration']['options'] = bool_opt
    assert log_of(spec.task(raw, host={'aws_logs': True}))[1]['awslogs-create-group'] == 'true'


def test_engine_options_as_the_ecs_agent_gives_them():
    opts = tuple(sorted(dict(GOOD, **{'awslogs-create-group': 'true'}).items()))
    assert awslogs.engine_options(opts, 'main', 'web', 'c0ffee', 'us-east-1', 'http://127.0.0.1:5000') == {
        'awslogs-group': '/ecs/web', 'awslogs-region': 'eu-west-1', 'awslogs-stream': 'web/main/web',
        'awslogs-create-group': 'true', 'awslogs-endpoint': 'http://127.0.0.1:5000',
        'awslogs-credentials-endpoint': '/v2/credentials/c0ffee'}
    # Declared region and endpoint win; no prefix: the engine names the stream (the container's ID); no
    # execution role: the engine's own credentials.
    mine = {'awslogs-group': 'g', 'awslogs-endpoint': 'https://logs.example'}
    assert awslogs.engine_options(tuple(mine.items()), 'main', 'web', None, 'us-east-1', 'http://other') == {
        'awslogs-group': 'g', 'awslogs-endpoint': 'https://logs.example', 'awslogs-region': 'us-east-1'}
    assert awslogs.stream('p', 'c', 't') == 'p/c/t'
    assert awslogs.credentials_path('x') == '/v2/credentials/x'


def test_the_credential_id_is_read_back_from_the_engine_s_log_configuration():
    ident = 'c0ffee' * 5 + 'ab'
    path = awslogs.credentials_path(ident)
    assert awslogs.cred_id_of({'Type': 'awslogs', 'Config': {'awslogs-credentials-endpoint': path}}) == ident
    for other in ({'Type': 'local', 'Config': {'awslogs-credentials-endpoint': path}}, {'Type': 'awslogs', 'Config': {}},
                  {'Type': 'awslogs', 'Config': {'awslogs-credentials-endpoint': path + '/..'}},
                  {'Type': 'awslogs', 'Config': {'awslogs-credentials-endpoint': '/v2/credentials/short'}}, {}, None):
        assert awslogs.cred_id_of(other) is None, other


def test_the_awslogs_options_of_real_task_definitions_are_taken():
    # The corpus of real task definitions: every awslogs configuration with a group is taken as it is written
    # (awslogs-create-group "True" included), the module's region standing in where one has none; one with no
    # group is refused, naming it.
    taken, refused = 0, []
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path) as handle:
            doc = json.load(handle)
        doc = doc.get('taskDefinition', doc) if isinstance(doc, dict) else None
        for i, cd in enumerate((doc or {}).get('containerDefinitions') or ()):
            log = cd.get('logConfiguration') or {} if isinstance(cd, dict) else {}
            if log.get('logDriver') != 'awslogs':
                continue
            options = tuple(sorted((log.get('options') or {}).items()))
            try:
                awslogs.check(options, 'x[%d]' % i, 'us-east-1')
                taken += 1
            except SpecError as exc:
                refused.append((os.path.basename(path), str(exc)))
    assert taken >= 89, (taken, refused)
    assert all('awslogs-group is required' in why for dummy, why in refused), refused
