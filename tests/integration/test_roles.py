# -*- coding: utf-8 -*-
"""The roles and playbooks in real `ansible-playbook` runs on this host: drover.fleet.converge in four steps
(check, apply, idempotent, idempotent check), a bad variable stopped by the roles' argument specs before
anything changes, drover.fleet.reconcile reporting a killed task STOPPED, runner pools held fleet-wide and
drained when no longer declared (against the GitHub stand-in), and the reconcile timer's units checked with
`systemd-analyze verify`."""

from __future__ import absolute_import, division, print_function

import datetime
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers import IMAGE, ansible_env, task_containers, wait_for
from sweep import given, look


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
RUNNER_IMAGE = 'drover.local/runner:1'
REPO = 'octo/roles'
RECAP = re.compile(r'^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)


def playbook(target, tmp_path, extra, env=None, check=False, args=()):
    """Run ansible-playbook on localhost (local connection, this interpreter); return (rc, output)."""
    run_env = ansible_env(tmp_path, env)
    # The variables in a file, as a user keeps them (a token on the command line is in every `ps`).
    extra_vars = given(tmp_path / ('vars-%d.json' % len(list(tmp_path.glob('vars-*.json')))))
    extra_vars.write_text(json.dumps(extra))
    command = [ANSIBLE_PLAYBOOK, '-i', 'localhost,', '-c', 'local', '-e', '@%s' % extra_vars, target]
    if check:
        command.append('--check')
    command.extend(args)
    done = subprocess.run(command, cwd=str(tmp_path), env=run_env, capture_output=True, text=True, timeout=600, check=False)
    look(done.stdout + done.stderr, 'ansible-playbook output')
    return done.returncode, done.stdout + done.stderr


def recap(output):
    """(ok, changed, unreachable, failed) of localhost in the PLAY RECAP."""
    found = RECAP.findall(output)
    assert found, output[-4000:]
    return tuple(int(n) for n in found[-1])


@pytest.fixture
def converge_vars(tmp_path, cluster):
    return {
        'drover_store_path': str(tmp_path / 'state' / 'store.db'),
        'drover_tasks_cluster': cluster,
        'drover_tasks': [{'name': 'sleeper', 'containers': [
            {'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16}]}],
        'drover_pools': [],
    }


def test_converge_in_four_steps(engine, cluster, tmp_path, converge_vars):
    rc, out = playbook('drover.fleet.converge', tmp_path, converge_vars, check=True)
    assert rc == 0, out[-4000:]
    assert recap(out)[1] > 0
    assert task_containers(engine, cluster) == []                 # check mode started nothing
    assert not (tmp_path / 'state').exists()                     # ... and created no store

    rc, out = playbook('drover.fleet.converge', tmp_path, converge_vars)
    assert rc == 0, out[-4000:]
    assert recap(out)[1] > 0
    assert '%s/sleeper: RUNNING' % cluster in out
    assert [(name, status) for name, status, labels in task_containers(engine, cluster)] == [('sleeper-main', 'running')]
    assert oct(os.stat(str(tmp_path / 'state')).st_mode & 0o777) == '0o700'

    rc, out = playbook('drover.fleet.converge', tmp_path, converge_vars)
    assert rc == 0, out[-4000:]
    assert recap(out)[1:] == (0, 0, 0), out[-4000:]
    # a host that lacks nothing ends its pass after the first tasks pass: one module run, not the host role's look
    # and a second tasks pass
    assert 'TASK [drover.fleet.host : Look at the host' not in out, out[-4000:]

    rc, out = playbook('drover.fleet.converge', tmp_path, converge_vars, check=True)
    assert rc == 0, out[-4000:]
    assert recap(out)[1:] == (0, 0, 0), out[-4000:]


@pytest.mark.parametrize('bad', [
    {'drover_tasks': 'notalist'},
    {'drover_tasks': [{'name': 'sleeper', 'contianers': []}]},
    {'drover_pools': [{'pool': 'p1', 'scale': 'sometimes'}]},
    {'drover_host_install_engine': 'perhaps'},
    {'drover_allow_privileged': 'perhaps'},
    {'drover_log_drivers': ['carrier-pigeon']},
    {'drover_bind_paths': {'srv': '/srv'}},
    {'drover_tasks': [{'name': 'sleeper', 'ipc_mode': 'shareable'}]},
], ids=['tasks-not-a-list', 'tasks-unknown-key', 'pools-bad-choice', 'host-not-a-bool', 'privileged-not-a-bool',
        'log-driver-bad-choice', 'bind-paths-a-mapping', 'ipc-mode-bad-choice'])
def test_bad_variable_fails_before_any_change(engine, cluster, tmp_path, converge_vars, bad):
    extra = dict(converge_vars, **bad)
    rc, out = playbook('drover.fleet.converge', tmp_path, extra)
    assert rc != 0, out[-4000:]
    assert 'Validation of arguments failed' in out, out[-4000:]
    # the playbook's up-front check of every role's variables stopped it
    assert 'TASK [Check the variables of drover.fleet.host, drover.fleet.tasks and drover.fleet.runner_pools]' in out
    assert recap(out)[1:] == (0, 0, 1), out[-4000:]
    assert task_containers(engine, cluster) == []
    assert not (tmp_path / 'state').exists()                     # not even the store directory was made


def test_a_value_that_breaks_out_of_the_unit_fails_under_the_host_tag(engine, cluster, tmp_path, converge_vars):
    # The host role trusts the play's check of its values and does not repeat it: the check must run under
    # --tags drover_host too, or a newline in the region would add a directive to the endpoint's unit.
    units, lib = tmp_path / 'units', tmp_path / 'lib'
    extra = dict(converge_vars, drover_host_credentials_endpoint=True, drover_host_credentials_unit_dir=str(units),
                 drover_host_credentials_dir=str(lib), drover_host_credentials_region='us-east-1\nExecStartPre=/bin/true',
                 drover_host_install_engine=False, drover_host_install_python_deps=False, drover_host_build_image=False)
    for tags in (['--tags', 'drover_host'], ['--skip-tags', 'drover_tasks,drover_pools']):
        rc, out = playbook('drover.fleet.converge', tmp_path, extra, args=tags)
        assert rc != 0, out[-4000:]
        assert 'drover_host_credentials_region must be an AWS region name' in out, out[-4000:]
        assert 'nothing was written' in out
        assert recap(out)[1:] == (0, 0, 1), out[-4000:]
        assert not units.exists() and not lib.exists() and not (tmp_path / 'state').exists()
    assert task_containers(engine, cluster) == []


def test_the_host_policy_reaches_the_module(engine, cluster, tmp_path, converge_vars):
    """drover_allow_host_namespaces, drover_bind_paths, drover_attributes, drover_allow_privileged, the log
    drivers and drover_aws_logs are the module's host options: a task they refuse fails the play and changes nothing."""
    src = tmp_path / 'bound'
    src.mkdir()
    task = {'name': 'sleeper', 'ipc_mode': 'host',
            'volumes': [{'name': 'b', 'host': {'source_path': str(src)}}],
            'placement_constraints': [{'type': 'memberOf', 'expression': 'attribute:rack == r7'}],
            'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                            'privileged': True, 'log_configuration': {'log_driver': 'awslogs'},
                            'mount_points': [{'source_volume': 'b', 'container_path': '/b'}]}]}
    allowed = dict(converge_vars, drover_tasks=[task], drover_allow_host_namespaces=True,
                   drover_bind_paths=[str(tmp_path)], drover_attributes={'rack': 'r7'}, drover_allow_privileged=True,
                   drover_log_drivers=['local', 'json-file'], drover_log_driver_map={'awslogs': 'local'})
    for key, value, word in (('drover_allow_host_namespaces', False, 'allow_host_namespaces'),
                             ('drover_bind_paths', ['/srv/elsewhere'], 'bind_paths'),
                             ('drover_attributes', {'rack': 'r1'}, 'attribute:rack == r7'),
                             ('drover_allow_privileged', False, 'allow_privileged'),
                             ('drover_log_drivers', ['json-file'], 'not allowed on this host'),
                             # served for real, awslogs needs its options (the task declares none)
                             ('drover_aws_logs', True, 'log_configuration.options.awslogs-group is required')):
        rc, out = playbook('drover.fleet.converge', tmp_path, dict(allowed, **{key: value}))
        assert rc != 0 and word in out, (key, out[-4000:])
        assert task_containers(engine, cluster) == []
    # (A privileged container with NET_RAW dropped does not start on this host's runtime: the allowed run
    # leaves privileged out; the refusal above shows drover_allow_privileged reaches the module.)
    task['containers'][0]['privileged'] = False
    rc, out = playbook('drover.fleet.converge', tmp_path, allowed)
    assert rc == 0, out[-4000:]
    assert '%s/sleeper: RUNNING' % cluster in out, out[out.find('Converge each cluster'):][:3000]
    inspected = engine.api.inspect_container('sleeper-main')['HostConfig']
    assert inspected['IpcMode'] == 'host'
    assert inspected['Binds'] == ['%s:/b' % src] and inspected['LogConfig']['Type'] == 'local'


def test_reconcile_reports_a_killed_task_stopped(engine, cluster, tmp_path, converge_vars):
    rc, out = playbook('drover.fleet.converge', tmp_path, converge_vars)
    assert rc == 0, out[-4000:]
    engine.containers.get('sleeper-main').kill()
    wait_for(lambda: engine.containers.get('sleeper-main').status == 'exited')

    rc, out = playbook('drover.fleet.reconcile', tmp_path, converge_vars)
    assert rc == 0, out[-4000:]
    assert '%s/sleeper: STOPPED (container main exited (137))' % cluster in out, out[-4000:]
    assert recap(out)[1] > 0
    assert task_containers(engine, cluster) == []                # released (restart: never)

    rc, out = playbook('drover.fleet.reconcile', tmp_path, converge_vars)
    assert rc == 0, out[-4000:]
    assert recap(out)[1:] == (0, 0, 0), out[-4000:]              # STOPPED stays STOPPED
    assert '%s/sleeper: STOPPED (container main exited (137))' % cluster in out


def test_the_playbooks_run_with_private_role_vars(engine, cluster, tmp_path, converge_vars):
    # The playbooks read role variables at the play's level (the host role's look, the pools role's condition):
    # their imports are public, whatever the user's ansible.cfg makes the default.
    private = {'ANSIBLE_PRIVATE_ROLE_VARS': 'true'}
    for target, changed in (('drover.fleet.converge', True), ('drover.fleet.converge', False),
                            ('drover.fleet.reconcile', False)):
        rc, out = playbook(target, tmp_path, converge_vars, env=private)
        assert rc == 0, (target, out[-4000:])
        assert '%s/sleeper: RUNNING' % cluster in out, out[-4000:]
        assert (recap(out)[1] > 0) == changed and recap(out)[2:] == (0, 0), (target, out[-4000:])


def test_a_task_declared_healthy_is_waited_for_and_reported(engine, cluster, tmp_path, converge_vars):
    check = {'command': ['CMD-SHELL', 'test -e /tmp/ok'], 'interval': 5, 'timeout': 2, 'retries': 1}
    extra = dict(converge_vars, drover_tasks_healthy_wait_timeout=20, drover_tasks=[{
        'name': 'checked', 'state': 'healthy', 'containers': [
            {'name': 'main', 'image': IMAGE, 'command': ['sh', '-c', 'touch /tmp/ok; exec sleep 3600'],
             'health_check': check}]}])
    rc, out = playbook('drover.fleet.converge', tmp_path, extra)
    assert rc == 0, out[-4000:]
    assert '%s/checked: RUNNING, HEALTHY' % cluster in out, out[-4000:]
    assert engine.api.inspect_container('checked-main')['State']['Health']['Status'] == 'healthy'


def runners(engine, pool_name):
    return dict((c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}))


def test_pools_held_fleet_wide_then_drained(engine, tmp_path, converge_vars, standin, pool_name):
    engine.images.get(RUNNER_IMAGE)
    auth = {'api_url': standin.url, 'token': standin.test_token, 'machine_id': 'mid' + pool_name}
    pool = {'pool': pool_name, 'repository': REPO, 'labels': ['self-hosted', 'linux', 'drover'], 'warm': 1,
            'profile': {'name': 'small', 'image': RUNNER_IMAGE, 'slots': 2, 'network_mode': 'host', 'memory': 64,
                        'environment': {'DROVER_JOB_SECONDS': '1'}}}
    declared = dict(converge_vars, drover_tasks=[], drover_pools=[pool], drover_pools_defaults=auth,
                    drover_allow_host_network=True)
    holds = tmp_path / 'controller' / 'fleet-holds.json'
    holds.parent.mkdir()
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%SZ')
    holds.write_text(json.dumps({REPO: {'until': until, 'hosts': ['h1', 'h2'], 'since': '2026-01-01T00:00:00Z'}}))

    # held fleet-wide: no runner starts, and the pool reports the fleet's hold; every entry point that converges
    # pools reads the holds: the reconcile, its pools-only run, and the converge
    for target, args in (('drover.fleet.reconcile', ()), ('drover.fleet.reconcile', ('--tags', 'drover_pools')),
                         ('drover.fleet.converge', ('--tags', 'drover_pools'))):
        rc, out = playbook(target, tmp_path, declared, args=args)
        assert rc == 0, out[-4000:]
        assert 'pool %s serves %s, held fleet-wide until %s' % (pool_name, REPO, until) in out, (target, args, out[-4000:])
        assert 'no runner starts for it until then' in out
        assert 'pool %s (%s): busy=0 idle=0 starting=0 free=2, held until %s (fleet)' % (pool_name, REPO, until) in out
        assert runners(engine, pool_name) == {}
        assert [r for r in standin.requests if r['method'] == 'POST' and '/_standin/' not in r['path']] == []
        assert standin.test_token not in out

    # an expired hold holds nothing: the warm runner starts
    expired = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)).strftime('%Y-%m-%dT%H:%M:%SZ')
    holds.write_text(json.dumps({REPO: {'until': expired, 'hosts': ['h1', 'h2'], 'since': '2026-01-01T00:00:00Z'}}))
    rc, out = playbook('drover.fleet.reconcile', tmp_path, declared)
    assert rc == 0, out[-4000:]
    assert 'pool %s serves' % pool_name not in out
    started = runners(engine, pool_name)
    assert len(started) == 1 and list(started.values()) == ['running'], started
    name = list(started)[0]
    wait_for(lambda: (standin.runner_by_name(name) or {}).get('status') == 'online')

    # no longer declared, and no credentials to drain it with: a clear failure, nothing changed
    rc, out = playbook('drover.fleet.reconcile', tmp_path, dict(converge_vars, drover_tasks=[]))
    assert rc != 0, out[-4000:]
    assert ('purge: pool %s, which this host holds and pools no longer declares, is drained; GitHub auth: give token'
            % pool_name) in out, out[-4000:]
    assert runners(engine, pool_name) == {name: 'running'}

    # with the credentials in drover_pools_defaults: drained
    rc, out = playbook('drover.fleet.reconcile', tmp_path, dict(converge_vars, drover_tasks=[], drover_pools_defaults=auth))
    assert rc == 0, out[-4000:]
    assert recap(out)[1] > 0
    assert runners(engine, pool_name) == {}
    assert standin.runner_by_name(name) is None
    assert standin.test_token not in out
    rc, out = playbook('drover.fleet.reconcile', tmp_path, dict(converge_vars, drover_tasks=[], drover_pools_defaults=auth))
    assert rc == 0, out[-4000:]
    assert recap(out)[1:] == (0, 0, 0), out[-4000:]             # the pool's record is gone
    # nothing declared and nothing held (the tasks role's drover_host_pools is empty): no pools pass at all, the
    # host's pass ends before the pools role
    assert 'Converge the pools in one pass' not in out, out[-4000:]
    assert 'Converge the pools, or drain those the host still holds' not in out, out[-4000:]
    assert 'TASK [End the pass of a host with no pool to converge or drain]' in out, out[-4000:]


TIMER_PLAY = '''
- name: The reconcile timer
  hosts: localhost
  gather_facts: false
  roles:
    - role: drover.fleet.reconcile_timer
'''


def systemd_analyze():
    """The path of systemd-analyze, installing Debian's systemd package when it is missing; None when it
    cannot be had."""
    found = shutil.which('systemd-analyze')
    if found is None and shutil.which('apt-get') and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        subprocess.run(['apt-get', 'update', '-qq'], env=env, capture_output=True, timeout=600, check=False)
        subprocess.run(['apt-get', 'install', '-y', '-qq', 'systemd'], env=env, capture_output=True, timeout=600,
                       check=False)
        found = shutil.which('systemd-analyze')
    return found


def test_reconcile_timer_units_pass_systemd_analyze_verify(tmp_path):
    analyze = systemd_analyze()
    if analyze is None:
        pytest.skip('systemd-analyze is missing and Debian\'s systemd package could not be installed')
    play = tmp_path / 'timer.yml'
    play.write_text(TIMER_PLAY)
    units = tmp_path / 'units'
    extra = {'drover_reconcile_timer_unit_dir': str(units),
             'drover_reconcile_timer_inventory': '/etc/drover/inventory.yml',
             'drover_reconcile_timer_extra_args': ['--limit', 'web 1', '-e', '@/etc/drover/100%.yml'],
             'drover_reconcile_timer_environment': {'DROVER_EVENTS_LOG_PATH': '/var/log/drover/events.jsonl'}}
    rc, out = playbook(str(play), tmp_path, extra)
    assert rc == 0, out[-4000:]
    service = (units / 'drover-reconcile.service').read_text()
    timer = (units / 'drover-reconcile.timer').read_text()
    real = os.path.realpath(ANSIBLE_PLAYBOOK)
    assert 'Type=oneshot' in service
    assert ('ExecStart=%s drover.fleet.reconcile -i /etc/drover/inventory.yml --limit "web 1" -e @/etc/drover/100%%%%.yml'
            % real) in service, service
    assert 'Environment="ANSIBLE_CALLBACKS_ENABLED=drover.fleet.events"' in service
    assert 'Environment="ANSIBLE_COLLECTIONS_PATH=' in service
    assert 'Environment="DROVER_EVENTS_LOG_PATH=/var/log/drover/events.jsonl"' in service
    for line in ('OnUnitActiveSec=60s', 'OnBootSec=2min', 'RandomizedDelaySec=10s', 'AccuracySec=1s', 'Persistent=true',
                 'WantedBy=timers.target'):
        assert line in timer, timer
    done = subprocess.run([analyze, 'verify', '--man=no', str(units / 'drover-reconcile.service'),
                           str(units / 'drover-reconcile.timer')], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stderr.strip() == '', done.stderr

    rc, out = playbook(str(play), tmp_path, extra)
    assert rc == 0, out[-4000:]
    assert recap(out)[1:] == (0, 0, 0), out[-4000:]

    rc, out = playbook(str(play), tmp_path, dict(extra, drover_reconcile_timer_ansible_playbook='/nonexistent/ansible-playbook'))
    assert rc != 0 and 'No executable ansible-playbook' in out, out[-4000:]

    rc, out = playbook(str(play), tmp_path, dict(extra, drover_reconcile_timer_state='absent'))
    assert rc == 0, out[-4000:]
    assert sorted(os.listdir(str(units))) == []


CREDENTIALS_PLAY = '''
- name: The host with the credentials endpoint
  hosts: localhost
  gather_facts: false
  roles:
    - role: drover.fleet.host
'''


def test_host_installs_the_credentials_endpoint_and_its_unit_verifies(tmp_path):
    analyze = systemd_analyze()
    if analyze is None:
        pytest.skip('systemd-analyze is missing and Debian\'s systemd package could not be installed')
    play = tmp_path / 'host.yml'
    play.write_text(CREDENTIALS_PLAY)
    units, lib = tmp_path / 'units', tmp_path / 'lib'
    extra = {'drover_host_credentials_endpoint': True, 'drover_host_credentials_unit_dir': str(units),
             'drover_host_credentials_dir': str(lib), 'drover_host_credentials_sts_endpoint': 'http://127.0.0.1:5999',
             'drover_store_path': str(tmp_path / 'state' / 'store.db')}
    rc, out = playbook(str(play), tmp_path, extra)
    assert rc == 0, out[-4000:]
    assert 'Verify the unit' in out and 'skipping: [localhost]' not in out.split('Verify the unit')[1].split('TASK')[0]
    program = lib / 'drover_credentials.py'
    assert program.read_bytes() == open(os.path.join(ROOT, 'roles', 'host', 'files', 'drover_credentials.py'), 'rb').read()
    assert os.stat(str(program)).st_mode & 0o777 == 0o644
    unit = (units / 'drover-credentials.service').read_text()
    assert ('ExecStart=%s %s --store %s --port 51679 --region us-east-1 --sts-endpoint http://127.0.0.1:5999'
            % (sys.executable, program, tmp_path / 'state' / 'store.db')) in unit, unit
    assert 'Restart=on-failure' in unit and 'WantedBy=multi-user.target' in unit
    done = subprocess.run([analyze, 'verify', '--man=no', str(units / 'drover-credentials.service')],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stderr.strip() == '', done.stderr
    rc, out = playbook(str(play), tmp_path, extra)
    assert rc == 0 and recap(out)[1:] == (0, 0, 0), out[-4000:]
