"""drover.fleet.validate_roles: the action the playbooks check every role's variables with, in one task."""
from __future__ import absolute_import, division, print_function

import pytest
import yaml

from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.playbook.task import Task
from ansible.plugins.connection.local import Connection
from ansible.template import Templar, trust_as_template

from ansible_collections.drover.fleet.plugins.action import validate_roles as plugin_mod

ROLES = ('host', 'tasks', 'runner_pools')       # the roles the playbooks run, each with a `validate` entry point


def action(args, task_vars):
    task = Task.load({'action': 'drover.fleet.validate_roles', 'args': args})
    loader = DataLoader()
    context = PlayContext()
    connection = Connection(context)
    module = plugin_mod.ActionModule(task, connection, context, loader, Templar(loader=loader, variables=task_vars),
                                     None)
    return module.run(task_vars=task_vars)


@pytest.mark.parametrize('role', ROLES)
def test_the_spec_is_the_role_entry_point(role):
    with open('%s/%s/meta/argument_specs.yml' % (plugin_mod.ROLES_DIR, role)) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    assert plugin_mod.role_options(role, 'validate') == specs['validate']['options']
    assert plugin_mod.role_options('drover.fleet.' + role, 'main') == specs['main']['options']
    # the `validate` entry point checks what `main` checks
    assert specs['validate']['options'] == specs['main']['options']


def test_a_role_without_that_entry_point_says_which_it_has():
    assert 'drover_reconcile_timer_name' in plugin_mod.role_options('reconcile_timer', 'main')
    with pytest.raises(AnsibleActionFail) as caught:
        plugin_mod.role_options('reconcile_timer', 'validate')
    assert "entry_point: the role reconcile_timer has no entry point 'validate' (it has: main)" == str(caught.value)


@pytest.mark.parametrize('role,entry_point,words', [
    ('nosuchrole', 'validate', ['roles', 'nosuchrole']),
    ('../host', 'validate', ['roles', '../host']),
    ('community.docker.host', 'validate', ['roles', 'community.docker.host']),
    ('host', 'nosuchentry', ['entry_point', 'nosuchentry', 'main, validate']),
])
def test_an_unknown_role_or_entry_point_is_named(role, entry_point, words):
    with pytest.raises(AnsibleActionFail) as caught:
        action({'roles': [role], 'entry_point': entry_point}, {})
    for word in words:
        assert word in str(caught.value)


def test_every_role_variable_is_checked_and_each_error_named_once():
    task_vars = {
        'drover_tasks': [{'name': 'web', 'restart': 'sometimes', 'containers': []}],
        'drover_pools': [{'pool': 'p1', 'scale': 'sometimes'}],
        'drover_host_install_engine': 'perhaps',
        'drover_allow_host_network': 'perhaps',      # declared by tasks and runner_pools: one message, not two
        'drover_store_path': trust_as_template('{{ state_dir }}/store.db'),     # as inventory variables are
        'state_dir': '/srv/drover',
    }
    result = action({'roles': ['host', 'tasks', 'runner_pools']}, task_vars)
    assert result['failed'] is True and result['changed'] is False
    assert result['validated_roles'] == ['host', 'tasks', 'runner_pools']
    errors = result['argument_errors']
    assert result['msg'] == 'Validation of arguments failed:\n' + '\n'.join(errors)
    assert [e for e in errors if 'restart' in e and 'sometimes' in e and 'drover_tasks' in e]
    assert [e for e in errors if 'scale' in e and 'sometimes' in e]
    assert [e for e in errors if 'drover_host_install_engine' in e]
    assert len([e for e in errors if 'drover_allow_host_network' in e]) == 1
    assert len(errors) == 4, errors


def test_good_and_templated_variables_pass():
    task_vars = {'drover_tasks': [], 'drover_pools': [], 'drover_allow_privileged': trust_as_template('{{ wanted }}'),
                 'wanted': False, 'drover_store_path': trust_as_template('{{ state_dir }}/store.db'),
                 'state_dir': '/srv/drover', 'unrelated': 'x'}
    result = action({'roles': ['host', 'tasks', 'runner_pools']}, task_vars)
    assert not result.get('failed'), result
    assert result['changed'] is False and 'argument_errors' not in result
    # a template that makes a bad value is checked as what it makes
    task_vars['wanted'] = 'perhaps'
    assert [e for e in action({'roles': ['tasks']}, task_vars)['argument_errors'] if 'drover_allow_privileged' in e]


def test_only_the_named_roles_are_checked():
    bad_pools = {'drover_pools': 'notalist-of-pools'}
    assert action({'roles': ['runner_pools']}, bad_pools)['failed'] is True
    assert not action({'roles': ['tasks']}, bad_pools).get('failed')


def test_a_no_log_value_is_in_no_message(monkeypatch):
    secret = 'S3cr3t-registry-password'
    spec = {'drover_registry_password': {'type': 'str', 'no_log': True, 'choices': ['a', 'b']},
            'drover_pools': {'type': 'list', 'elements': 'dict', 'options': {
                'token': {'type': 'int', 'no_log': True}}}}
    monkeypatch.setattr(plugin_mod, 'role_options', lambda role, entry_point: spec)
    given = {'drover_registry_password': secret, 'drover_pools': [{'token': secret}]}
    result = action({'roles': ['runner_pools']}, given)
    assert result['failed'] is True
    assert len(result['argument_errors']) == 2, result['argument_errors']
    assert secret not in repr(result)


def test_a_pool_with_docker_for_its_jobs_passes_the_role_s_check():
    """The role's check took a pool's profile as the role once wrote it (no `docker`): every pool declared in the
    inventory with Docker for its jobs was refused."""
    pool = {'pool': 'ci', 'repository': 'octo/app', 'labels': ['self-hosted'], 'hold_until': '2026-01-01T00:00:00Z',
            'profile': {'name': 'dind', 'image': 'runner:1', 'slots': 2, 'docker': 'rootless',
                        'capabilities': {'add': ['NET_RAW']},
                        'caches': [{'name': 'npm', 'path': '/cache', 'scope': 'slot'}]}}
    result = action({'roles': ['runner_pools']}, {'drover_pools': [pool], 'drover_pools_slot_subid_floor': 300000})
    assert not result.get('failed'), result
    result = action({'roles': ['runner_pools']}, {'drover_pools': [dict(pool, profile=dict(
        pool['profile'], docker='vm'))]})
    assert result['failed'] and any('docker' in e and 'vm' in e for e in result['argument_errors']), result
