# -*- coding: utf-8 -*-
"""A small fleet: three simulated hosts, each a Docker engine of its own on this machine
(tests/fixtures/fleet_engines.py, the fleet bench's engines), converged by drover.fleet.converge in one
ansible-playbook run with the events callback; every engine gets its own tasks, nothing lands on the machine's
engine, the second run changes nothing on any host, and the engines leave nothing behind."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import subprocess
import sys

import pytest

from fleet_engines import FleetEngines
from helpers import IMAGE, ansible_env, netns_list, sim_host, task_containers
from sweep import given, look

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
PLAY_RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)
FLEET_RECAP_LINE = re.compile(r'^(\S+)\s+: events=(\d+)\s+tasks running=(\d+) stopped=(\d+) held=(\d+)', re.M)
HOSTS = 3
TASKS = ('web', 'worker')


def processes_naming(text):
    """Pids of the processes whose command line holds `text`."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                if text.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.fixture
def fleet(engine):  # pylint: disable=unused-argument
    """Three engines, the test image loaded into each; afterwards, stopped, and proved gone. The machine's engine
    keeps its bridge (a dockerd without one deletes docker0 where it starts: they start in a namespace of their
    own), and their namespace goes with them."""
    bridge = bridge_index()
    engines = FleetEngines(HOSTS, image=IMAGE)
    engines.start()
    assert bridge_index() == bridge, 'the machine engine\'s bridge docker0 was removed or replaced'
    assert engines.netns in netns_list()
    try:
        yield engines
    finally:
        engines.stop()
    assert processes_naming(engines.run_root + '/') == []
    assert not os.path.exists(engines.run_root) and not os.path.exists(engines.data_root)
    with open('/proc/self/mounts') as handle:
        mounts = handle.read()
    assert engines.run_root not in mounts and engines.data_root not in mounts
    assert engines.netns not in netns_list() and bridge_index() == bridge


def bridge_index():
    """The interface index of docker0 (None without one): a bridge deleted and made again has another."""
    try:
        with open('/sys/class/net/docker0/ifindex') as handle:
            return int(handle.read())
    except (IOError, OSError):
        return None


def inventory(tmp_path, fleet, cluster):
    hosts = {}
    for one in fleet:
        hosts['sim%s' % one.name] = sim_host(tmp_path, one, cluster, drover_pools=[], drover_tasks=[
            {'name': name, 'network_mode': 'none', 'containers': [
                {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]} for name in TASKS])
    path = given(tmp_path / 'inventory.json')
    path.write_text(json.dumps({'all': {'hosts': hosts}}))
    return str(path), sorted(hosts)


def converge(tmp_path, path):
    env = ansible_env(tmp_path, {'ANSIBLE_CALLBACKS_ENABLED': 'drover.fleet.events',
                                 'DROVER_EVENTS_LOG_PATH': str(tmp_path / 'controller' / 'events.jsonl')})
    done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', path, '-f', str(HOSTS), 'drover.fleet.converge'],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    look(out, 'ansible-playbook output')
    assert done.returncode == 0, out[-4000:]
    recap = dict((m[0], tuple(int(n) for n in m[1:])) for m in PLAY_RECAP.findall(out))
    fleet_recap = dict((m[0], tuple(int(n) for n in m[1:])) for m in
                       FLEET_RECAP_LINE.findall(out[out.index('DROVER FLEET RECAP'):]))
    return recap, fleet_recap, out


def test_three_hosts_converge_on_their_own_engines(engine, fleet, cluster, tmp_path):
    path, hosts = inventory(tmp_path, fleet, cluster)

    recap, fleet_recap, out = converge(tmp_path, path)
    assert sorted(recap) == hosts, out[-4000:]
    assert all(recap[h][1] > 0 and recap[h][2:] == (0, 0) for h in hosts), recap
    # The events recap: one line per host, its two tasks running.
    assert dict((h, v[1:]) for h, v in fleet_recap.items()) == dict((h, (2, 0, 0)) for h in hosts), out[-3000:]
    ids = {}
    for one in fleet:
        client = one.client()
        try:
            boxes = client.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster})
            assert sorted((b.name, b.status) for b in boxes) == [('%s-main' % t, 'running') for t in sorted(TASKS)]
            ids[one.name] = sorted(b.id for b in boxes)
        finally:
            client.close()
    assert len(set(i for v in ids.values() for i in v)) == 2 * HOSTS         # six containers, not one set shared
    assert task_containers(engine, cluster) == []                           # nothing on the machine's engine
    for one in fleet:                                                       # each host's own store
        assert os.path.exists(str(tmp_path / 'hosts' / one.name / 'state' / 'store.db'))
    with open(str(tmp_path / 'controller' / 'events.jsonl')) as handle:
        events = [json.loads(line) for line in handle]
    assert sorted(set(e['host'] for e in events if e.get('event') == 'task.running')) == hosts
    assert len(set(e['run'] for e in events)) == 1                          # one run id for the whole fleet

    recap, fleet_recap, out = converge(tmp_path, path)
    assert dict((h, recap[h][1:]) for h in hosts) == dict((h, (0, 0, 0)) for h in hosts), out[-4000:]
    assert sorted(fleet_recap) == hosts
    for one in fleet:                                                       # the same containers, untouched
        client = one.client()
        try:
            assert sorted(b.id for b in client.containers.list(
                filters={'label': 'drover.cluster=%s' % cluster, 'status': 'running'})) == ids[one.name]
        finally:
            client.close()
