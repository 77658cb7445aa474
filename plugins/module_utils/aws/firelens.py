# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FireLens: a task's log router, and the containers that log to it.

Owns: the rules of a task's FireLens declaration (one router, with `firelensConfiguration` of type fluentbit,
for the containers whose log driver is `awsfirelens`), the router's Fluent Bit configuration (a forward input
on the task's socket, ECS's metadata, the user's own file, one output per container from its log options),
where the task's FireLens files live on the host (/run/drover/firelens), and what the engine is given: the router's mounts, and the
engine's `fluentd` log driver writing to the router's socket for each container that logs to it.
Must not: touch the host, the engine or the store (the apply layer writes the files this module words).
Raises SpecError (naming the field) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

DRIVER = 'awsfirelens'
ENGINE_DRIVER = 'fluentd'
TYPES = ('fluentbit',)
# Where the router finds its configuration and opens its socket (as ECS's agent mounts them).
CONFIG_IN_ROUTER = '/fluent-bit/etc/fluent-bit.conf'
SOCKET_DIR_IN_ROUTER = '/var/run'
SOCKET = 'fluent.sock'
CONFIG = 'fluent-bit.conf'
BASE = '/run/drover/firelens'
# The router's socket directory is a tmpfs of its own, this large: the router writes its socket there (and may
# write more), and what it writes never fills the host's /run.
SOCKET_DIR_KIB = 1024
SOCKET_DIR_INODES = 64
OPTIONS = ('enable-ecs-log-metadata', 'config-file-type', 'config-file-value')
KEY_RE = re.compile(r'^[A-Za-z0-9_.-]+\Z')


def router(containers):
    """The task's log router (the container with firelens_configuration), or None."""
    found = [c for c in containers if c.firelens_configuration is not None]
    return found[0] if found else None


def logs_to_router(c):
    return c.log_configuration is not None and dict(c.log_configuration)['log_driver'] == DRIVER


def check(containers, field, names):
    """The task-level rules: at most one router; a router when any container logs with awsfirelens, and not
    itself one of them; its options known. `names(i, option, member=None)` names a field of container i."""
    routers = [i for i, c in enumerate(containers) if c.firelens_configuration is not None]
    users = [i for i, c in enumerate(containers) if logs_to_router(c)]
    if len(routers) > 1:
        raise SpecError('%s: a task has one log router; containers %s both declare one'
                        % (names(routers[1], 'firelens_configuration'),
                           ' and '.join(containers[i].name for i in routers[:2])))
    if users and not routers:
        raise SpecError('%s %s needs the task\'s log router: a container with %s (none in %s)'
                        % (names(users[0], 'log_configuration', 'log_driver'), DRIVER,
                           names(users[0], 'firelens_configuration').rsplit('.', 1)[-1], field))
    if routers:
        i = routers[0]
        c = containers[i]
        if i in users:
            raise SpecError('%s %s: the log router cannot log to itself'
                            % (names(i, 'log_configuration', 'log_driver'), DRIVER))
        config = dict(c.firelens_configuration)
        if config['type'] not in TYPES:
            raise SpecError('%s %s is not supported (supported: %s): the collection writes a Fluent Bit '
                            'configuration' % (names(i, 'firelens_configuration', 'type'), config['type'],
                                               ', '.join(TYPES)))
        options = dict(config.get('options') or ())
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise SpecError('%s has unknown keys: %s (known: %s)' % (names(i, 'firelens_configuration', 'options'),
                                                                     ', '.join(unknown), ', '.join(OPTIONS)))
        kind = options.get('config-file-type')
        if kind == 's3':
            raise SpecError('%s s3 is not supported yet: give the file in the router\'s image (file)'
                            % names(i, 'firelens_configuration', 'options.config-file-type'))
        if kind not in (None, 'file'):
            raise SpecError('%s must be file, got %r' % (names(i, 'firelens_configuration', 'options.config-file-type'),
                                                         kind))
        value = options.get('config-file-value')
        if kind == 'file' and (not value or not value.startswith('/') or '\n' in value or '\r' in value):
            raise SpecError('%s must be an absolute path in the router\'s image, got %r'
                            % (names(i, 'firelens_configuration', 'options.config-file-value'), value))
        if options.get('enable-ecs-log-metadata') not in (None, 'true', 'false'):
            raise SpecError('%s must be true or false, got %r'
                            % (names(i, 'firelens_configuration', 'options.enable-ecs-log-metadata'),
                               options['enable-ecs-log-metadata']))
    for i in users:
        options = dict(dict(containers[i].log_configuration).get('options') or ())
        if options and not (options.get('Name') or options.get('name')):
            raise SpecError('%s needs Name, the Fluent Bit output plugin the router sends this container\'s logs to '
                            '(cloudwatch_logs, firehose, es...)' % names(i, 'log_configuration', 'options'))
        given = sorted(k for k in options if k.lower() in ('name', 'match'))
        if len(given) > 1 or [k for k in given if k.lower() == 'match']:
            raise SpecError('%s: %s: an output has one Name, and the collection writes its Match (this container\'s '
                            'records)' % (names(i, 'log_configuration', 'options'), ', '.join(given)))
        for key, value in options.items():
            if not KEY_RE.match(key) or '\n' in value or '\r' in value:
                raise SpecError('%s.%s: a Fluent Bit output option is a name of letters, digits, _ . - and a value '
                                'on one line' % (names(i, 'log_configuration', 'options'), key))
        for key, _source in dict(containers[i].log_configuration).get('secret_options') or ():
            if not KEY_RE.match(key):
                raise SpecError('%s %r: a Fluent Bit output option is a name of letters, digits, _ . - on one line'
                                % (names(i, 'log_configuration', 'secret_options'), key))


def tag(c, task):
    """The tag of a container's log records, as ECS has it: <container>-firelens-<task>."""
    return '%s-firelens-%s' % (c.name, task)


def config_text(cluster, task, containers):
    """The router's Fluent Bit configuration (classic format)."""
    config = dict(router(containers).firelens_configuration)
    options = dict(config.get('options') or ())
    lines = ['# Written by drover.fleet for task %s/%s: the router of its containers\' logs (FireLens).' % (cluster, task),
             '[INPUT]', '    Name forward', '    unix_path %s/%s' % (SOCKET_DIR_IN_ROUTER, SOCKET), '']
    if options.get('enable-ecs-log-metadata', 'true') == 'true':
        lines += ['[FILTER]', '    Name record_modifier', '    Match *', '    Record ecs_cluster %s' % cluster,
                  '    Record ecs_task_definition %s' % task, '    Record ecs_task_id %s' % task, '']
    if options.get('config-file-type') == 'file':
        lines += ['@INCLUDE %s' % options['config-file-value'], '']
    for c in containers:
        if not logs_to_router(c):
            continue
        out = dict(dict(c.log_configuration).get('options') or ())
        if not out:
            continue                 # no output of its own: the user's file routes its records
        name = out.pop('Name', None) or out.pop('name')
        lines += ['[OUTPUT]', '    Name %s' % name, '    Match %s-firelens*' % c.name]
        out.update((key, '${%s}' % secret_variable(c, key))
                   for key, _source in dict(c.log_configuration).get('secret_options') or ())
        lines += ['    %s %s' % (key, value) for key, value in sorted(out.items())]
        lines.append('')
    return '\n'.join(lines)


def secret_variable(c, key):
    """The router's environment variable that holds a secret option of a container that logs to it (ECS's
    secretOptions with awsfirelens): the configuration names it, never the value."""
    return 'DROVER_FIRELENS_%s' % re.sub(r'[^A-Z0-9]', '_', ('%s_%s' % (c.name, key)).upper())


def secret_env(containers, values):
    """The router's variables for the secret options of the containers that log to it: `values` maps each
    source (value_from) to what was read."""
    return dict((secret_variable(c, key), values[source]) for c in containers if logs_to_router(c)
                for key, source in dict(c.log_configuration).get('secret_options') or ())


def directory(store_path, cluster, task):
    """Where a task's FireLens files live on the host: under /run/drover/firelens, in a directory named by a
    digest of the host store's path, the cluster and the task (a socket's path is at most 107 bytes long, and
    two stores on one host keep theirs apart)."""
    key = '\0'.join((os.path.abspath(store_path), cluster, task)).encode('utf-8')
    return os.path.join(BASE, hashlib.sha256(key).hexdigest()[:20])


def socket_dir(path):
    """The directory of the router's socket, on the host (a tmpfs of its own, SOCKET_DIR_KIB large)."""
    return os.path.join(path, 'socket')


def router_binds(path):
    """The router's mounts: its socket directory, and its configuration (read-only)."""
    return ['%s:%s' % (socket_dir(path), SOCKET_DIR_IN_ROUTER),
            '%s:%s:ro' % (os.path.join(path, CONFIG), CONFIG_IN_ROUTER)]


def log_config(c, task, path):
    """The engine's log configuration of a container that logs to the router: its fluentd driver on the router's
    socket (connecting in the background, so that a container starts while its router opens the socket)."""
    return {'type': ENGINE_DRIVER, 'config': {
        'fluentd-address': 'unix://%s' % os.path.join(socket_dir(path), SOCKET),
        'fluentd-async': 'true', 'tag': tag(c, task)}}
