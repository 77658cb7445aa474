# -*- coding: utf-8 -*-
"""Capabilities and the host-network policy: every container (task, runner, netns holder) is created without
NET_RAW unless its declaration adds it back, and a task or runner profile on the host's network is refused
unless the host allows it."""

from __future__ import absolute_import, division, print_function

import hashlib
import json

import docker
import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils._docker import Engine
from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import pool_spec
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IMG = 'drover.local/busybox:1'


def one(caps=None, **kw):
    box = {'name': 'main', 'image': IMG}
    if caps is not None:
        box['capabilities'] = caps
    # What these tests add beyond the engine's default set, the host allows (test_host_policy.py tests the policy).
    raw = {'name': 'web', 'containers': [box], 'allowed_capabilities': ['SYS_PTRACE', 'ALL']}
    raw.update(kw)
    return spec.task_set(raw)[0][0]


def refused(params, *words):
    with pytest.raises(SpecError) as err:
        spec.task_set(params)
    for word in words:
        assert word in str(err.value), str(err.value)
    return str(err.value)


def td(linux=None, network_mode=None):
    cd = {'name': 'main', 'image': IMG}
    if linux is not None:
        cd['linuxParameters'] = linux
    out = {'family': 'web', 'containerDefinitions': [cd]}
    if network_mode:
        out['networkMode'] = network_mode
    return out


# --- capabilities ------------------------------------------------------------------------------------------

def test_a_container_drops_net_raw_by_default():
    assert one().containers[0].capabilities == settings.Capabilities((), ('NET_RAW',))
    # the module's argument spec gives unset suboptions as None
    assert one({'add': None, 'drop': None}).containers[0].capabilities == settings.Capabilities((), ('NET_RAW',))


@pytest.mark.parametrize('caps,expected', [
    ({'add': ['NET_RAW']}, ((('NET_RAW',), ()))),
    ({'add': ['SYS_PTRACE']}, ((('SYS_PTRACE',), ('NET_RAW',)))),
    ({'drop': ['ALL'], 'add': ['NET_BIND_SERVICE', 'NET_BIND_SERVICE']}, ((('NET_BIND_SERVICE',), ('ALL', 'NET_RAW')))),
    ({'add': ['ALL']}, ((('ALL',), ()))),
    ({'drop': ['NET_RAW', 'MKNOD']}, (((), ('MKNOD', 'NET_RAW')))),
])
def test_added_and_dropped_capabilities(caps, expected):
    assert one(caps).containers[0].capabilities == settings.Capabilities(*expected)


def test_the_capabilities_are_in_the_spec_hash():
    """A change of capabilities replaces the task's containers; so does the new default (NET_RAW dropped), for
    a container declared before it: its hash of the earlier releases had no capabilities in it."""
    assert one().spec_hash != one({'add': ['NET_RAW']}).spec_hash
    assert one().spec_hash == one({'drop': ['NET_RAW']}).spec_hash      # the same container
    assert one({'add': ['SYS_PTRACE', 'NET_RAW']}).spec_hash == one({'add': ['NET_RAW', 'SYS_PTRACE']}).spec_hash
    t = one()
    before = {'name': t.name, 'network_mode': t.network_mode, 'task_role_arn': None, 'cred_id': None,
              'containers': [dict((k, v) for k, v in c._asdict().items() if k != 'capabilities') for c in t.containers]}
    old_hash = hashlib.sha256(json.dumps(before, sort_keys=True, default=list).encode('utf-8')).hexdigest()[:16]
    assert t.spec_hash != old_hash


def test_task_definition_linux_parameters_capabilities_as_ecs_writes_them():
    t = spec.task_set({'task_definition': td({'capabilities': {'add': ['NET_RAW'], 'drop': ['MKNOD']}})})[0][0]
    assert t.containers[0].capabilities == settings.Capabilities(('NET_RAW',), ('MKNOD',))
    assert t.spec_hash == one({'add': ['NET_RAW'], 'drop': ['MKNOD']}).spec_hash
    # empty members, as AWS returns them, ask for nothing
    plain = spec.task_set({'task_definition': td({'capabilities': {}, 'devices': [], 'tmpfs': []})})[0][0]
    assert plain.spec_hash == one().spec_hash


@pytest.mark.parametrize('params,words', [
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'capabilities': {'add': ['NET_PWN']}}]},
     ('containers[0].capabilities.add[0]', 'NET_PWN', 'NET_RAW')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'capabilities': {'add': ['net_raw']}}]},
     ('containers[0].capabilities.add[0]',)),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'capabilities': {'add': 'NET_RAW'}}]},
     ('containers[0].capabilities.add', 'list')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'capabilities': ['NET_RAW']}]},
     ('containers[0].capabilities', 'mapping')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG, 'capabilities': {'keep': ['NET_RAW']}}]},
     ('containers[0].capabilities', 'unsupported keys: keep')),
    ({'name': 'web', 'containers': [{'name': 'a', 'image': IMG,
                                     'capabilities': {'add': ['NET_RAW'], 'drop': ['NET_RAW']}}]},
     ('containers[0].capabilities', 'NET_RAW is both added and dropped')),
    ({'task_definition': td({'capabilities': {'add': ['CAP_NET_RAW']}})},
     ('task_definition.containerDefinitions[0].linuxParameters.capabilities.add[0]', 'CAP_NET_RAW')),
    ({'task_definition': td({'initProcessEnabled': True, 'kernelTweaks': [{'hostPath': '/dev/kmsg'}],
                             'capabilities': {'add': ['NET_RAW']}})},
     ('task_definition.containerDefinitions[0].linuxParameters', 'kernelTweaks')),
    ({'task_definition': td(['NET_RAW'])}, ('task_definition.containerDefinitions[0].linuxParameters', 'valid types: dict')),
])
def test_bad_capabilities_name_the_field(params, words):
    refused(params, *words)


# --- the host-network policy --------------------------------------------------------------------------------

def test_a_host_network_task_is_refused_unless_the_host_allows_it():
    raw = {'name': 'web', 'cluster': 'prod', 'network_mode': 'host', 'containers': [{'name': 'a', 'image': IMG}]}
    msg = refused(raw, 'network_mode is host', 'prod/web', 'allow_host_network')
    assert msg.startswith('network_mode'), msg
    assert spec.task_set(dict(raw, allow_host_network=True))[0][0].network_mode == 'host'
    # stopping or removing one is always allowed
    for state in ('stopped', 'absent'):
        assert spec.task_set(dict(raw, state=state))[0][0].state == state


def test_the_refusal_names_where_host_was_declared():
    refused({'task_definition': td(network_mode='host')}, 'task_definition.networkMode is host', 'allow_host_network')
    box = [{'name': 'a', 'image': IMG}]
    msg = refused({'tasks': [{'name': 'a', 'containers': box}, {'name': 'b', 'network_mode': 'host', 'containers': box}]},
                  'tasks[1].network_mode is host')
    assert 'default/b' in msg
    # a default of the call (the top-level network_mode) is named as such
    refused({'network_mode': 'host', 'tasks': [{'name': 'a', 'containers': box}]}, 'network_mode is host', 'default/a')
    assert spec.task_set({'network_mode': 'host', 'allow_host_network': True,
                          'tasks': [{'name': 'a', 'containers': box}]})[0][0].network_mode == 'host'


POOL = {'pool': 'ci', 'repository': 'octo/app', 'labels': ['self-hosted'], 'token': 't',
        'profile': {'name': 'small', 'image': IMG, 'slots': 1}}


def test_a_runner_profile_drops_net_raw_and_may_add_capabilities():
    assert pool_spec(POOL, 'm1').profile.capabilities == settings.Capabilities((), ('NET_RAW',))
    given = dict(POOL, profile=dict(POOL['profile'], capabilities={'add': ['NET_RAW', 'SYS_PTRACE']}))
    assert pool_spec(given, 'm1').profile.capabilities == settings.Capabilities(('NET_RAW', 'SYS_PTRACE'), ())
    with pytest.raises(SpecError) as err:
        pool_spec(dict(POOL, profile=dict(POOL['profile'], capabilities={'add': ['RAW']})), 'm1')
    assert 'profile.capabilities.add[0]' in str(err.value)


def test_a_host_network_runner_profile_is_refused_unless_the_host_allows_it():
    host = dict(POOL, profile=dict(POOL['profile'], network_mode='host'))
    with pytest.raises(SpecError) as err:
        pool_spec(host, 'm1')
    assert 'profile.network_mode is host' in str(err.value) and 'allow_host_network' in str(err.value)
    assert pool_spec(dict(host, allow_host_network=True), 'm1').profile.network_mode == 'host'
    assert pool_spec(dict(host, state='absent'), 'm1').state == 'absent'          # draining is always allowed


# --- the adapter: what the engine is asked for ---------------------------------------------------------------

def test_the_adapter_passes_cap_add_and_cap_drop_to_the_engine(monkeypatch):
    made = {}
    engine = Engine.__new__(Engine)
    engine.api = docker.APIClient(base_url='unix:///nonexistent.sock', version='1.41')

    def create_container(**kw):
        made.update(kw)
        return {'Id': 'c1'}
    monkeypatch.setattr(engine.api, 'create_container', create_container)
    engine.create('web-main', IMG, {}, cap_add=('NET_RAW',), cap_drop=('MKNOD',))
    assert made['host_config']['CapAdd'] == ['NET_RAW'] and made['host_config']['CapDrop'] == ['MKNOD']
    made.clear()
    engine.create('web-main', IMG, {})
    assert 'CapAdd' not in made['host_config'] and 'CapDrop' not in made['host_config']
