"""Write plugins/doc_fragments/containers.py (the documentation of ecs_task's `containers`) and the table of
container fields in docs/ecs_task.md (between its container-settings markers) from the table of container
settings (plugins/module_utils/tasks/settings.py). `--check`: exit 1 when a file is not what the table
makes (a unit test runs it so)."""

import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, 'plugins', 'doc_fragments', 'containers.py')
GUIDE = os.path.join(ROOT, 'docs', 'ecs_task.md')
START = '<!-- container-settings:start (hack/gen-docs.py writes this table) -->'
END = '<!-- container-settings:end -->'

HEADER = '''# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Made by hack/gen-docs.py from plugins/module_utils/tasks/settings.py: change the table, then run it.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # ecs_task's containers: one entry per row of the table of container settings.
    DOCUMENTATION = r\'\'\'
'''


def render():
    sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
    from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
    doc = {'options': {'containers': {
        'description': [
            'The task\'s containers, started in this order.',
            'Required with O(state=running) unless O(task_definition) is given.',
            'At most 10, as in an ECS task definition. Each setting says the field of an ECS container definition '
            'it is; a change to any of them replaces the task\'s containers.',
        ],
        'type': 'list', 'elements': 'dict', 'suboptions': settings.documentation()}}}
    body = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False, width=116, allow_unicode=True)
    return HEADER + body + "'''\n"


# The Docker SDK's keyword arguments and the fields `docker inspect` shows them in.
API_NAMES = {'command': 'Cmd', 'entrypoint': 'Entrypoint', 'cpu_shares': 'CpuShares', 'volumes_from': 'VolumesFrom',
             'links': 'Links', 'ulimits': 'Ulimits', 'user': 'User', 'working_dir': 'WorkingDir',
             'hostname': 'Hostname', 'dns': 'Dns', 'dns_search': 'DnsSearch', 'extra_hosts': 'ExtraHosts',
             'network_disabled': 'NetworkDisabled', 'privileged': 'Privileged', 'read_only': 'ReadonlyRootfs',
             'security_opt': 'SecurityOpt', 'sysctls': 'Sysctls', 'tty': 'Tty', 'stdin_open': 'OpenStdin',
             'init': 'Init', 'devices': 'Devices', 'shm_size': 'ShmSize', 'tmpfs': 'Tmpfs',
             'mem_swappiness': 'MemorySwappiness'}


def _engine(setting):
    special = {'environment': '`Env` (with the task role\'s variables)', 'essential': 'label `drover.essential`',
               'port_mappings': '`ExposedPorts`, `PortBindings`', 'gpu': 'the GPU ledger, then a device request',
               'capabilities': '`CapAdd`, `CapDrop` (`NET_RAW` dropped unless added)',
               'mount_points': '`Binds` (the task volume\'s host path or engine volume)',
               'docker_labels': '`Labels` (the collection\'s `drover.*` win)',
               'start_timeout': 'label `drover.start-timeout`; bounds the wait of the containers that depend on it',
               'depends_on': 'the start order: a start waits for each condition (see "Container order")',
               'repository_credentials': 'the pull of its image: the username and password of a Secrets Manager '
                                         'secret, read as the execution role',
               'firelens_configuration': 'the task\'s log router: its Fluent Bit configuration written and mounted, '
                                         'its socket (see "Logs through a router")',
               'secrets': '`Env`: each value read from SSM or Secrets Manager as the execution role when the task '
                          'starts (see "Secrets and environment files")',
               'environment_files': '`Env`: the variables of each S3 file, read as the execution role when the task '
                                    'starts (see "Secrets and environment files")',
               'memory': '`Memory`',
               'memory_reservation': '`MemoryReservation`', 'max_swap': '`MemorySwap` (= memory + max_swap)',
               'name': 'the container name `<task>-<name>`', 'image': '`Image` (pulled as `pull` says)',
               'log_configuration': '`LogConfig` (after the host\'s `log_drivers`, `log_driver_map` and `aws_logs`; see "Logs")',
               'health_check': '`Healthcheck` (seconds to nanoseconds, ECS defaults); label `drover.health-check` '
                               '(see "Health")',
               'restart_policy': 'the task\'s restart after this container\'s exit (see "Restart and hold"); only on an '
                                 'essential container, `restartAttemptPeriod` 60 to 1800',
               'stop_timeout': '`StopTimeout`; the task\'s stop waits that long before the kill'}
    if setting.option in special:
        return special[setting.option]
    key = setting.to.split('.', 1)[1] if setting.to else ''
    return '`%s`' % API_NAMES.get(key, key) if key else ''


def guide_table():
    sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
    from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
    rows = ['| ECS field | `containers[]` option | on the engine | rules |', '| --- | --- | --- | --- |']
    for s in settings.SETTINGS:
        rules = []
        if s.required:
            rules.append('required')
        if s.low is not None:
            rules.append('at least %d' % s.low)
        if s.high is not None:
            rules.append('at most %d' % s.high)
        if not s.awsvpc:
            rules.append('refused with awsvpc (as on AWS)')
        if s.option == 'privileged':
            rules.append('refused unless `allow_privileged`')
        ecs = '`resourceRequirements` (GPU)' if s.ecs is None else '`%s`' % s.ecs
        rows.append('| %s | `%s` | %s | %s |' % (ecs, s.option, _engine(s), ', '.join(rules)))
    for key, why in sorted(settings.ECS_REFUSED.items()):
        rows.append('| `%s` | | refused | %s |' % (key, why.replace('|', '/')))
    for key in settings.ECS_ACCEPTED:
        rows.append('| `%s` | | accepted, changes nothing on a host of its own | |' % key)
    return '\n'.join(rows) + '\n'


def render_guide():
    with open(GUIDE) as f:
        text = f.read()
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return head + START + '\n' + guide_table() + END + tail


def main():
    made = ((TARGET, render()), (GUIDE, render_guide()))
    if '--check' in sys.argv:
        stale = []
        for path, text in made:
            with open(path) as f:
                if f.read() != text:
                    stale.append(os.path.relpath(path, ROOT))
        if stale:
            sys.stderr.write('%s: not what the table of container settings makes: run python hack/gen-docs.py\n'
                             % ', '.join(stale))
            return 1
        return 0
    for path, text in made:
        with open(path, 'w') as f:
            f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
