# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `awslogs` log driver served for real, as the ECS agent serves it: what a container's declared options
(ECS's) become for the engine's own `awslogs` driver.

- `awslogs-stream-prefix` becomes the stream `<prefix>/<container name>/<task ID>` (ECS's naming; the task's
  name stands for ECS's task ID), through the engine's `awslogs-stream`; without a prefix the engine names
  the stream after the container's ID, as ECS does on EC2.
- `awslogs-region` and `awslogs-endpoint` default to the module's `aws_region` and `aws_endpoint_url`.
- A task with an execution role: the engine fetches that role's credentials from the host's credentials
  endpoint (`awslogs-credentials-endpoint`, a random credential ID of the run, registered in the store for the
  host itself, roles/host/files/drover_credentials.py). A task without one: the engine's own AWS credentials
  (its environment, the instance's role), as ECS on EC2 uses the instance's.

Owns: which options a task may declare, and the engine options they become.
Must not: touch the engine, the store or the host. Raises SpecError (naming the field) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

DRIVER = 'awslogs'
# The registration's source in the store: the host itself (the engine), answered without a token (the
# endpoint's HOST_SOURCE).
HOST_SOURCE = 'host'
# What a task may declare (ECS's awslogs options, and the engine's generic delivery options).
OPTIONS = ('awslogs-group', 'awslogs-region', 'awslogs-stream-prefix', 'awslogs-create-group', 'awslogs-endpoint',
           'awslogs-datetime-format', 'awslogs-multiline-pattern', 'mode', 'max-buffer-size')
# The words the engine's driver takes for awslogs-create-group (Go's strconv.ParseBool; task definitions write
# both true and True).
BOOLEANS = ('true', 'True', 'TRUE', 't', 'T', '1', 'false', 'False', 'FALSE', 'f', 'F', '0')
# What the collection sets itself: a task naming another credential ID would log as another task's role.
OWN = ('awslogs-credentials-endpoint', 'awslogs-stream', 'tag')


def check(options, field, region):
    """A container's declared awslogs options (sorted pairs). `field`: where they are; `region`: the module's
    aws_region. Raises SpecError."""
    opts = dict(options or ())
    own = sorted(k for k in opts if k in OWN)
    if own:
        raise SpecError('%s.%s is set by this collection (the stream is <awslogs-stream-prefix>/<container>/<task>, '
                        'the credentials are the execution role\'s): leave it out' % (field, own[0]))
    unknown = sorted(k for k in opts if k not in OPTIONS)
    if unknown:
        raise SpecError('%s.%s is not an option of the awslogs driver (supported: %s)'
                        % (field, unknown[0], ', '.join(OPTIONS)))
    if not opts.get('awslogs-group'):
        raise SpecError('%s.awslogs-group is required: the log group the container writes to' % field)
    if not opts.get('awslogs-region') and not region:
        raise SpecError('%s.awslogs-region is required (or the module\'s aws_region): the region of the log group'
                        % field)
    if opts.get('awslogs-create-group', 'false') not in BOOLEANS:
        raise SpecError('%s.awslogs-create-group must be true or false, got %r' % (field, opts['awslogs-create-group']))
    prefix = opts.get('awslogs-stream-prefix')
    if prefix is not None and (not prefix or ':' in prefix or '*' in prefix):
        raise SpecError('%s.awslogs-stream-prefix must be a non-empty stream name part (no : or *), got %r'
                        % (field, prefix))


def stream(prefix, container, task):
    """ECS's stream name of a container's logs."""
    return '%s/%s/%s' % (prefix, container, task)


def credentials_path(cred_id):
    """The path the engine's driver fetches (it prefixes http://169.254.170.2)."""
    return '/v2/credentials/%s' % cred_id


def engine_options(options, container, task, cred_id=None, region=None, endpoint_url=None):
    """The engine's awslogs options for a container of a task: `options` as declared (sorted pairs, checked),
    `cred_id` the run's execution-role credential ID (None: the engine's own credentials)."""
    opts = dict(options or ())
    out = dict((k, v) for k, v in opts.items() if k != 'awslogs-stream-prefix')
    if opts.get('awslogs-stream-prefix'):
        out['awslogs-stream'] = stream(opts['awslogs-stream-prefix'], container, task)
    if region and not out.get('awslogs-region'):
        out['awslogs-region'] = region
    if endpoint_url and not out.get('awslogs-endpoint'):
        out['awslogs-endpoint'] = endpoint_url
    if cred_id:
        out['awslogs-credentials-endpoint'] = credentials_path(cred_id)
    return out


def cred_id_of(log_config):
    """The credential ID a container's log configuration (the engine's {'Type', 'Config'}) fetches, or None."""
    log = log_config or {}
    path = (log.get('Config') or {}).get('awslogs-credentials-endpoint') or ''
    found = re.match(r'^/v2/credentials/([0-9a-f]{32})\Z', path) if log.get('Type') == DRIVER else None
    return found.group(1) if found else None


def served(containers):
    """Whether any of a task's containers (after the host's policy) logs with awslogs."""
    return any(c.log_configuration is not None and dict(c.log_configuration).get('log_driver') == DRIVER
               for c in containers)
