# -*- coding: utf-8 -*-
"""awslogs for real: on a host with AWS access for logs (aws_logs), a task's container logs with the engine's
own awslogs driver, which fetches the task's execution-role credentials from the credentials endpoint
(roles/host/files/drover_credentials.py, run as the host runs it) and writes to CloudWatch Logs (moto's server
on 127.0.0.1); the lines are read back with boto3, in the stream ECS names (<prefix>/<container>/<task>). The
execution role's registration is served to the host alone: a container on the bridge asking for it gets 403,
as for an unknown ID, and it goes with the task."""

from __future__ import absolute_import, division, print_function

import json
import subprocess
import urllib.error
import urllib.request

import boto3
import pytest

from helpers import IMAGE, container, host_snapshot, store_rows, wait_for, warnings_of
from test_credentials_endpoint import dummy_present, fetch, nat_rules, service, sts  # noqa: F401  pylint: disable=unused-import

EXEC_ROLE = 'arn:aws:iam::123456789012:role/app-execution'
TASK_ROLE = 'arn:aws:iam::123456789012:role/app-task'
REGION = 'us-east-1'
SCRIPT = ['sh', '-c', 'echo first line; echo second line; exec sleep 3600']


@pytest.fixture
def aws(moto_aws):
    """moto's clients (it takes any credentials), with the execution role seeded in IAM."""
    def client(name):
        return boto3.client(name, endpoint_url=moto_aws, region_name=REGION, aws_access_key_id='testing',
                            aws_secret_access_key='testing')
    iam = client('iam')
    try:
        iam.create_role(RoleName='app-execution', AssumeRolePolicyDocument=json.dumps({
            'Version': '2012-10-17', 'Statement': [{'Effect': 'Allow', 'Action': 'sts:AssumeRole',
                                                    'Principal': {'Service': 'ecs-tasks.amazonaws.com'}}]}))
    except iam.exceptions.EntityAlreadyExistsException:
        pass
    return client('logs')


def lines(logs, group, stream):
    try:
        return [e['message'] for e in logs.get_log_events(logGroupName=group, logStreamName=stream)['events']]
    except logs.exceptions.ResourceNotFoundException:
        return []


NOBODY = 65534
FETCH = """
import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen('http://169.254.170.2/v2/credentials/' + sys.argv[1], timeout=10).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
"""


def host_get(cred_id, uid=None):
    """The host's own fetch, as the engine's driver makes it (no token), or as the user `uid` of the host: the
    HTTP status."""
    if uid is not None:
        done = subprocess.run(['/usr/bin/python3', '-c', FETCH, cred_id], user=uid, group=uid, cwd='/',
                              capture_output=True, text=True, timeout=30, check=True, env={'PATH': '/usr/bin:/bin'})
        return int(done.stdout.strip())
    try:
        with urllib.request.urlopen('http://169.254.170.2/v2/credentials/%s' % cred_id, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def log_config(engine, result, name='main'):
    cid = dict((c['name'], c['runtime_id']) for c in result['task']['containers'])[name]
    return engine.api.inspect_container(cid)['HostConfig']['LogConfig']


def host_rows(store_path):
    """The store's registrations for the host itself: (cred_id, cluster, task, role, source)."""
    return [r[:5] for r in store_rows(store_path)['credentials'] if r[4] == 'host']


def test_awslogs_writes_to_cloudwatch_logs_with_the_execution_role(engine, cluster, converge, store_path, service,
                                                                   moto_aws, aws, tmp_path):
    svc = service()
    host = {'aws_logs': True, 'aws_endpoint_url': moto_aws}
    # The task definition form: the group made by the driver (awslogs-create-group), the region declared.
    td = {'family': 'web', 'executionRoleArn': EXEC_ROLE, 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'command': SCRIPT,
        'logConfiguration': {'logDriver': 'awslogs', 'options': {
            'awslogs-group': '/ecs/' + cluster, 'awslogs-region': REGION, 'awslogs-stream-prefix': 'web',
            'awslogs-create-group': 'true'}}}]}
    web = converge(name='web', task_definition=td, **host)
    assert web['task']['last_status'] == 'RUNNING', web['task']
    assert not [w for w in warnings_of(web) if 'awslogs' in w], warnings_of(web)
    # The native form: a group made beforehand, the region from aws_region.
    aws.create_log_group(logGroupName='/native/' + cluster)
    native = converge(name='api', execution_role_arn=EXEC_ROLE, aws_region=REGION, containers=[container(
        'main', SCRIPT, log_configuration={'log_driver': 'awslogs', 'options': {
            'awslogs-group': '/native/' + cluster, 'awslogs-stream-prefix': 'api'}})], **host)
    assert native['task']['last_status'] == 'RUNNING', native['task']

    # The lines, read back from CloudWatch Logs in ECS's streams (the driver sends every 5 s).
    assert wait_for(lambda: lines(aws, '/ecs/' + cluster, 'web/main/web'), timeout=15) == ['first line', 'second line']
    assert wait_for(lambda: lines(aws, '/native/' + cluster, 'api/main/api'), timeout=15) == \
        ['first line', 'second line']
    groups = [g['logGroupName'] for g in aws.describe_log_groups(logGroupNamePrefix='/ecs/' + cluster)['logGroups']]
    assert groups == ['/ecs/' + cluster]

    # The engine's driver got the options as ECS's agent gives them, and a credential ID of each run's own.
    rows = host_rows(store_path)
    assert sorted((r[1], r[2], r[3]) for r in rows) == [(cluster, 'api', EXEC_ROLE), (cluster, 'web', EXEC_ROLE)]
    ids = dict((r[2], r[0]) for r in rows)
    assert log_config(engine, web) == {'Type': 'awslogs', 'Config': {
        'awslogs-group': '/ecs/' + cluster, 'awslogs-region': REGION, 'awslogs-stream': 'web/main/web',
        'awslogs-create-group': 'true', 'awslogs-endpoint': moto_aws,
        'awslogs-credentials-endpoint': '/v2/credentials/%s' % ids['web']}}
    assert log_config(engine, native)['Config']['awslogs-credentials-endpoint'] == '/v2/credentials/%s' % ids['api']
    assert len(ids['web']) == 32 and ids['web'] != ids['api']
    # ... and no label or environment of the container carries it.
    inspected = engine.api.inspect_container(web['task']['containers'][0]['runtime_id'])
    assert ids['web'] not in json.dumps(inspected['Config'])

    # The registrations are the host's alone: a container on the bridge (the task's own, or another task's)
    # asking for them gets 403, as for an ID nobody holds; the host itself gets them.
    box = web['task']['containers'][0]['runtime_id']
    for cred_id in (ids['web'], ids['api']):
        assert fetch(engine, box, cred_id, token='')[0] == 403
        assert fetch(engine, box, cred_id, token='0' * 64)[0] == 403
        assert host_get(cred_id) == 200
        # Another user of the host connects from the same address: the ID is no bearer secret to it.
        assert host_get(cred_id, uid=NOBODY) == 403
    assert fetch(engine, box, 'nobody', token='')[0] == 403
    # The endpoint's log names the requests, never an ID in full (its digest stands for it).
    text = svc.text()
    assert all(cred_id not in text for cred_id in ids.values()), text
    assert '/v2/credentials/id:' in text, text

    # Converged again: nothing changes (the same containers, the same registrations).
    assert not converge(name='web', task_definition=td, **host)['changed']
    assert host_rows(store_path) == rows
    # A store lost while the task runs: its registration is found again in its containers' log configuration.
    fresh = str(tmp_path / 'fresh' / 'store.db')
    again = converge(name='web', task_definition=td, store_path=fresh, **host)
    assert not again['changed'] and host_rows(fresh) == [r for r in rows if r[2] == 'web']
    # A stopped task's registration goes with it: the host gets 403 too.
    converge(name='web', task_definition=td, state='stopped', **host)
    converge(name='api', state='absent', containers=[container('main')], **host)
    assert host_rows(store_path) == []
    assert host_get(ids['web']) == 403 and host_get(ids['api']) == 403


@pytest.mark.parametrize('options, words', [
    ({'awslogs-region': REGION}, 'awslogs-group is required'),
    ({'awslogs-group': 'g'}, 'awslogs-region is required'),
    ({'awslogs-group': 'g', 'awslogs-region': REGION, 'awslogs-credentials-endpoint': '/v2/credentials/x'},
     'awslogs-credentials-endpoint is set by this collection'),
    ({'awslogs-group': 'g', 'awslogs-region': REGION, 'awslogs-colour': 'blue'},
     'awslogs-colour is not an option of the awslogs driver'),
])
def test_bad_awslogs_options_change_nothing(engine, cluster, converge, store_path, options, words):
    before = host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster)
    td = {'family': 'bad', 'executionRoleArn': EXEC_ROLE, 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'logConfiguration': {'logDriver': 'awslogs', 'options': options}}]}
    result = converge(name='bad', task_definition=td, aws_logs=True)
    assert result.get('failed') and 'task_definition.containerDefinitions[0].logConfiguration.options.' in result['msg']
    assert words in result['msg'], result['msg']
    assert host_snapshot(engine, store_path, 'drover.cluster=%s' % cluster) == before


def test_without_the_endpoint_the_task_stops_with_the_engine_s_reason(engine, cluster, converge, store_path, moto_aws):
    # No credentials endpoint serves this store: the engine's driver gets no credentials when the container
    # starts, the start fails, and the task stops with the engine's words; nothing of it is left.
    td = {'family': 'web', 'executionRoleArn': EXEC_ROLE, 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'command': SCRIPT,
        'logConfiguration': {'logDriver': 'awslogs', 'options': {
            'awslogs-group': '/ecs/' + cluster, 'awslogs-region': REGION, 'awslogs-create-group': 'true'}}}]}
    result = converge(name='web', task_definition=td, aws_logs=True, aws_endpoint_url=moto_aws)
    assert result['task']['last_status'] == 'STOPPED', result['task']
    reason = result['task']['stopped_reason']
    assert reason.startswith('container start failed: failed to initialize logging driver') and 'credentials' in reason, reason
    assert host_rows(store_path) == []
    assert engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}) == []


def test_by_default_awslogs_is_local_and_nothing_is_registered(engine, cluster, converge, store_path):
    # The default policy (no AWS access for logs): local, with the warning; no registration for the host.
    td = {'family': 'web', 'executionRoleArn': EXEC_ROLE, 'containerDefinitions': [{
        'name': 'main', 'image': IMAGE, 'command': SCRIPT,
        'logConfiguration': {'logDriver': 'awslogs', 'options': {'awslogs-group': 'g', 'awslogs-region': REGION}}}]}
    result = converge(name='web', task_definition=td)
    assert result['task']['last_status'] == 'RUNNING'
    assert [w for w in warnings_of(result) if 'awslogs cannot be served on this host' in w]
    assert log_config(engine, result) == {'Type': 'local', 'Config': {}}
    assert host_rows(store_path) == []


def test_a_task_namespace_gets_no_execution_role(engine, cluster, converge, store_path, service, moto_aws, aws,
                                                 fake_eni, netns_cleanup):
    # An awsvpc task around an ENI logs with awslogs too (the engine's driver runs on the host); from its own
    # namespace, over its credential link, its execution role's path is 403 (its task role's, with its token,
    # is served: the link works).
    service()
    eni = fake_eni()
    eni.plug()
    result = converge(name='vpc', network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
                      task_role_arn=TASK_ROLE, execution_role_arn=EXEC_ROLE, aws_logs=True, aws_endpoint_url=moto_aws,
                      containers=[container('main', SCRIPT, log_configuration={'log_driver': 'awslogs', 'options': {
                          'awslogs-group': '/vpc/' + cluster, 'awslogs-region': REGION, 'awslogs-create-group': 'true',
                          'awslogs-stream-prefix': 'vpc'}})])
    assert result['task']['last_status'] == 'RUNNING', result['task']
    # The driver made the group and the stream when the container started, as the execution role.
    streams = aws.describe_log_streams(logGroupName='/vpc/' + cluster)['logStreams']
    assert [s['logStreamName'] for s in streams] == ['vpc/main/vpc']
    (exec_id,) = [r[0] for r in host_rows(store_path)]
    box = result['task']['containers'][0]['runtime_id']
    assert fetch(engine, box)[0] == 200
    assert fetch(engine, box, exec_id)[0] == 403
    assert fetch(engine, box, exec_id, token='')[0] == 403
    assert fetch(engine, box, exec_id)[0] == fetch(engine, box, 'nobody')[0]
    converge(name='vpc', state='absent', network_mode='awsvpc', awsvpc={'eni_mac': eni.mac, 'address': eni.address()},
             containers=[container('main')])
    assert host_rows(store_path) == [] and store_rows(store_path)['credentials'] == []
