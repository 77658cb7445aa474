# -*- coding: utf-8 -*-
"""The drover.fleet.events callback in a real `ansible-playbook` run: ecs_task starts a task on the real
engine and removes it, and the callback logs task.running and task.stopped for localhost and prints its
recap."""

from __future__ import absolute_import, division, print_function

import json
import os
import stat
import subprocess
import sys

from helpers import IMAGE, ansible_env, task_containers
from sweep import look


PLAYBOOK = '''
- name: drover events
  hosts: localhost
  gather_facts: false
  tasks:
    - name: start the sleeper
      drover.fleet.ecs_task:
        store_path: "{{ store_path }}"
        cluster: "{{ cluster }}"
        name: sleeper
        containers:
          - name: main
            image: "{{ image }}"
            command: [sleep, '600']
    - name: remove the sleeper
      drover.fleet.ecs_task:
        store_path: "{{ store_path }}"
        cluster: "{{ cluster }}"
        name: sleeper
        state: absent
'''


def test_playbook_run_logs_events_and_prints_the_recap(engine, cluster, tmp_path):
    playbook = tmp_path / 'events.yml'
    playbook.write_text(PLAYBOOK)
    log = tmp_path / 'logs' / 'events.jsonl'
    state = tmp_path / 'controller' / 'fleet-holds.json'   # where ansible_env points the fleet-wide holds
    env = ansible_env(tmp_path, {'ANSIBLE_CALLBACKS_ENABLED': 'drover.fleet.events', 'DROVER_EVENTS_LOG_PATH': str(log)})
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
               '-e', json.dumps({'store_path': str(tmp_path / 'state' / 'store.db'), 'cluster': cluster,
                                 'image': IMAGE}),
               str(playbook)]
    try:
        done = subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300,
                              check=False)
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
            c.remove(force=True)
    out = done.stdout + done.stderr
    look(out, 'ansible-playbook output')
    assert done.returncode == 0, out[-4000:]

    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e['event'], e['host'], e['task'], e['cluster']) for e in events] == [
        ('task.running', 'localhost', 'sleeper', cluster), ('task.stopped', 'localhost', 'sleeper', cluster)]
    assert [e['ansible_task'] for e in events] == ['start the sleeper', 'remove the sleeper']
    assert all(e['play'] == 'drover events' and e['subject'] == 'task/%s/sleeper' % cluster for e in events)
    assert len(set(e['run'] for e in events)) == 1
    assert 'store.db' not in log.read_text()                 # no module argument travels with the events
    assert stat.S_IMODE(os.stat(str(log)).st_mode) == 0o600

    assert 'DROVER FLEET RECAP' in out, out[-4000:]
    recap = out[out.index('DROVER FLEET RECAP'):]
    assert 'localhost' in recap and 'events=2' in recap and 'tasks running=0 stopped=1 held=0' in recap
    assert 'events: 2 logged to %s' % log in recap
    assert '[WARNING]' not in out, out[-4000:]
    assert not state.exists()                                # no pool was held: no fleet hold file
    assert task_containers(engine, cluster) == []
