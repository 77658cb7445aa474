# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWS adapter: the only place that talks to AWS (boto3).

Owns: pull credentials - STS AssumeRole of a task's execution role (or the host's own credentials, boto3's
default chain, when there is none), then ECR GetAuthorizationToken for an ECR registry, or Secrets Manager
GetSecretValue for a container's repositoryCredentials - and the translation of AWS failures into AwsError
messages that name what was being done (the secret's ARN, AWS's error code). Never returns or logs a token or a
secret's value other than to its caller, and never puts one in an error.
Must not: decide anything, or talk to the Docker engine.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import re

# <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]
ECR_HOST_RE = re.compile(r'^(\d{12})\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\Z')
DEFAULT_REGION = 'us-east-1'
SESSION_SECONDS = 900      # the shortest STS session: long enough for one pull
TIMEOUT = 15


class AwsError(Exception):
    """An AWS call failed; the message names the call and AWS's error code, never a credential."""


def ecr_registry(host):
    """(account, region) of an ECR registry host name, or None for any other registry."""
    match = ECR_HOST_RE.match(host or '')
    return (match.group(1), match.group(2)) if match else None


def _code(exc):
    response = getattr(exc, 'response', None)
    if isinstance(response, dict):
        return (response.get('Error') or {}).get('Code') or exc.__class__.__name__
    return exc.__class__.__name__


def _boto3(purpose):
    try:
        # Imported here, only for a pull that needs it: boto3 takes longer to import than a no-op pass takes.
        import boto3
        from botocore.config import Config
    except ImportError:
        raise AwsError('%s needs boto3 on the host (pip install boto3)' % purpose)
    return boto3, Config(connect_timeout=TIMEOUT, read_timeout=TIMEOUT, retries={'max_attempts': 2})


def _client(service, purpose, role_arn, region, endpoint_url, session_name):
    """A boto3 client of `service`, as `role_arn` (assumed through STS with the host's credentials; a bare role
    name is a role of the host's account, as ECS takes one) or, without one, as the host itself."""
    boto3, config = _boto3(purpose)
    keys = {}
    if role_arn:
        try:
            sts = boto3.client('sts', region_name=region, endpoint_url=endpoint_url, config=config)
            if not role_arn.startswith('arn:'):
                caller = sts.get_caller_identity()['Arn'].split(':')
                role_arn = 'arn:%s:iam::%s:role/%s' % (caller[1], caller[4], role_arn)
            creds = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name[:64],
                                    DurationSeconds=SESSION_SECONDS)['Credentials']
        except Exception as exc:  # pylint: disable=broad-except
            raise AwsError('%s: cannot assume the execution role %s: %s' % (purpose, role_arn, _code(exc)))
        keys = {'aws_access_key_id': creds['AccessKeyId'], 'aws_secret_access_key': creds['SecretAccessKey'],
                'aws_session_token': creds['SessionToken']}
    return boto3.client(service, region_name=region, endpoint_url=endpoint_url, config=config, **keys)


def ecr_login(registry, role_arn=None, region=None, endpoint_url=None, session_name='drover-pull'):
    """(username, password) that pull from `registry`, from ECR GetAuthorizationToken made as `role_arn`
    (assumed through STS with the host's credentials) or, without one, as the host itself."""
    found = ecr_registry(registry)
    region = (found[1] if found else None) or region or DEFAULT_REGION
    ecr = _client('ecr', 'ECR', role_arn, region, endpoint_url, session_name)
    try:
        args = {'registryIds': [found[0]]} if found else {}
        data = ecr.get_authorization_token(**args)['authorizationData'][0]
        username, password = base64.b64decode(data['authorizationToken']).decode('utf-8').split(':', 1)
    except Exception as exc:  # pylint: disable=broad-except
        raise AwsError('ECR: cannot get an authorization token for %s as %s: %s'
                       % (registry, role_arn or 'the host\'s credentials', _code(exc)))
    return username, password


def secret_region(secret_id):
    """The region of a Secrets Manager ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>), or None."""
    parts = (secret_id or '').split(':')
    return parts[3] if len(parts) > 6 and parts[0] == 'arn' and parts[2] == 'secretsmanager' and parts[3] else None


def registry_credentials(secret_id, role_arn=None, region=None, endpoint_url=None, session_name='drover-pull'):
    """(username, password) of a container's repositoryCredentials: the Secrets Manager secret `secret_id` (an ARN
    or a name), a JSON object with `username` and `password`, read as `role_arn` (or the host)."""
    region = secret_region(secret_id) or region or DEFAULT_REGION
    client = _client('secretsmanager', 'Secrets Manager', role_arn, region, endpoint_url, session_name)
    try:
        text = client.get_secret_value(SecretId=secret_id).get('SecretString')
    except Exception as exc:  # pylint: disable=broad-except
        raise AwsError('Secrets Manager: cannot read the repository credentials %s as %s: %s'
                       % (secret_id, role_arn or 'the host\'s credentials', _code(exc)))
    try:
        value = json.loads(text or '')
        username, password = value['username'], value['password']
        if not isinstance(username, str) or not isinstance(password, str) or not username:
            raise ValueError()
    except (ValueError, KeyError, TypeError):
        raise AwsError('Secrets Manager: the repository credentials %s are not a JSON object with a username and a '
                       'password (strings)' % secret_id)
    return username, password
