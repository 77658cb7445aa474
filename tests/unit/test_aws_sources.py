# -*- coding: utf-8 -*-
"""Where a container's secrets and environment files are read from: the pure parts of the AWS adapter."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.aws import calls as aws

SM = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-AbCdEf'


@pytest.mark.parametrize('value_from,source', [
    ('/app/db', ('ssm', None, '/app/db')),
    ('db-url', ('ssm', None, 'db-url')),
    ('db-url:3', ('ssm', None, 'db-url:3')),
    ('arn:aws:ssm:us-west-2:123456789012:parameter/app/db', ('ssm', 'us-west-2',
                                                             'arn:aws:ssm:us-west-2:123456789012:parameter/app/db')),
    (SM, ('secretsmanager', 'eu-west-1', SM, None, None, None)),
    (SM + ':password::', ('secretsmanager', 'eu-west-1', SM, 'password', None, None)),
    (SM + '::AWSPREVIOUS:', ('secretsmanager', 'eu-west-1', SM, None, 'AWSPREVIOUS', None)),
    (SM + ':k:AWSCURRENT:0a1b', ('secretsmanager', 'eu-west-1', SM, 'k', 'AWSCURRENT', '0a1b')),
    ('arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:x', (
        'secretsmanager', 'cn-north-1', 'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:x', None, None, None)),
])
def test_secret_sources(value_from, source):
    assert aws.secret_source(value_from) == source


@pytest.mark.parametrize('value_from,words', [
    ('arn:aws:s3:::b/k', 'neither an SSM parameter'),
    ('arn:aws:secretsmanager:eu-west-1:123456789012:db', 'not a Secrets Manager secret ARN'),
    (SM + ':a:b:c:d', 'not a Secrets Manager secret ARN'),
    ('arn:aws:ssm:eu-west-1:123456789012:document/x', 'not an SSM parameter ARN'),
    ('arn:nonsense', 'neither an SSM parameter'),
    ('arn:aws:secretsmanager:region:aws_account_id:secret:x', "names the region 'region', which is no AWS region"),
    ('arn:aws:secretsmanager:eu-west-1:aws_account_id:secret:x',
     "names the account 'aws_account_id', which is no 12-digit AWS account ID"),
    ('arn:aws:ssm:eu-west-1:1:parameter/x', "names the account '1', which is no 12-digit AWS account ID"),
    ('', 'neither an SSM parameter'),
])
def test_what_is_no_secret_source(value_from, words):
    with pytest.raises(ValueError) as err:
        aws.secret_source(value_from)
    assert words in str(err.value)


def test_s3_objects():
    assert aws.s3_object('arn:aws:s3:::bucket/dir/app.env') == ('bucket', 'dir/app.env')
    for bad in ('s3://bucket/app.env', 'arn:aws:s3:::bucket', 'arn:aws:s3:::bucket/', 'arn:aws:ssm:::x/y'):
        with pytest.raises(ValueError):
            aws.s3_object(bad)


def test_env_files_are_read_as_ecs_s_agent_reads_them():
    text = ('# comment\n\nA=1\n  # indented comment\nB=two=2\nC=\nD= spaced "quoted" \r\nA=again\n'
            'no equals sign\n=no name\nE=with\x0bvertical tab\nF=\u2028kept\n')
    assert aws.parse_env_file(text) == [('A', 'again'), ('B', 'two=2'), ('D', ' spaced "quoted"'),
                                        ('E', 'with\x0bvertical tab'), ('F', '\u2028kept')]


def test_parameters_asked_by_name_or_arn_are_the_same_key():
    names = ('/app/db', 'app/db', 'arn:aws:ssm:eu-west-1:123456789012:parameter/app/db')
    keys = set(aws._ssm_key(n) for n in names)
    assert keys == {'/app/db'}
    assert [aws._selector(n) for n in ('/app/db:3', 'db:prod', 'arn:aws:ssm:eu-west-1:123456789012:parameter/a:2',
                                       '/app/db', 'arn:aws:ssm:eu-west-1:123456789012:parameter/a')] == [
        True, True, True, False, False]
    assert aws._ssm_key('db') == aws._ssm_key('arn:aws:ssm:eu-west-1:123456789012:parameter/db') == '/db'


def test_versions_and_labels_of_one_parameter_are_read_apart(monkeypatch):
    from moto import mock_aws
    import boto3
    for key in ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'):
        monkeypatch.setenv(key, 'testing')
    with mock_aws():
        ssm = boto3.client('ssm', region_name='eu-west-1')
        ssm.put_parameter(Name='/app/db', Value='first-value', Type='SecureString')
        ssm.put_parameter(Name='/app/db', Value='second-value', Type='SecureString', Overwrite=True)
        ssm.label_parameter_version(Name='/app/db', ParameterVersion=1, Labels=['old'])
        for i in range(12):
            ssm.put_parameter(Name='/many/p%d' % i, Value='value-%d' % i, Type='String')
        names = ['/app/db:1', '/app/db', '/app/db:old'] + ['/many/p%d' % i for i in range(12)]
        got = aws.Reader(region='eu-west-1').secrets(names)
    assert (got['/app/db:1'], got['/app/db'], got['/app/db:old']) == ('first-value', 'second-value', 'first-value')
    assert [got['/many/p%d' % i] for i in range(12)] == ['value-%d' % i for i in range(12)]     # 2 batches


def test_a_secret_that_is_no_json_object_is_not_kept_in_the_error(monkeypatch):
    from moto import mock_aws
    import boto3
    for key in ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'):
        monkeypatch.setenv(key, 'testing')
    with mock_aws():
        arn = boto3.client('secretsmanager', region_name='eu-west-1').create_secret(
            Name='plain', SecretString='not-json-the-secret-itself')['ARN']
        with pytest.raises(aws.AwsError) as err:
            aws.Reader(region='eu-west-1').secrets([arn + ':key::'])
    assert str(err.value) == 'Secrets Manager: the secret %s is not a JSON object, so its key key cannot be read' % arn
    assert err.value.__context__ is None or err.value.__suppress_context__
    assert err.value.__cause__ is None
