# -*- coding: utf-8 -*-
"""Faults at the playbook level, in real `ansible-playbook` runs on this host.

- Two `drover.fleet.reconcile` runs started at once after a task's container was killed: both succeed, the
  host lock serialises them, the task's container is created again exactly once.
- A table of bad role variables (drover.fleet.host, tasks, runner_pools and reconcile_timer), each host of
  one inventory given one: every host fails with a message naming the variable or the field, no traceback,
  and nothing changed on the host (containers, network namespaces, links, no store and no unit file made).

FAULT_RACES reconcile races (default 3; `make test` runs 2), `make faults` runs 20."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest
import yaml

import procs  # noqa: F401  pylint: disable=unused-import  # it puts tests/integration on the path
from helpers import IMAGE, ansible_env, host_links, netns_list, wait_for  # pylint: disable=wrong-import-order
from sweep import given, look  # pylint: disable=wrong-import-order

RACES = int(os.environ.get('FAULT_RACES', '3'))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def playbook(tmp_path, target, inventory, args=()):
    """Start ansible-playbook with an inventory file (a dict), each result printed as one JSON line; a Popen."""
    path = given(tmp_path / ('inventory-%s.yml' % uuid.uuid4().hex[:6]))
    path.write_text(yaml.safe_dump(inventory))
    env = ansible_env(tmp_path, {'ANSIBLE_CALLBACK_RESULT_FORMAT': 'json', 'ANSIBLE_CALLBACK_FORMAT_PRETTY': 'false',
                                 'ANSIBLE_DISPLAY_OK_HOSTS': 'true'})
    return subprocess.Popen([ANSIBLE_PLAYBOOK, '-i', str(path), target] + list(args), cwd=str(tmp_path), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


RESULT = re.compile(r'^(fatal|failed|ok|changed|skipping): \[([^\]]+)\]:?(?: FAILED!)?(?: \(item=.*?\))? => (\{.*\})$', re.M)
TASK = re.compile(r'^TASK \[(.*)\] \*+$', re.M)
RECAP = re.compile(r'^(\S+)\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)


def finished(proc):
    """(rc, {host: [(task, result)]}, {host: (ok, changed, unreachable, failed)}, output)."""
    out = proc.communicate(timeout=600)[0]
    look(out, 'ansible-playbook output')
    results, task = {}, None
    for line in out.splitlines():
        found = TASK.match(line)
        if found:
            task = found.group(1)
            continue
        found = RESULT.match(line)
        if found:
            result = json.loads(found.group(3))
            result['failed'] = found.group(1) in ('fatal', 'failed')       # the line says it; the printed result may not
            results.setdefault(found.group(2), []).append((task, result))
    stats = dict((m[0], tuple(int(n) for n in m[1:])) for m in RECAP.findall(out))
    assert stats, out[-4000:]
    return proc.returncode, results, stats, out


def local(**hostvars):
    return dict({'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}, **hostvars)


# --- two reconciles at once --------------------------------------------------------------------------------

@pytest.fixture
def declared(engine, tmp_path):
    cluster = 'r%s' % uuid.uuid4().hex[:6]
    hostvars = local(drover_store_path=str(tmp_path / 'state' / 'store.db'), drover_tasks_cluster=cluster,
                     drover_pools=[], drover_tasks=[{'name': 'svc', 'restart': 'always', 'containers': [
                         {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}])
    inventory = {'all': {'hosts': {'localhost': hostvars}}}
    rc, dummy, dummy, out = finished(playbook(tmp_path, 'drover.fleet.converge', inventory,
                                              args=['--skip-tags', 'drover_host']))
    assert rc == 0, out[-3000:]
    yield cluster, inventory
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        c.remove(force=True)


@pytest.mark.parametrize('number', range(RACES))
def test_two_reconciles_at_once(engine, declared, tmp_path, number):
    cluster, inventory = declared
    context = 'reconcile race %d' % number
    box = engine.containers.get('svc-main')
    box.kill()
    wait_for(lambda: engine.containers.get('svc-main').status == 'exited')
    since = time.time()
    runs = [playbook(tmp_path, 'drover.fleet.reconcile', inventory) for dummy in range(2)]
    done = [finished(p) for p in runs]
    assert [d[0] for d in done] == [0, 0], (context, [d[3][-2000:] for d in done])
    changed = [d[2]['localhost'][1] for d in done]
    assert sorted(bool(c) for c in changed) == [False, True], (context, changed)
    made = [ev['Actor']['Attributes']['name'] for ev in engine.api.events(
        since=int(since) - 1, until=int(time.time()) + 1, decode=True,
        filters={'type': 'container', 'event': 'create', 'label': 'drover.cluster=%s' % cluster})
        if ev['timeNano'] >= since * 1e9]
    assert made == ['svc-main'], (context, 'created', made)
    assert engine.containers.get('svc-main').status == 'running', context


# --- bad role variables ------------------------------------------------------------------------------------

def box(**kw):
    return dict({'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600']}, **kw)


def task(**kw):
    return [dict({'name': 'web', 'containers': [box()]}, **kw)]


POOL = {'pool': 'bad', 'repository': 'octo/bad', 'profile': {'name': 'p', 'image': IMAGE, 'slots': 1}}

# (id, variables, words the failing host's message must contain)
CONVERGE_CASES = [
    ('tasks-not-a-list', {'drover_tasks': 'web'}, ['drover_tasks']),
    ('tasks-entry-not-a-dict', {'drover_tasks': ['web']}, ['drover_tasks']),
    ('tasks-unknown-key', {'drover_tasks': task(contianers=[])}, ['contianers']),
    ('tasks-bad-restart', {'drover_tasks': task(restart='sometimes')}, ['restart', 'sometimes']),
    ('tasks-bad-network-mode', {'drover_tasks': task(network_mode='overlay')}, ['network_mode', 'overlay']),
    ('tasks-bad-state', {'drover_tasks': task(state='paused')}, ['state', 'paused']),
    ('tasks-bad-pull', {'drover_tasks': task(pull='sometimes')}, ['pull', 'sometimes']),
    ('tasks-cluster-a-list', {'drover_tasks': task(), 'drover_tasks_cluster': ['a', 'b']}, ['cluster']),
    ('tasks-lock-timeout-a-word', {'drover_tasks': task(), 'drover_tasks_lock_timeout': 'soon'}, ['drover_tasks_lock_timeout']),
    ('tasks-gpu-discovery', {'drover_tasks_gpu_discovery': 'magic'}, ['drover_tasks_gpu_discovery', 'magic']),
    ('tasks-purge-not-a-bool', {'drover_tasks_purge': 'perhaps'}, ['drover_tasks_purge']),
    ('store-path-relative', {'drover_tasks': task(), 'drover_store_path': 'state/store.db'},
     ['store_path must be an absolute path']),
    ('task-container-without-image', {'drover_tasks': [{'name': 'web', 'containers': [{'name': 'main'}]}]},
     ['image']),
    ('task-memory-a-word', {'drover_tasks': task(containers=[box(memory='lots')])}, ['memory']),
    ('task-awsvpc-address-without-eni', {'drover_tasks': task(network_mode='awsvpc', awsvpc={'address': '198.18.9.2/24'})},
     ['awsvpc.address', 'eni_mac']),
    ('task-two-containers-one-name', {'drover_tasks': task(containers=[box(), box()])}, ['main']),
    ('task-gpu-negative', {'drover_tasks': task(containers=[box(gpu=-1)])}, ['gpu']),
    ('task-host-network-not-allowed', {'drover_tasks': task(network_mode='host')},
     ['network_mode is host', 'drover_allow_host_network']),
    ('allow-host-network-not-a-bool', {'drover_allow_host_network': 'perhaps'}, ['drover_allow_host_network']),
]
POOL_CASES = [
    ('pools-not-a-list', {'drover_pools': 'bad'}, ['drover_pools']),
    ('pools-bad-scale', {'drover_pools': [dict(POOL, scale='sometimes')]}, ['scale', 'sometimes']),
    ('pools-without-name', {'drover_pools': [{'repository': 'octo/bad'}]}, ['pool']),
    ('pools-drain-not-a-bool', {'drover_pools_drain': 'maybe'}, ['drover_pools_drain']),
    ('pools-defaults-a-string', {'drover_pools_defaults': 'fast'}, ['drover_pools_defaults']),
    ('pool-declared-twice', {'drover_pools': [POOL, POOL]}, ['more than once']),
    ('pool-without-labels', {'drover_pools': [dict(POOL, labels=[])]}, ['labels']),
    ('pool-repository-and-org', {'drover_pools': [dict(POOL, organization='octo')]}, ['organization']),
    ('pool-slots-zero', {'drover_pools': [dict(POOL, profile=dict(POOL['profile'], slots=0))]}, ['slots']),
    ('pool-host-network-not-allowed', {'drover_pools': [dict(POOL, profile=dict(POOL['profile'], network_mode='host'))]},
     ['profile.network_mode is host', 'drover_allow_host_network']),
]
HOST_CASES = [
    ('host-engine-not-a-bool', {'drover_host_install_engine': 'perhaps'}, ['drover_host_install_engine']),
    ('host-port-a-word', {'drover_host_credentials_port': 'eighty'}, ['drover_host_credentials_port']),
    ('host-engine-wait-a-word', {'drover_host_engine_wait': 'long'}, ['drover_host_engine_wait']),
    # what goes into the endpoint's unit or names a path: no directive of its own, no argument of its own
    ('host-region-with-a-directive', {'drover_host_credentials_region': 'us-east-1\nExecStartPre=/bin/true'},
     ['drover_host_credentials_region', 'region']),
    ('host-credentials-dir-with-a-directive',
     {'drover_host_credentials_dir': '/usr/local/lib/drover\nExecStartPre=/bin/true'},
     ['drover_host_credentials_dir', 'ExecStart=']),
    ('host-docker-host-with-an-argument', {'drover_docker_host': 'unix:///run/docker.sock --store /tmp/other.db'},
     ['drover_docker_host', 'no blank']),
    ('host-store-path-with-a-newline', {'drover_store_path': '/var/lib/drover/store.db\n'}, ['drover_store_path']),
    ('host-sts-endpoint-with-a-specifier', {'drover_host_credentials_sts_endpoint': 'https://%H.example'},
     ['drover_host_credentials_sts_endpoint']),
    ('host-unit-dir-with-a-newline', {'drover_host_credentials_unit_dir': '/etc/systemd/system\n/x'},
     ['drover_host_credentials_unit_dir', 'control character']),
]
TIMER_CASES = [
    ('timer-bad-state', {'drover_reconcile_timer_state': 'maybe'}, ['drover_reconcile_timer_state', 'maybe']),
    ('timer-persistent-not-a-bool', {'drover_reconcile_timer_persistent': 'perhaps'},
     ['drover_reconcile_timer_persistent']),
    ('timer-timeout-a-word', {'drover_reconcile_timer_timeout': 'long'}, ['drover_reconcile_timer_timeout']),
    ('timer-interval-with-a-newline', {'drover_reconcile_timer_interval': '1\nmin'},
     ['drover_reconcile_timer_interval']),
    ('timer-interval-empty', {'drover_reconcile_timer_interval': ''}, ['drover_reconcile_timer_interval']),
    ('timer-accuracy-a-word', {'drover_reconcile_timer_accuracy': 'exact'}, ['drover_reconcile_timer_accuracy']),
    ('timer-environment-a-list', {'drover_reconcile_timer_environment': ['A=1']},
     ['drover_reconcile_timer_environment']),
    # what goes into a unit or names a path: no directive of its own, no unit written elsewhere
    ('timer-name-with-a-path', {'drover_reconcile_timer_name': '../escape'}, ['drover_reconcile_timer_name', "'/'"]),
    ('timer-name-with-a-directive', {'drover_reconcile_timer_name': 'drover\nExecStartPre=/bin/true'},
     ['drover_reconcile_timer_name']),
    ('timer-user-with-a-directive', {'drover_reconcile_timer_user': 'root\nExecStartPre=/bin/true'},
     ['drover_reconcile_timer_user']),
    ('timer-environment-value-with-a-directive',
     {'drover_reconcile_timer_environment': {'A': 'x\nExecStartPre=/bin/true'}},
     ['drover_reconcile_timer_environment', 'control character']),
    ('timer-environment-name-with-a-blank', {'drover_reconcile_timer_environment': {'A B': 'x'}},
     ['drover_reconcile_timer_environment', 'name variables']),
    ('timer-extra-arg-with-a-directive',
     {'drover_reconcile_timer_extra_args': ['--limit', 'web1\nExecStartPre=/bin/true']},
     ['drover_reconcile_timer_extra_args']),
    ('timer-working-directory-with-a-directive',
     {'drover_reconcile_timer_working_directory': '/srv\nExecStartPre=/bin/true'},
     ['drover_reconcile_timer_working_directory']),
    ('timer-inventory-with-a-newline', {'drover_reconcile_timer_inventory': '/etc/ansible/hosts\n'},
     ['drover_reconcile_timer_inventory']),
]


def host_view(engine):
    return (sorted((c.name, c.status) for c in engine.containers.list(all=True)), netns_list(), host_links())


def bad_inventory(tmp_path, cases, base):
    hosts = {}
    for name, bad, dummy in cases:
        hostvars = local(**dict(base(tmp_path / name), **bad))
        hosts[name] = hostvars
    return {'all': {'hosts': hosts}}


def converge_base(home):
    return {'drover_store_path': str(home / 'state' / 'store.db'), 'drover_tasks_cluster': 'badvars',
            'drover_tasks': [], 'drover_pools': [],
            'drover_pools_defaults': {'api_url': 'http://127.0.0.1:9', 'token': 'ghp_not_used_%s' % ('x' * 30),
                                      'labels': ['self-hosted']},
            'drover_host_install_engine': False, 'drover_host_build_image': False,
            'drover_host_install_python_deps': False}


def timer_base(home):
    return {'drover_reconcile_timer_unit_dir': str(home / 'units'), 'drover_reconcile_timer_verify': False,
            'drover_reconcile_timer_inventory': str(home / 'inventory.yml')}


def check_table(engine, tmp_path, cases, target, base, args=()):
    before = host_view(engine)
    rc, seen, stats, out = finished(playbook(tmp_path, target, bad_inventory(tmp_path, cases, base), args=args))
    assert rc != 0
    assert 'Traceback' not in out, out[-3000:]
    for name, bad, words in cases:
        failed = [(t, r) for t, r in seen.get(name, []) if r.get('failed')]
        assert len(failed) == 1, (name, 'failed tasks', failed, seen.get(name))
        msg = failed[0][1].get('msg', '')
        for word in words:
            assert word in msg, (name, word, msg)
        assert not seen[name][-1][1].get('changed'), (name, seen[name][-1])
        assert not (tmp_path / name / 'state').exists(), (name, 'a store was made')
        assert not (tmp_path / name / 'units').exists(), (name, 'a unit was written')
        assert stats[name][1:] == (0, 0, 1), (name, stats[name])
    assert host_view(engine) == before
    assert not (tmp_path / 'state').exists()           # a relative store path would have been made here
    return len(cases)


def test_bad_role_variables_change_nothing(engine, tmp_path):
    # Only the role the cases are about runs after the up-front checks of every role's variables, so that
    # what another role does (drover.fleet.host makes the store's directory, drover.fleet.tasks the store)
    # is not taken for a change made despite a bad variable.
    tried = check_table(engine, tmp_path, CONVERGE_CASES + HOST_CASES, 'drover.fleet.converge', converge_base,
                        args=['--forks', '10', '--skip-tags', 'drover_host,drover_pools'])
    tried += check_table(engine, tmp_path, POOL_CASES, 'drover.fleet.converge', converge_base,
                         args=['--forks', '10', '--skip-tags', 'drover_host,drover_tasks'])
    play = tmp_path / 'timer.yml'
    play.write_text(yaml.safe_dump([{'name': 'timer', 'hosts': 'all', 'gather_facts': False,
                                     'roles': ['drover.fleet.reconcile_timer']}]))
    tried += check_table(engine, tmp_path, TIMER_CASES, str(play), timer_base)
    print('bad role variables: %d cases' % tried)
