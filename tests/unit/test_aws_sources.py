# -*- coding: utf-8 -*-
"""Where a container's secrets and environment files are read from: the pure parts of the AWS adapter."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils import _aws as aws

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


def test_env_files_are_read_as_ecs_reads_them():
    text = '# comment\n\nA=1\n  # indented comment\nB=two=2\nC=\nD= spaced "quoted" \r\nA=again\n'
    assert aws.parse_env_file(text, 'f') == [('A', '1'), ('B', 'two=2'), ('C', ''), ('D', ' spaced "quoted" '),
                                             ('A', 'again')]


@pytest.mark.parametrize('line', ['a-secret-value-alone', '=a-secret-value', ' A=a-secret-value'])
def test_a_line_that_is_no_variable_is_refused_naming_the_line_never_quoting_it(line):
    with pytest.raises(aws.AwsError) as err:
        aws.parse_env_file('OK=1\n' + line + '\n', 'the environment file arn:aws:s3:::b/k')
    assert str(err.value) == 'the environment file arn:aws:s3:::b/k: line 2 is not VARIABLE=VALUE'


def test_parameters_asked_by_name_or_arn_are_the_same_key():
    names = ('/app/db', 'app/db', 'arn:aws:ssm:eu-west-1:123456789012:parameter/app/db', '/app/db:3')
    keys = set(aws._ssm_key(n) for n in names)
    assert keys == {'/app/db'}
    assert aws._ssm_key('db') == aws._ssm_key('arn:aws:ssm:eu-west-1:123456789012:parameter/db') == '/db'
