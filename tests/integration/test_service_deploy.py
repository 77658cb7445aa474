# -*- coding: utf-8 -*-
"""drover.fleet.deploy on simulated hosts (tests/fixtures/fleet_engines.py: one dockerd each): a service of 4 with
minimum_healthy_percent 50 and maximum_percent 150 moved to a new revision while a probe samples every engine -
never fewer than 2 of its instances healthy, never more than 6 running, none of the old revision left; then a
revision whose health check fails: the circuit breaker trips, the service rolls back to the previous revision,
the events and the recap say so, and no instance of the bad revision is left."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import subprocess
import sys
import threading
import time

from helpers import IMAGE, ansible_env, sim_host
from sweep import given, look

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
DESIRED = 4


def write(tmp_path, fleet, cluster, version, check='true'):
    hosts = dict(('sim%s' % one.name, sim_host(tmp_path, one, cluster, drover_tasks=[],
                                               drover_capacity={'cpu': 4096, 'memory': 512})) for one in fleet)
    services = [{'name': 'web', 'cluster': cluster, 'desired_count': DESIRED, 'network_mode': 'none',
                 'deployment': {'minimum_healthy_percent': 50, 'maximum_percent': 150},
                 'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                                 'environment': {'VERSION': version},
                                 'health_check': {'command': ['CMD-SHELL', check], 'interval': 5, 'retries': 1}}]}]
    path = given(tmp_path / 'inventory.json')
    path.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'drover_services': services}}}))
    return str(path)


def deploy(tmp_path, path, events, ok=True, more=()):
    env = ansible_env(tmp_path, {'ANSIBLE_CALLBACKS_ENABLED': 'drover.fleet.events',
                                 'DROVER_EVENTS_LOG_PATH': str(events)})
    done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', path, '-f', '3', 'drover.fleet.deploy',
                           '-e', 'drover_deploy_interval=3', '-e', 'drover_deploy_max_passes=30'] + list(more),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900, check=False)
    out = done.stdout + done.stderr
    look(out, 'ansible-playbook output')
    with open(str(tmp_path / 'deploy.log'), 'a') as log:
        log.write(out)
    assert (done.returncode == 0) == ok, out[-6000:]
    return out


class Probe(threading.Thread):
    """Samples every engine: the service's instances running, healthy, and their VERSION."""

    def __init__(self, fleet, cluster):
        super(Probe, self).__init__(daemon=True)
        self.fleet, self.cluster = fleet, cluster
        self.samples, self.done = [], threading.Event()

    def sample(self):
        running = healthy = 0
        versions = set()
        for one in self.fleet:
            client = one.client()
            try:
                for box in client.api.containers(filters={'label': 'drover.cluster=%s' % self.cluster}):
                    if not (box['Labels'].get('drover.task') or '').startswith('web-') or box['State'] != 'running':
                        continue
                    running += 1
                    healthy += '(healthy)' in box['Status']
                    versions.add(box['Labels'].get('drover.revision'))
            finally:
                client.close()
        return running, healthy, versions

    def run(self):
        while not self.done.is_set():
            self.samples.append(self.sample())
            time.sleep(0.2)


def versions_running(fleet, cluster):
    out = []
    for one in fleet:
        client = one.client()
        try:
            for box in client.containers.list(filters={'label': 'drover.cluster=%s' % cluster}):
                env = dict(e.split('=', 1) for e in box.attrs['Config']['Env'])
                out.append((box.labels['drover.task'], env.get('VERSION'), box.labels.get('drover.revision')))
        finally:
            client.close()
    return sorted(out)


def test_a_rolling_deployment_and_a_rollback(engine, three, cluster, tmp_path):
    events = tmp_path / 'controller' / 'events.jsonl'
    out = deploy(tmp_path, write(tmp_path, three, cluster, '1'), events)
    assert 'service web: 4/4 healthy, revision 1' in out, out[-3000:]
    first = versions_running(three, cluster)
    assert [v for dummy, v, dummy in first] == ['1'] * DESIRED and len(set(r for dummy, dummy, r in first)) == 1

    # revision 2, sampled all along
    probe = Probe(three, cluster)
    probe.start()
    try:
        out = deploy(tmp_path, write(tmp_path, three, cluster, '2'), events)
    finally:
        probe.done.set()
        probe.join(timeout=30)
    assert len(probe.samples) > 20, len(probe.samples)
    fewest = min(h for dummy, h, dummy in probe.samples)
    most = max(r for r, dummy, dummy in probe.samples)
    print('probe: %d samples, fewest healthy %d, most running %d' % (len(probe.samples), fewest, most))
    assert fewest >= 2 and most <= 6, (fewest, most)
    assert any(len(v) == 2 for dummy, dummy, v in probe.samples)          # both revisions ran side by side
    now = versions_running(three, cluster)
    assert [v for dummy, v, dummy in now] == ['2'] * DESIRED, now          # the old revision is gone
    assert 'service web: 4/4 healthy, revision 2' in out, out[-3000:]
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    kinds = [e['event'] for e in logged if e['event'].startswith('service.')]
    assert kinds == ['service.deployment.started', 'service.deployment.completed'] * 2, kinds

    # a second run changes nothing
    out = deploy(tmp_path, write(tmp_path, three, cluster, '2'), events)
    assert versions_running(three, cluster) == now
    # check mode: one pass, that tells what it would do, and changes nothing
    out = deploy(tmp_path, write(tmp_path, three, cluster, '3', check='false'), events, more=('--check',))
    assert out.count('TASK [Place the services (pass') == 1 and 'deploying' in out, out[-3000:]
    assert versions_running(three, cluster) == now
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e['event'] for e in logged if e.get('check_mode') and e['event'].startswith('service.')] == [
        'service.deployment.started']

    # revision 3 never turns healthy: the breaker trips and revision 2 comes back
    out = deploy(tmp_path, write(tmp_path, three, cluster, '3', check='false'), events, ok=False)
    # the play's failure says which revision failed, and that the service runs healthy on the one before
    assert re.search(r'web: revision 3 failed \(circuit breaker: \d+/\d+\); rolled back, runs 4/4 healthy on '
                     r'revision 2', out), out[-3000:]
    assert 'service web: 4/4 healthy, revision 2, rolled back: revision 3 failed' in out, out[-3000:]
    back = versions_running(three, cluster)
    assert [v for dummy, v, dummy in back] == ['2'] * DESIRED, back        # no instance of the bad revision left
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    last = [e for e in logged if e['event'].startswith('service.') and not e.get('check_mode')][4:]
    assert [e['event'] for e in last] == ['service.deployment.started', 'service.deployment.failed',
                                          'service.deployment.rolled_back', 'service.deployment.completed'], last
    assert last[1]['revision'] == 3 and 'circuit breaker' in last[1]['reason']
    assert (last[2]['revision'], last[2]['to_revision']) == (3, 2) and last[3]['rollback_of'] == 3
    # the failed revision is not tried again while it is declared: the reconcile keeps revision 2
    env = ansible_env(tmp_path)
    done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', write(tmp_path, three, cluster, '3', check='false'), '-f', '3',
                           'drover.fleet.reconcile'], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert versions_running(three, cluster) == back
