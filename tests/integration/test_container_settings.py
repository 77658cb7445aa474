# -*- coding: utf-8 -*-
"""Every container setting of the table SETTINGS on the real Docker engine.

One case per setting, in both forms (`containers` in snake_case, and an ECS `task_definition` in camelCase),
each in the four steps (check, apply, again, check again), its value read back with `docker inspect`, then a
changed value (the containers replaced, the new value in inspect) and the changed declaration again (left
alone). Then the bad values (refused with the field named, nothing changed), the log driver mapping, and
the stop timeout (TERM first, then the kill)."""

from __future__ import absolute_import, division, print_function

import collections
import time

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks.settings import SETTINGS
from ansible_collections.drover.fleet.plugins.module_utils.network.spec import legacy_netns_name, netns_name
from ansible_collections.drover.fleet.plugins.module_utils.tasks.level import engine_volume

from helpers import IMAGE, host_snapshot, netns_list, task_containers, wait_for, warnings_of

MIB = 1024 * 1024
NANO = 10 ** 9
SLEEP = ['sleep', '3600']
# A command that ends at once on TERM (a sleep as PID 1 ignores it, and its stop would wait for the kill).
TERMINATES = ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']

# Covered elsewhere (tests/integration/test_ecs_task.py, test_ecs_task_gpu.py, test_ecs_task_order.py,
# test_registry_pull.py): the container's identity, whether the task stops with it, its GPUs, the order it starts
# in, the credentials its image is pulled with.
ELSEWHERE = ('name', 'image', 'essential', 'gpu', 'depends_on', 'repository_credentials', 'restart_policy',
             'secrets', 'environment_files',    # test_ecs_task_secrets.py (read from moto when the task starts)
             'firelens_configuration')          # test_ecs_task_firelens.py (a router, and what logs to it)


# --- the cases -------------------------------------------------------------------------------------------
# native/ecs: the main container's settings in each form (command SLEEP unless given); native_b/ecs_b: the
# changed value; expect/expect_b: `docker inspect` paths of the main container -> the value (a callable:
# a check of the value, given the task's name); peers: containers before main, (native, ecs); args: more
# module options.
# not_here: a function that says why the first value cannot take effect on this host (the engine's words,
# which the task's stopped_reason must hold), or None.
Case = collections.namedtuple('Case', 'option native ecs expect native_b ecs_b expect_b peers args not_here')


def case(option, native, ecs, expect, native_b, ecs_b, expect_b, peers=(), args=None, not_here=None):
    return pytest.param(Case(option, native, ecs, expect, native_b, ecs_b, expect_b, peers, args or {},
                             not_here or (lambda: None)), id=option)


def capabilities_short():
    """The engine gives a privileged container every capability the kernel has: where this host's own
    bounding set lacks one (a sandboxed host without CAP_SYS_RESOURCE, say), runc cannot apply them."""
    with open('/proc/sys/kernel/cap_last_cap') as f:
        last = int(f.read())
    with open('/proc/1/status') as f:
        bounding = int([l.split()[1] for l in f if l.startswith('CapBnd:')][0], 16)
    if bounding & ((1 << (last + 1)) - 1) != (1 << (last + 1)) - 1:
        return 'unable to apply caps: operation not permitted'
    return None


def linux(**members):
    return {'linuxParameters': members}


def labels_have(want):
    return lambda got, task: all((got or {}).get(k) == v for k, v in want.items())


PEER_DB = ({'name': 'db', 'image': IMAGE, 'command': SLEEP, 'essential': False},
           {'name': 'db', 'image': IMAGE, 'command': SLEEP, 'essential': False})

CASES = [
    case('command', {'command': ['sleep', '3601']}, {'command': ['sleep', '3601']},
         {'Config.Cmd': ['sleep', '3601']},
         {'command': ['sleep', '3602']}, {'command': ['sleep', '3602']}, {'Config.Cmd': ['sleep', '3602']}),
    case('entrypoint', {'entrypoint': ['sleep'], 'command': ['3600']}, {'entryPoint': ['sleep'], 'command': ['3600']},
         {'Config.Entrypoint': ['sleep'], 'Config.Cmd': ['3600']},
         {'entrypoint': ['/bin/sleep'], 'command': ['3600']}, {'entryPoint': ['/bin/sleep'], 'command': ['3600']},
         {'Config.Entrypoint': ['/bin/sleep']}),
    case('environment', {'environment': {'MODE': 'a', 'N': 1}},
         {'environment': [{'name': 'MODE', 'value': 'a'}, {'name': 'N', 'value': '1'}]},
         {'Config.Env': lambda env, task: 'MODE=a' in env and 'N=1' in env},
         {'environment': {'MODE': 'b'}}, {'environment': [{'name': 'MODE', 'value': 'b'}]},
         {'Config.Env': lambda env, task: 'MODE=b' in env and not any(e.startswith('N=') for e in env)}),
    case('cpu', {'cpu': 256}, {'cpu': 256}, {'HostConfig.CpuShares': 256},
         {'cpu': 512}, {'cpu': 512}, {'HostConfig.CpuShares': 512}),
    case('memory', {'memory': 32}, {'memory': 32}, {'HostConfig.Memory': 32 * MIB},
         {'memory': 48}, {'memory': 48}, {'HostConfig.Memory': 48 * MIB}),
    case('memory_reservation', {'memory_reservation': 16}, {'memoryReservation': 16},
         {'HostConfig.MemoryReservation': 16 * MIB, 'HostConfig.Memory': 0},
         {'memory_reservation': 24, 'memory': 32}, {'memoryReservation': 24, 'memory': 32},
         {'HostConfig.MemoryReservation': 24 * MIB, 'HostConfig.Memory': 32 * MIB}),
    case('port_mappings', {'port_mappings': [{'container_port': 8080}]}, {'portMappings': [{'containerPort': 8080}]},
         {'HostConfig.PortBindings': {'8080/tcp': [{'HostIp': '', 'HostPort': ''}]},
          'Config.ExposedPorts': {'8080/tcp': {}}},
         {'port_mappings': [{'container_port': 8081, 'protocol': 'udp'}]},
         {'portMappings': [{'containerPort': 8081, 'protocol': 'udp'}]},
         {'HostConfig.PortBindings': {'8081/udp': [{'HostIp': '', 'HostPort': ''}]}}),
    case('capabilities', {'capabilities': {'add': ['SYS_PTRACE'], 'drop': ['CHOWN']}},
         linux(capabilities={'add': ['SYS_PTRACE'], 'drop': ['CHOWN']}),
         {'HostConfig.CapAdd': ['SYS_PTRACE'], 'HostConfig.CapDrop': ['CHOWN', 'NET_RAW']},
         {'capabilities': {'add': ['NET_RAW']}}, linux(capabilities={'add': ['NET_RAW']}),
         {'HostConfig.CapAdd': ['NET_RAW'], 'HostConfig.CapDrop': None},
         args={'allowed_capabilities': ['SYS_PTRACE']}),
    # A volume of the task (no configuration: an engine volume of the task's own), mounted by name.
    case('mount_points', {'mount_points': [{'source_volume': 'data', 'container_path': '/data'}]},
         {'mountPoints': [{'sourceVolume': 'data', 'containerPath': '/data'}]},
         {'HostConfig.Binds': lambda got, task: got == ['%s:/data' % task_volume(task)],
          'Mounts': lambda got, task: [(m['Type'], m['Name'], m['Destination'], m['RW']) for m in got] ==
          [('volume', task_volume(task), '/data', True)]},
         {'mount_points': [{'source_volume': 'data', 'container_path': '/data', 'read_only': True}]},
         {'mountPoints': [{'sourceVolume': 'data', 'containerPath': '/data', 'readOnly': True}]},
         {'HostConfig.Binds': lambda got, task: got == ['%s:/data:ro' % task_volume(task)]},
         args={'volumes': [{'name': 'data'}]}),
    case('volumes_from', {'volumes_from': [{'source_container': 'db', 'read_only': True}]},
         {'volumesFrom': [{'sourceContainer': 'db', 'readOnly': True}]},
         {'HostConfig.VolumesFrom': lambda got, task: got == ['%s-db:ro' % task]},
         {'volumes_from': [{'source_container': 'db'}]}, {'volumesFrom': [{'sourceContainer': 'db'}]},
         {'HostConfig.VolumesFrom': lambda got, task: got == ['%s-db' % task]}, peers=[PEER_DB]),
    case('links', {'links': ['db:database']}, {'links': ['db:database']},
         {'HostConfig.Links': lambda got, task: got == ['/%s-db:/%s-main/database' % (task, task)]},
         {'links': ['db']}, {'links': ['db']},
         {'HostConfig.Links': lambda got, task: got == ['/%s-db:/%s-main/db' % (task, task)]}, peers=[PEER_DB]),
    case('ulimits', {'ulimits': [{'name': 'nofile', 'soft_limit': 1024, 'hard_limit': 2048}]},
         {'ulimits': [{'name': 'nofile', 'softLimit': 1024, 'hardLimit': 2048}]},
         {'HostConfig.Ulimits': [{'Name': 'nofile', 'Soft': 1024, 'Hard': 2048}]},
         {'ulimits': [{'name': 'nofile', 'soft_limit': 512, 'hard_limit': 2048}]},
         {'ulimits': [{'name': 'nofile', 'softLimit': 512, 'hardLimit': 2048}]},
         {'HostConfig.Ulimits': [{'Name': 'nofile', 'Soft': 512, 'Hard': 2048}]}),
    case('user', {'user': '1000:1000'}, {'user': '1000:1000'}, {'Config.User': '1000:1000'},
         {'user': '65534'}, {'user': '65534'}, {'Config.User': '65534'}),
    case('working_directory', {'working_directory': '/tmp'}, {'workingDirectory': '/tmp'},
         {'Config.WorkingDir': '/tmp'}, {'working_directory': '/var'}, {'workingDirectory': '/var'},
         {'Config.WorkingDir': '/var'}),
    case('hostname', {'hostname': 'alpha'}, {'hostname': 'alpha'}, {'Config.Hostname': 'alpha'},
         {'hostname': 'beta'}, {'hostname': 'beta'}, {'Config.Hostname': 'beta'}),
    case('dns_servers', {'dns_servers': ['198.51.100.53']}, {'dnsServers': ['198.51.100.53']},
         {'HostConfig.Dns': ['198.51.100.53']},
         {'dns_servers': ['198.51.100.54', '198.51.100.55']}, {'dnsServers': ['198.51.100.54', '198.51.100.55']},
         {'HostConfig.Dns': ['198.51.100.54', '198.51.100.55']}),
    case('dns_search_domains', {'dns_search_domains': ['a.internal']}, {'dnsSearchDomains': ['a.internal']},
         {'HostConfig.DnsSearch': ['a.internal']},
         {'dns_search_domains': ['b.internal']}, {'dnsSearchDomains': ['b.internal']},
         {'HostConfig.DnsSearch': ['b.internal']}),
    case('extra_hosts', {'extra_hosts': [{'hostname': 'db.local', 'ip_address': '198.51.100.7'}]},
         {'extraHosts': [{'hostname': 'db.local', 'ipAddress': '198.51.100.7'}]},
         {'HostConfig.ExtraHosts': ['db.local:198.51.100.7']},
         {'extra_hosts': [{'hostname': 'db.local', 'ip_address': '198.51.100.8'}]},
         {'extraHosts': [{'hostname': 'db.local', 'ipAddress': '198.51.100.8'}]},
         {'HostConfig.ExtraHosts': ['db.local:198.51.100.8']}),
    # No network at all (a loopback only): the engine attaches it to none.
    case('disable_networking', {'disable_networking': True}, {'disableNetworking': True},
         {'Config.NetworkDisabled': True, 'NetworkSettings.Networks': {}},
         {'disable_networking': False}, {'disableNetworking': False},
         {'Config.NetworkDisabled': lambda got, task: not got,
          'NetworkSettings.Networks': lambda got, task: list(got) == ['bridge']}),
    case('docker_labels', {'docker_labels': {'team': 'blue', 'drover.task': 'spoofed'}},
         {'dockerLabels': {'team': 'blue', 'drover.task': 'spoofed'}},
         {'Config.Labels': lambda got, task: got['team'] == 'blue' and got['drover.task'] == task},
         {'docker_labels': {'team': 'green'}}, {'dockerLabels': {'team': 'green'}},
         {'Config.Labels': lambda got, task: got['team'] == 'green'}),
    case('privileged', {'privileged': True}, {'privileged': True}, {'HostConfig.Privileged': True},
         {'privileged': False}, {'privileged': False}, {'HostConfig.Privileged': False},
         args={'allow_privileged': True}, not_here=capabilities_short),
    case('readonly_root_filesystem', {'readonly_root_filesystem': True}, {'readonlyRootFilesystem': True},
         {'HostConfig.ReadonlyRootfs': True},
         {'readonly_root_filesystem': False}, {'readonlyRootFilesystem': False}, {'HostConfig.ReadonlyRootfs': False}),
    case('docker_security_options', {'docker_security_options': ['no-new-privileges']},
         {'dockerSecurityOptions': ['no-new-privileges']}, {'HostConfig.SecurityOpt': ['no-new-privileges']},
         {'docker_security_options': ['no-new-privileges:true']}, {'dockerSecurityOptions': ['no-new-privileges:true']},
         {'HostConfig.SecurityOpt': ['no-new-privileges:true']}),
    case('system_controls', {'system_controls': [{'namespace': 'net.core.somaxconn', 'value': '512'}]},
         {'systemControls': [{'namespace': 'net.core.somaxconn', 'value': '512'}]},
         {'HostConfig.Sysctls': {'net.core.somaxconn': '512'}},
         {'system_controls': [{'namespace': 'net.core.somaxconn', 'value': '1024'}]},
         {'systemControls': [{'namespace': 'net.core.somaxconn', 'value': '1024'}]},
         {'HostConfig.Sysctls': {'net.core.somaxconn': '1024'}}),
    case('pseudo_terminal', {'pseudo_terminal': True}, {'pseudoTerminal': True}, {'Config.Tty': True},
         {'pseudo_terminal': False}, {'pseudoTerminal': False}, {'Config.Tty': False}),
    case('interactive', {'interactive': True}, {'interactive': True}, {'Config.OpenStdin': True},
         {'interactive': False}, {'interactive': False}, {'Config.OpenStdin': False}),
    case('init_process_enabled', {'init_process_enabled': True}, linux(initProcessEnabled=True),
         {'HostConfig.Init': True},
         {'init_process_enabled': False}, linux(initProcessEnabled=False), {'HostConfig.Init': False}),
    case('devices', {'devices': [{'host_path': '/dev/null', 'container_path': '/dev/xnull', 'permissions': ['read']}]},
         linux(devices=[{'hostPath': '/dev/null', 'containerPath': '/dev/xnull', 'permissions': ['read']}]),
         {'HostConfig.Devices': [{'PathOnHost': '/dev/null', 'PathInContainer': '/dev/xnull',
                                  'CgroupPermissions': 'r'}]},
         {'devices': [{'host_path': '/dev/null'}]}, linux(devices=[{'hostPath': '/dev/null'}]),
         {'HostConfig.Devices': [{'PathOnHost': '/dev/null', 'PathInContainer': '/dev/null',
                                  'CgroupPermissions': 'rwm'}]}, args={'allowed_devices': ['/dev/null']}),
    case('shared_memory_size', {'shared_memory_size': 64}, linux(sharedMemorySize=64),
         {'HostConfig.ShmSize': 64 * MIB},
         {'shared_memory_size': 128}, linux(sharedMemorySize=128), {'HostConfig.ShmSize': 128 * MIB}),
    case('tmpfs', {'tmpfs': [{'container_path': '/scratch', 'size': 16, 'mount_options': ['noexec']}]},
         linux(tmpfs=[{'containerPath': '/scratch', 'size': 16, 'mountOptions': ['noexec']}]),
         {'HostConfig.Tmpfs': {'/scratch': 'size=16m,noexec'}},
         {'tmpfs': [{'container_path': '/scratch', 'size': 32}]},
         linux(tmpfs=[{'containerPath': '/scratch', 'size': 32}]),
         {'HostConfig.Tmpfs': {'/scratch': 'size=32m'}}),
    # The host has swap accounting (cgroup v1 memory.memsw.*) but no swap device: the engine takes and
    # reports the limit (memory + swap); the container cannot actually swap here.
    case('max_swap', {'memory': 32, 'max_swap': 16}, dict(memory=32, **linux(maxSwap=16)),
         {'HostConfig.MemorySwap': 48 * MIB, 'HostConfig.Memory': 32 * MIB},
         {'memory': 32, 'max_swap': 0}, dict(memory=32, **linux(maxSwap=0)),
         {'HostConfig.MemorySwap': 32 * MIB}),
    # cgroup v1: memory.swappiness is per cgroup, and the engine reports it (on cgroup v2 it would be refused).
    case('swappiness', {'swappiness': 10}, linux(swappiness=10), {'HostConfig.MemorySwappiness': 10},
         {'swappiness': 60}, linux(swappiness=60), {'HostConfig.MemorySwappiness': 60}),
    case('health_check', {'health_check': {'command': ['CMD-SHELL', 'true']}}, {'healthCheck': {'command': ['CMD-SHELL', 'true']}},
         # ECS's defaults: interval 30, timeout 5, retries 3, start period 0 (which the engine leaves out).
         {'Config.Healthcheck': lambda got, task: got['Test'] == ['CMD-SHELL', 'true'] and got['Interval'] == 30 * NANO
          and got['Timeout'] == 5 * NANO and got['Retries'] == 3 and not got.get('StartPeriod')},
         {'health_check': {'command': ['CMD', 'true'], 'interval': 10, 'timeout': 3, 'retries': 2, 'start_period': 7}},
         {'healthCheck': {'command': ['CMD', 'true'], 'interval': 10, 'timeout': 3, 'retries': 2, 'startPeriod': 7}},
         {'Config.Healthcheck': {'Test': ['CMD', 'true'], 'Interval': 10 * NANO, 'Timeout': 3 * NANO, 'Retries': 2,
                                 'StartPeriod': 7 * NANO}}),
    case('stop_timeout', {'stop_timeout': 5, 'command': TERMINATES}, {'stopTimeout': 5, 'command': TERMINATES},
         {'Config.StopTimeout': 5, 'Config.Labels': labels_have({'drover.stop-timeout': '5'})},
         {'stop_timeout': 2, 'command': TERMINATES}, {'stopTimeout': 2, 'command': TERMINATES},
         {'Config.StopTimeout': 2, 'Config.Labels': labels_have({'drover.stop-timeout': '2'})}),
    case('start_timeout', {'start_timeout': 30}, {'startTimeout': 30},
         {'Config.Labels': labels_have({'drover.start-timeout': '30'})},
         {'start_timeout': 60}, {'startTimeout': 60}, {'Config.Labels': labels_have({'drover.start-timeout': '60'})}),
    case('log_configuration', {'log_configuration': {'log_driver': 'json-file', 'options': {'max-size': '1m'}}},
         {'logConfiguration': {'logDriver': 'json-file', 'options': {'max-size': '1m'}}},
         {'HostConfig.LogConfig': {'Type': 'json-file', 'Config': {'max-size': '1m'}}},
         {'log_configuration': {'log_driver': 'local'}}, {'logConfiguration': {'logDriver': 'local'}},
         {'HostConfig.LogConfig': {'Type': 'local', 'Config': {}}}),
]


def test_every_setting_has_a_case():
    """A row added to SETTINGS without a case here fails this test."""
    covered = set(p.values[0].option for p in CASES)
    with_effect = set(s.option for s in SETTINGS) - set(ELSEWHERE)
    assert with_effect - covered == set()
    assert covered - with_effect == set()


# --- helpers ---------------------------------------------------------------------------------------------

def task_volume(task):
    """The engine volume of the task's volume `data` (the task's cluster is its name, in these tests)."""
    return engine_volume(task, task, 'data')


def dig(info, path):
    for part in path.split('.'):
        info = (info or {}).get(part)
    return info


def assert_inspect(info, expect, task):
    for path, want in expect.items():
        got = dig(info, path)
        if callable(want):
            assert want(got, task), '%s: %r' % (path, got)
        else:
            assert got == want, '%s: %r, expected %r' % (path, got, want)


def declaration(form, task, main, peers, which):
    """The module's arguments of a task: the peers, then main, in one form."""
    index = 0 if form == 'native' else 1
    main_settings = main[index]
    if form == 'native':
        containers = [dict(p[0]) for p in peers] + [dict({'name': 'main', 'image': IMAGE, 'command': SLEEP},
                                                         **main_settings)]
        return {'name': task, 'containers': containers}
    containers = [dict(p[1]) for p in peers] + [dict({'name': 'main', 'image': IMAGE, 'command': SLEEP},
                                                     **main_settings)]
    return {'task_definition': {'family': task, 'containerDefinitions': containers}}


def with_args(form, declared, args):
    """More module options; the task's volumes go into a task definition (ECS `volumes`)."""
    out = dict(declared, **args)
    if form == 'ecs' and 'volumes' in out:
        out['task_definition'] = dict(out['task_definition'], volumes=out.pop('volumes'))
    return out


def ids_of(result):
    return dict((c['name'], c['runtime_id']) for c in result['task']['containers'])


def scope(cluster):
    return 'drover.cluster=%s' % cluster


# --- every setting ---------------------------------------------------------------------------------------

@pytest.fixture
def task_volumes(engine, cluster):
    """The engine volumes of this test's tasks go afterwards (the containers that use them first)."""
    yield
    for c in engine.containers.list(all=True, filters={'label': scope(cluster)}):
        c.remove(force=True)
    for v in engine.volumes.list(filters={'label': scope(cluster)}):
        v.remove(force=True)


@pytest.mark.parametrize('form', ['native', 'ecs'])
@pytest.mark.parametrize('c', CASES)
def test_setting_on_the_engine(engine, cluster, converge, store_path, task_volumes, c, form):
    task = cluster                      # container names are the engine's, across clusters: our own
    args = with_args(form, declaration(form, task, (c.native, c.ecs), c.peers, 'a'), c.args)
    # 1. check mode: changed, nothing made
    check = converge(check=True, **args)
    assert not check.failed, check.get('msg')
    assert check['changed'] and check['task']['last_status'] == 'PENDING'
    assert host_snapshot(engine, store_path, scope(cluster)) == {'containers': [], 'store': None}
    # apply: running, the value in inspect
    apply = converge(**args)
    assert not apply.failed, apply.get('msg')
    refused = c.not_here()
    if refused:
        # The engine refuses the value on this host: the run stops with its words, nothing is left over.
        assert apply['changed'] and apply['task']['last_status'] == 'STOPPED', apply['task']
        assert refused in apply['task']['stopped_reason'], apply['task']['stopped_reason']
        assert host_snapshot(engine, store_path, scope(cluster))['containers'] == []
    else:
        assert apply['changed'] and apply['task']['last_status'] == 'RUNNING', apply['task']
        assert_inspect(engine.api.inspect_container(ids_of(apply)['main']), c.expect, task)
    ids = ids_of(apply)
    # again, and check again: nothing to do, the same containers
    again = converge(**args)
    assert not again['changed'] and ids_of(again) == ids
    check2 = converge(check=True, **args)
    assert not check2['changed'] and ids_of(check2) == ids
    # 3. a changed value: every container of the task replaced, the new value in inspect
    args_b = with_args(form, declaration(form, task, (c.native_b, c.ecs_b), c.peers, 'b'), c.args)
    before = host_snapshot(engine, store_path, scope(cluster))
    would = converge(check=True, **args_b)
    assert would['changed'] and host_snapshot(engine, store_path, scope(cluster)) == before
    changed = converge(**args_b)
    assert not changed.failed, changed.get('msg')
    assert changed['changed'] and changed['task']['last_status'] == 'RUNNING', changed['task']
    new_ids = ids_of(changed)
    assert set(new_ids.values()).isdisjoint(ids.values()) and None not in new_ids.values()
    assert_inspect(engine.api.inspect_container(new_ids['main']), c.expect_b, task)
    assert sorted(cid for cid, status in host_snapshot(engine, store_path, scope(cluster))['containers']) == \
        sorted(new_ids.values())
    # ...and left alone when declared again unchanged
    same = converge(**args_b)
    assert not same['changed'] and ids_of(same) == new_ids
    assert not converge(check=True, **args_b)['changed']


# --- the order of the start: links and volumes_from name containers that must exist first ----------------

@pytest.mark.parametrize('form', ['native', 'ecs'])
def test_links_and_volumes_from_start_their_targets_first(engine, cluster, converge, form):
    """As ECS's agent does: a container that links to, or takes the volumes of, one declared after it starts
    after that one (in the order declared otherwise)."""
    task = cluster
    if form == 'native':
        main = {'name': 'main', 'image': IMAGE, 'command': SLEEP, 'links': ['db:database'],
                'volumes_from': [{'source_container': 'data'}]}
        data = {'name': 'data', 'image': IMAGE, 'command': SLEEP, 'essential': False, 'links': ['db']}
        args = {'name': task, 'containers': [main, data, dict(PEER_DB[0])]}
    else:
        main = {'name': 'main', 'image': IMAGE, 'command': SLEEP, 'links': ['db:database'],
                'volumesFrom': [{'sourceContainer': 'data'}]}
        data = {'name': 'data', 'image': IMAGE, 'command': SLEEP, 'essential': False, 'links': ['db']}
        args = {'task_definition': {'family': task, 'containerDefinitions': [main, data, dict(PEER_DB[1])]}}
    results = [converge(check=check, **args) for check in (True, False, False, True)]
    assert [r['changed'] for r in results] == [True, True, False, False]
    apply = results[1]
    assert apply['task']['last_status'] == 'RUNNING', apply['task']['stopped_reason']
    # The task's containers are reported in the order declared.
    assert [c['name'] for c in apply['task']['containers']] == ['main', 'data', 'db']
    ids = ids_of(apply)
    info = engine.api.inspect_container(ids['main'])
    assert info['HostConfig']['Links'] == ['/%s-db:/%s-main/database' % (task, task)]
    assert info['HostConfig']['VolumesFrom'] == ['%s-data' % task]
    assert engine.api.inspect_container(ids['data'])['HostConfig']['Links'] == ['/%s-db:/%s-data/db' % (task, task)]
    started = sorted(ids, key=lambda n: engine.api.inspect_container(ids[n])['State']['StartedAt'])
    assert started == ['db', 'data', 'main']


def test_a_cycle_of_links_is_refused(engine, cluster, converge, store_path):
    args = {'name': cluster, 'containers': [
        {'name': 'a', 'image': IMAGE, 'command': SLEEP, 'links': ['b']},
        {'name': 'b', 'image': IMAGE, 'command': SLEEP, 'volumes_from': [{'source_container': 'a'}]}]}
    for check in (True, False):
        r = converge(check=check, **args)
        assert r.failed and 'containers[0].links' in r['msg'] and 'cycle' in r['msg'], r['msg']
        assert host_snapshot(engine, store_path, scope(cluster)) == {'containers': [], 'store': None}


# --- the collection's own labels ---------------------------------------------------------------------------

@pytest.mark.parametrize('form', ['native', 'ecs'])
def test_docker_labels_never_pass_for_the_collections_own(engine, cluster, converge, store_path, form):
    """A docker label in the collection's namespace (drover.*) never reaches the container: the collection
    would take it for its own (a credential ID and task role registered, GPUs pinned, a grace period)."""
    task = cluster
    spoof = {'drover.cred-id': 'c0ffee', 'drover.task-role': 'arn:aws:iam::123456789012:role/other',
             'drover.gpus': 'GPU-00000000-0000-0000-0000-000000000000', 'drover.stop-timeout': '120',
             'drover.task': 'other', 'team': 'blue'}
    key = 'docker_labels' if form == 'native' else 'dockerLabels'
    main = {'name': 'main', 'image': IMAGE, 'command': SLEEP, key: spoof}
    args = {'name': task, 'containers': [main]} if form == 'native' else \
        {'task_definition': {'family': task, 'containerDefinitions': [main]}}
    apply = converge(**args)
    assert apply['task']['last_status'] == 'RUNNING'
    field = 'containers[0].docker_labels' if form == 'native' else 'containerDefinitions[0].dockerLabels'
    said = [w for w in warnings_of(apply) if field in w]
    assert len(said) == 1 and 'drover.cred-id, drover.gpus, drover.stop-timeout, drover.task, drover.task-role are' \
        in said[0] and 'left out' in said[0], warnings_of(apply)
    labels = engine.api.inspect_container(ids_of(apply)['main'])['Config']['Labels']
    assert labels['team'] == 'blue' and labels['drover.task'] == task
    assert not set(labels) & {'drover.cred-id', 'drover.task-role', 'drover.gpus', 'drover.stop-timeout'}
    again = converge(**args)
    assert not again['changed'] and again['task']['containers'][0]['gpu_ids'] == []
    assert warnings_of(again) == []
    store = host_snapshot(engine, store_path, scope(cluster))['store']
    assert store['credentials'] == [] and store['gpu_pins'] == []


# --- bad values ------------------------------------------------------------------------------------------

AWSVPC = {'eni_mac': '02:00:c6:12:0f:01', 'address': '198.18.15.2/24'}


def bad(id_, native, ecs, native_words, ecs_words, args=None, peers=None):
    return pytest.param(native, ecs, native_words, ecs_words, args or {}, peers or [], id=id_)


BAD = [
    bad('reservation-above-memory', {'memory': 16, 'memory_reservation': 32}, {'memory': 16, 'memoryReservation': 32},
        ('containers[0].memory_reservation', 'containers[0].memory '),
        ('containerDefinitions[0].memoryReservation', 'containerDefinitions[0].memory ')),
    bad('max-swap-without-memory', {'max_swap': 16}, linux(maxSwap=16),
        ('containers[0].max_swap', 'needs'), ('containerDefinitions[0].linuxParameters.maxSwap', 'needs')),
    bad('ulimit-hard-below-soft', {'ulimits': [{'name': 'nofile', 'soft_limit': 10, 'hard_limit': 5}]},
        {'ulimits': [{'name': 'nofile', 'softLimit': 10, 'hardLimit': 5}]},
        ('containers[0].ulimits[0].hard_limit', 'below'), ('containerDefinitions[0].ulimits[0].hardLimit', 'below')),
    bad('ulimit-unknown-name', {'ulimits': [{'name': 'files', 'soft_limit': 1, 'hard_limit': 1}]},
        {'ulimits': [{'name': 'files', 'softLimit': 1, 'hardLimit': 1}]},
        # containers: Ansible's argument spec (the choices of the table) answers first, naming the path its way.
        ('value of name', 'containers -> ulimits', 'files'), ('containerDefinitions[0].ulimits[0].name', 'nofile')),
    bad('tmpfs-relative', {'tmpfs': [{'container_path': 'scratch', 'size': 1}]},
        linux(tmpfs=[{'containerPath': 'scratch', 'size': 1}]),
        ('containers[0].tmpfs[0].container_path', 'absolute'),
        ('containerDefinitions[0].linuxParameters.tmpfs[0].containerPath', 'absolute')),
    bad('device-outside-dev', {'devices': [{'host_path': '/etc/passwd'}]}, linux(devices=[{'hostPath': '/etc/passwd'}]),
        ('containers[0].devices[0].host_path', '/dev'),
        ('containerDefinitions[0].linuxParameters.devices[0].hostPath', '/dev')),
    bad('health-command', {'health_check': {'command': ['true']}}, {'healthCheck': {'command': ['true']}},
        ('containers[0].health_check.command', 'CMD-SHELL'), ('containerDefinitions[0].healthCheck.command', 'CMD-SHELL')),
    bad('health-interval', {'health_check': {'command': ['NONE'], 'interval': 1}},
        {'healthCheck': {'command': ['NONE'], 'interval': 1}},
        ('containers[0].health_check.interval', 'from 5 to 300'),
        ('containerDefinitions[0].healthCheck.interval', 'from 5 to 300')),
    bad('stop-timeout-121', {'stop_timeout': 121}, {'stopTimeout': 121},
        ('containers[0].stop_timeout', 'at most 120'), ('containerDefinitions[0].stopTimeout', 'at most 120')),
    bad('link-outside-the-task', {'links': ['ghost']}, {'links': ['ghost']},
        ('containers[0].links[0]', 'ghost'), ('containerDefinitions[0].links[0]', 'ghost')),
    bad('volumes-from-self', {'volumes_from': [{'source_container': 'main'}]},
        {'volumesFrom': [{'sourceContainer': 'main'}]},
        ('containers[0].volumes_from[0].source_container',),
        ('containerDefinitions[0].volumesFrom[0].sourceContainer',)),
    bad('privileged-not-allowed', {'privileged': True}, {'privileged': True},
        ('containers[0].privileged', 'allow_privileged'), ('containerDefinitions[0].privileged', 'allow_privileged')),
    bad('log-driver-not-allowed', {'log_configuration': {'log_driver': 'syslog'}},
        {'logConfiguration': {'logDriver': 'syslog'}},
        ('containers[0].log_configuration.log_driver', 'not allowed'),
        ('containerDefinitions[0].logConfiguration.logDriver', 'not allowed'), args={'log_drivers': ['json-file']}),
    bad('awsvpc-hostname', {'hostname': 'h'}, {'hostname': 'h'},
        ('containers[0].hostname', 'awsvpc'), ('containerDefinitions[0].hostname', 'awsvpc'),
        args={'network_mode': 'awsvpc', 'awsvpc': AWSVPC}),
    bad('awsvpc-dns-servers', {'dns_servers': ['198.51.100.53']}, {'dnsServers': ['198.51.100.53']},
        ('containers[0].dns_servers', 'awsvpc'), ('containerDefinitions[0].dnsServers', 'awsvpc'),
        args={'network_mode': 'awsvpc', 'awsvpc': AWSVPC}),
    bad('awsvpc-links', {'links': ['db']}, {'links': ['db']},
        ('containers[1].links', 'awsvpc'), ('containerDefinitions[1].links', 'awsvpc'),
        args={'network_mode': 'awsvpc', 'awsvpc': AWSVPC}, peers=[PEER_DB]),
    bad('unknown-key', {'bogus_key': 1}, {'bogusKey': 1},
        ('containers.bogus_key',), ('containerDefinitions[0]', 'bogusKey')),
    # A task declares no volumes yet: a mount point names none of them.
    bad('mount-point-without-volume', {'mount_points': [{'source_volume': 'v', 'container_path': '/v'}]},
        {'mountPoints': [{'sourceVolume': 'v', 'containerPath': '/v'}]},
        ('containers[0].mount_points[0].source_volume', 'not a volume'),
        ('containerDefinitions[0].mountPoints[0].sourceVolume', 'not a volume')),
]


@pytest.mark.parametrize('form', ['native', 'ecs'])
@pytest.mark.parametrize('native,ecs,native_words,ecs_words,args,peers', BAD)
def test_bad_value_is_refused_and_changes_nothing(engine, cluster, converge, store_path, form, native, ecs,
                                                  native_words, ecs_words, args, peers):
    keep = converge(name=cluster + 'k', containers=[{'name': 'main', 'image': IMAGE, 'command': SLEEP}])
    assert keep['task']['last_status'] == 'RUNNING'
    before = host_snapshot(engine, store_path, scope(cluster))
    declared = dict(declaration(form, cluster, (native, ecs), peers, 'a'), **args)
    if form == 'ecs' and args.get('network_mode'):
        declared['task_definition']['networkMode'] = declared.pop('network_mode')
    for check in (True, False):
        r = converge(check=check, **declared)
        assert r.failed, r
        for word in (native_words if form == 'native' else ecs_words):
            assert word in r['msg'], r['msg']
        assert 'Traceback' not in r['msg']
        assert host_snapshot(engine, store_path, scope(cluster)) == before
        if args.get('awsvpc'):
            # refused before the task's network is built: no namespace of it (nor a holder, listed above)
            assert not set(netns_list()) & {netns_name(cluster, cluster), legacy_netns_name(cluster)}


# --- log drivers this host cannot serve ------------------------------------------------------------------

def test_awslogs_becomes_local_with_a_warning(engine, cluster, converge):
    td = {'family': cluster, 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'command': SLEEP,
        'logConfiguration': {'logDriver': 'awslogs', 'options': {
            'awslogs-group': '/ecs/app', 'awslogs-region': 'eu-west-1', 'awslogs-stream-prefix': 'app'}}}]}
    field = 'task_definition.containerDefinitions[0].logConfiguration.logDriver'
    check = converge(check=True, task_definition=td)
    # Check mode makes no container, so it says nothing of the driver it would get.
    assert check['changed'] and not [w for w in warnings_of(check) if field in w]
    apply = converge(task_definition=td)
    assert apply['task']['last_status'] == 'RUNNING'
    said = [w for w in warnings_of(apply) if field in w]
    assert len(said) == 1 and 'awslogs' in said[0] and 'local' in said[0], warnings_of(apply)
    log = engine.api.inspect_container(ids_of(apply)['main'])['HostConfig']['LogConfig']
    assert log == {'Type': 'local', 'Config': {}}       # the options were awslogs'
    # The containers are not made again: the same ones, nothing changed, nothing said.
    again = converge(task_definition=td)
    assert not again['changed'] and ids_of(again) == ids_of(apply) and warnings_of(again) == []
    assert not converge(check=True, task_definition=td)['changed']


# --- the stop's grace period -----------------------------------------------------------------------------

TRAPS_TERM = ['sh', '-c', 'trap "echo bye > /tmp/x; exit 0" TERM; while true; do sleep 1; done']
IGNORES_TERM = ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done']


def stop_events(engine, container_id, since):
    """The engine's own record of a container's end (the container is gone by then): the signals it was sent,
    each with the engine's time of it, and its exit code."""
    events = engine.api.events(since=since, until=int(time.time()) + 1, decode=True,
                               filters={'container': container_id, 'event': ['kill', 'die']})
    signals, codes = [], []
    for e in events:
        attrs = e['Actor']['Attributes']
        if e['Action'] == 'kill':
            signals.append((int(attrs['signal']), e['timeNano'] / 1e9))
        else:
            codes.append(int(attrs['exitCode']))
    assert len(codes) == 1, codes
    return signals, codes[0]


@pytest.mark.parametrize('command,stop_timeout,code,sent', [
    pytest.param(TRAPS_TERM, 3, 0, [15], id='term-handled'),            # TERM first: a clean exit
    pytest.param(IGNORES_TERM, 3, 137, [15, 9], id='term-ignored'),     # then the kill, after the grace period
    pytest.param(TRAPS_TERM, None, 137, [9], id='no-stop-timeout'),     # without one: killed at once
])
def test_stop_sends_term_then_kills_after_the_stop_timeout(engine, cluster, converge, command, stop_timeout, code,
                                                           sent):
    main = {'name': 'main', 'image': IMAGE, 'command': command}
    if stop_timeout:
        main['stop_timeout'] = stop_timeout
    r = converge(name=cluster, containers=[main])
    assert r['task']['last_status'] == 'RUNNING'
    cid = ids_of(r)['main']
    time.sleep(0.5)                      # the shell has set its trap
    since = int(time.time()) - 1
    stop = converge(name=cluster, state='stopped')
    assert stop['changed'] and stop['task']['last_status'] == 'STOPPED'
    assert task_containers(engine, cluster) == []
    signals, exit_code = stop_events(engine, cid, since)
    assert exit_code == code
    assert [signal[0] for signal in signals] == sent
    if sent == [15, 9]:
        # The grace period, as the engine timed it: the declared 3 s, not Docker's default 10 s.
        waited = signals[1][1] - signals[0][1]
        assert 2.9 <= waited < 8, waited


def test_containers_stop_in_the_reverse_order_of_their_start(engine, cluster, converge):
    """A container stops before the ones it links to (they started before it)."""
    main = {'name': 'main', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3, 'links': ['db']}
    db = {'name': 'db', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3, 'essential': False}
    side = {'name': 'side', 'image': IMAGE, 'command': TRAPS_TERM, 'stop_timeout': 3, 'essential': False}
    r = converge(name=cluster, containers=[main, db, side])
    assert r['task']['last_status'] == 'RUNNING'
    time.sleep(0.5)
    since = int(time.time()) - 1
    converge(name=cluster, state='stopped')
    events = engine.api.events(since=since, until=int(time.time()) + 1, decode=True,
                               filters={'event': 'die', 'label': scope(cluster)})
    order = [e['Actor']['Attributes']['drover.container'] for e in sorted(events, key=lambda e: e['timeNano'])]
    assert order == ['side', 'main', 'db']          # started db, main, side


def test_a_port_the_host_picks_is_told_as_a_network_binding(engine, cluster, converge, module_runner, store_path):
    """A port mapped without a host port is published on a free port the host picks; the task's containers tell it
    (ECS's networkBindings), ecs_task_info too, the port answers there, and a stopped task tells none."""
    import urllib.request
    main = {'name': 'main', 'image': IMAGE, 'port_mappings': [{'container_port': 8080}],
            'command': ['sh', '-c', 'echo hello > /tmp/index.html && exec httpd -f -p 8080 -h /tmp']}
    r = converge(name='web', containers=[main])
    assert r['task']['last_status'] == 'RUNNING', r['task']
    bindings = r['task']['containers'][0]['network_bindings']
    # what the engine itself says of the container's published ports
    published = engine.api.inspect_container(ids_of(r)['main'])['NetworkSettings']['Ports']['8080/tcp']
    assert sorted((b['bind_ip'], b['host_port']) for b in bindings) == sorted(
        (p['HostIp'], int(p['HostPort'])) for p in published)
    assert bindings and all(b['container_port'] == 8080 and b['protocol'] == 'tcp' and b['host_port'] > 0
                            for b in bindings), bindings
    port = bindings[0]['host_port']

    def fetch():
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d/' % port, timeout=2) as answer:
                return answer.read()
        except OSError:
            return None
    assert wait_for(fetch, timeout=10) == b'hello\n'
    # a second pass changes nothing and tells the same; ecs_task_info tells the same
    again = converge(name='web', containers=[main])
    assert not again['changed'] and again['task']['containers'][0]['network_bindings'] == bindings
    info = module_runner('ecs_task_info', {'store_path': store_path, 'cluster': cluster, 'name': 'web'})
    assert [t['containers'][0]['network_bindings'] for t in info['tasks']] == [bindings]
    stopped = converge(name='web', containers=[main], state='stopped')
    assert stopped['task']['last_status'] == 'STOPPED'
    assert [c['network_bindings'] for c in stopped['task']['containers']] == [[]]
