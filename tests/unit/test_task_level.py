# -*- coding: utf-8 -*-
"""The task level of a declaration: units, placement expressions, runtime platform, volumes, refusals by name,
the spec hash, and the cgroup files written (against a directory standing in for /sys/fs/cgroup)."""

from __future__ import absolute_import, division, print_function

import os

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.host import cgroup
from ansible_collections.drover.fleet.plugins.module_utils.tasks import placement
from ansible_collections.drover.fleet.plugins.module_utils.tasks import level
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks.spec import SpecError

IMG = 'drover.local/busybox:1'


def one(machine='x86_64', **kw):
    raw = {'name': 'web', 'containers': [{'name': 'main', 'image': IMG}]}
    raw.update(kw)
    return spec.task_set(raw, machine)[0][0]


def td_task(machine='x86_64', params=None, **td):
    doc = {'family': 'web', 'containerDefinitions': [{'name': 'main', 'image': IMG, 'memory': 32}]}
    doc.update(td)
    raw = {'task_definition': doc}
    raw.update(params or {})
    return spec.task_set(raw, machine)[0][0]


def refused(fn, *words):
    with pytest.raises(SpecError) as err:
        fn()
    for word in words:
        assert word in str(err.value), str(err.value)
    return str(err.value)


# --- the spec hash ------------------------------------------------------------------------------------------

def test_a_task_without_the_new_fields_hashes_as_before():
    # Both values were computed before the task level existed.
    t = spec.task_set({'name': 'web', 'cluster': 'prod', 'containers': [
        {'name': 'main', 'image': IMG, 'command': ['sleep', '60'], 'memory': 64, 'cpu': 256}]})[0][0]
    assert t.spec_hash == '7baa4ca508f7767f'
    t = spec.task_set({'task_definition': {'family': 'api', 'networkMode': 'bridge', 'containerDefinitions': [
        {'name': 'app', 'image': IMG, 'memory': 128, 'essential': True}]}})[0][0]
    assert t.spec_hash == 'f30b9e631accfb12'


@pytest.mark.parametrize('extra', [
    {'cpu': 512}, {'memory': 256}, {'volumes': [{'name': 'd'}]}, {'ipc_mode': 'task'}, {'pid_mode': 'task'},
    {'runtime_platform': {'cpu_architecture': 'X86_64'}},
    {'placement_constraints': [{'type': 'distinctInstance'}]},
])
def test_each_new_field_changes_the_hash(extra):
    assert one(**extra).spec_hash != one().spec_hash


def test_both_forms_hash_the_same_and_may_not_contradict():
    a = td_task(cpu='512', memory='1 GB')
    b = td_task(params={'cpu': 512, 'memory': 1024})
    c = td_task(cpu='0.5 vCPU', memory='1024')
    assert a.spec_hash == b.spec_hash == c.spec_hash and (a.cpu, a.memory) == (512, 1024)
    refused(lambda: td_task(params={'cpu': '1024'}, cpu='512'), 'cpu contradicts task_definition.cpu')


# --- units --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('value, units', [
    (1024, 1024), ('1024', 1024), ('1 vCPU', 1024), ('0.5 vCPU', 512), ('0.25vcpu', 256), ('2 vCPUs', 2048),
    (' 256 ', 256), ('.125 vCPU', 128)])
def test_cpu_units(value, units):
    assert level.cpu_units(value, 'cpu') == units


@pytest.mark.parametrize('value, mib', [
    (2048, 2048), ('2048', 2048), ('2 GB', 2048), ('0.5GB', 512), ('1gb', 1024), ('6', 6)])
def test_memory_units(value, mib):
    assert level.memory_mib(value, 'memory') == mib


@pytest.mark.parametrize('fn, value, words', [
    (level.cpu_units, 'lots', ['cpu', 'vCPU']), (level.cpu_units, '64', ['128']), (level.cpu_units, True, ['cpu']),
    (level.cpu_units, '0.1 vCPU', ['whole number']), (level.cpu_units, 200000, ['196608']),
    (level.memory_mib, '1 TB', ['GB']), (level.memory_mib, '0.3 GB', ['whole number']),
    (level.memory_mib, 4, ['at least 6']), (level.memory_mib, [], ['memory'])])
def test_bad_units(fn, value, words):
    refused(lambda: fn(value, 'cpu' if fn is level.cpu_units else 'memory'), *words)


def test_a_container_above_the_task_memory_is_refused():
    refused(lambda: one(memory=64, containers=[{'name': 'main', 'image': IMG, 'memory': 128}]),
            'containers[0].memory (128 MiB) is above the memory of task web (64 MiB)')
    refused(lambda: td_task(memory='64', containerDefinitions=[{'name': 'm', 'image': IMG, 'memoryReservation': 65}]),
            'task_definition.containerDefinitions[0].memoryReservation')


def test_cgroup_parent_is_derived_from_cluster_and_task():
    assert level.cgroup_parent('prod', 'web') == level.cgroup_parent('prod', 'web')
    assert level.cgroup_parent('prod', 'web') != level.cgroup_parent('test', 'web')
    assert level.cgroup_parent('prod', 'web').startswith('/drover/web-')


# --- the placement evaluator --------------------------------------------------------------------------------

ATTRS = {'ecs.os-type': 'linux', 'ecs.cpu-architecture': 'x86_64', 'ecs.instance-type': 'm5.large',
         'ecs.availability-zone': 'eu-west-1a', 'stack': 'prod'}


@pytest.mark.parametrize('expr, member', [
    ('attribute:ecs.os-type == linux', True),
    ('attribute:ecs.os-type equals windows', False),
    ('attribute:stack != test', True),
    ('attribute:missing != x', True),
    ('attribute:missing == x', False),
    ('attribute:ecs.availability-zone in [eu-west-1a, eu-west-1b]', True),
    ('attribute:ecs.availability-zone in [us-east-1a]', False),
    ('attribute:ecs.availability-zone not in [us-east-1a]', True),
    ('attribute:ecs.availability-zone not_in [eu-west-1a]', False),
    ('attribute:ecs.availability-zone !in [eu-west-1a]', False),
    ('attribute:missing not in [a]', True),
    ('attribute:stack exists', True),
    ('attribute:missing exists', False),
    ('attribute:missing !exists', True),
    ('attribute:stack not_exists', False),
    ('attribute:ecs.instance-type =~ m5\\..*', True),
    ('attribute:ecs.instance-type =~ m5', False),                      # the whole value
    ('attribute:ecs.instance-type matches (m5|c5)[.].*', True),
    ('attribute:ecs.instance-type !~ t2.*', True),
    ('attribute:stack == "prod"', True),
    ("attribute:stack == 'prod'", True),
    ('attribute:stack == prod and attribute:ecs.os-type == windows', False),
    ('attribute:stack == test or attribute:ecs.os-type == linux', True),
    ('attribute:stack == test || attribute:ecs.os-type == linux && attribute:missing exists', False),
    ('(attribute:stack == test or attribute:ecs.os-type == linux) and attribute:stack exists', True),
    ('attribute:stack == test or (attribute:ecs.os-type == linux and attribute:missing exists)', False),
    ('not attribute:stack == test', True),
    ('!(attribute:stack == prod)', False),
    ('(attribute:ecs.instance-type =~ t2.*)', False),
])
def test_placement_expressions(expr, member):
    assert placement.matches(expr, ATTRS) is member


@pytest.mark.parametrize('expr, words', [
    ('', ['empty']), ('attribute:a ==', ['expected a value']), ('attribute:a', ['expected an operator']),
    ('(attribute:a exists', ['parenthesis']), ('attribute:a in a, b', ['list']), ('attribute:a in [a', ['closed']),
    ('attribute:a exists junk', ['unexpected']), ('ec2InstanceId == i-1', ['fleet']),
    ('task:group == web', ['fleet']), ('agentConnected == true', ['fleet']), ('foo == bar', ['attribute:<name>']),
    ('attribute:a =~ "("', ['regular expression']), ('attribute:a <> b', ['operator']),
])
def test_bad_placement_expressions(expr, words):
    refused(lambda: placement.parse(expr, 'pc[0].expression'), 'pc[0].expression', *words)


def test_a_host_that_is_not_a_member_refuses_the_task_with_the_expression():
    expr = 'attribute:ecs.instance-type == c5.large'
    msg = refused(lambda: one(placement_constraints=[{'type': 'memberOf', 'expression': expr}],
                              attributes={'ecs.instance-type': 'm5.large'}),
                  'placement_constraints[0].expression', expr, 'not a member', 'ecs.instance-type=m5.large')
    assert 'drover_attributes' in msg
    t = one(placement_constraints=[{'type': 'memberOf', 'expression': expr}],
            attributes={'ecs.instance-type': 'c5.large'})
    assert t.placement_constraints == (level.Constraint('memberOf', expr),)
    # A task that is stopped or removed is never refused for where it is.
    assert one(state='absent', placement_constraints=[{'type': 'memberOf', 'expression': expr}]).state == 'absent'


def test_host_attributes_are_the_hosts_own():
    attrs = level.host_attributes('aarch64', {'ecs.cpu-architecture': 'x86_64', 'ecs.instance-type': 't4g.small'})
    assert attrs['ecs.cpu-architecture'] == 'arm64' and attrs['ecs.instance-type'] == 't4g.small'
    assert attrs['ecs.os-type'] == 'linux'
    assert level.host_attributes('x86_64')['ecs.cpu-architecture'] == 'x86_64'
    assert 'ecs.availability-zone' not in level.host_attributes('x86_64')


def test_placement_constraint_kinds():
    assert one(placement_constraints=[{'type': 'distinctInstance'}]).placement_constraints[0].type == 'distinctInstance'
    refused(lambda: one(placement_constraints=[{'type': 'spread'}]), 'placement_constraints[0].type')
    refused(lambda: one(placement_constraints=[{'type': 'memberOf'}]), 'expression is required')
    refused(lambda: one(placement_constraints=[{'type': 'distinctInstance'}] * 11), 'at most 10')


# --- runtimePlatform ----------------------------------------------------------------------------------------

def test_runtime_platform():
    assert one(runtime_platform={'cpu_architecture': 'X86_64', 'operating_system_family': 'LINUX'}).runtime_platform
    assert one('aarch64', runtime_platform={'cpu_architecture': 'ARM64'}).runtime_platform.cpu_architecture == 'ARM64'
    refused(lambda: one('aarch64', runtime_platform={'cpu_architecture': 'X86_64'}),
            'runtime_platform.cpu_architecture is X86_64 but this host is aarch64')
    refused(lambda: one(runtime_platform={'cpu_architecture': 'ARM64'}), 'ARM64', 'x86_64')
    refused(lambda: one(runtime_platform={'cpu_architecture': 'MIPS'}), 'one of ARM64, X86_64')
    refused(lambda: td_task(runtimePlatform={'operatingSystemFamily': 'WINDOWS_SERVER_2022_CORE'}),
            'task_definition.runtimePlatform.operatingSystemFamily WINDOWS_SERVER_2022_CORE', 'Windows')


# --- IPC and PID --------------------------------------------------------------------------------------------

def test_ipc_and_pid_modes():
    t = td_task(ipcMode='task', pidMode='task')
    assert (t.ipc_mode, t.pid_mode) == ('task', 'task')
    refused(lambda: one(ipc_mode='host'), 'ipc_mode is host', 'allow_host_namespaces')
    refused(lambda: td_task(pidMode='host'), 'task_definition.pidMode is host', 'drover_allow_host_namespaces')
    t = spec.task_set({'name': 'web', 'pid_mode': 'host', 'allow_host_namespaces': True,
                       'containers': [{'name': 'main', 'image': IMG}]})[0][0]
    assert t.pid_mode == 'host'
    refused(lambda: td_task(pidMode='none'), 'task_definition.pidMode must be one of host, task')


# --- volumes ------------------------------------------------------------------------------------------------

def test_volume_kinds():
    t = td_task(volumes=[{'name': 'a', 'host': {'sourcePath': '/srv//data/./x'}}, {'name': 'b', 'host': {}},
                         {'name': 'c'}, {'name': 'd', 'dockerVolumeConfiguration': {'scope': 'shared',
                                                                                    'autoprovision': True}},
                         {'name': 'e', 'dockerVolumeConfiguration': {'driver': 'local', 'labels': {'x': 'y'}}}])
    kinds = [(v.name, v.kind, v.source_path) for v in t.volumes]
    assert kinds == [('a', 'bind', '/srv/data/x'), ('b', 'task', None), ('c', 'task', None), ('d', 'shared', None),
                     ('e', 'task', None)]
    sources = level.mount_sources('prod', 'web', t.volumes)
    assert sources['a'] == '/srv/data/x' and sources['d'] == 'd'
    assert sources['c'] == level.engine_volume('prod', 'web', 'c') and sources['c'].startswith('drover-web-')


def test_efs_volumes():
    t = td_task(volumes=[{'name': 'e', 'efsVolumeConfiguration': {'fileSystemId': 'fs-0123456789abcdef0',
                                                                  'rootDirectory': '/app'}}],
                params={'aws_region': 'eu-west-1'})
    opts = dict(t.volumes[0].driver_opts)
    assert opts['type'] == 'nfs' and opts['device'] == ':/app'
    assert opts['o'].startswith('addr=fs-0123456789abcdef0.efs.eu-west-1.amazonaws.com,nfsvers=4.1')
    refused(lambda: td_task(volumes=[{'name': 'e', 'efsVolumeConfiguration': {
        'fileSystemId': 'fs-12345678', 'transitEncryption': 'ENABLED'}}]),
        'task_definition.volumes[0].efsVolumeConfiguration.transitEncryption ENABLED is refused')
    refused(lambda: td_task(volumes=[{'name': 'e', 'efsVolumeConfiguration': {
        'fileSystemId': 'fs-12345678', 'authorizationConfig': {'accessPointId': 'fsap-1'}}}]),
        'authorizationConfig is refused')
    refused(lambda: td_task(volumes=[{'name': 'e', 'efsVolumeConfiguration': {
        'fileSystemId': 'fs-12345678', 'rootDirectory': '/a/../b'}}]), 'rootDirectory', '..')


def test_bind_policy():
    vols = [{'name': 'h', 'host': {'source_path': '/srv/data/x'}}]
    assert one(volumes=vols, bind_paths=['/srv/data']).volumes[0].source_path == '/srv/data/x'
    refused(lambda: one(volumes=vols, bind_paths=['/srv/dat']), 'volumes[0].host.source_path', 'bind_paths: /srv/dat')
    refused(lambda: one(volumes=vols, bind_paths=[]), 'bind_paths: none')
    refused(lambda: one(volumes=[{'name': 'h', 'host': {'source_path': '/srv/data/../../etc'}}]), '".." component')
    refused(lambda: one(volumes=[{'name': 'h', 'host': {'source_path': 'relative'}}]), 'absolute path')
    # Stopping a task whose bind the host no longer allows is allowed.
    assert one(state='stopped', volumes=vols, bind_paths=['/elsewhere']).state == 'stopped'


@pytest.mark.parametrize('volumes, words', [
    ([{'name': 'a'}, {'name': 'a'}], ['volumes[1].name', 'twice']),
    ([{'name': 'a b'}], ['volumes[0].name']),
    ([{'name': 'a', 'host': {'sourcePath': '/x'}, 'dockerVolumeConfiguration': {'scope': 'task'}}], ['give one of']),
    ([{'name': 'a', 'dockerVolumeConfiguration': {'scope': 'global'}}], ['scope must be one of task, shared']),
    ([{'name': 'a', 'dockerVolumeConfiguration': {'labels': {'drover.task': 'x'}}}], ['drover.task']),
    ([{'name': 'a', 'configuredAtLaunch': True}], ['configuredAtLaunch', 'EBS']),
    ([{'name': 'a', 'fsxWindowsFileServerVolumeConfiguration': {
        'fileSystemId': 'fs-1', 'rootDirectory': 'r', 'authorizationConfig': {'credentialsParameter': 'p',
                                                                              'domain': 'd'}}}], ['Windows']),
])
def test_bad_volumes(volumes, words):
    refused(lambda: td_task(volumes=volumes), *words)


def test_mount_points_name_volumes_of_the_task():
    t = one(volumes=[{'name': 'data'}],
            containers=[{'name': 'main', 'image': IMG, 'mount_points': [{'source_volume': 'data',
                                                                         'container_path': '/d'}]}])
    assert t.volumes[0].name == 'data'
    refused(lambda: one(containers=[{'name': 'main', 'image': IMG, 'mount_points': [
        {'source_volume': 'data', 'container_path': '/d'}]}]), "source_volume 'data' is not a volume of the task")


# --- the rest of the task level -----------------------------------------------------------------------------

@pytest.mark.parametrize('key, value, words', [
    ('proxyConfiguration', {'containerName': 'envoy'}, ['task_definition.proxyConfiguration', 'App Mesh']),
    ('inferenceAccelerators', [{'deviceName': 'a', 'deviceType': 'b'}],
     ['inferenceAccelerators', 'Elastic Inference']),
    ('enableFaultInjection', True, ['task_definition.enableFaultInjection true is refused']),
])
def test_fields_refused_by_name(key, value, words):
    refused(lambda: td_task(**{key: value}), *words)


def test_trusted_execution_is_refused_by_name():
    # Not every botocore model knows the field: the refusal is the collection's either way.
    with pytest.raises(SpecError) as err:
        td_task(trustedExecutionConfiguration={'enabled': True})
    assert 'trustedExecutionConfiguration' in str(err.value)


def test_accepted_fields():
    t = td_task(networkMode='default', requiresCompatibilities=['EC2', 'FARGATE'], tags=[{'key': 'a', 'value': 'b'}],
                enableFaultInjection=False, ephemeralStorage={'sizeInGiB': 40})
    assert t.network_mode == 'bridge'
    assert any('ephemeralStorage' in w and 'Fargate' in w for w in t.warnings)
    assert t.spec_hash == td_task().spec_hash


def test_task_level_options_are_per_entry_with_tasks():
    refused(lambda: spec.task_set({'tasks': [], 'cpu': 512}), 'tasks is mutually exclusive with cpu')
    tasks = spec.task_set({'tasks': [{'name': 'a', 'cpu': '1 vCPU', 'containers': [{'name': 'm', 'image': IMG}]}]},
                          'x86_64')[0]
    assert tasks[0].cpu == 1024


# --- the cgroup adapter, on a directory standing in for /sys/fs/cgroup -----------------------------------------

def test_cgroup_v1_files(tmp_path):
    for controller in ('memory', 'cpu,cpuacct', 'pids'):
        (tmp_path / controller).mkdir()
    os.symlink('cpu,cpuacct', str(tmp_path / 'cpu'))
    groups = cgroup.Cgroups(1, str(tmp_path))
    parent = level.cgroup_parent('prod', 'web')
    assert not groups.exists(parent)
    groups.ensure(parent, 512, 256)
    assert groups.exists(parent)
    assert groups.limits(parent) == {'memory.limit_in_bytes': str(256 * 1024 * 1024), 'cpu.cfs_quota_us': '50000',
                                     'cpu.cfs_period_us': '100000'}
    groups.ensure(parent, None, 256)
    assert groups.limits(parent)['cpu.cfs_quota_us'] == '-1'


def test_cgroup_v2_files(tmp_path):
    (tmp_path / 'cgroup.controllers').write_text('cpu memory pids\n')
    (tmp_path / 'cgroup.subtree_control').write_text('')
    assert cgroup.detect(str(tmp_path)) == 2
    groups = cgroup.Cgroups(2, str(tmp_path))
    parent = level.cgroup_parent('prod', 'web')
    groups.ensure(parent, 1536, None)
    assert groups.limits(parent) == {'memory.max': 'max', 'cpu.max': '150000 100000'}
    assert (tmp_path / 'cgroup.subtree_control').read_text().split() == ['+cpu', '+memory']
    assert (tmp_path / 'drover' / 'cgroup.subtree_control').read_text().split() == ['+cpu', '+memory']


def test_cgroup_remove_of_empty_directories(tmp_path):
    (tmp_path / 'memory').mkdir()
    (tmp_path / 'memory' / 'drover' / 'web-1' / 'container').mkdir(parents=True)
    groups = cgroup.Cgroups(1, str(tmp_path))
    assert groups.remove('/drover/web-1') and not (tmp_path / 'memory' / 'drover' / 'web-1').exists()
    assert (tmp_path / 'memory' / 'drover').is_dir()          # shared by every task: kept
    assert not groups.remove('/drover/web-1')
