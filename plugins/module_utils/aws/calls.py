# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWS adapter: the only place that talks to AWS (boto3).

Owns: what a task's start reads from AWS as its execution role (STS AssumeRole, or the host's own credentials,
boto3's default chain, when there is none): pull credentials (ECR GetAuthorizationToken for an ECR registry,
Secrets Manager GetSecretValue for a container's repositoryCredentials), the values of its `secrets` (SSM
GetParameters, Secrets Manager GetSecretValue with ECS's `:json-key:version-stage:version-id` suffix) and its
environment files (S3 GetObject); and the translation of AWS failures into AwsError messages that name what was
being read (the secret's ARN, AWS's error code). Never returns or logs a token or a secret's value other than to
its caller, and never puts one in an error.
Must not: decide anything, or talk to the Docker engine.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import re

# <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn] and the dual-stack <account>.dkr-ecr[-fips].<region>.on.aws
# [:port]: a name in AWS's own domain, whatever the port.
ECR_HOST_RE = re.compile(r'^(\d{12})\.(?:dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?'
                         r'|dkr-ecr(?:-fips)?\.([a-z0-9-]+)\.on\.aws)(?::[0-9]{1,5})?\Z')
DEFAULT_REGION = 'us-east-1'
SESSION_SECONDS = 900      # the shortest STS session: long enough for one pull
TIMEOUT = 15


class AwsError(Exception):
    """An AWS call failed; the message names the call and AWS's error code, never a credential."""


def ecr_registry(host):
    """(account, region) of an ECR registry host name, or None for any other registry."""
    match = ECR_HOST_RE.match(host or '')
    return (match.group(1), match.group(2) or match.group(3)) if match else None


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
    keys = _role_keys(boto3, config, role_arn, region, endpoint_url, session_name, purpose)
    return boto3.client(service, region_name=region, endpoint_url=endpoint_url, config=config, **keys)


def _role_keys(boto3, config, role_arn, region, endpoint_url, session_name, purpose):
    """The client keyword arguments that act as `role_arn` (none: the host's own credentials)."""
    if not role_arn:
        return {}
    try:
        sts = boto3.client('sts', region_name=region, endpoint_url=endpoint_url, config=config)
        if not role_arn.startswith('arn:'):
            caller = sts.get_caller_identity()['Arn'].split(':')
            role_arn = 'arn:%s:iam::%s:role/%s' % (caller[1], caller[4], role_arn)
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName=session_name[:64],
                                DurationSeconds=SESSION_SECONDS)['Credentials']
    except Exception as exc:  # pylint: disable=broad-except
        raise AwsError('%s: cannot assume the execution role %s: %s' % (purpose, role_arn, _code(exc)))
    return {'aws_access_key_id': creds['AccessKeyId'], 'aws_secret_access_key': creds['SecretAccessKey'],
            'aws_session_token': creds['SessionToken']}


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
                       'password (strings)' % secret_id) from None     # the decoding error holds the secret
    return username, password


# --- a task's secrets and environment files ---------------------------------------------------------------

SSM_BATCH = 10                  # names in one GetParameters call (AWS's limit)
MAX_ENV_FILE_BYTES = 1024 * 1024
ARN_RE = re.compile(r'^arn:(aws[a-z-]*):([a-z0-9-]+):([a-z0-9-]*):(\d{12}|):(.+)\Z')
REGION_RE = re.compile(r'^[a-z]{2,4}(-[a-z]+)+-\d+\Z')
S3_ARN_RE = re.compile(r'^arn:aws[a-z-]*:s3:::([^/]+)/(.+)\Z')
ENV_NAME_RE = re.compile(r'^[^=\0]+\Z')


def secret_source(value_from):
    """Where a `secrets[].valueFrom` points: ('secretsmanager', region or None, secret ARN, json key, version stage,
    version id) for a Secrets Manager ARN (with ECS's optional `:json-key:version-stage:version-id`), or ('ssm',
    region or None, name or ARN) for an SSM parameter (a name, or an ARN). Raises ValueError for anything else."""
    parts = (value_from or '').split(':')
    if len(parts) > 5 and parts[0] == 'arn' and parts[2] in ('secretsmanager', 'ssm'):
        if not REGION_RE.match(parts[3]):
            raise ValueError('names the region %r, which is no AWS region' % parts[3])
        if not re.match(r'^\d{12}\Z', parts[4]):
            raise ValueError('names the account %r, which is no 12-digit AWS account ID' % parts[4])
    match = ARN_RE.match(value_from or '')
    if match and match.group(2) == 'secretsmanager':
        parts = value_from.split(':')
        if len(parts) < 7 or parts[5] != 'secret' or not parts[6] or len(parts) > 10:
            raise ValueError('is not a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:'
                             'secret:<name>[:<json-key>:<version-stage>:<version-id>])')
        extra = (parts[7:] + ['', '', ''])[:3]
        return ('secretsmanager', parts[3] or None, ':'.join(parts[:7])) + tuple(x or None for x in extra)
    if match and match.group(2) == 'ssm':
        if not match.group(5).startswith('parameter/'):
            raise ValueError('is not an SSM parameter ARN (arn:aws:ssm:<region>:<account>:parameter/<name>)')
        return ('ssm', match.group(3) or None, value_from)
    if match or not value_from or value_from.startswith('arn:'):
        raise ValueError('is neither an SSM parameter (a name or an ARN) nor a Secrets Manager secret ARN')
    return ('ssm', None, value_from)


def s3_object(arn):
    """(bucket, key) of an S3 object ARN (arn:aws:s3:::bucket/key); ValueError for anything else."""
    match = S3_ARN_RE.match(arn or '')
    if not match:
        raise ValueError('is not an S3 object ARN (arn:aws:s3:::<bucket>/<key>)')
    return match.group(1), match.group(2)


def _ssm_key(name):
    """A parameter as GetParameters names it, whether asked by name or by ARN: '/path'."""
    if name.startswith('arn:'):
        name = name.split(':parameter', 1)[1]
    return '/' + name.lstrip('/')


def _selector(name):
    """Whether an SSM name (or ARN) asks for a version or a label (`name:3`, `name:prod`)."""
    return ':' in (name.split(':parameter', 1)[1] if name.startswith('arn:') else name)


def parse_env_file(text):
    """The variables of an environment file, read as ECS's agent reads one: each line trimmed of white space;
    a line that starts with `#`, has no `=`, or has nothing on one side of its first `=` is skipped; the rest of
    the line after the first `=` is the value (quotes kept); a variable given twice takes its last value.
    Returns (name, value) pairs in the order the names first appear."""
    out = {}
    for line in text.split('\n'):
        line = line.strip(' \t\r\n\v\f')
        if line.startswith('#') or '=' not in line:
            continue
        name, _sep, value = line.partition('=')
        if name and value and ENV_NAME_RE.match(name):
            out[name] = value
    return list(out.items())


class Reader:
    """What one task start reads from AWS, as its execution role (assumed once, whatever services it reads)."""

    def __init__(self, role_arn=None, region=None, endpoint_url=None, session_name='drover-start'):
        self.role_arn = role_arn
        self.region = region or DEFAULT_REGION
        self.endpoint_url = endpoint_url
        self.session_name = session_name
        self.keys = None
        self.clients = {}

    def _as(self):
        return self.role_arn or 'the host\'s credentials'

    def client(self, service, region=None):
        region = region or self.region
        if (service, region) not in self.clients:
            boto3, config = _boto3('Reading %s' % service)
            if self.keys is None:
                self.keys = _role_keys(boto3, config, self.role_arn, region, self.endpoint_url, self.session_name,
                                       'Reading secrets and environment files')
            self.clients[(service, region)] = boto3.client(service, region_name=region, endpoint_url=self.endpoint_url,
                                                           config=config, **self.keys)
        return self.clients[(service, region)]

    def secrets(self, value_froms):
        """{valueFrom: value} for each of `value_froms` (SSM parameters in batches per region, Secrets Manager
        secrets once per secret and version, a JSON key picked from the secret's object)."""
        out = {}
        ssm, manager = {}, {}
        for value_from in value_froms:
            source = secret_source(value_from)
            if source[0] == 'ssm':
                ssm.setdefault(source[1] or self.region, []).append(value_from)
            else:
                manager.setdefault(source[1:3] + source[4:], []).append((value_from, source[3]))
        for region, names in sorted(ssm.items()):
            names = sorted(set(names))
            # A name with a version or a label is asked alone: the answer names a parameter, not its selector.
            out.update(self._parameters(region, [n for n in names if not _selector(n)]))
            for name in names:
                if _selector(name):
                    out.update(self._parameters(region, [name]))
        for (region, arn, stage, version), wanted in sorted(manager.items(), key=lambda i: str(i[0])):
            text = self._secret_string(region, arn, stage, version)
            for value_from, key in wanted:
                out[value_from] = text if key is None else _json_key(text, key, arn)
        return out

    def _parameters(self, region, names):
        out = {}
        if not names:
            return out
        client = self.client('ssm', region)
        for start in range(0, len(names), SSM_BATCH):
            batch = names[start:start + SSM_BATCH]
            try:
                answer = client.get_parameters(Names=batch, WithDecryption=True)
            except Exception as exc:  # pylint: disable=broad-except
                raise AwsError('SSM: cannot read the parameters %s as %s: %s' % (', '.join(batch), self._as(), _code(exc)))
            if answer.get('InvalidParameters'):
                raise AwsError('SSM: the parameters %s were not found (as %s): InvalidParameters'
                               % (', '.join(answer['InvalidParameters']), self._as()))
            found = {}
            for param in answer.get('Parameters') or ():
                found[_ssm_key(param.get('Name') or '')] = param.get('Value')
                if param.get('ARN'):
                    found[_ssm_key(param['ARN'])] = param.get('Value')
            for name in batch:
                value = found.get(_ssm_key(name))
                if value is None and len(batch) == 1 and len(answer.get('Parameters') or ()) == 1:
                    value = answer['Parameters'][0].get('Value')      # asked alone, with a selector
                if value is None:
                    raise AwsError('SSM: the parameter %s was not in the answer (as %s)' % (name, self._as()))
                out[name] = value
        return out

    def _secret_string(self, region, arn, stage, version):
        args = {'SecretId': arn}
        if stage:
            args['VersionStage'] = stage
        if version:
            args['VersionId'] = version
        try:
            answer = self.client('secretsmanager', region).get_secret_value(**args)
        except Exception as exc:  # pylint: disable=broad-except
            raise AwsError('Secrets Manager: cannot read the secret %s as %s: %s' % (arn, self._as(), _code(exc)))
        if answer.get('SecretString') is None:
            raise AwsError('Secrets Manager: the secret %s holds binary data, not a string: a container\'s '
                           'environment takes strings' % arn)
        return answer['SecretString']

    def environment_file(self, arn):
        """The (name, value) pairs of the environment file at the S3 object `arn`."""
        bucket, key = s3_object(arn)
        try:
            body = self.client('s3').get_object(Bucket=bucket, Key=key)['Body']
            data = body.read(MAX_ENV_FILE_BYTES + 1)
        except Exception as exc:  # pylint: disable=broad-except
            raise AwsError('S3: cannot read the environment file %s as %s: %s' % (arn, self._as(), _code(exc)))
        if len(data) > MAX_ENV_FILE_BYTES:
            raise AwsError('S3: the environment file %s is over %d bytes' % (arn, MAX_ENV_FILE_BYTES))
        try:
            text = data.decode('utf-8')
        except UnicodeDecodeError:
            raise AwsError('S3: the environment file %s is not UTF-8 text' % arn) from None    # its bytes stay out
        return parse_env_file(text)


def _json_key(text, key, arn):
    try:
        value = json.loads(text)
    except ValueError:
        # from None: the decoding error holds the secret's text
        raise AwsError('Secrets Manager: the secret %s is not a JSON object, so its key %s cannot be read'
                       % (arn, key)) from None
    if not isinstance(value, dict) or key not in value:
        raise AwsError('Secrets Manager: the secret %s has no JSON key %s' % (arn, key))
    value = value[key]
    return value if isinstance(value, str) else json.dumps(value)
