# -*- coding: utf-8 -*-
"""Task IAM role registrations: made at start, on each container (env on a copy, labels), gone on every
stop path, restored from labels on adoption."""

from __future__ import absolute_import, division, print_function

import json
import os

import pytest

from helpers import all_drover_containers, container, store_rows, wait_for, statuses, warnings_of

ROLE = 'arn:aws:iam::123456789012:role/web-task'


def creds(path):
    return [(r[0], r[1], r[2], r[3], r[4]) for r in store_rows(path)['credentials']]


def env_of(engine, runtime_id):
    return dict(e.split('=', 1) for e in engine.api.inspect_container(runtime_id)['Config']['Env'])


def test_registration_env_labels_and_release(engine, cluster, converge, store_path):
    args = dict(name='web', task_role_arn=ROLE, cred_id='web-cred-1',
                containers=[container('main', environment={'KEEP': 'me'}), container('side')])
    check = converge(check=True, **args)
    assert check['changed'] and store_rows(store_path) is None
    r = converge(**args)
    assert creds(store_path) == [('web-cred-1', cluster, 'web', ROLE, None)]
    for c in r['task']['containers']:
        env = env_of(engine, c['runtime_id'])
        assert env['AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'] == '/v2/credentials/web-cred-1'
        labels = engine.api.inspect_container(c['runtime_id'])['Config']['Labels']
        assert labels['drover.cred-id'] == 'web-cred-1' and labels['drover.task-role'] == ROLE
    assert env_of(engine, r['task']['containers'][0]['runtime_id'])['KEEP'] == 'me'
    assert r['invocation']['module_args']['containers'][0]['environment'] == {'KEEP': 'me'}
    assert not converge(**args)['changed']
    stopped = converge(name='web', state='stopped')
    assert stopped['changed'] and creds(store_path) == []


def test_random_id_per_run_and_release_on_exit(engine, cluster, converge, store_path):
    args = dict(name='job', task_role_arn=ROLE, containers=[container('main', ['sh', '-c', 'sleep 0.5; exit 1'])])
    r = converge(**args)
    cred_id = creds(store_path)[0][0]
    assert len(cred_id) == 32 and env_of(engine, r['task']['containers'][0]['runtime_id'])[
        'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'] == '/v2/credentials/' + cred_id
    wait_for(lambda: statuses(engine, cluster).get('job-main') == 'exited')
    assert converge(**args)['task']['stopped_reason'] == 'container main exited (1)'
    assert creds(store_path) == []


def test_adoption_restores_the_registration(engine, cluster, converge, tmp_path):
    args = dict(name='web', task_role_arn=ROLE, cred_id='adopt-1', containers=[container('main')])
    converge(**args)
    fresh = str(tmp_path / 'fresh' / 'store.db')
    r = converge(store_path=fresh, **args)
    assert not r['changed'] and creds(fresh) == [('adopt-1', cluster, 'web', ROLE, None)]


def test_awsvpc_registration_names_the_link_address(engine, cluster, converge, store_path, fake_eni, netns_cleanup):
    eni = fake_eni()
    eni.plug()
    r = converge(name='vpc' + cluster, task_role_arn=ROLE, cred_id='vpc-1', network_mode='awsvpc',
                 awsvpc={'eni_mac': eni.mac, 'address': eni.address()}, containers=[container('main')])
    task_ip = r['task']['network']['credential_link']['task_ip']
    assert creds(store_path) == [('vpc-1', cluster, 'vpc' + cluster, ROLE, task_ip)]
    converge(name='vpc' + cluster, state='absent')
    assert creds(store_path) == []


@pytest.mark.parametrize('args,words', [
    (dict(cred_id='x'), ('cred_id needs task_role_arn',)),
    (dict(task_role_arn=ROLE, cred_id='bad/id'), ('cred_id',)),
    (dict(task_role_arn='web task'), ('task_role_arn', 'ARN')),
])
def test_bad_credentials_input(converge, store_path, args, words):
    r = converge(name='bad', containers=[container('main')], **args)
    assert r.failed and all(w in r['msg'] for w in words), r['msg']
    assert store_rows(store_path) is None


def test_a_cred_id_names_one_task(engine, cluster, converge, store_path, module_runner):
    # A task that declares a cred_id registered to another task (in another cluster, or another task of the
    # same) is refused, naming the field and the owner, and nothing on the host changes.
    first = converge(name='web', task_role_arn=ROLE, cred_id='one-' + cluster, containers=[container('main')])
    assert not first.failed and not warnings_of(first), warnings_of(first)
    other_cluster = cluster + 'b'

    def snapshot():
        return [all_drover_containers(engine, 'drover.cluster=%s' % c) for c in (cluster, other_cluster)] + [
            store_rows(store_path)]
    before = snapshot()
    assert before[0] and not before[1] and before[2]['credentials']
    try:
        for args in (dict(cluster=other_cluster, name='web2'), dict(cluster=cluster, name='api')):
            r = converge(task_role_arn=ROLE, cred_id='one-' + cluster, containers=[container('main')], **args)
            assert r.failed and 'cred_id one-%s' % cluster in r['msg'] and 'task %s/web' % cluster in r['msg'], r['msg']
            assert snapshot() == before
        # Two tasks of one call that declare the same ID: refused too.
        r = converge(tasks=[dict(name='a', task_role_arn=ROLE, cred_id='two-' + cluster, containers=[container('main')]),
                            dict(name='b', task_role_arn=ROLE, cred_id='two-' + cluster, containers=[container('main')])])
        assert r.failed and 'cred_id two-%s' % cluster in r['msg'], r['msg']
        assert snapshot() == before
        # Once the owner stops, the ID is free.
        converge(name='web', state='stopped')
        r = converge(name='api', task_role_arn=ROLE, cred_id='one-' + cluster, containers=[container('main')])
        assert not r.failed and creds(store_path) == [('one-' + cluster, cluster, 'api', ROLE, None)]
    finally:
        for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % other_cluster}):
            c.remove(force=True)


def test_the_token_is_in_the_environment_only(engine, cluster, converge, store_path):
    # Each container of a task with a role finds the full URI and its token; the token is the same for the
    # task's containers and after adoption from a fresh store, different for another task, and not part of
    # the spec: a second converge changes nothing.
    from ansible_collections.drover.fleet.plugins.module_utils.network import credtoken
    args = dict(name='web', task_role_arn=ROLE, cred_id='tok-' + cluster, containers=[container('main'), container('side')])
    r = converge(**args)
    envs = [env_of(engine, c['runtime_id']) for c in r['task']['containers']]
    token = envs[0]['AWS_CONTAINER_AUTHORIZATION_TOKEN']
    key = credtoken.host_key(store_path)
    assert token == credtoken.token(key, 'tok-' + cluster, cluster, 'web', ROLE)
    assert all(e['AWS_CONTAINER_AUTHORIZATION_TOKEN'] == token for e in envs)
    assert all(e['AWS_CONTAINER_CREDENTIALS_FULL_URI'] == 'http://169.254.170.2/v2/credentials/tok-' + cluster
               for e in envs)
    key_file = credtoken.key_path(store_path)
    assert oct(os.stat(key_file).st_mode & 0o777) == '0o600' and os.stat(key_file).st_size == 32
    assert token not in json.dumps(dict(r)) and token not in json.dumps(store_rows(store_path))
    for c in r['task']['containers']:
        labels = engine.api.inspect_container(c['runtime_id'])['Config']['Labels']
        assert token not in json.dumps(labels) and labels['drover.cred-key'] == credtoken.fingerprint(key)
    other = converge(name='api', task_role_arn=ROLE, containers=[container('main')])
    assert env_of(engine, other['task']['containers'][0]['runtime_id'])['AWS_CONTAINER_AUTHORIZATION_TOKEN'] != token
    second = converge(**args)
    assert not second['changed'] and not warnings_of(second)
    # The store lost (the key kept): adopted, the same token still matches its registration.
    os.unlink(store_path)
    adopted = converge(**args)
    assert not adopted['changed'] and creds(store_path)[0][:3] == ('tok-' + cluster, cluster, 'web')
    assert credtoken.token(credtoken.host_key(store_path), 'tok-' + cluster, cluster, 'web', ROLE) == token
    # The key lost: the running task's token no longer matches; the converge says so.
    os.unlink(key_file)
    lost = converge(**args)
    assert any('carry no credential token of this host' in w for w in warnings_of(lost))
