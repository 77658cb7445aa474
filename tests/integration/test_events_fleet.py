# -*- coding: utf-8 -*-
"""The drover.fleet.events callback at fleet scale, in real `ansible-playbook` runs: 20 inventory hosts (local
connection, each with a store of its own, their tasks on this machine's engine) give a recap of one line per
host plus only what changed, and an event log with every host's events under one run id; a repository whose
runners fail on two hosts is held fleet-wide, and the next pass (drover.fleet.converge --tags drover_pools)
holds its pools on all 20 hosts, against the GitHub stand-in."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import sqlite3
import subprocess
import sys

from helpers import IMAGE, ansible_env, wait_for
from sweep import given, look

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
RUNNER_IMAGE = 'drover.local/runner:1'
REPO = 'octo/fleet'
HOSTS = ['h%02d' % i for i in range(1, 21)]
POOL_HOSTS = HOSTS
FAILING = POOL_HOSTS[:2]
HOST_LINE = re.compile(r'^(h\d\d) +: events=(\d+)(.*)$')

TASK_PLAY = '''
- name: a fleet of sleepers
  hosts: all
  gather_facts: false
  tasks:
    - name: run the host's sleeper
      drover.fleet.ecs_task:
        store_path: "{{ store_path }}"
        cluster: "{{ cluster }}"
        name: "{{ cluster }}-{{ inventory_hostname }}"
        network_mode: none
        restart: always
        containers:
          - name: main
            image: "{{ image }}"
            command: [sleep, '3600']
            memory: 16
'''


def run_playbook(tmp_path, inventory, target, log, args=(), forks=10):
    """One ansible-playbook run with the events callback (threshold 2); returns (output, the recap's lines)."""
    env = ansible_env(tmp_path, {'ANSIBLE_CALLBACKS_ENABLED': 'drover.fleet.events', 'DROVER_EVENTS_LOG_PATH': str(log),
                                 'DROVER_EVENTS_FLEET_HOLD_THRESHOLD': '2'})
    done = subprocess.run([ANSIBLE_PLAYBOOK, '-i', str(inventory), '-f', str(forks), target] + list(args),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    look(out, 'ansible-playbook output')
    assert done.returncode == 0, out[-6000:]
    assert 'DROVER FLEET RECAP' in done.stdout, out[-4000:]
    # the recap is on stdout; stderr carries what Python's libraries warn about (a deprecation in cryptography)
    lines = done.stdout[done.stdout.rindex('DROVER FLEET RECAP'):].splitlines()[1:]
    return out, [line for line in lines if line.strip()]


def by_host(lines):
    """{host: (its line, [the lines under it])} of a recap; every line under a host is indented."""
    out = {}
    host = None
    for line in lines:
        match = HOST_LINE.match(line)
        if match:
            assert match.group(1) not in out, ('a host with two lines', lines)
            host = match.group(1)
            out[host] = (line, [])
        elif line.startswith('    '):
            assert host is not None, lines
            out[host][1].append(line.strip())
        else:
            host = None
    return out


def read_log(path, start=0):
    with open(str(path)) as handle:
        return [json.loads(line) for line in handle.read().splitlines()][start:]


def local_host(tmp_path, name, **more):
    return dict({'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'drover_store_path': str(tmp_path / 'hosts' / name / 'store.db')}, **more)


def test_twenty_hosts_one_recap_line_each_and_one_run_id(engine, cluster, tmp_path):
    hosts = dict((h, dict(local_host(tmp_path, h), store_path=str(tmp_path / 'hosts' / h / 'store.db'))) for h in HOSTS)
    inventory = given(tmp_path / 'inventory.json')
    inventory.write_text(json.dumps({'all': {'hosts': hosts, 'vars': {'cluster': cluster, 'image': IMAGE}}}))
    playbook = given(tmp_path / 'fleet.yml')
    playbook.write_text(TASK_PLAY)
    log = tmp_path / 'controller' / 'events.jsonl'

    # the first run starts a task on every host: one event each, one line each, nothing under any host
    out, lines = run_playbook(tmp_path, inventory, str(playbook), log, forks=20)
    recap = by_host(lines)
    assert sorted(recap) == HOSTS, lines
    assert all(recap[h] == ('%-26s : events=1  tasks running=1 stopped=0 held=0' % h, []) for h in HOSTS), lines
    assert lines[20:] == ['events: 20 logged to %s' % log], lines
    first = read_log(log)
    assert sorted((e['host'], e['event'], e['task']) for e in first) == [
        (h, 'task.running', '%s-%s' % (cluster, h)) for h in HOSTS]
    runs = set(e['run'] for e in first)
    assert len(runs) == 1 and re.match(r'^[0-9a-f]{32}$', list(runs)[0]), runs
    running = dict((c.name, c.status) for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster}))
    assert running == dict(('%s-%s-main' % (cluster, h), 'running') for h in HOSTS)

    # one host's task is killed: the next run says so under that host only; the 19 others take one line each
    victim = '%s-h07-main' % cluster
    engine.containers.get(victim).kill()
    out, lines = run_playbook(tmp_path, inventory, str(playbook), log, forks=20)
    recap = by_host(lines)
    assert sorted(recap) == HOSTS, lines
    assert all(recap[h] == ('%-26s : events=0  tasks running=1 stopped=0 held=0' % h, []) for h in HOSTS if h != 'h07'), \
        lines
    line, under = recap['h07']
    assert re.match(r'^h07 +: events=(\d+)  tasks running=1 stopped=0 held=0$', line), line
    assert len(under) == 1 and under[0].startswith('task %s/%s-h07 stopped: ' % (cluster, cluster)), under
    assert under[0].endswith(', running again'), under
    assert len(lines) == 20 + 1 + 1, lines
    second = read_log(log, len(first))
    assert set(e['host'] for e in second) == {'h07'} and {'task.stopped', 'task.running'} <= set(e['event'] for e in second)
    assert line.split('events=')[1].startswith('%d ' % len(second))
    assert len(set(e['run'] for e in second)) == 1 and set(e['run'] for e in second) != runs      # a run id per run
    assert engine.containers.get(victim).status == 'running'


def pool_inventory(tmp_path, standin, pool_name, hosts, path):
    """Each host: a store of its own, one pool of REPO with one warm runner; the FAILING hosts' runners end at once
    without a job, with an error (a runner fault)."""
    out = {}
    for name in hosts:
        env = {'DROVER_JOB_SECONDS': '1'}
        if name in FAILING:
            env['DROVER_RUNNER_MODE'] = 'exit-now'
        out[name] = local_host(tmp_path, name, drover_allow_host_network=True, drover_pools_defaults={
            'api_url': standin.url, 'token': standin.test_token, 'machine_id': 'm%s%s' % (pool_name, name)},
            drover_pools=[{'pool': pool_name, 'repository': REPO, 'labels': ['self-hosted', 'linux'], 'warm': 1,
                           'profile': {'name': 'small', 'image': RUNNER_IMAGE, 'slots': 1, 'network_mode': 'host',
                                       'memory': 64, 'environment': env}}])
    given(path).write_text(json.dumps({'all': {'hosts': out}}))
    return path


def pool_of(out, host, pool_name):
    """The role's report line of the pool on `host` (ansible's debug output names the host)."""
    found = re.findall(r'ok: \[%s\] => \{\s*"msg": \[\s*"(pool %s \([^"]*)"' % (host, pool_name), out)
    assert len(found) == 1, (host, out[-4000:])
    return found[0]


def test_a_repository_failing_on_two_hosts_is_held_on_all_20_in_the_next_pass(engine, standin, pool_name, tmp_path):
    engine.images.get(RUNNER_IMAGE)
    inventory = pool_inventory(tmp_path, standin, pool_name, POOL_HOSTS, tmp_path / 'pools.json')
    log = tmp_path / 'controller' / 'events.jsonl'
    holds = tmp_path / 'controller' / 'fleet-holds.json'
    target = ['drover.fleet.converge', '--tags', 'drover_pools']

    # two hosts start their runner, which ends at once without a job
    run_playbook(tmp_path, inventory, target[0], log, args=target[1:] + ['--limit', ','.join(FAILING)])
    runners = dict((c.labels['drover.store'], c) for c in engine.containers.list(
        all=True, filters={'label': 'drover.pool=%s' % pool_name}))
    assert len(runners) == 2, runners
    wait_for(lambda: all(c.reload() or c.status == 'exited' for c in runners.values()), timeout=30)
    # These pools have failed before (a streak of 4): the hold this failure makes (8 min) outlasts the next
    # passes on a loaded machine (a first failure holds for 30 s).
    for name in FAILING:
        db = sqlite3.connect(str(tmp_path / 'hosts' / name / 'store.db'))
        db.execute('UPDATE pools SET failures = 4')
        db.commit()
        db.close()
    assert not holds.exists()

    # the next pass on them collects the failures: each pool is held, and the repository fleet-wide
    start = len(read_log(log))
    out, lines = run_playbook(tmp_path, inventory, target[0], log, args=target[1:] + ['--limit', ','.join(FAILING)])
    recap = by_host(lines)
    assert sorted(recap) == FAILING, lines
    saved = json.loads(holds.read_text())
    assert list(saved) == [REPO] and saved[REPO]['hosts'] == FAILING, saved
    until = saved[REPO]['until']
    for name in FAILING:
        line, under = recap[name]
        assert line.endswith(': events=2  slots busy=0 idle=0 free=1 starting=0 pools held=1'), line
        # the runner's `An error occurred:` before any job is a runner fault
        assert len(under) == 2 and re.match(r'^runner \S+ of pool %s ended \(without a job, runner fault: an error before '
                                            r'any job\)$' % pool_name, under[0]), under
        assert re.match(r'^pool %s \(%s\) held until \S+, cause runner fault: an error before any job$'
                        % (pool_name, REPO), under[1]), under
    assert 'fleet hold: %s on 2 hosts (%s) until %s' % (REPO, ', '.join(FAILING), until) in lines, lines
    events = read_log(log, start)
    fleet = [e for e in events if e['event'] == 'fleet.held']
    assert len(fleet) == 1 and fleet[0]['hosts'] == FAILING and fleet[0]['until'] == until, fleet
    assert len(set(e['run'] for e in events)) == 1

    # the next pass over every host: the repository's pools are held everywhere, no runner starts
    posts = len(standin.calls(method='POST'))
    registered = standin.state()['runners']                            # the ended runners' registrations are gone
    start = len(read_log(log))
    out, lines = run_playbook(tmp_path, inventory, target[0], log, args=target[1:])
    for name in POOL_HOSTS:
        assert pool_of(out, name, pool_name).startswith(
            'pool %s (%s): busy=0 idle=0 starting=0 free=1, held until %s (' % (pool_name, REPO, until)), out[-4000:]
    for name in POOL_HOSTS[2:]:
        assert pool_of(out, name, pool_name).endswith('held until %s (fleet)' % until)
    assert [c.name for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name})] == []
    assert standin.calls(method='POST')[posts:] == []                   # no runner registered on GitHub
    assert standin.state()['runners'] == registered == [], registered
    recap = by_host(lines)
    assert sorted(recap) == POOL_HOSTS, lines
    assert all(recap[h][0].endswith(': events=0  slots busy=0 idle=0 free=1 starting=0 pools held=1') and not recap[h][1]
               for h in POOL_HOSTS), lines
    # the hold in force is told once for the fleet; nothing changed it: no fleet.held again, no event at all
    assert lines[len(POOL_HOSTS):] == ['held fleet-wide: %s on %d hosts until %s' % (REPO, len(POOL_HOSTS), until),
                                       'events: 0 logged to %s' % log], lines
    assert read_log(log, start) == [] and json.loads(holds.read_text()) == saved
