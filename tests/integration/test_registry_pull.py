# -*- coding: utf-8 -*-
"""Pulls with registry credentials, against a real local registry with htpasswd (hack/registry.sh)."""

from __future__ import absolute_import, division, print_function

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from helpers import REGISTRY, REGISTRY_PASSWORD, REGISTRY_USER, ansible_env, container, host_snapshot, statuses
from sweep import given, register

REMOTE = '%s/drover/busybox:1' % REGISTRY


def drop_image(engine, ref):
    try:
        engine.images.remove(ref)
    except Exception:  # pylint: disable=broad-except
        pass


@pytest.fixture
def no_local_copy(engine):
    """The registry's image is not on the host, so the converge has to pull it."""
    drop_image(engine, REMOTE)
    yield
    drop_image(engine, REMOTE)


def auth(password=REGISTRY_PASSWORD):
    return {'registry': REGISTRY, 'username': REGISTRY_USER, 'password': password}


def test_pull_with_credentials(engine, cluster, converge, no_local_copy):
    args = dict(name='pulled', registry_auth=auth(), containers=[container('main', image=REMOTE)])
    check = converge(check=True, **args)
    assert check['changed'] and REMOTE not in [t for i in engine.images.list() for t in i.tags]
    r = converge(**args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    assert statuses(engine, cluster) == {'pulled-main': 'running'}
    assert not converge(**args)['changed']
    text = json.dumps(r)
    assert REGISTRY_PASSWORD not in text


def test_wrong_password_fails_the_run_and_leaks_nothing(engine, cluster, converge, no_local_copy, store_path):
    secret = 'wrong-secret-4f1d'
    r = converge(name='pulled', registry_auth=auth(secret), containers=[container('main', image=REMOTE)])
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('image pull failed: ')
    assert 'unauthorized' in r['task']['stopped_reason']
    assert statuses(engine, cluster) == {}
    assert secret not in json.dumps(r)
    with open(store_path, 'rb') as handle:
        assert secret.encode() not in handle.read()


def test_no_credentials_fails_the_run(engine, cluster, converge, no_local_copy):
    r = converge(name='pulled', containers=[container('main', image=REMOTE)])
    assert r['task']['stopped_reason'].startswith('image pull failed: ')
    assert 'no basic auth credentials' in r['task']['stopped_reason']


def test_pull_always_pulls_at_each_start(engine, cluster, converge, no_local_copy):
    r = converge(name='pulled', pull='always', registry_auth=auth(), containers=[container('main', image=REMOTE)])
    assert r['task']['last_status'] == 'RUNNING'
    engine.api.remove_container(r['task']['containers'][0]['runtime_id'], force=True)
    engine.images.remove(REMOTE)
    # The run vanished: reported, and with restart never it stays stopped (no pull needed).
    assert converge(name='pulled', pull='always', registry_auth=auth(),
                    containers=[container('main', image=REMOTE)])['task']['last_status'] == 'STOPPED'


def test_playbook_run_hides_the_password(engine, cluster, store_path, tmp_path, no_local_copy):
    """Through ansible-playbook itself: the module by its FQCN, -vvv output free of the password."""
    playbook = given(tmp_path / 'play.yml')         # the user's playbook, the password in it
    playbook.write_text(json.dumps([{
        'hosts': 'localhost', 'gather_facts': False,
        'tasks': [{'name': 'converge', 'drover.fleet.ecs_task': {
            'name': 'pb', 'cluster': cluster, 'store_path': store_path, 'registry_auth': auth(),
            'containers': [container('main', image=REMOTE)]}}],
    }]))
    env = ansible_env(tmp_path)
    playbook_cmd = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    runs = []
    for attempt in (1, 2):
        proc = subprocess.run([playbook_cmd, '-vvv', '-i', 'localhost,', '-c', 'local', str(playbook)],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        runs.append((attempt, proc))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert REGISTRY_PASSWORD not in proc.stdout + proc.stderr
    assert 'changed=1' in runs[0][1].stdout and 'changed=0' in runs[1][1].stdout
    assert statuses(engine, cluster) == {'pb-main': 'running'}


ROLE = 'arn:aws:iam::123456789012:role/app-execution'
ECR_TOKEN_PASSWORD = register('123456789012-auth-token')     # what moto's GetAuthorizationToken hands out
# An ECR registry's name (AWS's, for the account 123456789012), which the ecr_name fixture points at the local
# registry in /etc/hosts for the test: an ECR token is handed to an ECR registry alone.
ECR_HOST = '123456789012.dkr.ecr.us-east-1.amazonaws.com'
ECR_REGISTRY = '%s:%s' % (ECR_HOST, REGISTRY.rsplit(':', 1)[1])
ECR_REMOTE = '%s/drover/busybox:1' % ECR_REGISTRY
HOSTS = '/etc/hosts'
HOSTS_MARK = '# drover-test ECR name'


@pytest.fixture
def ecr_name(engine):
    """ECR_HOST resolves to the local registry's address for the test (a line of /etc/hosts, taken out after), and
    the registry's image is not on the host under that name."""
    line = '127.0.0.1 %s %s\n' % (ECR_HOST, HOSTS_MARK)
    with open(HOSTS, 'a', encoding='utf-8') as handle:
        handle.write(line)
    drop_image(engine, ECR_REMOTE)
    yield ECR_REGISTRY
    drop_image(engine, ECR_REMOTE)
    with open(HOSTS, encoding='utf-8') as handle:
        kept = [x for x in handle.readlines() if HOSTS_MARK not in x]
    with open(HOSTS, 'w', encoding='utf-8') as handle:
        handle.writelines(kept)


def test_ecr_pull_as_the_execution_role(engine, cluster, converge, ecr_name, moto_aws, host_aws_credentials,
                                        store_path):
    args = dict(name='ecr', execution_role_arn=ROLE, pull='always', aws_endpoint_url=moto_aws,
                registry_auth={'registry': ECR_REGISTRY, 'ecr': True}, containers=[container('main', image=ECR_REMOTE)])
    r = converge(**args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    assert statuses(engine, cluster) == {'ecr-main': 'running'}
    assert ECR_REMOTE in [t for i in engine.images.list() for t in i.tags]
    assert ECR_TOKEN_PASSWORD not in json.dumps(r)
    with open(store_path, 'rb') as handle:
        assert ECR_TOKEN_PASSWORD.encode() not in handle.read()
    # The same with the host's own credentials (no execution role), and without registry_auth: an ECR registry's
    # images are pulled with an ECR token of its own account.
    converge(name='ecr', state='absent')
    host = converge(**dict(args, execution_role_arn=None, registry_auth=None))
    assert host['task']['last_status'] == 'RUNNING', host['task']


def test_ecr_unreachable_fails_the_run_with_the_reason(engine, cluster, converge, ecr_name, host_aws_credentials):
    r = converge(name='ecr', execution_role_arn=ROLE, aws_endpoint_url='http://127.0.0.1:9',
                 registry_auth={'registry': ECR_REGISTRY, 'ecr': True}, containers=[container('main', image=ECR_REMOTE)])
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == ('image pull failed: ECR: cannot assume the execution role %s: '
                                           'EndpointConnectionError' % ROLE), r['task']['stopped_reason']
    assert statuses(engine, cluster) == {}


@pytest.mark.parametrize('bad,words', [
    ({'registry': REGISTRY, 'ecr': True, 'username': 'deployer', 'password': 'not-with-ecr-4f1d'},
     ('ecr and username/password are mutually exclusive',)),
    ({'registry': REGISTRY, 'ecr': True}, ('registry_auth.registry %s is not an ECR registry' % REGISTRY,)),
    ({'registry': REGISTRY}, ('registry_auth.username is required (or ecr: true)',)),
])
def test_bad_ecr_auth(converge, store_path, bad, words):
    r = converge(name='bad', registry_auth=bad, containers=[container('main', image=REMOTE)])
    assert r.failed and all(w in r['msg'] for w in words), r.get('msg')


@pytest.fixture
def repository_secret(moto_aws, host_aws_credentials):
    """A Secrets Manager secret in moto holding the local registry's username and password: its ARN."""
    import boto3
    client = boto3.client('secretsmanager', region_name='eu-west-1', endpoint_url=moto_aws)
    made = client.create_secret(Name='registry-%s' % os.getpid(),
                                SecretString=json.dumps({'username': REGISTRY_USER, 'password': REGISTRY_PASSWORD}))
    yield made['ARN']
    client.delete_secret(SecretId=made['ARN'], ForceDeleteWithoutRecovery=True)


def repository_task(secret, moto_aws, execution_role=ROLE):
    """A task definition whose container pulls with repositoryCredentials (ECS private registry auth)."""
    return {'family': 'private', 'executionRoleArn': execution_role, 'containerDefinitions': [{
        'name': 'main', 'image': REMOTE, 'essential': True, 'memory': 32, 'command': ['sleep', '3600'],
        'repositoryCredentials': {'credentialsParameter': secret}}]}


def test_repository_credentials_from_secrets_manager(engine, cluster, converge, no_local_copy, moto_aws,
                                                     repository_secret, store_path):
    args = dict(task_definition=repository_task(repository_secret, moto_aws), aws_endpoint_url=moto_aws)
    check = converge(check=True, **args)
    assert check['changed'] and REMOTE not in [t for i in engine.images.list() for t in i.tags]
    r = converge(**args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    assert statuses(engine, cluster) == {'private-main': 'running'}
    assert not converge(**args)['changed']
    assert REGISTRY_PASSWORD not in json.dumps(r)
    with open(store_path, 'rb') as handle:
        assert REGISTRY_PASSWORD.encode() not in handle.read()
    # The native form says the same, and is the same task (nothing to change).
    native = converge(name='private', execution_role_arn=ROLE, aws_endpoint_url=moto_aws, containers=[
        container('main', image=REMOTE, memory=32, repository_credentials={'credentials_parameter': repository_secret})])
    assert not native['changed'], native.get('changed_fields')


def test_repository_credentials_that_cannot_be_read_stop_the_task_naming_the_secret(
        engine, cluster, converge, no_local_copy, moto_aws, repository_secret, store_path):
    missing = repository_secret.rsplit(':', 1)[0] + ':nowhere-AbCdEf'
    r = converge(task_definition=repository_task(missing, moto_aws), aws_endpoint_url=moto_aws)
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'] == (
        'image pull failed: Secrets Manager: cannot read the repository credentials %s as %s: '
        'ResourceNotFoundException' % (missing, ROLE)), r['task']['stopped_reason']
    assert statuses(engine, cluster) == {}
    assert REMOTE not in [t for i in engine.images.list() for t in i.tags]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """A registry's first answer to every request: 401 with a Basic challenge, so that an engine holding
    credentials for it sends them; each request's Authorization header is kept."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.server.seen.append((self.path, self.headers.get('Authorization')))
        self.send_response(401)
        self.send_header('WWW-Authenticate', 'Basic realm="recorder"')
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


@pytest.fixture
def recorder():
    """A stand-in registry on loopback that records what a pull sends it: its host:port and what it saw."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Recorder)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield '127.0.0.1:%d' % server.server_address[1], server.seen
    server.shutdown()
    server.server_close()


def test_aws_pull_credentials_never_reach_another_registry(engine, cluster, converge, store_path, moto_aws,
                                                           host_aws_credentials, repository_secret, recorder):
    """A declaration that would hand the execution role's (or the host's) ECR token to a registry of its own
    choosing, or read a {username, password} secret as the host for it, is refused before anything is made:
    the stand-in registry never sees an Authorization header."""
    where, seen = recorder
    image = '%s/drover/busybox:1' % where
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    ecr = converge(name='steal', execution_role_arn=ROLE, aws_endpoint_url=moto_aws, pull='always',
                   registry_auth={'registry': where, 'ecr': True}, containers=[container('main', image=image)])
    assert ecr.failed and ecr['msg'] == ('registry_auth.registry %s is not an ECR registry (<account>.dkr.ecr.<region>.'
                                         'amazonaws.com): an ECR token is handed to ECR alone' % where), ecr['msg']
    td = {'family': 'steal', 'containerDefinitions': [{
        'name': 'main', 'image': image, 'essential': True, 'memory': 32, 'command': ['sleep', '3600'],
        'repositoryCredentials': {'credentialsParameter': repository_secret}}]}
    secret = converge(task_definition=td, aws_endpoint_url=moto_aws, pull='always')
    assert secret.failed and secret['msg'] == (
        'task_definition.containerDefinitions[0].repositoryCredentials: the task has no '
        'task_definition.executionRoleArn, and what a container reads from AWS when it starts is read as the task\'s '
        'execution role (as ECS requires)'), secret['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before
    assert [auth for _path, auth in seen if auth] == [] and seen == []
    # With the execution role, the secret is read as that role (and pulls from the registry it names): the
    # stand-in then sees the secret's credentials, as a registry of the task's own should.
    allowed = converge(task_definition=dict(td, executionRoleArn=ROLE), aws_endpoint_url=moto_aws, pull='always')
    assert allowed['task']['last_status'] == 'STOPPED' and 'image pull failed' in allowed['task']['stopped_reason']
    assert [auth for _path, auth in seen if auth] and all(a.startswith('Basic ') for _p, a in seen if a)
