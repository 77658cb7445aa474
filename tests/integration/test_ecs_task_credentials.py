# -*- coding: utf-8 -*-
"""Task IAM role registrations: made at start, on each container (env on a copy, labels), gone on every
stop path, restored from labels on adoption."""

from __future__ import absolute_import, division, print_function

import pytest

from helpers import container, store_rows, wait_for, statuses

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
    (dict(task_role_arn='web-task'), ('task_role_arn', 'ARN')),
])
def test_bad_credentials_input(converge, store_path, args, words):
    r = converge(name='bad', containers=[container('main')], **args)
    assert r.failed and all(w in r['msg'] for w in words), r['msg']
    assert store_rows(store_path) is None
