# -*- coding: utf-8 -*-
"""ecs_task on the real Docker engine: each behaviour in four steps (check, apply, idempotent,
idempotent check), and what the host holds listed before and after."""

from __future__ import absolute_import, division, print_function

import os
import sqlite3

import pytest

from helpers import IMAGE, container, four_steps, host_snapshot, statuses, store_rows, task_containers, wait_for, warnings_of


def test_start_in_four_steps(engine, cluster, converge, store_path):
    args = dict(name='web', containers=[container('main', memory=32, cpu=256, environment={'MODE': 'demo'}),
                                        container('side', essential=False)])
    check = converge(check=True, **args)
    assert check['changed'] and check['task']['last_status'] == 'PENDING'
    assert task_containers(engine, cluster) == [] and store_rows(store_path) is None
    check, apply, again, check2 = [check] + four_steps(converge, **args)[1:]
    assert apply['task']['last_status'] == 'RUNNING'
    assert [e['event'] for e in apply['events']] == ['task.running']
    listed = task_containers(engine, cluster)
    assert statuses(engine, cluster) == {'web-main': 'running', 'web-side': 'running'}
    labels = listed[0][2]
    assert labels['drover.role'] == 'task' and labels['drover.task'] == 'web'
    assert labels['drover.container'] == 'main' and labels['drover.cluster'] == cluster
    ids = [c['runtime_id'] for c in apply['task']['containers']]
    assert [c['runtime_id'] for c in again['task']['containers']] == ids
    assert again['events'] == [] and check2['events'] == []
    inspected = engine.api.inspect_container(ids[0])
    assert inspected['HostConfig']['Memory'] == 32 * 1024 * 1024
    assert inspected['HostConfig']['CpuShares'] == 256
    assert 'MODE=demo' in inspected['Config']['Env']
    assert inspected['Config']['Cmd'] == ['sleep', '3600']
    rows = store_rows(store_path)['tasks']
    assert len(rows) == 1 and rows[0][4] == 'RUNNING'


def test_stop_in_four_steps(engine, cluster, converge):
    converge(name='web', containers=[container('main')])
    results = four_steps(converge, name='web', state='stopped', stop_reason='maintenance window')
    assert results[1]['task']['last_status'] == 'STOPPED'
    assert results[1]['task']['stopped_reason'] == 'maintenance window'
    assert results[1]['events'][0]['reason'] == 'maintenance window'
    assert results[2]['task']['stopped_reason'] == 'maintenance window'
    assert task_containers(engine, cluster) == []


def test_absent_in_four_steps(engine, cluster, converge, store_path):
    converge(name='web', containers=[container('main')])
    results = four_steps(converge, name='web', state='absent')
    assert results[1]['events'][0]['event'] == 'task.stopped'
    assert task_containers(engine, cluster) == []
    assert store_rows(store_path)['tasks'] == []


def test_changed_spec_replaces_in_four_steps(engine, cluster, converge):
    first = converge(name='web', containers=[container('main')])
    old_id = first['task']['containers'][0]['runtime_id']
    results = four_steps(converge, name='web', containers=[container('main', ['sleep', '7200'])])
    assert [e['event'] for e in results[1]['events']] == ['task.stopped', 'task.running']
    new_id = results[1]['task']['containers'][0]['runtime_id']
    assert new_id != old_id
    assert list(statuses(engine, cluster)) == ['web-main']
    assert engine.api.inspect_container(new_id)['Config']['Cmd'] == ['sleep', '7200']


def test_diff_mode(converge):
    args = dict(name='web', containers=[container('main')])
    r = converge(check=True, diff=True, **args)
    key = next(iter(r['diff']['after']))
    assert r['diff']['before'] == {key: None}
    assert r['diff']['after'][key]['containers'] == [{'name': 'main', 'image': IMAGE, 'last_status': 'PENDING'}]
    converge(**args)
    r = converge(diff=True, name='web', state='stopped')
    assert r['diff']['before'][key]['last_status'] == 'RUNNING'
    assert r['diff']['after'][key]['last_status'] == 'STOPPED'


def test_essential_exit_stops_the_task_and_never_restarts(engine, cluster, converge, store_path):
    args = dict(name='job', containers=[container('main', ['sh', '-c', 'sleep 0.3; exit 3']),
                                        container('side', essential=False)])
    converge(**args)
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited')
    r = converge(**args)
    assert r['changed']
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == 'container main exited (3)'
    assert [c['exit_code'] for c in r['task']['containers']] == [3, None]
    assert task_containers(engine, cluster) == []
    for again in (converge(**args), converge(**args)):
        assert not again['changed'] and again['task']['stopped_reason'] == 'container main exited (3)'
    assert task_containers(engine, cluster) == []


def test_non_essential_exit_keeps_the_task(engine, cluster, converge):
    args = dict(name='job', containers=[container('main'), container('once', ['true'], essential=False)])
    converge(**args)
    wait_for(lambda: statuses(engine, cluster).get('job-once') == 'exited')
    r = converge(**args)
    assert not r['changed'] and r['task']['last_status'] == 'RUNNING'
    assert [(c['name'], c['last_status'], c['exit_code']) for c in r['task']['containers']] == [
        ('main', 'RUNNING', None), ('once', 'STOPPED', 0)]


def test_restart_always_runs_again_at_once_then_is_held(engine, cluster, converge, store_path):
    args = dict(name='svc', restart='always', containers=[container('main', ['sh', '-c', 'sleep 1; exit 1'])])
    first_id = converge(**args)['task']['containers'][0]['runtime_id']
    wait_for(lambda: list(statuses(engine, cluster).values()) == ['exited'])
    # The first stop: reported, and the next run started in the same pass (the old container gone).
    r = converge(**args)
    assert [e['event'] for e in r['events']] == ['task.stopped', 'task.running'], r['events']
    assert r['events'][0]['reason'] == 'container main exited (1)'
    assert r['task']['last_status'] == 'RUNNING' and r['task']['streak'] == 1 and r['task']['held_until'] is None
    second_id = r['task']['containers'][0]['runtime_id']
    assert second_id != first_id
    assert [c.id for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster})] == \
        [second_id]
    wait_for(lambda: list(statuses(engine, cluster).values()) == ['exited'])
    # It keeps stopping: held back 30 s before its next run.
    second = converge(**args)
    assert [e['event'] for e in second['events']] == ['task.stopped', 'task.held']
    assert second['task']['streak'] == 2 and second['task']['held_until'] and second['task']['last_status'] == 'STOPPED'
    assert task_containers(engine, cluster) == []
    held = converge(**args)
    assert not held['changed'] and task_containers(engine, cluster) == []
    # Let the hold run out (a real store row, as a later converge would find it).
    db = sqlite3.connect(store_path)
    db.execute('UPDATE tasks SET hold_until = 0')
    db.commit()
    db.close()
    again = converge(**args)
    assert again['changed'] and [e['event'] for e in again['events']] == ['task.running']
    assert again['task']['streak'] == 2


def test_on_failure_does_not_rerun_a_clean_exit(engine, cluster, converge):
    args = dict(name='batch', restart='on-failure', containers=[container('main', ['true'])])
    converge(**args)
    wait_for(lambda: list(statuses(engine, cluster).values()) == ['exited'])
    r = converge(**args)
    assert r['task']['stopped_reason'] == 'container main exited (0)' and r['task']['held_until'] is None
    assert not converge(**args)['changed']


def test_adoption_after_the_store_is_deleted(engine, cluster, converge, store_path, tmp_path):
    args = dict(name='web', containers=[container('main'), container('side')])
    first = converge(**args)
    ids = sorted(c['runtime_id'] for c in first['task']['containers'])
    fresh = str(tmp_path / 'other' / 'store.db')
    check = converge(check=True, store_path=fresh, **args)
    assert not check['changed']
    r = converge(store_path=fresh, **args)
    assert not r['changed'] and r['task']['last_status'] == 'RUNNING'
    assert sorted(c['runtime_id'] for c in r['task']['containers']) == ids
    assert len(task_containers(engine, cluster)) == 2
    assert store_rows(fresh)['tasks'][0][4] == 'RUNNING'


def test_vanished_containers_are_reported_stopped(engine, cluster, converge):
    args = dict(name='web', containers=[container('main')])
    converge(**args)
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        c.remove(force=True)
    r = converge(**args)
    assert r['changed'] and r['task']['stopped_reason'] == 'Container exited while no converge was running'
    assert not converge(**args)['changed']


def test_purge_removes_only_undeclared_tasks_of_the_cluster(engine, cluster, converge, module_runner, store_path):
    other = cluster + 'x'
    try:
        module_runner('ecs_task', dict(name='keep', cluster=other, store_path=store_path,
                                       containers=[container('main')]))
        converge(name='old', containers=[container('main')])
        tasks = [dict(name='a', containers=[container('main')]), dict(name='b', containers=[container('main')])]
        results = four_steps(converge, tasks=tasks, purge=True)
        assert sorted((t['name'], t['last_status']) for t in results[1]['tasks']) == [
            ('a', 'RUNNING'), ('b', 'RUNNING'), ('old', 'STOPPED')]
        assert list(statuses(engine, cluster)) == ['a-main', 'b-main']
        assert list(statuses(engine, other)) == ['keep-main']
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % other}):
            c.remove(force=True)


def test_a_declared_task_named_as_a_kept_instance_is_refused_and_the_instance_left(
        engine, cluster, converge, store_path):
    """drover.fleet.converge's first pass keeps the services' instances (purge_keep): a task of the host's own with
    an instance's name would replace its containers."""
    converge(tasks=[dict(name='web-1', containers=[container('main')])], purge=True)     # the service's instance
    before = host_snapshot(engine, store_path, scope='drover.cluster=%s' % cluster)
    r = converge(tasks=[dict(name='web-1', containers=[container('other')])], purge=True,
                 purge_keep=[dict(cluster=cluster, service='web')])
    assert r.failed and r['msg'] == (
        'task web-1 of cluster %s has the name of an instance of service web (<service>-<index>); its instance is '
        'left as it runs: rename the task or the service' % cluster), r
    assert host_snapshot(engine, store_path, scope='drover.cluster=%s' % cluster) == before
    assert list(statuses(engine, cluster)) == ['web-1-main']
    own = [dict(name='web-db', containers=[container('main')])]                   # not an index: its own
    r = converge(tasks=own, purge=True, purge_keep=[dict(cluster=cluster, service='web')])
    assert not r.failed and sorted(statuses(engine, cluster)) == ['web-1-main', 'web-db-main'], r


def test_the_look_names_a_kept_instance_that_the_hosts_settings_now_make_otherwise(
        engine, cluster, converge, store_path):
    """drover.fleet.converge's first pass leaves the services' instances as they run (purge_keep): where the host's
    settings (log_driver_map, log_drivers) would now make one otherwise, its look says so (`restated`), and the
    placement gives the host a second pass that starts it anew."""
    task = {'containers': [container('main', log_configuration={'log_driver': 'awslogs', 'options': {
        'awslogs-group': 'web', 'awslogs-region': 'us-east-1', 'awslogs-stream-prefix': 'web'}})]}
    record = dict(cluster=cluster, service='web', revision='r1', number=1, status='completed', rollback_of=None,
                  generation=1, declaration=task)
    # web-2 runs a revision the host's records lack: the placement's to judge (it replaces it)
    started = converge(tasks=[dict(task, name='web-1', revision='r1', restart='always'),
                              dict(task, name='web-2', revision='r0', restart='always')], purge=True,
                       service_revisions=[record])
    assert not started.failed and list(statuses(engine, cluster)) == ['web-1-main', 'web-2-main'], started
    keep = [dict(cluster=cluster, service='web')]

    def restated(**host):
        r = converge(tasks=[], purge=True, purge_keep=keep, look={}, **host)
        assert not r.failed and not r['changed'], r
        return dict((t['name'], t.get('restated')) for t in r['look']['tasks'])
    before = host_snapshot(engine, store_path, scope='drover.cluster=%s' % cluster)
    assert restated() == {'web-1': None, 'web-2': None}                    # as they were started: nothing to say
    assert restated(log_drivers=['local', 'json-file'], log_driver_map={'awslogs': 'json-file'}) == {
        'web-1': ['containers[main].log_configuration'], 'web-2': None}
    said = restated(log_drivers=['json-file'], log_driver_map={'awslogs': 'local'})['web-1']
    assert 'not allowed on this host' in said, said                        # the host refuses it now: the reason
    assert host_snapshot(engine, store_path, scope='drover.cluster=%s' % cluster) == before  # left as they run


def test_start_failure_removes_what_started(engine, cluster, converge):
    args = dict(name='bad', containers=[container('ok'), container('broken', ['/no/such/program'])])
    r = converge(**args)
    assert not r.failed
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('container start failed: ')
    assert 'no such file or directory' in r['task']['stopped_reason']
    assert task_containers(engine, cluster) == []
    assert not converge(**args)['changed']


def test_pull_never_with_missing_image(engine, cluster, converge):
    r = converge(name='nopull', pull='never', containers=[container('main', image='drover.local/absent:404')])
    assert r['task']['stopped_reason'] == ('image pull failed: drover.local/absent:404 is not on the host and '
                                           'pull is never')
    assert task_containers(engine, cluster) == []


def test_port_mappings_publish(engine, cluster, converge):
    r = converge(name='web', containers=[container('httpd', ['httpd', '-f', '-p', '8080'],
                                                   port_mappings=[{'container_port': 8080, 'host_port': 18090},
                                                                  {'container_port': 9090, 'protocol': 'udp'}])])
    bindings = engine.api.inspect_container(r['task']['containers'][0]['runtime_id'])['HostConfig']['PortBindings']
    assert bindings["8080/tcp"] == [{"HostIp": "", "HostPort": "18090"}]
    assert bindings['9090/udp'][0]['HostPort'] == ''


def test_task_definition_runs(engine, cluster, converge):
    td = {'family': 'tdweb', 'networkMode': 'bridge', 'revision': 7, 'volumes': [],
          'containerDefinitions': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'], 'memory': 16,
                                    'environment': [{'name': 'A', 'value': '1'}], 'mountPoints': []}]}
    results = four_steps(converge, task_definition=td)
    assert results[1]['task']['name'] == 'tdweb'
    assert list(statuses(engine, cluster)) == ['tdweb-main']


def test_gpu_request_without_ledger_is_best_effort(engine, cluster, converge):
    r = converge(name='gpu', containers=[container('main', gpu=2)])
    assert r['task']['last_status'] == 'RUNNING' and r['task']['containers'][0]['gpu_ids'] == []
    assert any('containers[0].gpu asks for 2 GPUs; this host has 0 GPUs, 0 free' in w for w in warnings_of(r))


def test_container_name_of_another_task_is_refused(engine, cluster, converge, module_runner, store_path):
    # 'web' + '-' + 'a-main' and 'web-a' + '-' + 'main' are both web-a-main.
    converge(name='web-a', containers=[container('main')])
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    r = converge(name='web', containers=[container('a-main')])
    assert r.failed and 'already used by task' in r['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


@pytest.mark.parametrize('args,words', [
    (dict(name='x', containers=[{'name': 'main'}]), ('image',)),
    (dict(name='x', containers=[container('a'), container('a')]), ('used twice',)),
    (dict(name='x', log_drivers=['json-file'], task_definition={'family': 'x', 'containerDefinitions': [
        {'name': 'a', 'image': IMAGE, 'logConfiguration': {'logDriver': 'syslog'}}]}),
     ('logConfiguration.logDriver', 'not allowed on this host')),
    (dict(name='x', task_definition={'family': 'x', 'containerDefinitions': [
        {'name': 'a', 'image': IMAGE, 'secrets': [{'name': 'A', 'valueFrom': 'arn:aws:ssm:us-east-1:1:parameter/a'}]}]}),
     ('containerDefinitions[0].secrets[0].valueFrom', 'no 12-digit AWS account ID')),
    (dict(name='x', task_definition={'family': 'x', 'containerDefinitions': [
        {'name': 'a', 'image': IMAGE, 'credentialSpecs': ['credentialspec:x']}]}),
     ('containerDefinitions[0].credentialSpecs', 'Windows containers')),
    (dict(name='x', containers=[container('a', memory=2)]), ('memory', 'at least 6')),
    (dict(name='x', containers=[container('a', command='sleep 60')]), ('command', 'list')),
    (dict(name='x', purge=True, containers=[container('a')]), ('purge',)),
    (dict(name='x', containers=[container('a', image='UPPER/case')]), ('image',)),
    (dict(name='x', network_mode='awsvpc', awsvpc={'gateway': '198.18.9.1'}, containers=[container('a')]),
     ('awsvpc.gateway', 'awsvpc.eni_mac')),
    (dict(name='x', containers=[container('a', port_mappings=[{'container_port': 0}])]), ('container_port',)),
    (dict(tasks=[{'name': 'x', 'containers': [container('a')], 'bogus': 1}]), ('tasks[0]', 'bogus')),
    (dict(name='x', timeout=5, docker_host='unix:///nonexistent/docker.sock', containers=[container('a')]),
     ('cannot be reached',)),
    (dict(name='x', revision='web 2', containers=[container('a')]), ('revision must be 1 to 64',)),
    (dict(name='x', containers=[container('a')], service_revisions=[
        {'cluster': 'c', 'service': 'web', 'revision': 'r1', 'number': 1, 'status': 'completed',
         'declaration': {'registry_auth': {'registry': 'r.test', 'username': 'u', 'password': 'hunter2'}}}]),
     ('service_revisions[0].declaration.registry_auth.password', 'never stored')),
    (dict(name='x', containers=[container('a')], service_revisions=[
        {'cluster': 'c', 'service': 'web', 'revision': 'r1', 'number': 0, 'status': 'completed', 'declaration': {}}]),
     ('service_revisions[0].number must be a whole number of at least 1',)),
])
def test_bad_input_changes_nothing(engine, cluster, converge, store_path, args, words):
    converge(name='keep', containers=[container('main')])
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    for check in (True, False):
        r = converge(check=check, **args)
        assert r.failed, r
        for word in words:
            assert word in r['msg'], r['msg']
        assert 'Traceback' not in r['msg']
        assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_unreachable_engine_creates_no_store(tmp_path, module_runner):
    path = str(tmp_path / 'nothing' / 'store.db')
    r = module_runner('ecs_task', dict(name='x', store_path=path, docker_host='unix:///nonexistent/docker.sock',
                                       containers=[container('a')]))
    assert r.failed and 'Docker engine' in r['msg'] and not (tmp_path / 'nothing').exists()


def test_host_lock_times_out_with_a_clear_message(engine, cluster, converge, store_path):
    from ansible_collections.drover.fleet.plugins.module_utils.host.store import HostLock
    with HostLock(store_path + '.lock'):
        r = converge(name='web', lock_timeout=1, containers=[container('main')])
    assert r.failed and 'another converge holds the host lock' in r['msg']
    assert task_containers(engine, cluster) == []


def test_info_lists_without_changing(engine, cluster, converge, module_runner, store_path):
    converge(name='a', containers=[container('main')])
    converge(name='b', containers=[container('main', ['sh', '-c', 'exit 4'])])
    wait_for(lambda: 'exited' in list(statuses(engine, cluster).values()))
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    every = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    assert not every['changed']
    assert [(t['name'], t['last_status']) for t in every['tasks']] == [('a', 'RUNNING'), ('b', 'STOPPED')]
    assert every['tasks'][1]['containers'][0]['exit_code'] == 4
    one = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster, name='a'))
    assert [t['name'] for t in one['tasks']] == ['a']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_a_replacement_names_the_fields_that_changed(engine, cluster, converge):
    first = converge(name='fields', containers=[container('main', memory=64, user='1000'), container('side')])
    ids = sorted(c['runtime_id'] for c in first['task']['containers'])
    changed = [container('main', memory=96, user='1000'), container('side', working_directory='/tmp')]
    check = converge(check=True, diff=True, name='fields', containers=changed)
    assert check['changed'] is True
    assert check['task']['changed_fields'] == ['containers[main].memory', 'containers[side].working_directory']
    assert check['diff']['after']['%s/fields' % cluster]['changed_fields'] == check['task']['changed_fields']
    # check mode touched nothing; the apply replaces both containers and says why
    assert sorted(c['runtime_id'] for c in converge(check=True, name='fields', containers=[
        container('main', memory=64, user='1000'), container('side')])['task']['containers']) == ids
    applied = converge(name='fields', containers=changed)
    assert applied['task']['changed_fields'] == check['task']['changed_fields']
    assert not set(c['runtime_id'] for c in applied['task']['containers']) & set(ids)
    again = converge(name='fields', containers=changed)
    assert again['changed'] is False and 'changed_fields' not in again['task']


def test_host_check_converges_nothing_on_a_host_that_lacks_something(engine, cluster, converge, store_path):
    """host_check, drover.fleet.converge's first pass: on a host that lacks something (here the store's
    directory, a library, an image), nothing is converged and nothing changes, in check mode or not, and the look
    says what is lacking; on a ready host the same module run converges, and returns the look too."""
    args = dict(name='web', containers=[container('main')])
    lacking = dict(store_dir_mode='0700', image='drover.local/no-such-image:1',
                   libraries=['docker', 'drover_not_a_library'])
    store_dir = os.path.dirname(store_path)
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    for check in (True, False):
        result = converge(check=check, host_check=lacking, **args)
        assert result['changed'] is False and result['events'] == [] and 'task' not in result
        assert result['host']['ready'] is False
        assert result['host']['needs'] == ['libraries', 'store_dir', 'image']
        assert result['host']['libraries_missing'] == ['drover_not_a_library']
        assert result['host']['image'] == {'name': 'drover.local/no-such-image:1', 'present': False}
        assert result['msg'] == 'the host lacks libraries, store_dir, image: no task was converged'
        assert 'ansible_facts' not in result
        assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before and not os.path.exists(store_dir)
    os.makedirs(store_dir, mode=0o700)
    result = converge(host_check=dict(lacking, libraries=['docker']), **args)
    assert result['host']['needs'] == ['image'] and result['changed'] is False
    assert task_containers(engine, cluster) == [] and store_rows(store_path) is None
    os.chmod(store_dir, 0o755)
    ready = dict(store_dir_mode='0755', image=IMAGE, libraries=['docker', 'sqlite3'])
    check, apply, again, check2 = four_steps(converge, host_check=ready, **args)
    assert check['changed'] and check['task']['last_status'] == 'PENDING' and check['host']['ready'] is True
    assert apply['changed'] and apply['task']['last_status'] == 'RUNNING'
    assert apply['host']['ready'] is True and apply['host']['needs'] == []
    assert apply['host']['engine']['answers'] is True and apply['host']['store_dir']['mode'] == '0755'
    assert not again['changed'] and not check2['changed'] and again['host']['ready'] is True
    assert statuses(engine, cluster) == {'web-main': 'running'}
    assert 'drover_host_pools' in apply['ansible_facts']
