# -*- coding: utf-8 -*-
"""A container's `secrets` (SSM Parameter Store, Secrets Manager) and `environmentFiles` (S3), read as the task's
execution role from moto's server when the task starts, on the real engine.

Each value is registered with the secret sweep (tests/sweep.py) as living in the one container that asks for it:
found in that container's environment (its `docker inspect` Config.Env, its processes' environ) it is where it
belongs; found anywhere else (a result, the store, a label, another container, a process's command line, a log) it
fails the session. The tests below also look for the values in results, store rows and labels themselves."""

from __future__ import absolute_import, division, print_function

import json
import uuid

import pytest

from helpers import (container, host_snapshot, kill_when, module_process, statuses, store_rows, task_containers,
                     wait_for)
from sweep import register

ROLE = 'arn:aws:iam::123456789012:role/app-execution'
REGION = 'eu-west-1'
MARK = uuid.uuid4().hex[:8]


def env_of(engine, name):
    """The container's environment, as the engine created it."""
    pairs = engine.api.inspect_container(name)['Config']['Env'] or []
    return dict(p.split('=', 1) for p in pairs)


@pytest.fixture
def aws(moto_aws, host_aws_credentials):
    """boto3 clients on moto's server, in REGION."""
    import boto3
    return dict((name, boto3.client(name, region_name=REGION, endpoint_url=moto_aws))
                for name in ('ssm', 'secretsmanager', 's3'))


@pytest.fixture
def seeded(aws, cluster):
    """Parameters, secrets and environment files in moto, each value registered with the sweep as living in the
    container `app-web` (task app, container web) only."""
    home = 'app-web'
    values = {
        'plain': register('ssm-plain-%s-%s' % (MARK, uuid.uuid4().hex), home),
        'secure': register('ssm-secure-%s-%s' % (MARK, uuid.uuid4().hex), home),
        'whole': register('asm-whole-%s-%s' % (MARK, uuid.uuid4().hex), home),
        'key': register('asm-key-%s-%s' % (MARK, uuid.uuid4().hex), home),
    }
    prefix = '/drover-test/%s' % cluster
    aws['ssm'].put_parameter(Name=prefix + '/plain', Value=values['plain'], Type='String')
    secure = aws['ssm'].put_parameter(Name=prefix + '/secure', Value=values['secure'], Type='SecureString')
    assert secure['Version'] == 1
    secure_arn = aws['ssm'].get_parameter(Name=prefix + '/secure')['Parameter']['ARN']
    whole = aws['secretsmanager'].create_secret(Name='%s-whole' % cluster, SecretString=values['whole'])['ARN']
    keyed = aws['secretsmanager'].create_secret(
        Name='%s-keyed' % cluster, SecretString=json.dumps({'password': values['key'], 'user': 'app'}))['ARN']
    bucket = 'drover-test-%s' % cluster.lower()
    aws['s3'].create_bucket(Bucket=bucket, CreateBucketConfiguration={'LocationConstraint': REGION})
    aws['s3'].put_object(Bucket=bucket, Key='first.env',
                         Body=b'# the first file\nA=from-first\nB=from-first\nC=c=with=equals\n\n')
    aws['s3'].put_object(Bucket=bucket, Key='dir/second.env', Body=b'A=from-second\nD= kept as it is \n')
    yield {'values': values, 'prefix': prefix, 'secure_arn': secure_arn, 'whole': whole, 'keyed': keyed,
           'files': ['arn:aws:s3:::%s/first.env' % bucket, 'arn:aws:s3:::%s/dir/second.env' % bucket],
           'bucket': bucket}
    for name in ('plain', 'secure'):
        aws['ssm'].delete_parameter(Name='%s/%s' % (prefix, name))
    for arn in (whole, keyed):
        aws['secretsmanager'].delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)


def web(seeded, **kw):
    spec = container('web', environment={'B': 'declared', 'S_PLAIN': 'declared-loses', 'E': 'declared'},
                     secrets=[{'name': 'S_PLAIN', 'value_from': seeded['prefix'] + '/plain'},
                              {'name': 'S_SECURE', 'value_from': seeded['secure_arn']},
                              {'name': 'S_WHOLE', 'value_from': seeded['whole']},
                              {'name': 'S_KEY', 'value_from': seeded['keyed'] + ':password::'}],
                     environment_files=[{'value': seeded['files'][0]}, {'value': seeded['files'][1], 'type': 's3'}])
    spec.update(kw)
    return spec


# Where the gelf tests' containers log (a discard port on loopback), listed in the host's log_addresses.
GELF = 'udp://127.0.0.1:9'


def native(cluster, moto_aws, containers):
    return dict(name='app', execution_role_arn=ROLE, aws_endpoint_url=moto_aws, aws_region=REGION,
                containers=containers)


def no_value_in(text, seeded):
    found = [k for k, v in seeded['values'].items() if v in text]
    assert not found, 'secret values %s found' % found


def test_secrets_and_environment_files_reach_the_container_environment_only(
        engine, cluster, converge, seeded, moto_aws, store_path, aws):
    args = native(cluster, moto_aws, [web(seeded), container('side')])
    check = converge(check=True, **args)
    assert check['changed'] and statuses(engine, cluster) == {}
    r = converge(**args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    env = env_of(engine, 'app-web')
    values = seeded['values']
    assert {k: env.get(k) for k in ('S_PLAIN', 'S_SECURE', 'S_WHOLE', 'S_KEY', 'A', 'B', 'C', 'D', 'E')} == {
        'S_PLAIN': values['plain'],      # a secret wins over the declared environment
        'S_SECURE': values['secure'],    # a SecureString, asked by ARN, decrypted
        'S_WHOLE': values['whole'],
        'S_KEY': values['key'],          # one key of a JSON secret
        'A': 'from-first',               # the first file that has a variable gives it
        'B': 'declared',                 # the declared environment wins over a file
        'C': 'c=with=equals',
        'D': ' kept as it is',           # a line is trimmed at both ends (as ECS's agent reads it)
        'E': 'declared'}
    side = env_of(engine, 'app-side')
    assert not set(side) & {'S_PLAIN', 'S_SECURE', 'S_WHOLE', 'S_KEY', 'A', 'C', 'D'}, side
    # Nowhere else: the result, the store (tasks, events), the labels.
    no_value_in(json.dumps(r), seeded)
    no_value_in(json.dumps(store_rows(store_path), default=str), seeded)
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        no_value_in(json.dumps(c.labels), seeded)
    again = converge(**args)
    assert not again['changed']
    assert not converge(check=True, **args)['changed']

    # A value changed in AWS changes nothing (as on AWS): the spec holds where a value is read from.
    aws['ssm'].put_parameter(Name=seeded['prefix'] + '/plain', Value=values['secure'], Type='String', Overwrite=True)
    ids = dict((c.name, c.id) for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster}))
    assert not converge(**args)['changed']
    assert dict((c.name, c.id) for c in engine.containers.list(filters={'label': 'drover.cluster=%s' % cluster})) == ids
    # Where it is read from is part of the spec: the task's containers are replaced, and read it again.
    moved = native(cluster, moto_aws, [web(seeded, secrets=[{'name': 'S_PLAIN', 'value_from': seeded['whole']}]),
                                       container('side')])
    changed = converge(diff=True, **moved)
    assert changed['changed'] and changed['task']['changed_fields'] == ['containers[web].secrets'], changed['task']
    no_value_in(json.dumps(changed), seeded)
    assert env_of(engine, 'app-web')['S_PLAIN'] == values['whole']


def test_the_task_definition_form_reads_them_too(engine, cluster, converge, seeded, moto_aws):
    td = {'family': 'app', 'executionRoleArn': ROLE, 'containerDefinitions': [{
        'name': 'web', 'image': container('x')['image'], 'essential': True, 'command': ['sleep', '3600'],
        'environment': [{'name': 'B', 'value': 'declared'}],
        'secrets': [{'name': 'S_KEY', 'valueFrom': seeded['keyed'] + ':password:AWSCURRENT:'},
                    {'name': 'S_PLAIN', 'valueFrom': seeded['prefix'] + '/plain'}],
        'environmentFiles': [{'type': 's3', 'value': seeded['files'][1]}, {'type': 's3', 'value': seeded['files'][0]}],
    }]}
    r = converge(task_definition=td, aws_endpoint_url=moto_aws, aws_region=REGION)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    env = env_of(engine, 'app-web')
    assert (env['S_KEY'], env['S_PLAIN'], env['A'], env['B'], env['C']) == (
        seeded['values']['key'], seeded['values']['plain'], 'from-second', 'declared', 'c=with=equals')
    no_value_in(json.dumps(r), seeded)
    assert not converge(task_definition=td, aws_endpoint_url=moto_aws, aws_region=REGION)['changed']


def test_a_log_secret_option_goes_into_the_container_s_log_configuration_only(
        engine, cluster, converge, seeded, moto_aws):
    td = {'family': 'app', 'executionRoleArn': ROLE, 'containerDefinitions': [{
        'name': 'web', 'image': container('x')['image'], 'essential': True, 'command': ['sleep', '3600'],
        'logConfiguration': {'logDriver': 'gelf', 'options': {'gelf-address': GELF},
                             'secretOptions': [{'name': 'env', 'valueFrom': seeded['prefix'] + '/plain'}]}}]}
    r = converge(task_definition=td, aws_endpoint_url=moto_aws, aws_region=REGION, log_addresses=[GELF])
    assert r['task']['last_status'] == 'RUNNING', r['task']
    log = engine.api.inspect_container('app-web')['HostConfig']['LogConfig']
    assert log == {'Type': 'gelf', 'Config': {'gelf-address': GELF, 'env': seeded['values']['plain']}}
    assert seeded['values']['plain'] not in json.dumps(env_of(engine, 'app-web'))
    no_value_in(json.dumps(r), seeded)
    assert not converge(task_definition=td, aws_endpoint_url=moto_aws, aws_region=REGION, log_addresses=[GELF])['changed']
    # Refused, naming the field: a secret option that is also an option, and one for the FireLens router's file.
    twice = dict(td['containerDefinitions'][0], logConfiguration=dict(td['containerDefinitions'][0]['logConfiguration'],
                                                                      options={'env': 'x'}))
    bad = converge(task_definition=dict(td, containerDefinitions=[twice]), aws_endpoint_url=moto_aws,
                   log_addresses=[GELF])
    assert bad.failed and bad['msg'] == ('task_definition.containerDefinitions[0].logConfiguration.secretOptions.env: '
                                         'env is also in task_definition.containerDefinitions[0].logConfiguration'
                                         '.options'), bad['msg']
    # An option the collection checks or sets itself is no secret option.
    hidden = dict(td['containerDefinitions'][0], logConfiguration={'logDriver': 'gelf', 'secretOptions': [
        {'name': 'tag', 'valueFrom': '/p'}]})
    bad = converge(task_definition=dict(td, containerDefinitions=[hidden]), aws_endpoint_url=moto_aws)
    assert bad.failed and 'secretOptions.tag: tag is no secret' in bad['msg'], bad['msg']


def test_an_engine_error_that_quotes_a_value_read_does_not_carry_it(engine, cluster, converge, seeded, moto_aws,
                                                                    store_path):
    """The engine refuses a log option and quotes its value in its error: the task's stopped reason (the result,
    the store, the event) has the value put out of sight."""
    r = converge(log_addresses=[GELF], **native(cluster, moto_aws, [container('web', log_configuration={
        'log_driver': 'gelf', 'options': {'gelf-address': GELF},
        'secret_options': {'gelf-compression-level': seeded['prefix'] + '/plain'}})]))
    assert r['task']['last_status'] == 'STOPPED', r['task']
    reason = r['task']['stopped_reason']
    assert reason.startswith('container start failed:') and '********' in reason, reason
    no_value_in(json.dumps(r), seeded)
    no_value_in(json.dumps(store_rows(store_path), default=str), seeded)
    assert statuses(engine, cluster) == {}


def test_a_read_that_fails_when_a_cut_short_start_is_taken_up_leaves_nothing(
        engine, cluster, converge, seeded, moto_aws, aws, store_path):
    """The module is killed while app waits for init; the parameter app reads is deleted meanwhile: the next
    converge cannot read it, stops the task with the reason, and removes init, which the cut-short start made."""
    aws['ssm'].put_parameter(Name=seeded['prefix'] + '/gone', Value='soon-gone-value', Type='String')
    args = native(cluster, moto_aws, [
        container('app', secrets=[{'name': 'G', 'value_from': seeded['prefix'] + '/gone'}],
                  depends_on=[{'container_name': 'init', 'condition': 'SUCCESS'}]),
        container('init', ['sh', '-c', 'sleep 4; exit 0'], essential=False, start_timeout=60)])
    kill_when(module_process(dict(args, store_path=store_path, cluster=cluster)),
              lambda: [n for n, _s, _l in task_containers(engine, cluster) if n == 'app-init'])
    assert [n for n, _s, _l in task_containers(engine, cluster)] == ['app-init']
    aws['ssm'].delete_parameter(Name=seeded['prefix'] + '/gone')
    r = converge(**args)
    assert r['task']['last_status'] == 'STOPPED'
    assert r['task']['stopped_reason'].startswith('ResourceInitializationError: unable to read secrets or environment '
                                                  'files: SSM: the parameters %s/gone were not found' % seeded['prefix'])
    assert task_containers(engine, cluster) == []            # init, made by the cut-short start, is gone too


@pytest.mark.parametrize('what,reason', [
    ('ssm', 'SSM: the parameters {prefix}/missing were not found (as {role}): InvalidParameters'),
    ('asm', 'Secrets Manager: cannot read the secret {missing_secret} as {role}: ResourceNotFoundException'),
    ('key', 'Secrets Manager: the secret {keyed} has no JSON key nokey'),
    ('file', 'S3: cannot read the environment file arn:aws:s3:::{bucket}/missing.env as {role}: NoSuchKey'),
])
def test_what_cannot_be_read_stops_the_task_naming_it_and_nothing_is_started(engine, cluster, converge, seeded,
                                                                             moto_aws, what, reason):
    missing_secret = seeded['whole'].rsplit(':', 1)[0] + ':nowhere-AbCdEf'
    bad = {'ssm': {'secrets': [{'name': 'X', 'value_from': seeded['prefix'] + '/missing'}]},
           'asm': {'secrets': [{'name': 'X', 'value_from': missing_secret}]},
           'key': {'secrets': [{'name': 'X', 'value_from': seeded['keyed'] + ':nokey::'}]},
           'file': {'environment_files': [{'value': 'arn:aws:s3:::%s/missing.env' % seeded['bucket']}]}}[what]
    # The first container reads what it can; the second cannot: neither is started.
    r = converge(**native(cluster, moto_aws, [web(seeded), container('other', **bad)]))
    assert r['task']['last_status'] == 'STOPPED'
    expected = 'ResourceInitializationError: unable to read secrets or environment files: ' + reason.format(
        prefix=seeded['prefix'], role=ROLE, missing_secret=missing_secret, keyed=seeded['keyed'],
        bucket=seeded['bucket'])
    assert r['task']['stopped_reason'] == expected, r['task']['stopped_reason']
    assert statuses(engine, cluster) == {}
    no_value_in(json.dumps(r), seeded)


@pytest.mark.parametrize('change,words', [
    ({'secrets': [{'name': 'X', 'value_from': 'arn:aws:s3:::b/k'}]},
     'containers[0].secrets[0].value_from \'arn:aws:s3:::b/k\' is neither an SSM parameter'),
    ({'secrets': [{'name': 'X', 'value_from': 'arn:aws:secretsmanager:eu-west-1:123456789012:db'}]},
     'containers[0].secrets[0].value_from \'arn:aws:secretsmanager:eu-west-1:123456789012:db\' is not a Secrets '
     'Manager secret ARN'),
    ({'secrets': [{'name': 'X', 'value_from': 'p'}, {'name': 'X', 'value_from': 'q'}]},
     'containers[0].secrets[1].name X is given twice'),
    ({'secrets': [{'name': 'X'}]}, 'missing required arguments: value_from found in containers -> secrets'),
    ({'environment_files': [{'value': 's3://bucket/app.env'}]},
     'containers[0].environment_files[0].value \'s3://bucket/app.env\' is not an S3 object ARN'),
    ({'environment_files': [{'value': 'arn:aws:s3:::b/k', 'type': 'file'}]},
     'value of type must be one of: s3, got: file found in containers -> environment_files'),
    ({'environment_files': [{'value': 'arn:aws:s3:::b/%d' % i} for i in range(11)]},
     'containers[0].environment_files has 11 files: at most 10'),
    ({'secrets': [{'name': 'X', 'value_from': '/p'}]},
     'containers[0].secrets: the task has no execution_role_arn, and what a container reads from AWS when it starts '
     'is read as the task\'s execution role (as ECS requires)'),
    ({'log_configuration': {'log_driver': 'json-file', 'secret_options': {'max-size': '/p'}}},
     'containers[0].log_configuration.secret_options: the task has no execution_role_arn'),
])
def test_a_bad_declaration_is_refused_naming_the_field_and_nothing_changes(
        engine, cluster, converge, store_path, change, words):
    before = host_snapshot(engine, store_path, cluster)
    r = converge(name='app', containers=[container('web', **change)])
    assert r.failed and words in r['msg'], r.get('msg')
    assert host_snapshot(engine, store_path, cluster) == before


def test_check_mode_reads_nothing_from_aws(engine, cluster, converge, store_path):
    """Check mode says the task would start; it reads no secret (the endpoint here answers nothing)."""
    args = dict(name='app', execution_role_arn=ROLE, aws_endpoint_url='http://127.0.0.1:9', containers=[
        container('web', secrets=[{'name': 'X', 'value_from': '/p'}],
                  environment_files=[{'value': 'arn:aws:s3:::b/e.env'}])])
    before = host_snapshot(engine, store_path, cluster)
    r = converge(check=True, **args)
    assert r['changed'] and not r.failed and r['task']['last_status'] == 'PENDING', r
    assert host_snapshot(engine, store_path, cluster) == before


def test_a_stopped_task_keeps_its_last_output_without_the_values_it_was_given(
        engine, cluster, converge, seeded, moto_aws, store_path, module_runner):
    # The essential container prints its secret among its last lines, and exits 3: what the task keeps of its
    # output says `boom`, never the secret, after its containers are gone. (The engine orders two streams by
    # when their lines came: the line to stderr comes a moment after the others, to be the last.)
    values = seeded['values']
    script = 'i=0; while [ $i -lt 150 ]; do echo "line $i"; i=$((i + 1)); done; echo boom; ' \
             'echo "the key is $S_KEY, the file says $A"; sleep 0.3; echo "to stderr" >&2; exit 3'
    args = native(cluster, moto_aws, [web(seeded, command=['sh', '-c', 'sleep 1; ' + script])])
    first = converge(**args)
    assert first['task']['last_status'] == 'RUNNING', first['task']
    wait_for(lambda: statuses(engine, cluster).get('app-web') == 'exited', timeout=30)
    stopped = converge(**args)
    task = stopped['task']
    assert task['last_status'] == 'STOPPED' and 'exited (3)' in task['stopped_reason'], task
    assert statuses(engine, cluster) == {}                   # the containers are gone
    [web_view] = task['containers']
    assert web_view['exit_code'] == 3
    lines = web_view['last_output'].splitlines()
    assert len(lines) == 100 and lines[0] == 'line 53', lines[:3]      # the last 100 lines
    assert lines[-3:] == ['boom', 'the key is ********, the file says ********', 'to stderr'], lines[-3:]
    [event] = [e for e in stopped['events'] if e['event'] == 'task.stopped']
    assert event['last_output']['web'].splitlines() == lines[-20:]
    no_value_in(json.dumps(stopped), seeded)

    info = module_runner('ecs_task_info', dict(store_path=store_path, cluster=cluster))
    [shown] = [t for t in info['tasks'] if t['name'] == 'app']
    assert shown['containers'][0]['exit_code'] == 3 and shown['containers'][0]['last_output'] == web_view['last_output']
    no_value_in(json.dumps(info), seeded)
    no_value_in(json.dumps(store_rows(store_path), default=str), seeded)
    assert values['key'] not in json.dumps(store_rows(store_path), default=str)
