# -*- coding: utf-8 -*-
"""The services' placement decider (services.plan): pure, on synthetic hosts."""

from __future__ import absolute_import, division, print_function

import collections

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.services import plan as ps
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

ZONES = {'h1': 'a', 'h2': 'a', 'h3': 'b', 'h4': 'b', 'h5': 'c', 'h6': 'c'}


def fleet(memory=4096, cpu=4096, gpus=0, down=(), **attrs):
    return [ps.host_spec({'name': name, 'cpu': cpu, 'memory': memory, 'gpus': gpus, 'up': name not in down,
                          'attributes': dict({'zone': zone}, **attrs.get(name, {}))})
            for name, zone in sorted(ZONES.items())]


def web(desired=9, **kw):
    raw = dict(name='web', desired_count=desired, cpu=256, memory=512,
               placement_strategy=[{'type': 'spread', 'field': 'attribute:zone'}, {'type': 'binpack', 'field': 'memory'}])
    raw.update(kw)
    return ps.service_spec(raw)


def after(plan):
    """The instances running once the plan is carried out (what the next pass finds)."""
    return list(plan.keep) + list(plan.start)


def per(instances, key):
    return collections.Counter(key(i) for i in instances)


def zone_of(inst):
    return ZONES[inst.host]


def fits(instances, hosts, services, used=None):
    by = dict((s.name, s) for s in services)
    for host in hosts:
        mine = [by[i.service] for i in instances if i.host == host.name]
        spent = (used or {}).get(host.name, (0, 0, 0))
        assert sum(s.cpu for s in mine) + spent[0] <= host.cpu
        assert sum(s.memory for s in mine) + spent[1] <= host.memory
        assert sum(s.gpus for s in mine) + spent[2] <= host.gpus
    return True


def test_nine_spread_by_zone_then_binpacked_and_a_second_pass_changes_nothing():
    hosts, svc = fleet(), web()
    first = ps.plan([svc], hosts, [])
    running = after(first)
    assert len(running) == 9 and not first.stop and not first.unplaced
    assert per(running, zone_of) == {'a': 3, 'b': 3, 'c': 3}
    # binpack memory within a zone: the three of a zone share one host while it has room
    assert sorted(per(running, lambda i: i.host).values()) == [3, 3, 3]
    assert fits(running, hosts, [svc])
    assert sorted(ps.instance_name(i.service, i.index) for i in running) == sorted('web-%d' % n for n in range(9))
    second = ps.plan([svc], hosts, running)
    assert not second.start and not second.stop and not second.lost and len(second.keep) == 9


@pytest.mark.parametrize('count,zones', [(12, {'a': 4, 'b': 4, 'c': 4}), (4, None)])
def test_scaling_keeps_the_spread(count, zones):
    hosts = fleet()
    running = after(ps.plan([web()], hosts, []))
    scaled = ps.plan([web(desired=count)], hosts, running)
    now = after(scaled)
    assert len(now) == count
    by_zone = per(now, zone_of)
    if zones:
        assert by_zone == zones and len(scaled.start) == 3 and not scaled.stop
    else:
        assert sorted(by_zone.values()) == [1, 1, 2] and len(scaled.stop) == 5 and not scaled.start
    assert fits(now, hosts, [web()])
    assert not ps.plan([web(desired=count)], hosts, now).start


def test_a_host_down_has_its_tasks_placed_elsewhere_and_the_excess_goes_when_it_returns():
    hosts = fleet(memory=2048)              # room for 4 of 512 MiB a host
    running = after(ps.plan([web()], hosts, []))
    gone = max(per(running, lambda i: i.host).items(), key=lambda kv: (kv[1], kv[0]))[0]
    lost_here = [i for i in running if i.host == gone]
    down = fleet(memory=2048, down=(gone,))
    healed = ps.plan([web()], down, running)
    assert sorted(healed.lost) == sorted(lost_here) and len(healed.start) == len(lost_here)
    assert all(i.host != gone for i in healed.start)
    assert len(after(healed)) == 9 and fits(after(healed), down, [web()])
    # the host returns with its old instances: the excess stops, 9 run, each index on one host alone
    back = ps.plan([web()], fleet(memory=2048), after(healed) + lost_here)
    now = after(back)
    assert len(now) == 9 and len(back.stop) == len(lost_here) and not back.start
    assert per(now, zone_of) == {'a': 3, 'b': 3, 'c': 3}
    assert len(set((i.service, i.index) for i in now)) == 9
    assert not ps.plan([web()], fleet(memory=2048), now).stop


def test_distinct_instance_and_what_cannot_be_placed_is_told_per_host():
    svc = web(desired=8, placement_constraints=[{'type': 'distinctInstance'}])
    done = ps.plan([svc], fleet(), [])
    assert max(per(after(done), lambda i: i.host).values()) == 1 and len(after(done)) == 6
    assert done.unplaced == {'web': {'count': 2, 'reasons': dict((h, 'distinctInstance') for h in ZONES)}}


def test_member_of_across_hosts():
    svc = web(desired=4, placement_constraints=[{'type': 'memberOf', 'expression': 'attribute:zone in [a, c]'}])
    done = ps.plan([svc], fleet(), [])
    assert set(per(after(done), zone_of)) == {'a', 'c'} and len(after(done)) == 4
    # an instance found outside the expression (the constraint changed) stops, and one is placed inside it
    moved = ps.plan([svc], fleet(), [ps.Instance('web', 0, 'h3')] + after(done)[:3])
    assert moved.stop == [ps.Instance('web', 0, 'h3')] and all(zone_of(i) in 'ac' for i in after(moved))
    narrow = ps.service_spec(dict(name='db', desired_count=1, memory=512,
                                  placement_constraints=[{'type': 'memberOf', 'expression': 'attribute:zone == z'}]))
    refused = ps.plan([narrow], fleet(), [])
    assert refused.unplaced['db']['reasons'] == dict((h, 'memberOf') for h in ZONES) and not refused.start


def test_capacity_counts_declared_tasks_and_a_gpu_task_goes_only_where_a_gpu_is_free():
    hosts = fleet(gpus=1)
    used = dict((h, (0, 0, 1)) for h in ZONES if h != 'h4')         # every GPU but h4's pinned by declared tasks
    used['h1'] = (0, 4096, 1)                                        # h1's memory all taken
    train = ps.service_spec(dict(name='train', desired_count=2, memory=1024, containers=[{'name': 'm', 'gpu': 1}]))
    done = ps.plan([train, web()], hosts, [], used)
    assert [i.host for i in after(done) if i.service == 'train'] == ['h4']
    assert done.unplaced['train']['count'] == 1
    assert done.unplaced['train']['reasons']['h2'] == 'not enough gpus'
    assert done.unplaced['train']['reasons']['h4'] == 'not enough gpus'
    assert 'h1' not in set(i.host for i in after(done) if i.service == 'web')
    assert fits(after(done), hosts, [train, web()], used)


def test_too_little_room_anywhere_is_unplaced_never_over_capacity():
    hosts = fleet(memory=1024)
    done = ps.plan([web(desired=20)], hosts, [])
    assert len(after(done)) == 12 and done.unplaced['web']['count'] == 8
    assert set(done.unplaced['web']['reasons'].values()) == {'not enough memory'}
    assert fits(after(done), hosts, [web()])


def test_random_is_the_same_on_every_controller_and_a_service_no_longer_declared_stops():
    svc = web(desired=5, placement_strategy=[{'type': 'random'}])
    one, two = ps.plan([svc], fleet(), []), ps.plan([svc], fleet(), [])
    assert one == two and len(set(i.host for i in one.start)) > 1
    gone = ps.plan([], fleet(), after(one))
    assert sorted(gone.stop) == sorted(after(one)) and not gone.keep


@pytest.mark.parametrize('raw,error', [
    (dict(name='web', desired_count=-1), 'service.desired_count must be a whole number from 0 to 10000, got -1'),
    (dict(name='web', placement_strategy=[{'type': 'binpack', 'field': 'disk'}]),
     "service.placement_strategy[0].field must be cpu or memory for binpack, got 'disk'"),
    (dict(name='web', placement_strategy=[{'type': 'spread', 'field': 'zone'}]),
     "service.placement_strategy[0].field must be instanceId or attribute:<name> for spread, got 'zone'"),
    (dict(name='web', placement_strategy=[{'type': 'fill'}]),
     "service.placement_strategy[0].type must be one of spread, binpack, random, got 'fill'"),
    (dict(name='web', placement_constraints=[{'type': 'memberOf', 'expression': 'attribute:zone =='}]),
     'service.placement_constraints[0].expression'),
    (dict(name='web', placement_constraints=[{'type': 'sameHost'}]),
     "service.placement_constraints[0].type must be one of distinctInstance, memberOf, got 'sameHost'"),
    (dict(name='a b'), "service.name must be letters, digits, \"-\" and \"_\", got 'a b'"),
    (dict(name='web', desiredCount=3), 'service has unsupported keys: desiredCount (a service takes '),
])
def test_bad_services_name_the_field(raw, error):
    with pytest.raises(SpecError) as exc:
        ps.service_spec(raw)
    assert str(exc.value).startswith(error), str(exc.value)


@pytest.mark.parametrize('decl,want', [
    ({'containers': [{'name': 'a', 'memory': 64, 'cpu': 128}, {'name': 'b', 'memory_reservation': 32, 'gpu': 1}]},
     (128, 96, 1)),
    ({'cpu': 512, 'memory': 256, 'containers': [{'name': 'a', 'memory': 64}]}, (512, 256, 0)),
    ({'task_definition': {'cpu': '1 vCPU', 'memory': '2 GB', 'containerDefinitions': [
        {'name': 'a', 'memoryReservation': 128, 'resourceRequirements': [{'type': 'GPU', 'value': '2'}]}]}},
     (1024, 2048, 2)),
    ({'task_definition': {'taskDefinition': {'containerDefinitions': [{'name': 'a', 'memory': 100, 'cpu': 10}]}}},
     (10, 100, 0)),
])
def test_what_a_task_takes_of_a_host(decl, want):
    assert ps.needs(decl) == want


def test_a_task_level_amount_it_cannot_read_names_the_field():
    with pytest.raises(SpecError, match=r'task.memory must be MiB'):
        ps.needs({'memory': 'lots'})
    with pytest.raises(SpecError, match=r"task.containers\[0\].memory must be a whole number, got 'x'"):
        ps.needs({'containers': [{'name': 'a', 'memory': 'x'}]})
    assert ps.needs({'containers': [{'name': 'a', 'memory': '256'}], 'cpu': '2 vcpus'}) == (2048, 256, 0)


# the controller's records key in these tests
KEY = b'unit-tests-records-key-0123456789abcdef'


def _place(raw_hosts, **more):
    """The placement action's decision, its records sealed under KEY."""
    from ansible_collections.drover.fleet.plugins.action.service_placement import place
    return place(raw_hosts, seal_key=KEY, **more)


def _action_hosts(services, stopped=False):
    return [{'name': 'h%d' % i, 'up': i != 3, 'capacity': {'cpu': 1024, 'memory': 256}, 'attributes': {},
             'services': services if i != 4 or len(services) < 2 else services[:1],
             'tasks': [{'name': 'web-0', 'cluster': 'prod', 'last_status': 'STOPPED' if stopped else 'RUNNING'}]
             if i == 1 else [],
             'declared': [{'name': 'db', 'containers': [{'name': 'm', 'memory': 192}]}] if i == 2 else []}
            for i in (1, 2, 3, 4)]


WEB = {'name': 'web', 'cluster': 'prod', 'desired_count': 3, 'network_mode': 'none',
       'containers': [{'name': 'main', 'image': 'i', 'memory': 64}], 'registry_auth': {'username': 'u', 'password': 'p'},
       'placement_constraints': [{'type': 'distinctInstance'}]}


def test_the_placement_action_hands_each_host_its_share():
    out = _place(_action_hosts([WEB], stopped=True))
    # kept where it runs, a stopped one too (it restarts where it ran)
    assert [d['name'] for d in out['placement']['h1']] == ['web-0']
    revision = out['placement']['h1'][0]['revision']
    assert out['placement']['h2'] == [{'name': 'web-1', 'cluster': 'prod', 'network_mode': 'none', 'restart': 'always',
                                       'containers': WEB['containers'], 'registry_auth': WEB['registry_auth'],
                                       'revision': revision}]
    assert [d['name'] for d in out['placement']['h4']] == ['web-2'] and 'h3' not in out['placement']
    assert out['clusters'] == {'h1': ['prod'], 'h2': ['prod'], 'h4': ['prod']} and out['unplaced'] == {}
    assert out['down'] == {'h3': 'its engine did not answer'}
    assert out['report'][0] == 'web: 0/3 healthy, revision 1, deploying (0 running), 3/3 placed'
    assert [r['number'] for r in out['revisions']['h2']] == [1] and 'password' not in str(out['revisions'])


def test_the_placement_action_takes_each_host_s_services_and_places_a_service_only_on_its_own_hosts():
    api = dict(WEB, name='api', desired_count=6, placement_constraints=[])
    out = _place(_action_hosts([WEB, api]))          # h4 declares web alone
    assert not [d for d in out['placement']['h4'] if d['name'].startswith('api-')]
    assert out['unplaced']['api']['reasons']['h4'] == 'does not declare the service'


def test_what_the_placement_action_does_not_place_stays_where_it_runs():
    # a run that does not reach every host declaring services: nothing placed, h1 keeps web-0
    out = _place(_action_hosts([WEB]), complete=False)
    assert out['placement'] == {'h1': [dict(WEB['containers'] and {'name': 'web-0', 'cluster': 'prod', 'restart': 'always',
                                                                   'network_mode': 'none', 'containers': WEB['containers'],
                                                                   'registry_auth': WEB['registry_auth'],
                                                                   'revision': out['placement']['h1'][0]['revision']})],
                                'h2': [], 'h4': []}
    assert 'nothing placed' in out['report'][-2]
    # a service declared two ways, or one with a bad field: not placed, its instance kept, a warning
    hosts = _action_hosts([WEB])
    hosts[1]['services'] = [dict(WEB, desired_count=5)]
    out = _place(hosts)
    assert [d['name'] for d in out['placement']['h1']] == ['web-0'] and out['placement']['h2'] == []
    assert 'service web is declared differently on h1 and on h2' in out['warnings'][0]
    out = _place(_action_hosts([dict(WEB, placement_strategy=[{'type': 'fill'}])]))
    assert [d['name'] for d in out['placement']['h1']] == ['web-0'] and 'fill' in out['warnings'][0]
    # a declared task named as an instance (here by its task definition's family): the service is not placed
    hosts = _action_hosts([WEB])
    hosts[1]['declared'].append({'task_definition': {'family': 'web-7'}, 'cluster': 'prod'})
    out = _place(hosts)
    assert 'host h2: drover_tasks[1] (web-7, cluster prod) has the name of an instance of service web' in \
        out['warnings'][0]
    assert [d['name'] for d in out['placement']['h1']] == ['web-0'] and out['placement']['h4'] == []


def test_a_new_instance_never_evicts_a_running_one_of_another_service():
    hosts = [ps.host_spec({'name': 'h1', 'memory': 1024}), ps.host_spec({'name': 'h2', 'memory': 1024})]
    a = ps.service_spec(dict(name='a', desired_count=1, memory=1024))
    b = ps.service_spec(dict(name='b', desired_count=1, memory=512))
    done = ps.plan([a, b], hosts, [ps.Instance('b', 0, 'h1')])
    assert done.keep == [ps.Instance('b', 0, 'h1')] and done.start == [ps.Instance('a', 0, 'h2')] and not done.stop


def test_runner_pools_count_against_a_host_s_capacity():
    hosts = _action_hosts([WEB])
    # h4's pool of 2 slots of 96 MiB and 0.25 CPU leaves it 64 MiB: one instance fits, not two
    hosts[3]['pools'] = [{'pool': 'ci', 'state': 'present', 'slots': 2, 'cpus': 0.25, 'memory': 96},
                         {'pool': 'gone', 'state': 'absent', 'slots': 8, 'cpus': 1, 'memory': 512}]
    hosts[1]['pools'] = [{'pool': 'ci', 'state': 'present', 'slots': 'two', 'memory': 64}]
    out = _place(hosts)
    assert [d['name'] for d in out['placement']['h4']] == ['web-2']
    assert 'host h2: pool ci: its slots, cpus or memory cannot be read' in ' '.join(out['warnings'])
    hosts[3]['pools'][0]['memory'] = 128
    assert _place(hosts)['unplaced']['web']['reasons']['h4'] == 'not enough memory'


def test_an_old_revision_gets_the_declared_password_only_for_its_own_registry_and_user():
    from ansible_collections.drover.fleet.plugins.action.service_placement import _declaration
    stored = {'containers': WEB['containers'], 'registry_auth': {'registry': 'r.test', 'username': 'u'}}
    same = dict(WEB, registry_auth={'registry': 'r.test', 'username': 'u', 'password': 'p'})
    assert _declaration(stored, same, 1, 'r1')['registry_auth'] == same['registry_auth']
    other = dict(WEB, registry_auth={'registry': 'other.test', 'username': 'u', 'password': 'p'})
    assert 'registry_auth' not in _declaration(stored, other, 1, 'r1')
    assert 'registry_auth' not in _declaration(stored, dict(WEB, registry_auth=None), 1, 'r1')
    ecr = {'containers': WEB['containers'], 'registry_auth': {'registry': '1.dkr.ecr.us-east-1.amazonaws.com',
                                                              'ecr': True}}
    assert _declaration(ecr, other, 1, 'r1')['registry_auth'] == ecr['registry_auth']


def test_only_a_host_whose_share_changes_needs_a_second_tasks_pass():
    """drover.fleet.converge's first tasks pass leaves the instances as they are; the placement tells which hosts
    need a second one."""
    web = dict(WEB, desired_count=1, placement_constraints=[])
    hosts = [{'name': 'h1', 'up': True, 'capacity': {'cpu': 1024, 'memory': 256}, 'services': [web], 'tasks': []},
             {'name': 'h2', 'up': True, 'capacity': {'cpu': 1024, 'memory': 256}, 'services': [web], 'tasks': []}]
    first = _place(hosts)
    assert first['second_pass'] == {'h1': True, 'h2': True}          # web-0 to start on h1, records to write
    revision = first['placement']['h1'][0]['revision']
    running = {'name': 'web-0', 'cluster': 'prod', 'last_status': 'RUNNING', 'revision': revision,
               'health_status': 'UNKNOWN', 'health_checked': False}
    for raw in hosts:
        raw['revisions'] = first['revisions'][raw['name']]
    hosts[0]['tasks'] = [running]
    second = _place(hosts)                                            # the deployment completes: records change
    assert second['second_pass'] == {'h1': True, 'h2': True}
    for raw in hosts:
        raw['revisions'] = second['revisions'][raw['name']]
    assert _place(hosts)['second_pass'] == {'h1': False, 'h2': False}  # steady: one pass a host
    hosts[0]['tasks'] = [dict(running, last_status='STOPPED')]        # a dead instance restarts where it ran
    assert _place(hosts)['second_pass'] == {'h1': True, 'h2': False}
    hosts[0]['tasks'] = [dict(running, restated=['containers[main].log_configuration'])]   # the host's settings changed it
    assert _place(hosts)['second_pass'] == {'h1': True, 'h2': False}
    hosts[0]['tasks'] = [dict(running, restated=[])]                  # (another spec, the fields unknown)
    assert _place(hosts)['second_pass'] == {'h1': True, 'h2': False}
    hosts[0]['tasks'] = [running]
    hosts[1]['tasks'] = [dict(running, name='web-3')]                 # one too many: it stops
    assert _place(hosts)['second_pass'] == {'h1': False, 'h2': True}
    hosts[1]['tasks'] = []
    assert _place(hosts)['second_pass'] == {'h1': False, 'h2': False}
    # a task of the services' cluster that neither the host nor its share declares is purged by a second pass
    # (an instance of a service no longer declared, a task dropped from drover_tasks); one it declares is not
    hosts[1]['tasks'] = [dict(running, name='api-0', revision='r-old')]
    assert _place(hosts)['second_pass'] == {'h1': False, 'h2': True}
    hosts[1]['declared'] = [{'name': 'api-0', 'cluster': 'prod', 'containers': []}]
    assert _place(hosts)['second_pass'] == {'h1': False, 'h2': False}
    hosts[1]['tasks'], hosts[1]['declared'] = [], []
    # a service that is not placed (refused) writes no records: no second pass on every run for it
    bad = dict(web, name='bad', desired_count='many')
    for raw in hosts:
        raw['services'] = [web, bad]
        raw['revisions'] = raw['revisions'] + [{'cluster': 'prod', 'service': 'bad', 'revision': 'r', 'number': 1,
                                                'status': 'completed', 'declaration': {}}]
    out = _place(hosts)
    assert out['second_pass'] == {'h1': False, 'h2': False} and any('bad' in w for w in out['warnings'])


def test_an_instance_is_named_by_its_index_alone():
    from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import instance_index
    from ansible_collections.drover.fleet.plugins.module_utils.tasks.look import spared
    assert [instance_index(n, 'web') for n in ('web-0', 'web-12', 'web-01', 'web-', 'web--1', 'web-1a', 'web-١',
                                               'web-1-2', 'webx-1', 'web')] == [0, 12] + [None] * 8
    assert instance_index('web-1-2', 'web-1') == 2
    keep = [{'service': 'web', 'cluster': 'prod'}, {'service': 'api'}]
    assert [spared(k, keep) for k in (('prod', 'web-3'), ('prod', 'web-03'), ('other', 'web-3'),
                                      ('default', 'api-0'), ('prod', 'api-0'), ('prod', 'own'))] == [
        True, False, False, True, False, False]


def test_the_placement_action_reads_each_host_from_its_look():
    """What services.yml tells of a host: its look (ecs_task_info's result, or the converge's first pass's), read by
    the action: a look that failed or could not reach the host is a host down with the reason; the inventory's
    capacity is over the look's."""
    from ansible_collections.drover.fleet.plugins.action.service_placement import offered
    running = [{'name': 'web-0', 'cluster': 'default', 'revision': 'r1', 'last_status': 'RUNNING'}]
    records = [{'cluster': 'default', 'service': 'web', 'revision': 'r1', 'number': 1, 'status': 'COMPLETED'}]
    up = offered({'name': 'h1', 'declared': [], 'capacity': {'memory': 512},
                  'look': {'tasks': running, 'capacity': {'cpu': 2048, 'memory': 1024, 'gpus': 0},
                           'service_revisions': records}})
    assert up == {'name': 'h1', 'declared': [], 'up': True, 'down_reason': '', 'tasks': running,
                  'capacity': {'cpu': 2048, 'memory': 512, 'gpus': 0}, 'revisions': records}
    failed = offered({'name': 'h2', 'look': {'failed': True, 'msg': 'the engine did not answer'}})
    assert (failed['up'], failed['down_reason'], failed['tasks'], failed['capacity']) == (
        False, 'the engine did not answer', [], {})
    gone = offered({'name': 'h3', 'look': {'unreachable': True, 'msg': 'ssh: connect to host h3: timed out'}})
    assert (gone['up'], gone['down_reason']) == (False, 'ssh: connect to host h3: timed out')
    assert offered({'name': 'h4', 'up': False}) == {'name': 'h4', 'up': False}      # no fact: as it is


def test_a_host_that_returns_with_a_stale_copy_does_not_win_over_the_healthy_replacement():
    """h1 ran web-0 and went down; web-0 was placed again on h4 and runs healthy there. h1 returns with its copy
    stopped: h4's is kept and h1's stops, though h1 comes first by name. Among equals, the first by name."""
    svc = web(desired=1, placement_strategy=[])
    stale, healthy = ps.Instance('web', 0, 'h1'), ps.Instance('web', 0, 'h4')
    for state in ('stopped', 'unhealthy', 'pending'):
        back = ps.plan([svc], fleet(), [stale, healthy], standing={stale: ps.STANDING[state], healthy: 0})
        assert (back.keep, back.stop, back.start) == ([healthy], [stale], []), state
    even = ps.plan([svc], fleet(), [stale, healthy], standing={stale: 0, healthy: 0})
    assert (even.keep, even.stop) == ([stale], [healthy])
    assert ps.plan([svc], fleet(), [stale, healthy]).keep == [stale]
    # too many of different indexes: the worst standing stops first, whatever the strategies prefer
    two = [ps.Instance('web', 0, 'h1'), ps.Instance('web', 1, 'h3')]
    fewer = ps.plan([web(desired=1)], fleet(), two, standing={two[0]: ps.STANDING['stopped']})
    assert (fewer.keep, fewer.stop) == ([two[1]], [two[0]])
    fewer = ps.plan([web(desired=1)], fleet(), two, standing={two[1]: ps.STANDING['stopped']})
    assert (fewer.keep, fewer.stop) == ([two[0]], [two[1]])


def test_a_draining_host_s_instances_move_and_stop_only_once_their_replacements_run_healthy():
    svc = web(desired=3, placement_strategy=[{'type': 'spread', 'field': 'instanceId'}])
    hosts = fleet()[:3]                                                   # h1, h2, h3
    running = after(ps.plan([svc], hosts, []))
    assert sorted(i.host for i in running) == ['h1', 'h2', 'h3']
    draining = [h._replace(draining=True) if h.name == 'h1' else h for h in hosts]
    # 1. the replacement starts elsewhere; h1's instance keeps running (2 healthy elsewhere, 3 wanted)
    moved = ps.plan([svc], draining, running)
    [new] = moved.start
    assert new.host != 'h1' and new.index == 3 and not moved.stop
    assert sorted(i.host for i in moved.keep) == ['h1', 'h2', 'h3']
    # 2. the replacement is not healthy yet: h1's still runs
    now = running + [new]
    waiting = ps.plan([svc], draining, now, standing={new: ps.STANDING['pending']})
    assert not waiting.start and not waiting.stop
    # 3. it runs healthy: h1's stops, nothing starts
    done = ps.plan([svc], draining, now)
    assert [i.host for i in done.stop] == ['h1'] and not done.start and len(done.keep) == 3
    # a draining host takes nothing new, and says why
    more = ps.plan([web(desired=9, placement_strategy=[], placement_constraints=[{'type': 'distinctInstance'}])],
                   draining, [])
    assert more.unplaced['web']['reasons']['h1'] == 'draining' and 'h1' not in [i.host for i in more.start]
    # back to active, it takes instances again
    assert 'h1' in [i.host for i in ps.plan([web(desired=6, placement_strategy=[
        {'type': 'spread', 'field': 'instanceId'}])], hosts, after(done)).start]


def test_with_no_room_elsewhere_a_draining_host_keeps_its_instances():
    svc = web(desired=2, memory=2048, placement_strategy=[])
    hosts = [ps.host_spec({'name': n, 'cpu': 4096, 'memory': 2048, 'state': 'draining' if n == 'h1' else 'active'})
             for n in ('h1', 'h2')]
    found = [ps.Instance('web', 0, 'h1'), ps.Instance('web', 1, 'h2')]
    stuck = ps.plan([svc], hosts, found)
    assert sorted(stuck.keep) == sorted(found) and not stuck.stop and stuck.unplaced['web']['count'] == 1


def test_a_host_state_other_than_active_or_draining_is_refused_by_name():
    with pytest.raises(SpecError) as exc:
        ps.host_spec({'name': 'h1', 'state': 'drained'}, 'hosts[0]')
    assert str(exc.value) == "hosts[0].state (drover_host_state) must be one of active, draining, got 'drained'"


def test_of_two_copies_of_an_instance_the_one_on_a_draining_host_goes():
    """A host that returns while another is draining may hold a copy of the draining host's instance: the copy on
    the host that stays is kept, the draining host's stops, and nothing new starts."""
    svc = web(desired=1, placement_strategy=[])
    hosts = [h._replace(draining=True) if h.name == 'h1' else h for h in fleet()]
    draining, staying = ps.Instance('web', 0, 'h1'), ps.Instance('web', 0, 'h4')
    done = ps.plan([svc], hosts, [draining, staying])
    assert (done.keep, done.stop, done.start) == ([staying], [draining], [])
