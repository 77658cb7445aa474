# -*- coding: utf-8 -*-
"""The host's policy against a tenant's declaration, on the real engine (docs/security.md, "the host's policy"):
what would give a task the host without `privileged` (a capability past the engine's default set, a host device,
a security option that lifts a confinement, a local volume that mounts a host path or device, a bind through a
symbolic link planted under bind_paths, a mount mode slipped into a path), another task's or cluster's files (a
shared volume named after theirs), the host's uplink (an ENI that is not one), or a role the host does not allow
is refused before anything changes: the drover containers, the network namespaces and links, and every store row
compared before and after (check mode and for real). What the host's policy lists is taken."""

from __future__ import absolute_import, division, print_function

import os
import subprocess

import pytest

from helpers import IMAGE, container, net_snapshot, statuses, host_links

from ansible_collections.drover.fleet.plugins.module_utils.tasks import level

ROLE = 'arn:aws:iam::123456789012:role/app-web'


def td(**cd):
    """A task definition of one container with the ECS fields `cd`."""
    return {'family': 'web', 'containerDefinitions': [dict({'name': 'main', 'image': IMAGE, 'essential': True,
                                                            'memory': 32, 'command': ['sleep', '3600']}, **cd)]}


def volume_task(volume, **mount):
    return dict(name='web', volumes=[volume], containers=[container('main', mount_points=[dict(
        {'source_volume': volume['name'], 'container_path': '/v'}, **mount)])])


CASES = [
    # privileged in all but name
    (dict(name='web', containers=[container('main', capabilities={'add': ['SYS_ADMIN']})]),
     'containers[0].capabilities.add: SYS_ADMIN reaches past the container'),
    (dict(name='web', containers=[container('main', capabilities={'add': ['ALL']})]),
     'containers[0].capabilities.add: ALL reaches past the container'),
    (dict(task_definition=td(linuxParameters={'capabilities': {'add': ['DAC_READ_SEARCH']}})),
     'task_definition.containerDefinitions[0].linuxParameters.capabilities.add: DAC_READ_SEARCH reaches past'),
    (dict(name='web', containers=[container('main', devices=[{'host_path': '/dev/mem'}])]),
     'containers[0].devices[0].host_path /dev/mem: a host device gives the container what the host keeps behind it'),
    (dict(task_definition=td(linuxParameters={'devices': [{'hostPath': '/dev/sda', 'containerPath': '/dev/sda'}]})),
     'task_definition.containerDefinitions[0].linuxParameters.devices[0].hostPath /dev/sda'),
    (dict(name='web', containers=[container('main', docker_security_options=['apparmor=unconfined'])]),
     'containers[0].docker_security_options[0] apparmor=unconfined may lift a confinement'),
    (dict(name='web', containers=[container('main', docker_security_options=['no-new-privileges',
                                                                             'seccomp=unconfined'])]),
     'containers[0].docker_security_options[1] seccomp=unconfined may lift a confinement'),
    (dict(task_definition=td(dockerSecurityOptions=['systempaths=unconfined'])),
     'task_definition.containerDefinitions[0].dockerSecurityOptions[0] systempaths=unconfined may lift'),
    (dict(task_definition=td(dockerSecurityOptions=['label:disable'])),
     'dockerSecurityOptions[0] label:disable may lift'),
    (dict(task_definition=td(dockerSecurityOptions=['label:type:spc_t'])),
     'dockerSecurityOptions[0] label:type:spc_t may lift'),
    (dict(name='web', containers=[container('main', docker_security_options=['apparmor=runc'])]),
     'containers[0].docker_security_options[0] apparmor=runc may lift'),
    (dict(name='web', containers=[container('main', devices=[{'host_path': '/dev/dri/../sda'}])],
          allowed_devices=['/dev/dri/*']),
     'containers[0].devices[0].host_path must be a device\'s path itself (no empty, "." or ".." part)'),
    # a host path or device through a volume
    (volume_task({'name': 'v', 'docker_volume_configuration': {'driver': 'local', 'driver_opts': {
        'type': 'none', 'o': 'bind', 'device': '/'}}}),
     'volumes[0].docker_volume_configuration.driver_opts: type none, o bind would mount what the host holds'),
    (volume_task({'name': 'v', 'docker_volume_configuration': {'scope': 'shared', 'autoprovision': True,
                                                               'driver_opts': {'type': 'tmpfs', 'o': 'bind',
                                                                               'device': '/etc'}}}),
     'volumes[0].docker_volume_configuration.driver_opts: type tmpfs, o bind would mount'),
    (dict(task_definition=dict(td(mountPoints=[{'sourceVolume': 'v', 'containerPath': '/v'}]), volumes=[{
        'name': 'v', 'dockerVolumeConfiguration': {'scope': 'task', 'driver': 'local', 'driverOpts': {
            'type': 'ext4', 'device': '/dev/sda1'}}}])),
     'task_definition.volumes[0].dockerVolumeConfiguration.driverOpts: type ext4, o (none) would mount'),
    (dict(volume_task({'name': 'v', 'docker_volume_configuration': {'driver_opts': {
        'type': 'nfs', 'o': 'addr=198.18.0.10,mountaddr=198.18.0.99', 'device': ':/exports'}}}),
        nfs_servers=['198.18.0.10']),
     'volumes[0].docker_volume_configuration.driver_opts.o mountaddr=198.18.0.99: an NFS volume mounts from the '
     'server in addr= alone'),
    (volume_task({'name': 'v', 'docker_volume_configuration': {'driver_opts': {
        'type': 'nfs', 'o': 'addr=198.18.0.10,ro', 'device': ':/exports'}}}),
     'volumes[0].docker_volume_configuration.driver_opts.o: the NFS server 198.18.0.10 is not one this host mounts'),
    (dict(task_definition=dict(td(), volumes=[{'name': 'e', 'efsVolumeConfiguration': {
        'fileSystemId': '198.18.0.10', 'rootDirectory': '/exports'}}])),
     'task_definition.volumes[0].efsVolumeConfiguration.fileSystemId: the NFS server 198.18.0.10 is not one'),
    # a mount mode of the host's path slipped into the container's
    (volume_task({'name': 'v', 'host': {'source_path': '/srv'}}, container_path='/h:rshared'),
     'containers[0].mount_points[0].container_path must not hold ":", "," or a NUL character'),
    (dict(name='web', containers=[container('main', devices=[{'host_path': '/dev/null',
                                                              'container_path': '/dev/x:rwm'}])],
          allowed_devices=['/dev/null']),
     'containers[0].devices[0].container_path must not hold ":"'),
    # another task's files
    (volume_task({'name': level.engine_volume('prod', 'victim', 'data'),
                  'docker_volume_configuration': {'scope': 'shared'}}),
     'names the collection\'s own volumes'),
    # roles the host does not allow
    (dict(name='web', task_role_arn='arn:aws:iam::123456789012:role/admin', containers=[container('main')],
          allowed_roles=['arn:aws:iam::123456789012:role/app-*']),
     'task_role_arn arn:aws:iam::123456789012:role/admin is not a role this host lets a task take '
     '(allowed_roles: arn:aws:iam::123456789012:role/app-*; role variable drover_allowed_roles)'),
    (dict(task_definition=dict(td(), executionRoleArn='admin'), allowed_roles=['arn:aws:iam::*:role/admin']),
     'task_definition.executionRoleArn admin is not a role this host lets a task take'),
    # an empty policy is a policy: nothing allowed, never everything
    (dict(name='web', containers=[container('main', log_configuration={'log_driver': 'json-file'})], log_drivers=[]),
     'containers[0].log_configuration.log_driver \'json-file\' is not allowed on this host (allowed: none)'),
    (dict(name='web', volumes=[{'name': 'h', 'host': {'source_path': '/etc'}}], bind_paths=[''],
          containers=[container('main', mount_points=[{'source_volume': 'h', 'container_path': '/e'}])]),
     'bind_paths[0] must be an absolute path'),
]


@pytest.mark.parametrize('args,words', CASES, ids=['case%d' % i for i in range(len(CASES))])
def test_a_declaration_past_the_host_s_policy_is_refused_and_nothing_changes(engine, cluster, converge, store_path,
                                                                             args, words):
    before = net_snapshot(engine, store_path)
    for check in (True, False):
        r = converge(check=check, **args)
        assert r.failed and words in r['msg'], r.get('msg')
    assert net_snapshot(engine, store_path) == before


def test_what_the_host_lists_is_taken(engine, cluster, converge, tmp_path):
    """A capability in allowed_capabilities, a device that matches allowed_devices, a confining security option,
    a role that matches allowed_roles, and the same declarations with allow_privileged."""
    decl = dict(name='web', task_role_arn='arn:aws:iam::123456789012:role/app-web', containers=[container(
        'main', capabilities={'add': ['SYS_PTRACE']}, devices=[{'host_path': '/dev/null', 'container_path': '/dev/x'}],
        docker_security_options=['no-new-privileges', 'label:type:container_t'])])
    policy = dict(allowed_capabilities=['SYS_PTRACE'], allowed_devices=['/dev/nul?'],
                  allowed_security_options=['label:type:container_t'],
                  allowed_roles=['arn:aws:iam::123456789012:role/app-*'])
    r = converge(**dict(decl, **policy))
    assert r['task']['last_status'] == 'RUNNING', r['task']
    host = engine.api.inspect_container('web-main')['HostConfig']
    assert host['CapAdd'] == ['SYS_PTRACE'] and host['Devices'][0]['PathOnHost'] == '/dev/null'
    assert host['SecurityOpt'] == ['no-new-privileges', 'label:type:container_t']
    assert not converge(**dict(decl, allow_privileged=True))['changed']
    # Stopping or removing a task is always allowed, whatever it asked for.
    for state in ('stopped', 'absent'):
        assert converge(**dict(decl, state=state))['changed']


def test_a_symbolic_link_under_bind_paths_does_not_lead_out(engine, cluster, converge, store_path, tmp_path):
    """A task that may write under an allowed prefix plants a link there (root -> /); a later bind through it
    would be the host's /etc. Checked on the host before anything changes."""
    allowed = tmp_path / 'tasks'
    (allowed / 'a').mkdir(parents=True)
    os.symlink('/', str(allowed / 'a' / 'root'))
    (allowed / 'a' / 'data').mkdir()
    os.symlink(str(allowed / 'a' / 'data'), str(allowed / 'a' / 'current'))
    args = dict(bind_paths=[str(allowed)], containers=[container('main', mount_points=[
        {'source_volume': 'h', 'container_path': '/h'}])])
    # A link that stays under the prefix is taken, and so is a prefix that goes through a link itself.
    r = converge(name='web', volumes=[{'name': 'h', 'host': {'source_path': str(allowed / 'a' / 'current')}}], **args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    os.symlink(str(allowed), str(tmp_path / 'linked'))
    r = converge(name='web3', **dict(args, bind_paths=[str(tmp_path / 'linked')], volumes=[
        {'name': 'h', 'host': {'source_path': str(tmp_path / 'linked' / 'a' / 'data')}}]))
    assert r['task']['last_status'] == 'RUNNING', r['task']
    before = net_snapshot(engine, store_path)
    for check in (True, False):
        r = converge(check=check, name='web2', **dict(args, volumes=[
            {'name': 'h', 'host': {'source_path': str(allowed / 'a' / 'root' / 'etc')}}]))
        assert r.failed and r['msg'] == (
            'volumes[0] (h) of task %s/web2 binds %s/a/root/etc, which is /etc on this host: outside the host paths '
            'this host allows for binds (bind_paths: %s); a symbolic link there is refused'
            % (cluster, allowed, allowed)), r['msg']
    assert net_snapshot(engine, store_path) == before


def test_a_shared_volume_is_shared_within_its_cluster_only(engine, cluster, converge, store_path):
    shared = 'shared-%s' % cluster
    vol = {'name': shared, 'docker_volume_configuration': {'scope': 'shared', 'autoprovision': True}}
    mine = converge(**volume_task(vol))
    assert mine['task']['last_status'] == 'RUNNING', mine['task']
    other = cluster + 'x'
    before = net_snapshot(engine, store_path)
    try:
        for check in (True, False):
            r = converge(check=check, cluster=other, **dict(volume_task(dict(vol, docker_volume_configuration={
                'scope': 'shared'})), name='web2'))
            assert r.failed and r['msg'] == (
                'volumes[0] (%s) of task %s/web2 (scope shared) is a volume the collection made for cluster %s: a '
                'shared volume is shared within its cluster only' % (shared, other, cluster)), r['msg']
        assert net_snapshot(engine, store_path) == before
    finally:
        converge(name='web', state='absent')
        engine.volumes.get(shared).remove()


@pytest.mark.usefixtures('netns_cleanup')
def test_an_eni_that_is_the_host_s_own_stays_on_the_host(engine, cluster, converge, fake_eni, store_path):
    """An awsvpc task naming the MAC of an interface the host uses (here one holding a host address; the uplink,
    docker0 and lo the same) would take it off the host: the run fails with the reason, the interface stays."""
    eni = fake_eni()
    eni.plug()
    subprocess.run(['ip', 'addr', 'add', eni.address(7), 'dev', eni.ifname], check=True)
    awsvpc = {'eni_mac': eni.mac, 'address': eni.address(), 'gateway': eni.gateway}
    r = converge(name='web', network_mode='awsvpc', awsvpc=awsvpc, containers=[container('main')])
    assert r['task']['last_status'] == 'STOPPED', r['task']
    assert ('the interface %s with MAC %s is not an ENI to move into the task\'s network: it holds the host\'s address '
            '%s' % (eni.ifname, eni.mac, eni.address(7).split('/')[0])) in r['task']['stopped_reason'], r['task']
    assert (eni.ifname, eni.mac) in host_links() and statuses(engine, cluster) == {}
    shown = subprocess.run(['ip', '-o', '-4', 'addr', 'show', 'dev', eni.ifname], capture_output=True, text=True,
                           check=True).stdout
    assert eni.address(7) in shown


@pytest.mark.usefixtures('netns_cleanup')
def test_an_eni_that_carries_a_host_interface_stays_on_the_host(engine, cluster, converge, fake_eni):
    """A macvlan (a VLAN, an ipvlan) the host made on an interface would go dead with its parent in a task's
    namespace: the interface under it is not an ENI to move; the run fails with the reason, both stay."""
    eni = fake_eni()
    eni.plug()
    upper = 'dmv' + cluster[-8:]
    subprocess.run(['ip', 'link', 'add', 'link', eni.ifname, 'name', upper, 'type', 'macvlan'], check=True)
    try:
        r = converge(name='web', network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                     containers=[container('main')])
        assert r['task']['last_status'] == 'STOPPED', r['task']
        assert ('the interface %s with MAC %s is not an ENI to move into the task\'s network: the host\'s interface '
                '%s is made on it (a VLAN, macvlan or ipvlan)' % (eni.ifname, eni.mac, upper)
                in r['task']['stopped_reason']), r['task']
        names = [link[0] for link in host_links()]
        assert eni.ifname in names and upper in names and statuses(engine, cluster) == {}
    finally:
        subprocess.run(['ip', 'link', 'del', upper], check=False)
