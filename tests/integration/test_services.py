# -*- coding: utf-8 -*-
"""drover.fleet.services on simulated hosts (tests/fixtures/fleet_engines.py: one dockerd each): six hosts in
three zones, a service of 9 spread by zone then binpacked by memory; a second run changes nothing; scaled to 12
and to 4 the spread holds; a host whose engine stops has its tasks placed on the others within their capacity,
and when it returns the excess stops; drover.fleet.converge and drover.fleet.reconcile place the same, and the
reconcile starts a dead instance again where it ran."""

from __future__ import absolute_import, division, print_function

import collections
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

from fleet_engines import FleetEngines
from helpers import IMAGE, ansible_env, sim_host, task_containers
from sweep import given, look, register

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
PLAY_RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)
HOSTS = 6
ZONES = ('a', 'a', 'b', 'b', 'c', 'c')
CAPACITY = {'cpu': 4096, 'memory': 256}         # room for 8 tasks of 32 MiB a host


@pytest.fixture
def fleet(engine):  # pylint: disable=unused-argument
    engines = FleetEngines(HOSTS, image=IMAGE)
    engines.start()
    try:
        yield engines
    finally:
        engines.stop()


def inventory(tmp_path, fleet, cluster, desired, declared_memory=0):
    hosts = {}
    for one, zone in zip(fleet, ZONES):
        hosts['sim%s' % one.name] = sim_host(
            tmp_path, one, cluster, drover_attributes={'zone': zone}, drover_capacity=CAPACITY,
            drover_tasks=[{'name': 'own', 'network_mode': 'none', 'containers': [
                {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': declared_memory}]}]
            if declared_memory else [])
    services = [{'name': 'web', 'cluster': cluster, 'desired_count': desired,
                 'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 32}],
                 'network_mode': 'none',
                 'placement_strategy': [{'type': 'spread', 'field': 'attribute:zone'},
                                        {'type': 'binpack', 'field': 'memory'}]}]
    path = given(tmp_path / 'inventory.json')
    path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
    return str(path), sorted(hosts)


def run(tmp_path, path, playbook='drover.fleet.services', *more, ok=True):
    env = ansible_env(tmp_path)
    done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', path, '-f', str(HOSTS), playbook] + list(more),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    look(out, 'ansible-playbook output')
    assert (done.returncode == 0) == ok, out[-5000:]
    return dict((m[0], tuple(int(n) for n in m[1:])) for m in PLAY_RECAP.findall(out)), out


def running(fleet, cluster, skip=(), view=lambda box: box.labels.get('drover.task'), every=False):
    """{host: [task names running]} from each engine (`view`: what else of each container; `every`: stopped ones
    too)."""
    out = {}
    for one in fleet:
        if one.name in skip:
            continue
        client = one.client()
        try:
            boxes = client.containers.list(all=every, filters=dict({'label': 'drover.cluster=%s' % cluster},
                                                                   **({} if every else {'status': 'running'})))
            out['sim%s' % one.name] = sorted(view(b) for b in boxes)
        finally:
            client.close()
    return out


def stop_engine(one):
    """A simulated host's engine stopped (the host is down to the next run)."""
    one.proc.terminate()
    one.proc.wait(timeout=60)


def start_engine(fleet, one):
    """A simulated host's engine started again, with what it kept, answering."""
    config = os.path.join(fleet.run_root, 'daemon.json')
    with open(one.log, 'ab') as log:
        one.proc = subprocess.Popen(one.argv(config, fleet.netns), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while not one.answers():
        assert time.time() < deadline, 'the engine did not come back'
        time.sleep(0.2)


def by_zone(now):
    zones = dict(('sim%02d' % (i + 1), z) for i, z in enumerate(ZONES))
    return dict(collections.Counter(zones[h] for h, names in now.items() for n in names if n.startswith('web-')))


def instances(now):
    return sorted(n for names in now.values() for n in names if n.startswith('web-'))


def test_a_service_spread_by_zone_scaled_and_healed(engine, fleet, cluster, tmp_path):
    path, hosts = inventory(tmp_path, fleet, cluster, 9, declared_memory=64)
    recap, out = run(tmp_path, path)
    now = running(fleet, cluster)
    assert by_zone(now) == {'a': 3, 'b': 3, 'c': 3}, now
    assert instances(now) == sorted('web-%d' % i for i in range(9))
    # binpack: a zone's three on one host (the declared task leaves room for 6 of 32 MiB)
    assert sorted(len([n for n in names if n.startswith('web-')]) for names in now.values()) == [0, 0, 0, 3, 3, 3]
    assert all(len([n for n in names if n == 'own']) == 1 for names in now.values())
    assert task_containers(engine, cluster) == []                       # nothing on the machine's engine

    recap, out = run(tmp_path, path)
    assert all(recap[h][1] == 0 for h in hosts), out[-4000:]          # changed=0 everywhere
    assert running(fleet, cluster) == now
    # a run that reaches one host (--limit), or the tasks alone (--tags): nothing moves, nothing is purged
    empty = next(h for h in hosts if not [n for n in now[h] if n.startswith('web-')])
    full = next(h for h in hosts if [n for n in now[h] if n.startswith('web-')])
    for more in (('--limit', empty), ('--limit', full), ('--tags', 'drover_tasks')):
        recap, out = run(tmp_path, path, 'drover.fleet.converge', *more)
        assert all(v[1] == 0 for v in recap.values()), (more, out[-4000:])
        assert running(fleet, cluster) == now, more
    assert 'nothing placed, each host keeps the instances it runs' in run(
        tmp_path, path, 'drover.fleet.reconcile', '--limit', full)[1]
    assert running(fleet, cluster) == now

    path, hosts = inventory(tmp_path, fleet, cluster, 12, declared_memory=64)
    run(tmp_path, path)
    now = running(fleet, cluster)
    assert by_zone(now) == {'a': 4, 'b': 4, 'c': 4}, now
    for names in now.values():                                          # 64 + 32 x n within 256 MiB
        assert 64 * ('own' in names) + 32 * len([n for n in names if n.startswith('web-')]) <= CAPACITY['memory']

    path, hosts = inventory(tmp_path, fleet, cluster, 4, declared_memory=64)
    run(tmp_path, path)
    now = running(fleet, cluster)
    assert sorted(by_zone(now).values()) == [1, 1, 2], now

    # A host's engine stops: its instances are placed on the others; it comes back: the excess stops.
    path, hosts = inventory(tmp_path, fleet, cluster, 9, declared_memory=64)
    run(tmp_path, path)
    before = running(fleet, cluster)
    gone = max(before, key=lambda h: (len([n for n in before[h] if n.startswith('web-')]), h))
    lost = [n for n in before[gone] if n.startswith('web-')]
    victim = fleet[int(gone[3:]) - 1]
    stop_engine(victim)
    recap, out = run(tmp_path, path)
    healed = running(fleet, cluster, skip=(victim.name,))
    assert len(set(instances(healed))) == 9 and len(instances(healed)) == 9 and lost, healed
    for names in healed.values():
        assert 64 * ('own' in names) + 32 * len([n for n in names if n.startswith('web-')]) <= CAPACITY['memory']

    start_engine(fleet, victim)
    run(tmp_path, path)
    back = running(fleet, cluster)
    assert len(instances(back)) == 9 and len(set(instances(back))) == 9, back      # each instance on one host
    assert by_zone(back) == {'a': 3, 'b': 3, 'c': 3}, back
    recap, out = run(tmp_path, path)
    assert all(recap[h][1] == 0 for h in hosts), out[-4000:]

    # drover.fleet.converge and drover.fleet.reconcile place the same services: nothing changes, none is purged
    for playbook in ('drover.fleet.converge', 'drover.fleet.reconcile'):
        recap, out = run(tmp_path, path, playbook)
        assert all(recap[h][1] == 0 for h in hosts), (playbook, out[-4000:])
        assert running(fleet, cluster) == back, playbook
    # a service's instance that dies is started again by the reconcile, where it was
    host, name = next((h, n) for h, names in sorted(back.items()) for n in names if n.startswith('web-'))
    client = fleet[int(host[3:]) - 1].client()
    try:
        client.containers.get('%s-main' % name).kill()
    finally:
        client.close()
    run(tmp_path, path, 'drover.fleet.reconcile')
    assert running(fleet, cluster) == back
    # ... and by drover.fleet.converge, whose first tasks pass leaves the instances as they are: only that host
    # gets a second pass. (Another instance, one that never stopped: a second stop within 600 s of running would
    # be held back by the restart backoff - the one just killed, or one of the host whose engine stopped.)
    first = host
    host, name = next((h, n) for h, names in sorted(back.items()) if h not in (first, gone)
                      for n in names if n.startswith('web-'))
    client = fleet[int(host[3:]) - 1].client()
    try:
        client.containers.get('%s-main' % name).kill()
    finally:
        client.close()
    recap, out = run(tmp_path, path, 'drover.fleet.converge')
    assert running(fleet, cluster) == back, out[-8000:]
    assert [h for h in hosts if recap[h][1]] == [host], recap
    # a host whose own task fails is not taken for one that is down: its instances stay, none starts elsewhere,
    # and the host fails the run
    inv = json.loads(open(path).read())
    inv['all']['hosts'][host]['drover_tasks'].append({'name': 'broken', 'network_mode': 'none', 'containers': [
        {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 8, 'privileged': True}]})
    with open(path, 'w') as f:
        f.write(json.dumps(inv))
    recap, out = run(tmp_path, path, 'drover.fleet.converge', ok=False)
    assert [h for h in hosts if recap[h][3]] == [host], (recap, out[-8000:])        # failed there alone
    assert running(fleet, cluster) == back, out[-8000:]
    assert '%s: down' % host not in out, out[-8000:]
    # the same where that task is of another cluster of the host (its own cluster's pass, which looked, went well)
    inv['all']['hosts'][host]['drover_tasks'][-1]['cluster'] = cluster + 'own'
    with open(path, 'w') as f:
        f.write(json.dumps(inv))
    recap, out = run(tmp_path, path, 'drover.fleet.converge', ok=False)
    assert [h for h in hosts if recap[h][3]] == [host], (recap, out[-8000:])
    assert running(fleet, cluster) == back, out[-8000:]


def test_a_host_that_returns_with_a_stale_copy_keeps_the_healthy_replacement(engine, three, cluster, tmp_path):
    """web-0 runs on sim01; sim01's engine stops and web-0 is placed again on sim02, where it runs. sim01 returns
    with its copy stopped: the next run keeps sim02's (sim01 comes first by name, and won before), removes sim01's,
    and a second run changes nothing."""
    hosts = dict(('sim%s' % one.name, sim_host(tmp_path, one, cluster, drover_tasks=[])) for one in three)
    services = [{'name': 'web', 'cluster': cluster, 'desired_count': 1, 'network_mode': 'none',
                 'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}]
    path = given(tmp_path / 'inventory.json')
    path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
    path = str(path)

    def where(every=False, skip=()):
        return dict((h, names) for h, names in running(three, cluster, skip, every=every).items() if names)

    run(tmp_path, path)
    assert where() == {'sim01': ['web-0']}
    stop_engine(three[0])
    run(tmp_path, path)
    assert where(skip=(three[0].name,)) == {'sim02': ['web-0']}
    start_engine(three, three[0])
    client = three[0].client()
    try:
        for box in client.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
            box.stop(timeout=1)                 # its copy is stale: stopped (a restart policy may have started it)
    finally:
        client.close()
    assert where(every=True) == {'sim01': ['web-0'], 'sim02': ['web-0']}
    recap, out = run(tmp_path, path)
    assert where() == {'sim02': ['web-0']}, out[-4000:]
    assert where(every=True) == {'sim02': ['web-0']}, out[-4000:]        # the stale copy is gone
    recap, out = run(tmp_path, path)
    assert all(recap[h][1] == 0 for h in hosts), out[-4000:]
    assert where(every=True) == {'sim02': ['web-0']}


def test_a_draining_host_s_instances_move_before_they_stop(engine, three, cluster, tmp_path):
    """drover_host_state: draining on sim01, which runs one of web's 3 instances: the next run starts its replacement
    on another host and leaves sim01's running; the run after (the replacement runs) stops sim01's; then nothing
    changes. Set active again, sim01 takes the next instance a scale-out places."""
    def write(state, desired=3):
        hosts = dict(('sim%s' % one.name, sim_host(tmp_path, one, cluster, drover_tasks=[], **(
            {'drover_host_state': state} if one.name == '01' else {}))) for one in three)
        services = [{'name': 'web', 'cluster': cluster, 'desired_count': desired, 'network_mode': 'none',
                     'placement_strategy': [{'type': 'spread', 'field': 'instanceId'}],
                     'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}]
        path = given(tmp_path / 'inventory.json')
        path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
        return str(path)

    def where():
        return dict((h, n) for h, n in running(three, cluster, every=True).items() if n)

    run(tmp_path, write('active'))
    before = where()
    assert sorted(len(n) for n in before.values()) == [1, 1, 1], before
    [draining_one] = before['sim01']
    recap, out = run(tmp_path, write('draining'))
    moving = where()
    assert moving['sim01'] == [draining_one], (moving, out[-3000:])         # still running: not yet replaced
    assert len(instances(moving)) == 4 and 'sim01: draining, 1 instance of services left' in out, out[-3000:]
    recap, out = run(tmp_path, write('draining'))
    moved = where()
    assert 'sim01' not in moved and len(instances(moved)) == 3, moved        # its replacement runs: it stopped
    assert 'sim01: draining, 0 instances of services left' in out, out[-3000:]
    recap, out = run(tmp_path, write('draining'))
    assert all(recap[h][1] == 0 for h in recap) and where() == moved, out[-3000:]
    # a bad state is refused by the role's check, naming the variable, and nothing changes
    recap, out = run(tmp_path, write('drained'), ok=False)
    assert 'drover_host_state' in out and where() == moved, out[-3000:]
    # active again: the scale-out's instance goes to sim01 (spread by instance)
    run(tmp_path, write('active', desired=4))
    assert len(where().get('sim01', [])) == 1 and len(instances(where())) == 4, where()


def test_a_hosts_changed_settings_reach_the_instances_it_runs(engine, three, cluster, tmp_path):
    """drover.fleet.converge's first tasks pass leaves the services' instances as they run: one that its host's
    settings now make otherwise (drover_log_driver_map) is started anew by a second pass on that host alone, and
    the next converge changes nothing."""
    def write(**sim01):
        hosts = dict(('sim%s' % one.name, sim_host(tmp_path, one, cluster, drover_tasks=[],
                                                   drover_log_drivers=['local', 'json-file'])) for one in three)
        hosts['sim01'].update(sim01)
        services = [{'name': 'web', 'cluster': cluster, 'desired_count': 3, 'network_mode': 'none',
                     'placement_constraints': [{'type': 'distinctInstance'}],
                     'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                                     'log_configuration': {'log_driver': 'awslogs', 'options': {
                                         'awslogs-group': 'web', 'awslogs-region': 'us-east-1',
                                         'awslogs-stream-prefix': 'web'}}}]}]
        path = given(tmp_path / 'inventory.json')
        path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
        return str(path)

    def made():
        """{host: (container id, log driver)} of the instance each host runs."""
        out = {}
        for one in three:
            client = one.client()
            try:
                boxes = client.containers.list(filters={'label': 'drover.cluster=%s' % cluster, 'status': 'running'})
                out['sim%s' % one.name] = [(b.id, b.attrs['HostConfig']['LogConfig']['Type']) for b in boxes]
            finally:
                client.close()
        return out

    path = write()
    for dummy in range(2):                          # started, then the deployment completes
        recap, out = run(tmp_path, path, 'drover.fleet.converge')
    before = made()
    assert sorted(len(v) for v in before.values()) == [1, 1, 1], before
    assert set(driver for v in before.values() for dummy, driver in v) == {'local'}, before
    recap, out = run(tmp_path, path, 'drover.fleet.converge')
    assert all(v[1] == 0 for v in recap.values()) and made() == before, out[-4000:]
    steady = dict((h, v[0]) for h, v in recap.items())      # the tasks a host runs with one tasks pass (ok=)
    # sim01's awslogs now becomes json-file: its instance alone is made anew, with the driver, by a second pass
    # there alone (another host's second pass would change nothing, and would cost a module run)
    path = write(drover_log_driver_map={'awslogs': 'json-file'})
    recap, out = run(tmp_path, path, 'drover.fleet.converge')
    assert [h for h in sorted(recap) if recap[h][1]] == ['sim01'], (recap, out[-4000:])
    assert recap['sim01'][0] > steady['sim01'], (recap, steady)
    assert dict((h, v[0]) for h, v in recap.items() if h != 'sim01') == \
        dict((h, n) for h, n in steady.items() if h != 'sim01'), (recap, steady)
    after = made()
    assert after['sim01'][0][1] == 'json-file' and after['sim01'][0][0] != before['sim01'][0][0], after
    assert dict((h, v) for h, v in after.items() if h != 'sim01') == \
        dict((h, v) for h, v in before.items() if h != 'sim01')
    recap, out = run(tmp_path, path, 'drover.fleet.converge')
    assert all(v[1] == 0 for v in recap.values()) and made() == after, out[-4000:]
    assert dict((h, v[0]) for h, v in recap.items()) == steady, (recap, steady)


def test_a_host_s_forged_revision_records_decide_nothing_on_another_host(engine, three, cluster, tmp_path):
    """A compromised host writes revision records of its own straight into its store's SQLite file: the declared
    revision `failed` (its seal kept, a later generation) and a `completed` revision 99 whose task runs another
    container, of generation 2**63 - 1 (the next generation would not fit any store).
    drover.fleet.services then starts that container on no host, the service stays on its declared revision (a
    warning names the host, the service and the count), and the host's records are the controller's again; the
    service declared anew deploys as any revision does, nothing overflows, and a second run changes nothing. The
    records key comes from the inventory (drover_services_records_key) and reaches no output, store or host."""
    from ansible_collections.drover.fleet.plugins.module_utils.services.deploy import revision_of
    key = register('records-key-%s' % uuid.uuid4().hex)
    forged = {'network_mode': 'none', 'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '7777'],
                                                      'memory': 16}]}
    huge = 2 ** 63 - 1

    def write(version):
        hosts = dict(('sim%s' % one.name, sim_host(tmp_path, one, cluster, drover_tasks=[])) for one in three)
        services = [{'name': 'web', 'cluster': cluster, 'desired_count': 3, 'network_mode': 'none',
                     'placement_strategy': [{'type': 'spread', 'field': 'instanceId'}],
                     'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                                     'environment': {'VERSION': version}}]}]
        path = given(tmp_path / 'inventory.json')
        path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {
            'drover_services': services, 'drover_services_records_key': key}}}))
        return str(path)

    def instances():
        """{host: [(task, its revision label, its command)]} of the service's cluster, from each engine."""
        return running(three, cluster, every=True, view=lambda b: (
            b.labels.get('drover.task'), b.labels.get('drover.revision'), ' '.join(b.attrs['Config']['Cmd'] or ())))

    def stores(sealed=False):
        """{host: the service's records in its store: (revision, number, status, generation[, whether sealed])}."""
        out = {}
        for one in three:
            db = sqlite3.connect(str(tmp_path / 'hosts' / one.name / 'state' / 'store.db'))
            try:
                out['sim%s' % one.name] = db.execute(
                    'SELECT revision, number, status, generation%s FROM service_revisions WHERE cluster = ? AND '
                    'service = ? ORDER BY number' % (', seal IS NOT NULL' if sealed else ''),
                    (cluster, 'web')).fetchall()
            finally:
                db.close()
        return out

    path = write('1')
    for dummy in range(2):                              # started, then its deployment completes
        recap, out = run(tmp_path, path)
    before = instances()
    revisions = set(r for boxes in before.values() for dummy, r, dummy in boxes)
    assert sorted(len(v) for v in before.values()) == [1, 1, 1] and len(revisions) == 1, before
    declared = revisions.pop()
    assert stores() == dict(('sim%s' % one.name, [(declared, 1, 'completed', 2)]) for one in three), stores()

    # sim03 is compromised: its own record edited (its seal kept), another one added (no seal)
    db = sqlite3.connect(str(tmp_path / 'hosts' / three[2].name / 'state' / 'store.db'))
    try:
        db.execute("UPDATE service_revisions SET status = 'failed', generation = 3 WHERE cluster = ? AND "
                   "service = 'web' AND revision = ?", (cluster, declared))
        db.execute("INSERT INTO service_revisions (cluster, service, revision, number, status, rollback_of, "
                   "generation, declaration, updated_at) VALUES (?, 'web', ?, 99, 'completed', NULL, ?, ?, ?)",
                   (cluster, revision_of(forged), huge, json.dumps(forged), time.time()))
        db.commit()
    finally:
        db.close()
    recap, out = run(tmp_path, path)
    now = instances()
    assert not [b for boxes in now.values() for b in boxes if '7777' in b[2] or b[1] == revision_of(forged)], now
    assert now == before, (now, out[-6000:])
    assert 'host sim03: 2 revision records of service web (cluster %s) not taken: badly sealed, numbers out of ' \
        'bounds' % cluster in out, out[-6000:]
    assert 'web: 3/3 healthy, revision 1, 3/3 placed' in out, out[-6000:]
    assert stores(sealed=True) == dict(('sim%s' % one.name, [(declared, 1, 'completed', 2, 1)]) for one in three), \
        stores(sealed=True)

    # declared anew: deployed as any revision (the next generation fits every store), then nothing changes
    path = write('2')
    recap, out = run(tmp_path, path, 'drover.fleet.deploy', '-e', 'drover_deploy_interval=2')
    assert 'web: 3/3 healthy, revision 2, 3/3 placed' in out, out[-6000:]
    now = instances()
    assert sorted(len(v) for v in now.values()) == [1, 1, 1] and declared not in str(now), now
    kept = stores(sealed=True)
    assert all(len(rows) == 2 and all(g < 2 ** 31 and sealed for dummy, dummy, dummy, g, sealed in rows)
               for rows in kept.values()) and len(set(map(tuple, kept.values()))) == 1, kept
    recap, out = run(tmp_path, path)
    assert all(v[1] == 0 for v in recap.values()) and instances() == now, out[-4000:]
    # the key is in no host's store (the sweep reads every output and file of the session too)
    for one in three:
        with open(str(tmp_path / 'hosts' / one.name / 'state' / 'store.db'), 'rb') as handle:
            assert key.encode() not in handle.read()


GPU1 = 'GPU-d3a0e1b2-0000-4000-8000-00000000a001'
GPU3 = 'GPU-d3a0e1b2-0000-4000-8000-00000000a003'


def test_a_gpu_task_is_placed_only_where_a_gpu_is_free(engine, three, cluster, tmp_path):
    """sim01 has a GPU, sim02 none, sim03 one that a declared task holds: of a service of two GPU tasks one runs on
    sim01 and the other is unplaced, until sim03's task goes."""
    def write(declared):
        gpu = dict(drover_tasks_gpu_delivery='env', drover_tasks_gpu_discovery='static')
        hosts = {
            'sim01': sim_host(tmp_path, three[0], cluster, drover_tasks_gpu_devices=[GPU1], drover_tasks=[], **gpu),
            'sim02': sim_host(tmp_path, three[1], cluster, drover_tasks=[]),
            'sim03': sim_host(tmp_path, three[2], cluster, drover_tasks_gpu_devices=[GPU3], **gpu, drover_tasks=[
                {'name': 'own', 'network_mode': 'none', 'containers': [
                    {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16, 'gpu': 1}]}]
                if declared else []),
        }
        services = [{'name': 'train', 'cluster': cluster, 'desired_count': 2, 'network_mode': 'none',
                     'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                                     'gpu': 1}]}]
        path = given(tmp_path / 'inventory.json')
        path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
        return str(path)

    recap, out = run(tmp_path, write(declared=True))
    now = running(three, cluster)
    assert now == {'sim01': ['train-0'], 'sim02': [], 'sim03': ['own']}, now
    assert 'train: 0/2 healthy, revision 1, deploying (0 running), 1/2 placed, 1 unplaced' in out, out[-3000:]
    client = three[0].client()
    try:
        env = client.containers.get('train-0-main').attrs['Config']['Env']
    finally:
        client.close()
    assert 'NVIDIA_VISIBLE_DEVICES=%s' % GPU1 in env, env
    # sim03's own task goes: its GPU is free, and the second instance runs there
    recap, out = run(tmp_path, write(declared=False))
    assert running(three, cluster) == {'sim01': ['train-0'], 'sim02': [], 'sim03': ['train-1']}
    assert ', 2/2 placed' in out and 'train: 1/2 healthy, revision 1' in out
