# -*- coding: utf-8 -*-
"""The task level of ecs_task on the real engine: task size (the parent cgroup), volumes, the host's bind
policy, placement, runtime platform, IPC and PID namespaces, and the fields refused by name. Each behaviour in
four steps (check, apply, idempotent, idempotent check), asserted in `docker inspect`, /sys/fs/cgroup and the
engine's volumes; every refusal changes nothing."""

from __future__ import absolute_import, division, print_function

import os
import platform
import uuid

import pytest

from helpers import IMAGE, container, four_steps, host_snapshot, statuses, task_containers, wait_for, warnings_of

from ansible_collections.drover.fleet.plugins.module_utils.tasks import level

CGROUP = '/sys/fs/cgroup'
MIB = 1024 * 1024
NAMES = ('web', 'api', 'job', 'pipe')


def cgroup_dirs(cluster, names=NAMES):
    """Every directory of the parent cgroups of this cluster's tasks (all hierarchies)."""
    out = []
    for hierarchy in sorted(os.listdir(CGROUP)):
        for name in names:
            path = os.path.join(CGROUP, hierarchy, level.cgroup_parent(cluster, name).strip('/'))
            if os.path.isdir(path):
                out.append(path)
    return out


def cgroup_file(controller, cluster, name, leaf):
    with open(os.path.join(CGROUP, controller, level.cgroup_parent(cluster, name).strip('/'), leaf)) as handle:
        return handle.read().strip()


def volumes_of(engine, cluster):
    """(name, labels) of the engine volumes of this cluster (task volumes, and shared ones it provisioned)."""
    return sorted((v.name, v.attrs.get('Labels') or {}) for v in engine.volumes.list(
        filters={'label': 'drover.cluster=%s' % cluster}))


def snapshot(engine, store_path, cluster):
    return {'host': host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster),
            'volumes': volumes_of(engine, cluster), 'cgroups': cgroup_dirs(cluster)}


@pytest.fixture
def tidy(engine, cluster):
    """After the test: this cluster's volumes (and shared ones the test names) and cgroups go."""
    shared = []
    yield shared
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        c.remove(force=True)
    for v in engine.volumes.list(filters={'label': 'drover.cluster=%s' % cluster}):
        v.remove(force=True)
    for name in shared:
        try:
            engine.volumes.get(name).remove(force=True)
        except Exception:  # pylint: disable=broad-except
            pass
    for path in sorted(cgroup_dirs(cluster), key=len, reverse=True):
        for dirpath, dirnames, dummy in os.walk(path, topdown=False):  # pylint: disable=unused-variable
            for d in dirnames:
                os.rmdir(os.path.join(dirpath, d))
        os.rmdir(path)


def refused(converge, engine, store_path, cluster, *words, **args):
    before = snapshot(engine, store_path, cluster)
    r = converge(**args)
    assert r.failed, r
    for word in words:
        assert word in r['msg'], r['msg']
    assert snapshot(engine, store_path, cluster) == before
    return r['msg']


def inspect(engine, cluster, name):
    return engine.api.inspect_container('%s' % name)


# --- 1. task size -------------------------------------------------------------------------------------------

def test_size_makes_one_parent_cgroup_in_four_steps(engine, cluster, converge, store_path, tidy):
    args = dict(name='web', cpu='0.5 vCPU', memory='64', containers=[container('main', memory=32),
                                                                     container('side', essential=False)])
    check = converge(check=True, **args)
    assert check['changed'] and cgroup_dirs(cluster) == [] and task_containers(engine, cluster) == []
    results = four_steps(converge, **args)
    parent = level.cgroup_parent(cluster, 'web')
    assert parent.startswith('/drover/web-')
    for name in ('web-main', 'web-side'):
        assert inspect(engine, cluster, name)['HostConfig']['CgroupParent'] == parent
    assert cgroup_file('memory', cluster, 'web', 'memory.limit_in_bytes') == str(64 * MIB)
    assert cgroup_file('cpu', cluster, 'web', 'cpu.cfs_period_us') == '100000'
    assert cgroup_file('cpu', cluster, 'web', 'cpu.cfs_quota_us') == '50000'
    # The containers' own cgroups are under the parent.
    cid = results[1]['task']['containers'][0]['runtime_id']
    assert os.path.isdir(os.path.join(CGROUP, 'memory', parent.strip('/'), cid))
    r = converge(name='web', state='absent')
    assert r['changed'] and cgroup_dirs(cluster) == [] and task_containers(engine, cluster) == []


def test_size_from_a_task_definition_and_a_change_replaces(engine, cluster, converge, tidy):
    td = {'family': 'api', 'cpu': '1 vCPU', 'memory': '0.5GB',
          'containerDefinitions': [{'name': 'app', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 64}]}
    first = four_steps(converge, task_definition=td)[1]
    assert cgroup_file('memory', cluster, 'api', 'memory.limit_in_bytes') == str(512 * MIB)
    assert cgroup_file('cpu', cluster, 'api', 'cpu.cfs_quota_us') == '100000'
    td2 = dict(td, cpu='2048')
    r = converge(task_definition=td2)
    assert r['changed'] and r['task']['containers'][0]['runtime_id'] != first['task']['containers'][0]['runtime_id']
    assert cgroup_file('cpu', cluster, 'api', 'cpu.cfs_quota_us') == '200000'
    r = converge(name='api', state='stopped')
    assert r['changed'] and cgroup_dirs(cluster) == []
    assert not converge(name='api', state='stopped')['changed']


def test_a_failed_start_removes_the_cgroup_and_the_volumes(engine, cluster, converge, tidy):
    r = converge(name='job', cpu=256, memory=64, pull='never', volumes=[{'name': 'scratch'}],
                 containers=[container('main', mount_points=[{'source_volume': 'scratch', 'container_path': '/s'}]),
                             {'name': 'gone', 'image': 'drover.local/never-built:1'}])
    assert not r.failed and r['task']['last_status'] == 'STOPPED'
    assert 'image pull failed' in r['task']['stopped_reason']
    assert cgroup_dirs(cluster) == [] and volumes_of(engine, cluster) == [] and task_containers(engine, cluster) == []


@pytest.mark.parametrize('args, words', [
    (dict(cpu='lots'), ['cpu', 'vCPU']),
    (dict(cpu=64), ['cpu', '128']),
    (dict(memory='1 TB'), ['memory', 'GB']),
    (dict(memory='0.3GB'), ['memory', 'whole number']),
    (dict(memory=16, containers=[container('main', memory=32)]), ['containers[0].memory', 'above the memory']),
    (dict(task_definition={'family': 'web', 'memory': '16', 'containerDefinitions': [
        {'name': 'main', 'image': IMAGE, 'memoryReservation': 32}]}),
     ['task_definition.containerDefinitions[0].memoryReservation', 'above']),
])
def test_bad_sizes_are_refused_and_change_nothing(engine, cluster, converge, store_path, tidy, args, words):
    args = dict(args)
    if 'task_definition' not in args:
        args.setdefault('name', 'web')
        args.setdefault('containers', [container('main')])
    refused(converge, engine, store_path, cluster, *words, **args)


# --- 2. volumes ---------------------------------------------------------------------------------------------

def test_a_task_volume_shared_by_two_containers(engine, cluster, converge, store_path, tidy):
    mount = [{'source_volume': 'data', 'container_path': '/data'}]
    args = dict(name='pipe', volumes=[{'name': 'data'}], containers=[
        container('writer', ['sh', '-c', 'echo from-writer > /data/note; sleep 3600'], mount_points=mount),
        container('reader', ['sh', '-c', 'while [ ! -f /data/note ]; do sleep 0.2; done; cat /data/note; sleep 3600'],
                  mount_points=[dict(mount[0], read_only=True)])])
    check = converge(check=True, **args)
    assert check['changed'] and volumes_of(engine, cluster) == []
    four_steps(converge, **args)
    name = level.engine_volume(cluster, 'pipe', 'data')
    listed = volumes_of(engine, cluster)
    assert [v[0] for v in listed] == [name]
    assert listed[0][1]['drover.scope'] == 'task' and listed[0][1]['drover.task'] == 'pipe'
    mounts = inspect(engine, cluster, 'pipe-reader')['Mounts']
    assert [(m['Type'], m['Name'], m['Destination'], m['RW']) for m in mounts] == [('volume', name, '/data', False)]
    wait_for(lambda: 'from-writer' in engine.containers.get('pipe-reader').logs().decode())
    r = converge(name='pipe', state='absent')
    assert r['changed'] and volumes_of(engine, cluster) == []
    assert not converge(name='pipe', state='absent')['changed']


def test_a_docker_volume_of_the_task_with_driver_options_and_labels(engine, cluster, converge, tidy):
    td = {'family': 'api', 'volumes': [{'name': 'cache', 'dockerVolumeConfiguration': {
        'scope': 'task', 'driver': 'local', 'driverOpts': {'type': 'tmpfs', 'device': 'tmpfs', 'o': 'size=8m'},
        'labels': {'team': 'blue'}}}],
        'containerDefinitions': [{'name': 'app', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 32,
                                  'mountPoints': [{'sourceVolume': 'cache', 'containerPath': '/cache'}]}]}
    four_steps(converge, task_definition=td)
    vol = engine.volumes.get(level.engine_volume(cluster, 'api', 'cache'))
    assert vol.attrs['Driver'] == 'local'
    assert vol.attrs['Options'] == {'type': 'tmpfs', 'device': 'tmpfs', 'o': 'size=8m'}
    assert vol.attrs['Labels']['team'] == 'blue' and vol.attrs['Labels']['drover.cluster'] == cluster
    out = engine.containers.get('api-app').exec_run(['sh', '-c', 'mount | grep " /cache "']).output.decode()
    assert 'tmpfs' in out
    converge(name='api', state='absent')
    assert volumes_of(engine, cluster) == []


def test_a_shared_volume_outlives_the_task_and_a_task_volume_does_not(engine, cluster, converge, store_path, tidy):
    shared = 'tlshared-%s' % uuid.uuid4().hex[:8]
    tidy.append(shared)
    vols = [{'name': shared, 'docker_volume_configuration': {'scope': 'shared', 'autoprovision': True,
                                                             'labels': {'kind': 'cache'}}},
            {'name': 'mine', 'docker_volume_configuration': {'scope': 'task'}}]
    mounts = [{'source_volume': shared, 'container_path': '/shared'}, {'source_volume': 'mine', 'container_path': '/m'}]
    args = dict(name='web', volumes=vols, containers=[
        container('main', ['sh', '-c', 'echo kept > /shared/file; sleep 3600'], mount_points=mounts)])
    check = converge(check=True, **args)
    assert check['changed']
    with pytest.raises(Exception):
        engine.volumes.get(shared)
    four_steps(converge, **args)
    assert engine.volumes.get(shared).attrs['Labels']['kind'] == 'cache'
    converge(name='web', state='absent')
    assert [v[0] for v in volumes_of(engine, cluster)] == [shared]     # the shared one stays, the task's went
    # Without autoprovision a shared volume must be there: it is, so the task runs (and finds the file).
    vols[0]['docker_volume_configuration']['autoprovision'] = False
    r = converge(name='web', volumes=vols, containers=[container('main', ['sh', '-c', 'cat /shared/file; sleep 3600'],
                                                                 mount_points=mounts)])
    assert not r.failed and r['task']['last_status'] == 'RUNNING'
    wait_for(lambda: 'kept' in engine.containers.get('web-main').logs().decode())
    converge(name='web', state='absent')


def test_a_missing_shared_volume_without_autoprovision_is_refused(engine, cluster, converge, store_path, tidy):
    shared = 'tlmissing-%s' % uuid.uuid4().hex[:8]
    converge(name='web', state='absent')            # the store is there (a refusal on the host opens it)
    msg = refused(converge, engine, store_path, cluster, shared, 'autoprovision',
                  name='web', volumes=[{'name': shared, 'docker_volume_configuration': {'scope': 'shared'}}],
                  containers=[container('main', mount_points=[{'source_volume': shared, 'container_path': '/s'}])])
    assert 'no volume on the engine' in msg
    with pytest.raises(Exception):
        engine.volumes.get(shared)


def test_a_host_bind_and_the_bind_policy(engine, cluster, converge, store_path, tmp_path, tidy):
    src = tmp_path / 'shared'
    src.mkdir()
    (src / 'hello').write_text('from the host\n')
    args = dict(name='web', volumes=[{'name': 'h', 'host': {'source_path': str(src)}}],
                containers=[container('main', mount_points=[{'source_volume': 'h', 'container_path': '/mnt/h',
                                                             'read_only': True}])])
    four_steps(converge, bind_paths=[str(tmp_path)], **args)
    assert inspect(engine, cluster, 'web-main')['HostConfig']['Binds'] == ['%s:/mnt/h:ro' % src]
    out = engine.containers.get('web-main').exec_run(['cat', '/mnt/h/hello']).output.decode()
    assert out == 'from the host\n'
    converge(name='web', state='absent')
    assert src.is_dir()                                             # a bind never removes the host's path
    refused(converge, engine, store_path, cluster, 'volumes[0].host.source_path', 'bind_paths',
            bind_paths=['/srv/drover'], **args)
    refused(converge, engine, store_path, cluster, 'volumes[0].host.source_path', '..',
            name='web', volumes=[{'name': 'h', 'host': {'source_path': str(src) + '/../../etc'}}],
            containers=args['containers'])
    refused(converge, engine, store_path, cluster, 'task_definition.volumes[0].host.sourcePath', 'bind_paths',
            bind_paths=['/srv/drover'], task_definition={
                'family': 'web', 'volumes': [{'name': 'h', 'host': {'sourcePath': '/etc'}}],
                'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'memory': 32,
                                          'mountPoints': [{'sourceVolume': 'h', 'containerPath': '/e'}]}]})


def test_an_efs_volume_becomes_an_nfs_volume_of_the_task(engine, cluster, converge, tidy):
    # This kernel has no NFS client, so nothing mounts it: the volume is checked as the engine holds it.
    td = {'family': 'job', 'volumes': [{'name': 'efs', 'efsVolumeConfiguration': {
        'fileSystemId': '198.18.0.10', 'rootDirectory': '/exports/data', 'transitEncryption': 'DISABLED'}}],
        'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 32}]}
    four_steps(converge, task_definition=td, nfs_servers=['198.18.0.10'])
    vol = engine.volumes.get(level.engine_volume(cluster, 'job', 'efs'))
    assert vol.attrs['Driver'] == 'local'
    assert vol.attrs['Options'] == {'type': 'nfs', 'device': ':/exports/data',
                                    'o': 'addr=198.18.0.10,%s' % level.EFS_NFS_OPTIONS}
    converge(name='job', state='absent')
    assert volumes_of(engine, cluster) == []


@pytest.mark.parametrize('volume, words', [
    ({'name': 'e', 'efsVolumeConfiguration': {'fileSystemId': 'fs-12345678', 'transitEncryption': 'ENABLED'}},
     ['task_definition.volumes[0].efsVolumeConfiguration.transitEncryption', 'mount helper']),
    ({'name': 'e', 'efsVolumeConfiguration': {'fileSystemId': 'fs-12345678',
                                              'authorizationConfig': {'iam': 'ENABLED'}}},
     ['efsVolumeConfiguration.authorizationConfig', 'IAM']),
    ({'name': 'w', 'fsxWindowsFileServerVolumeConfiguration': {
        'fileSystemId': 'fs-1', 'rootDirectory': 'share',
        'authorizationConfig': {'credentialsParameter': 'arn:aws:ssm:x', 'domain': 'd'}}},
     ['fsxWindowsFileServerVolumeConfiguration', 'Windows']),
    ({'name': 'd', 'dockerVolumeConfiguration': {'scope': 'task', 'autoprovision': True}},
     ['dockerVolumeConfiguration.autoprovision', 'shared']),
    ({'name': 'bad name!'}, ['task_definition.volumes[0].name']),
])
def test_bad_volumes_are_refused_and_change_nothing(engine, cluster, converge, store_path, tidy, volume, words):
    td = {'family': 'web', 'volumes': [volume],
          'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'memory': 32}]}
    refused(converge, engine, store_path, cluster, *words, task_definition=td)


def test_a_mount_point_must_name_a_volume_of_the_task(engine, cluster, converge, store_path, tidy):
    refused(converge, engine, store_path, cluster, 'containers[0].mount_points[0].source_volume', 'nope',
            name='web', volumes=[{'name': 'data'}],
            containers=[container('main', mount_points=[{'source_volume': 'nope', 'container_path': '/x'}])])


# --- 4, 5. placement and platform -----------------------------------------------------------------------------

ARCH = 'arm64' if platform.machine() in ('aarch64', 'arm64') else 'x86_64'
RUNTIME_ARCH = 'ARM64' if ARCH == 'arm64' else 'X86_64'
OTHER_ARCH = 'X86_64' if ARCH == 'arm64' else 'ARM64'


def test_placement_constraints_match_the_host(engine, cluster, converge, store_path, tidy):
    expr = ('attribute:ecs.os-type == linux and attribute:ecs.cpu-architecture in [%s] and '
            '(attribute:ecs.instance-type =~ m5[.].* or attribute:stack exists)' % ARCH)
    args = dict(name='web', placement_constraints=[{'type': 'memberOf', 'expression': expr},
                                                   {'type': 'distinctInstance'}],
                containers=[container('main')])
    four_steps(converge, attributes={'ecs.instance-type': 'm5.large'}, **args)
    msg = refused(converge, engine, store_path, cluster, 'placement_constraints[0].expression', expr,
                  attributes={'ecs.instance-type': 'c5.large'}, **args)
    assert 'ecs.instance-type=c5.large' in msg
    # Stopping a task that no longer fits the host is always allowed.
    r = converge(name='web', state='absent', attributes={'ecs.instance-type': 'c5.large'})
    assert r['changed'] and task_containers(engine, cluster) == []


def test_placement_from_a_task_definition_and_bad_expressions(engine, cluster, converge, store_path, tidy):
    td = {'family': 'web', 'placementConstraints': [
        {'type': 'memberOf', 'expression': 'attribute:ecs.availability-zone in [eu-west-1a, eu-west-1b]'}],
        'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 32}]}
    refused(converge, engine, store_path, cluster, 'task_definition.placementConstraints[0].expression',
            'not a member', task_definition=td)
    r = converge(task_definition=td, attributes={'ecs.availability-zone': 'eu-west-1b'})
    assert not r.failed and r['task']['last_status'] == 'RUNNING'
    converge(name='web', state='absent')
    for expr, word in (('attribute:ecs.os-type ==', 'expected a value'), ('(attribute:a exists', 'parenthesis'),
                       ('task:group == web', 'fleet'), ('attribute:a =~ "("', 'regular expression')):
        bad = dict(td, placementConstraints=[{'type': 'memberOf', 'expression': expr}])
        refused(converge, engine, store_path, cluster, 'placementConstraints[0].expression', word, task_definition=bad)


def test_runtime_platform_is_checked_against_the_host(engine, cluster, converge, store_path, tidy):
    args = dict(name='web', containers=[container('main')])
    four_steps(converge, runtime_platform={'cpu_architecture': RUNTIME_ARCH, 'operating_system_family': 'LINUX'},
               **args)
    converge(name='web', state='absent')
    refused(converge, engine, store_path, cluster, 'runtime_platform.cpu_architecture', OTHER_ARCH,
            runtime_platform={'cpu_architecture': OTHER_ARCH}, **args)
    td = {'family': 'web', 'runtimePlatform': {'operatingSystemFamily': 'WINDOWS_SERVER_2019_CORE'},
          'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'memory': 32}]}
    refused(converge, engine, store_path, cluster, 'task_definition.runtimePlatform.operatingSystemFamily',
            'WINDOWS_SERVER_2019_CORE', 'Windows', task_definition=td)


# --- 6. IPC and PID namespaces --------------------------------------------------------------------------------

def test_ipc_and_pid_shared_by_the_task(engine, cluster, converge, tidy):
    args = dict(name='web', ipc_mode='task', pid_mode='task', containers=[container('main'), container('side')])
    four_steps(converge, **args)
    main, side = inspect(engine, cluster, 'web-main'), inspect(engine, cluster, 'web-side')
    # The engine keeps container:<name> as container:<ID>.
    assert main['HostConfig']['IpcMode'] == 'shareable'
    assert side['HostConfig']['IpcMode'] in ('container:web-main', 'container:%s' % main['Id'])
    assert main['HostConfig']['PidMode'] == ''
    assert side['HostConfig']['PidMode'] in ('container:web-main', 'container:%s' % main['Id'])
    # One process namespace: the side container sees main's sleep.
    out = engine.containers.get('web-side').exec_run(['ps']).output.decode()
    assert out.count('sleep 3600') == 2, out
    converge(name='web', state='absent')


def test_ipc_none_and_host_namespaces_need_the_host_policy(engine, cluster, converge, store_path, tidy):
    four_steps(converge, name='web', ipc_mode='none', containers=[container('main')])
    assert inspect(engine, cluster, 'web-main')['HostConfig']['IpcMode'] == 'none'
    converge(name='web', state='absent')
    refused(converge, engine, store_path, cluster, 'ipc_mode', 'allow_host_namespaces',
            name='web', ipc_mode='host', containers=[container('main')])
    td = {'family': 'web', 'pidMode': 'host', 'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'memory': 32}]}
    refused(converge, engine, store_path, cluster, 'task_definition.pidMode', 'allow_host_namespaces', task_definition=td)
    four_steps(converge, allow_host_namespaces=True, name='web', ipc_mode='host', pid_mode='host',
               containers=[container('main')])
    host = inspect(engine, cluster, 'web-main')['HostConfig']
    assert (host['IpcMode'], host['PidMode']) == ('host', 'host')
    converge(name='web', state='absent')


# --- 7. fields that change nothing, and fields refused --------------------------------------------------------

def test_accepted_fields_change_nothing_and_ephemeral_storage_warns(engine, cluster, converge, tidy):
    td = {'family': 'web', 'networkMode': 'default', 'requiresCompatibilities': ['EC2'],
          'tags': [{'key': 'team', 'value': 'blue'}], 'enableFaultInjection': False,
          'ephemeralStorage': {'sizeInGiB': 30},
          'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 32}]}
    results = four_steps(converge, task_definition=td)
    assert any('ephemeralStorage' in w and 'Fargate' in w for w in warnings_of(results[1]))
    assert inspect(engine, cluster, 'web-main')['HostConfig']['NetworkMode'] in ('default', 'bridge')
    converge(name='web', state='absent')


@pytest.mark.parametrize('key, value, words', [
    ('proxyConfiguration', {'containerName': 'envoy', 'type': 'APPMESH'}, ['proxyConfiguration', 'App Mesh']),
    ('inferenceAccelerators', [{'deviceName': 'd1', 'deviceType': 'eia2.medium'}],
     ['inferenceAccelerators', 'Elastic Inference']),
    ('enableFaultInjection', True, ['enableFaultInjection', 'refused']),
    ('ipcMode', 'shareable', ['task_definition.ipcMode', 'host, task, none']),
])
def test_fields_refused_by_name(engine, cluster, converge, store_path, tidy, key, value, words):
    td = {'family': 'web', key: value, 'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'memory': 32}]}
    refused(converge, engine, store_path, cluster, *words, task_definition=td)


# --- every ending path, and adoption --------------------------------------------------------------------------

def _full(name='web'):
    return dict(name=name, cpu=256, memory=128, volumes=[{'name': 'data'}], ipc_mode='task', containers=[
        container('main', mount_points=[{'source_volume': 'data', 'container_path': '/data'}]),
        container('side', mount_points=[{'source_volume': 'data', 'container_path': '/data'}])])


def test_purge_leaves_nothing(engine, cluster, converge, tidy):
    r = converge(tasks=[_full('web'), _full('api')])
    assert not r.failed and len(volumes_of(engine, cluster)) == 2 and len(cgroup_dirs(cluster)) >= 4
    check = converge(check=True, tasks=[], purge=True)
    assert check['changed'] and len(volumes_of(engine, cluster)) == 2
    r = converge(tasks=[], purge=True)
    assert r['changed']
    assert task_containers(engine, cluster) == [] and volumes_of(engine, cluster) == [] and cgroup_dirs(cluster) == []
    assert not converge(tasks=[], purge=True)['changed']


def test_adoption_after_store_loss_keeps_the_containers_and_absent_still_cleans(
        engine, cluster, converge, store_path, tidy):
    first = converge(**_full())
    ids = sorted(c['runtime_id'] for c in first['task']['containers'])
    os.remove(store_path)
    fresh_check = converge(check=True, **_full())
    assert not fresh_check['changed']
    r = converge(**_full())
    assert not r['changed'] and sorted(c['runtime_id'] for c in r['task']['containers']) == ids
    assert statuses(engine, cluster) == {'web-main': 'running', 'web-side': 'running'}
    os.remove(store_path)
    r = converge(name='web', state='absent')
    assert r['changed'] and task_containers(engine, cluster) == []
    assert volumes_of(engine, cluster) == [] and cgroup_dirs(cluster) == []
