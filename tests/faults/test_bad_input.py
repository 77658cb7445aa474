# -*- coding: utf-8 -*-
"""Bad input across every module: a table of invalid declarations, and declarations made by hypothesis from
a valid one with one field replaced by a value of any shape. Each must either converge or fail with a `msg`
that names the field, never with a traceback; a failure changes nothing (the engine's drover containers, the
network namespaces, the links, and every row of the store compared before and after)."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys
import uuid

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
from helpers import store_rows  # noqa: E402  pylint: disable=wrong-import-position
from sweep import register  # noqa: E402  pylint: disable=wrong-import-position

IMAGE = 'drover.local/busybox:1'
ROLE = 'arn:aws:iam::123456789012:role/bad'
MAC = '02:00:c6:12:bb:01'
TOKEN = register('ghp_sentinel_bad_input_%s' % uuid.uuid4().hex)


def box(name='main', **kw):
    return dict({'name': name, 'image': IMAGE, 'command': ['sleep', '60']}, **kw)


def task(**kw):
    return dict({'name': 'badtask', 'containers': [box()]}, **kw)


def pool(**kw):
    args = {'pool': 'badpool', 'repository': 'octo/app', 'labels': ['self-hosted'], 'token': TOKEN,
            'api_url': 'http://127.0.0.1:9', 'profile': {'name': 'p', 'image': 'drover.local/runner:1', 'slots': 1}}
    args.update(kw)
    return dict((k, v) for k, v in args.items() if v is not None)


# (module, arguments, words the msg must hold). At least 40, over every module that changes the host.
TABLE = [
    # ecs_task: names, containers, images, resources
    ('ecs_task', task(name='Bad Name'), ('name',)),
    ('ecs_task', task(name=''), ('name',)),
    ('ecs_task', task(containers=[]), ('containers',)),
    ('ecs_task', task(containers=[{'name': 'main'}]), ('image',)),
    ('ecs_task', task(containers=[box(), box()]), ('used twice',)),
    ('ecs_task', task(containers=[box(image='UPPER/case')]), ('image',)),
    ('ecs_task', task(containers=[box(memory=2)]), ('memory', 'at least 6')),
    ('ecs_task', task(containers=[box(memory=-5)]), ('memory',)),
    ('ecs_task', task(containers=[box(cpu=-1)]), ('cpu',)),
    ('ecs_task', task(containers=[box(command='sleep 60')]), ('command', 'list')),
    ('ecs_task', task(containers=[box(gpu=-1)]), ('gpu',)),
    ('ecs_task', task(containers=[box(port_mappings=[{'container_port': 0}])]), ('container_port',)),
    ('ecs_task', task(containers=[box(port_mappings=[{'container_port': 80, 'host_port': 70000}])]), ('host_port',)),
    ('ecs_task', task(containers=[box(environment={'A=B': 'x'})]), ('environment',)),
    ('ecs_task', task(containers=[box(essential=False)]), ('essential',)),
    # ecs_task: task definitions, purge, tasks lists
    ('ecs_task', {'name': 'x', 'task_definition': {'family': 'x', 'containerDefinitions': [
        {'name': 'a', 'image': IMAGE, 'secrets': [{'name': 'A', 'valueFrom': 'arn:aws:ssm:us-east-1:1:parameter/a'}]}]}},
     ('containerDefinitions[0].secrets[0].valueFrom', 'no 12-digit AWS account ID')),
    ('ecs_task', {'name': 'x', 'task_definition': {'family': 'x', 'containerDefinitions': [
        dict(box(), privileged=True)]}}, ('containerDefinitions[0].privileged', 'allow_privileged')),
    ('ecs_task', {'name': 'x', 'bind_paths': ['/srv'], 'task_definition': {'family': 'x', 'volumes': [
        {'name': 'etc', 'host': {'sourcePath': '/etc'}}], 'containerDefinitions': [box()]}}, ('volumes[0]', '/etc')),
    ('ecs_task', {'name': 'x', 'task_definition': {'family': 'x', 'containerDefinitions': [
        {'name': 'a', 'image': '<IMAGE1_NAME>'}]}}, ('containerDefinitions[0].image', 'placeholder')),
    ('ecs_task', {'task_definition': {'containerDefinitions': [{'name': 'a', 'image': IMAGE}]}}, ('family',)),
    ('ecs_task', {'name': 'x', 'task_definition': {'family': 'x', 'containerDefinitions': 'a'}},
     ('containerDefinitions',)),
    ('ecs_task', task(purge=True), ('purge',)),
    ('ecs_task', {'tasks': [task(bogus=1)]}, ('tasks[0]', 'bogus')),
    ('ecs_task', {'tasks': [task(), task(containers=[box(memory=64)])]}, ('badtask',)),
    ('ecs_task', {'tasks': ['web']}, ('tasks',)),
    # ecs_task: networks, roles, registries, GPUs
    ('ecs_task', task(network_mode='awsvpc', awsvpc={'routes': [{'dst': '198.19.0.0/16', 'gateway': '198.18.9.1'}]}),
     ('awsvpc.routes', 'awsvpc.eni_mac')),
    ('ecs_task', task(network_mode='awsvpc', containers=[box(port_mappings=[{'container_port': 80, 'host_port': 81}])]),
     ('host_port 81 differs',)),
    ('ecs_task', task(network_mode='host'), ('network_mode is host', 'allow_host_network')),
    ('ecs_task', {'task_definition': {'family': 'badtask', 'networkMode': 'host', 'containerDefinitions': [box()]}},
     ('task_definition.networkMode is host', 'allow_host_network')),
    ('ecs_task', task(containers=[box(capabilities={'add': ['NET_PWN']})]), ('containers[0].capabilities.add[0]',)),
    ('ecs_task', {'name': 'x', 'task_definition': {'family': 'x', 'containerDefinitions': [
        dict(box(), linuxParameters={'capabilities': {'add': ['NET_RAW']}, 'privileged': True})]}},
     ('linuxParameters', 'privileged')),
    ('ecs_task', task(network_mode='awsvpc', awsvpc={'eni_mac': 'nope', 'address': '198.18.9.2/24'}), ('eni_mac',)),
    ('ecs_task', task(network_mode='awsvpc', awsvpc={'eni_mac': MAC, 'address': '198.18.9.2'}), ('address',)),
    ('ecs_task', task(network_mode='awsvpc', awsvpc={'eni_mac': MAC, 'address': '198.18.9.2/24', 'dhcp': True}),
     ('dhcp',)),
    ('ecs_task', task(cred_id='x'), ('cred_id needs task_role_arn',)),
    ('ecs_task', task(task_role_arn=ROLE, cred_id='bad/id'), ('cred_id',)),
    ('ecs_task', task(task_role_arn='web task'), ('task_role_arn', 'ARN')),
    ('ecs_task', task(registry_auth={'registry': 'r.example'}), ('registry_auth.username',)),
    ('ecs_task', task(registry_auth={'registry': 'r.example', 'ecr': True, 'username': 'someone',
                                     'password': 'not-with-ecr-1f2e'}), ('ecr', 'mutually exclusive')),
    ('ecs_task', task(gpu_discovery='static'), ('gpu_devices',)),
    # options with sub-options given something that is not a mapping (found by the hypothesis test below)
    ('ecs_task', task(awsvpc=False), ('awsvpc must be a mapping, got bool',)),
    ('ecs_task', task(registry_auth=7), ('registry_auth must be a mapping, got int',)),
    ('ecs_task', task(state='paused'), ('state',)),
    # ecs_task: patterns end at the very end; bounds as ECS has them
    ('ecs_task', task(cluster='x\n'), ('cluster', 'not a valid name')),
    ('ecs_task', task(task_role_arn=ROLE, cred_id='web\n'), ('cred_id',)),
    ('ecs_task', task(containers=[box(image=IMAGE + '\n')]), ('containers[0].image',)),
    ('ecs_task', task(containers=[box('c%d' % i) for i in range(300)]), ('containers lists 300', 'at most 10')),
    ('ecs_task', task(containers=[box(environment={'BIG': 'x' * (10 << 20)})]),
     ('containers[0].environment', 'at most 65536')),
    # task_netns
    ('task_netns', {'name': 'badnet', 'eni_mac': '02:00:c6:zz:00:10', 'address': '198.18.9.2/24'}, ('eni_mac',)),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2'}, ('address', 'prefix length')),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2/24', 'dhcp': True}, ('dhcp',)),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC}, ('address', 'dhcp')),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2/24', 'gateway': '198.18.10.1'},
     ('gateway', 'subnet')),
    ('task_netns', {'name': 'badnet', 'eni_mac': '03:00:c6:12:00:10', 'address': '198.18.9.2/24'}, ('multicast',)),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2/24', 'routes': [{'dst': '10.0.0.0/8'}]},
     ('routes[0]', 'gateway')),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2/24', 'wait_timeout': -1},
     ('wait_timeout',)),
    # gpu_pin
    ('gpu_pin', {'task': 'badgpu', 'container': 'main', 'count': -1, 'discovery': 'static', 'devices': ['GPU-a']},
     ('count',)),
    ('gpu_pin', {'task': 'badgpu', 'container': 'main', 'count': 1, 'discovery': 'static'}, ('devices',)),
    ('gpu_pin', {'task': 'badgpu', 'container': 'main', 'count': 1, 'discovery': 'static', 'devices': ['GPU-a', 'GPU-a']},
     ('devices', 'twice')),
    ('gpu_pin', {'task': '', 'container': 'main', 'count': 1, 'discovery': 'static', 'devices': ['GPU-a']}, ('task',)),
    # gh_runner_slot
    ('gh_runner_slot', pool(labels=[]), ('labels',)),
    ('gh_runner_slot', pool(profile={'name': 'p', 'image': 'drover.local/runner:1', 'slots': 0}), ('slots',)),
    ('gh_runner_slot', pool(repository='noowner'), ('owner/name',)),
    ('gh_runner_slot', pool(profile={'name': 'p', 'image': 'drover.local/runner:1', 'slots': 1, 'memory': 4}),
     ('memory', 'at least 6')),
    ('gh_runner_slot', pool(organization='octo-org'), ('mutually exclusive',)),
    ('gh_runner_slot', pool(app_id=1, app_private_key='-----BEGIN RSA PRIVATE KEY-----', installation_id=2),
     ('mutually exclusive',)),
    ('gh_runner_slot', pool(token=None), ('auth',)),
    ('gh_runner_slot', pool(hold_until='tomorrow'), ('hold_until',)),
    ('gh_runner_slot', pool(pool=None, pools=[{'pool': 'a', 'repository': 'octo/a'}, {'pool': 'a', 'repository': 'octo/a'}]),
     ('pools[1]', 'more than once')),
    ('gh_runner_slot', pool(warm=-1), ('warm',)),
    ('gh_runner_slot', pool(profile=True), ('profile must be a mapping, got bool',)),
    ('gh_runner_slot', pool(name_prefix='a-b'), ('name_prefix',)),
    ('gh_runner_slot', pool(repository='octo/..'), ('repository', 'GitHub names')),
    ('gh_runner_slot', pool(repository=None, organization='octo-'), ('organization',)),
    ('gh_runner_slot', pool(machine_id='web-2'), ('machine_id',)),
    ('gh_runner_slot', pool(profile={'name': 'p', 'image': 'drover.local/runner:1', 'slots': 1,
                                     'environment': {'BIG': 'x' * 70000}}), ('profile.environment', 'at most 65536')),
    ('gh_runner_slot', pool(profile={'name': 'p', 'image': 'drover.local/runner:1', 'slots': 1, 'network_mode': 'host'}),
     ('profile.network_mode is host', 'allow_host_network')),
    ('gh_runner_slot', pool(profile={'name': 'p', 'image': 'drover.local/runner:1', 'slots': 1,
                                     'capabilities': {'drop': ['RAW']}}), ('profile.capabilities.drop[0]',)),
]


def netns_and_links():
    ns = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(['ip', '-o', 'link', 'show'], capture_output=True, text=True, check=True).stdout
    return (sorted(line.split()[0] for line in ns.splitlines()),
            sorted(line.split(': ')[1].split('@')[0] for line in links.splitlines()))


def host_state(engine, store_path):
    boxes = sorted((c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.role'}))
    return {'containers': boxes, 'net': netns_and_links(), 'store': store_rows(store_path)}


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / 'state' / 'store.db')


def test_the_table_has_forty_cases_over_every_changing_module():
    assert len(TABLE) >= 40
    assert set(m for m, a, w in TABLE) == {'ecs_task', 'task_netns', 'gpu_pin', 'gh_runner_slot'}


@pytest.mark.parametrize('module,args,words', TABLE, ids=['%s-%d' % (m, i) for i, (m, a, w) in enumerate(TABLE)])
def test_bad_input_fails_naming_the_field_and_changes_nothing(module_runner, engine, store_path, module, args, words):
    before = host_state(engine, store_path)
    for check in (True, False):
        result = module_runner(module, dict(args, store_path=store_path), check=check)
        assert result.failed, (module, args, result)
        assert all(w in result['msg'] for w in words), (words, result['msg'])
        assert 'Traceback' not in result['msg'] and 'exception' not in result, result
        assert TOKEN not in json.dumps(result)
    assert host_state(engine, store_path) == before


RELATIVE = [
    ('ecs_task', task()),
    ('task_netns', {'name': 'badnet', 'eni_mac': MAC, 'address': '198.18.9.2/24', 'gateway': '198.18.9.1'}),
    ('gpu_pin', {'task': 'badgpu', 'container': 'main', 'count': 1, 'discovery': 'static', 'devices': ['GPU-a']}),
    ('gh_runner_slot', pool()),
    ('ecs_task_info', {}),
    ('gpu_info', {'discovery': 'static', 'devices': ['GPU-a']}),
    ('gh_runner_info', {}),
]


@pytest.mark.parametrize('module,args', RELATIVE, ids=[m for m, a in RELATIVE])
def test_a_relative_store_path_is_refused_by_every_module(module_runner, engine, tmp_path, module, args):
    """Found by the bad role variables table (tests/faults/test_playbooks.py): a relative store path made a new,
    empty store wherever the module ran."""
    before = host_state(engine, str(tmp_path / 'none.db'))
    here = os.getcwd()
    os.chdir(str(tmp_path))
    try:
        for check in (True, False):
            result = module_runner(module, dict(args, store_path='relative/store.db'), check=check)
            assert result.failed and result['msg'] == "store_path must be an absolute path, got 'relative/store.db'", result
    finally:
        os.chdir(here)
    assert not (tmp_path / 'relative').exists()
    assert host_state(engine, str(tmp_path / 'none.db')) == before


# --- hypothesis: one field of a valid declaration replaced by anything -------------------------------------

ANYTHING = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 6, 10 ** 6) | st.floats(allow_nan=False) |
    st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)
TASK_FIELDS = ['name', 'network_mode', 'restart', 'pull', 'state', 'stop_reason', 'task_role_arn', 'cred_id',
               'containers', 'task_definition', 'awsvpc', 'registry_auth']
CONTAINER_FIELDS = ['name', 'image', 'command', 'entrypoint', 'environment', 'essential', 'cpu', 'memory',
                    'port_mappings', 'gpu', 'capabilities']


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(['task', 'container']), field=st.data(), value=ANYTHING)
def test_any_value_in_any_field_converges_or_fails_cleanly(module_runner, engine, tmp_path, where, field, value):
    cluster = 'h%s' % uuid.uuid4().hex[:8]
    store_path = str(tmp_path / cluster / 'store.db')
    declared = {'name': cluster + '-t', 'cluster': cluster, 'containers': [box()], 'store_path': store_path}
    if where == 'task':
        declared[field.draw(st.sampled_from(TASK_FIELDS))] = value
    else:
        declared['containers'] = [dict(box(), **{field.draw(st.sampled_from(CONTAINER_FIELDS)): value})]
    before = host_state(engine, store_path)
    try:
        result = module_runner('ecs_task', declared)
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
            c.remove(force=True)
    event('failed' if result.failed else 'converged: %s' % (result.get('task') or {}).get('last_status'))
    if result.failed:
        assert result.get('msg') and 'Traceback' not in result['msg'] and 'exception' not in result, result
        assert host_state(engine, store_path) == before, result['msg']
