# -*- coding: utf-8 -*-
"""The Salt states check their arguments against the Ansible modules' own argument specs (front/argspecs.py): the
same declaration gives the core the same parameters, defaults included, as AnsibleModule gives it; a bad one
is refused naming the option. No Salt, no engine: the extension's core.py imports neither."""

from __future__ import absolute_import, division, print_function

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from saltext.drover import core

CASES = [
    (_argspecs.ecs_task_spec, _argspecs.ECS_TASK_RULES,
     {'name': 'web', 'containers': [{'name': 'main', 'image': 'busybox', 'memory': 64}]}),
    (_argspecs.ecs_task_spec, _argspecs.ECS_TASK_RULES,
     {'cluster': 'prod', 'purge': True, 'tasks': [{'name': 'a', 'containers': [{'name': 'm', 'image': 'b'}],
                                                    'registry_auth': {'registry': 'r', 'password': 'x'}}]}),
    (_argspecs.gh_runner_slot_spec, _argspecs.GH_RUNNER_SLOT_RULES,
     {'pool': 'ci', 'repository': 'o/r', 'token': 't', 'profile': {'name': 's', 'image': 'i', 'slots': 2}}),
    (_argspecs.task_netns_spec, _argspecs.TASK_NETNS_RULES, {'name': 'web', 'eni_mac': '02:00:00:00:00:01'}),
    (_argspecs.gpu_pin_spec, {}, {'task': 't', 'container': 'c', 'count': 1}),
    (_argspecs.ecs_task_info_spec, {}, {}),
]


@pytest.mark.parametrize('make_spec, rules, given', CASES)
def test_same_parameters_as_ansible(make_spec, rules, given):
    spec = make_spec()
    ansible = ArgumentSpecValidator(spec, **rules).validate(dict(given))
    assert not ansible.error_messages
    assert core.check(make_spec(), dict(given), rules) == ansible.validated_parameters


@pytest.mark.parametrize('given, named', [
    ({'name': 'web', 'restart': 'sometimes'}, 'restart'),
    ({'name': 'web', 'timeout': 'soon'}, 'timeout'),
    ({'name': 'web', 'colour': 'red'}, 'colour'),
    ({'name': 'web', 'containers': [{'name': 'm', 'image': 'i'}], 'task_definition': {}}, 'task_definition'),
    ({'name': 'web', 'registry_auth': {'password': 'x'}}, 'registry_auth.registry'),
    ({'name': 'web', 'gpu_discovery': 'static'}, 'gpu_devices'),
])
def test_refused_naming_the_option(given, named):
    with pytest.raises(core.Invalid) as err:
        core.check(_argspecs.ecs_task_spec(), given, _argspecs.ECS_TASK_RULES)
    assert named in str(err.value)


def test_secrets_are_hidden_at_any_depth():
    given = {'pools': [{'pool': 'a', 'token': 'tok-1', 'profile': {'registry_auth': {'password': 'pw-2'}}}],
             'app_private_key': 'line1\nline2'}
    hidden = core.secrets(_argspecs.gh_runner_slot_spec(), given, (('pools', 'token'), ('pools', 'profile', 'registry_auth', 'password')))
    out = core.redact({'msg': 'bad tok-1 and pw-2', 'list': [repr('line1\nline2')]}, hidden)
    assert 'tok-1' not in repr(out) and 'pw-2' not in repr(out) and 'line1' not in repr(out), out


def test_pillar_key_reads_plain_values_and_arguments_win():
    pillar = {'drover': {'tasks': {'cluster': 'prod', 'purge': True}}}
    assert core.state_args({'pillar_key': 'drover:tasks', 'purge': False, '__id__': 'x'}, pillar) == \
        {'cluster': 'prod', 'purge': False}
    with pytest.raises(core.Invalid):
        core.state_args({'pillar_key': 'drover:nothing'}, pillar)


def test_the_host_s_options_come_as_arguments_never_from_the_declarations_pillar():
    pillar = {'drover': {'tasks': {'cluster': 'prod', 'allow_privileged': True, 'log_addresses': ['udp://x:1']}}}
    reserved = _argspecs.ECS_TASK_POLICY + _argspecs.HOST_OWN
    with pytest.raises(core.Invalid) as err:
        core.state_args({'pillar_key': 'drover:tasks'}, pillar, reserved)
    assert str(err.value) == ('pillar_key drover:tasks: allow_privileged, log_addresses are the host\'s own (its engine, '
                              'its store, its AWS endpoint, its policy), given as the state\'s arguments (the example '
                              'state takes them from the minion\'s configuration, drover.host and drover.policy), never '
                              'with the declarations')
    # As the state's arguments (from drover:policy), they are taken.
    assert core.state_args({'pillar_key': 'drover:tasks', 'allow_privileged': True},
                           {'drover': {'tasks': {'cluster': 'prod'}}}, reserved) == {'cluster': 'prod',
                                                                                     'allow_privileged': True}
    # Every host option of the module is one of them (a new one cannot be forgotten).
    spec = _argspecs.ecs_task_spec()
    assert set(reserved) <= set(spec)
