# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of every module, with their types, choices and defaults: one place both front ends read.

Owns: the argument specs (and the rules between options) of the Ansible modules, which the Salt extension
(salt/) reads too, so that a state applies the same defaults as the module it stands beside.
Must not: import anything of Ansible's (the Salt extension imports this file without Ansible installed),
validate declarations (the spec modules do) or talk to anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.drover.fleet.plugins.module_utils.tasks.settings import (
    DEFAULT_LOG_DRIVER_MAP, LOG_DRIVERS, argument_spec as container_options)
from ansible_collections.drover.fleet.plugins.module_utils.gpu.nvml import MODES
from ansible_collections.drover.fleet.plugins.module_utils.host.store import DEFAULT_STORE_PATH, LOCK_TIMEOUT


# The options that are the host's own, never a declaration's: where its engine and its store are, and its policy
# for what a task or a runner may do. The Salt states take them as their arguments only, never from the pillar
# that holds the declarations (pillar_key), as the Ansible roles take them from host variables, never from an
# entry of drover_tasks or drover_pools.
HOST_OWN = ('docker_host', 'store_path', 'aws_endpoint_url', 'aws_region')
ECS_TASK_POLICY = ('allow_host_network', 'allow_privileged', 'allow_host_namespaces', 'log_drivers', 'log_driver_map',
                   'aws_logs', 'log_addresses', 'allowed_roles', 'allowed_capabilities', 'allowed_devices',
                   'allowed_security_options', 'nfs_servers', 'bind_paths', 'attributes')
GH_RUNNER_POLICY = ('allow_host_network',)


# How a host's GPUs are found and reach a container: the same for ecs_task's tasks and gh_runner_slot's runners,
# which share the host's GPU ledger.
GPU_HOST_OPTIONS = dict(
    gpu_discovery=dict(type='str', choices=['auto', 'nvml', 'nvidia-smi', 'static'], default='auto'),
    gpu_devices=dict(type='list', elements='str'),
    gpu_delivery=dict(type='str', choices=['device-request', 'env', 'cdi'], default='device-request'),
)


def host_args(lock=True):
    """The options every module takes to reach the engine and the store."""
    spec = dict(
        docker_host=dict(type='str'),
        timeout=dict(type='int', default=60),
        store_path=dict(type='path', default=DEFAULT_STORE_PATH),
    )
    if lock:
        spec['lock_timeout'] = dict(type='int', default=LOCK_TIMEOUT)
    return spec


# One entry of `tasks`: every option taken as it is given (the task spec checks it and names the entry in its
# message; an option an entry leaves out takes the top-level one), but the registry password is declared
# no_log, so that Ansible hides it in the invocation it logs on the host (syslog, the journal) and returns.
TASK_ENTRY_OPTIONS = dict(
    name=dict(type='raw'),
    cluster=dict(type='raw'),
    containers=dict(type='raw'),
    task_definition=dict(type='raw'),
    network_mode=dict(type='raw'),
    awsvpc=dict(type='raw'),
    state=dict(type='raw'),
    stop_reason=dict(type='raw'),
    restart=dict(type='raw'),
    pull=dict(type='raw'),
    registry_auth=dict(type='dict', no_log=False, options=dict(
        registry=dict(type='raw'),
        username=dict(type='raw'),
        password=dict(type='raw', no_log=True),
        ecr=dict(type='raw'),
    )),
    task_role_arn=dict(type='raw'),
    execution_role_arn=dict(type='raw'),
    cred_id=dict(type='raw'),
    revision=dict(type='raw'),
    cpu=dict(type='raw'),
    memory=dict(type='raw'),
    volumes=dict(type='raw'),
    placement_constraints=dict(type='raw'),
    runtime_platform=dict(type='raw'),
    ipc_mode=dict(type='raw'),
    pid_mode=dict(type='raw'),
)

VOLUME_OPTIONS = dict(
    name=dict(type='str', required=True),
    host=dict(type='dict', options=dict(source_path=dict(type='str'))),
    docker_volume_configuration=dict(type='dict', options=dict(
        scope=dict(type='str', choices=['task', 'shared']),
        autoprovision=dict(type='bool'),
        driver=dict(type='str'),
        driver_opts=dict(type='dict'),
        labels=dict(type='dict'),
    )),
    efs_volume_configuration=dict(type='dict', options=dict(
        file_system_id=dict(type='str', required=True),
        root_directory=dict(type='str'),
        transit_encryption=dict(type='str'),
        transit_encryption_port=dict(type='int'),
        authorization_config=dict(type='dict'),
    )),
)


def ecs_task_spec():
    """ecs_task's argument spec."""
    spec = dict(
        name=dict(type='str'),
        cluster=dict(type='str', default='default'),
        containers=dict(type='list', elements='dict', options=container_options()),
        task_definition=dict(type='dict'),
        network_mode=dict(type='str', choices=['bridge', 'host', 'none', 'awsvpc']),
        # No defaults for the ENI's options: without an ENI, one given is refused by name (the spec says
        # what each defaults to with one).
        awsvpc=dict(type='dict', options=dict(
            eni_mac=dict(type='str'),
            address=dict(type='str'),
            dhcp=dict(type='bool'),
            gateway=dict(type='str'),
            routes=dict(type='list', elements='dict'),
            dns_servers=dict(type='list', elements='str'),
            credential_link=dict(type='bool'),
            wait_timeout=dict(type='int'),
            holder_image=dict(type='str', default='drover.local/busybox:1'),
        )),
        state=dict(type='str', choices=['running', 'healthy', 'stopped', 'absent'], default='running'),
        healthy_wait_timeout=dict(type='int'),
        task_cleanup_wait=dict(type='int', default=0),
        metrics_path=dict(type='path'),
        stop_reason=dict(type='str'),
        restart=dict(type='str', choices=['never', 'on-failure', 'always'], default='never'),
        pull=dict(type='str', choices=['missing', 'always', 'never'], default='missing'),
        registry_auth=dict(type='dict', no_log=False, options=dict(
            registry=dict(type='str', required=True),
            username=dict(type='str'),
            password=dict(type='str', no_log=True),
            ecr=dict(type='bool', default=False),
        )),
        aws_region=dict(type='str'),
        aws_endpoint_url=dict(type='str'),
        task_role_arn=dict(type='str'),
        cred_id=dict(type='str'),
        revision=dict(type='str'),
        execution_role_arn=dict(type='str'),
        cpu=dict(type='raw'),
        memory=dict(type='raw'),
        volumes=dict(type='list', elements='dict', options=VOLUME_OPTIONS),
        placement_constraints=dict(type='list', elements='dict', options=dict(
            type=dict(type='str', required=True, choices=['memberOf', 'distinctInstance']),
            expression=dict(type='str'),
        )),
        runtime_platform=dict(type='dict', options=dict(
            cpu_architecture=dict(type='str', choices=['X86_64', 'ARM64']),
            operating_system_family=dict(type='str'),
        )),
        ipc_mode=dict(type='str', choices=['host', 'task', 'none']),
        pid_mode=dict(type='str', choices=['host', 'task']),
        tasks=dict(type='list', elements='dict', options=TASK_ENTRY_OPTIONS),
        purge=dict(type='bool', default=False),
        purge_keep=dict(type='list', elements='dict', options=dict(cluster=dict(type='str'),
                                                                   service=dict(type='str', required=True))),
        look=dict(type='dict', options=dict(gpus=dict(type='bool', default=False))),
        # (the declaration's registry password is no_log, as an entry of tasks has it; the module refuses one)
        service_revisions=dict(type='list', elements='dict', options=dict(
            cluster=dict(type='raw'), service=dict(type='raw'), revision=dict(type='raw'), number=dict(type='raw'),
            status=dict(type='raw'), rollback_of=dict(type='raw'), generation=dict(type='raw'),
            declaration=dict(type='dict', options=dict((k, v) for k, v in TASK_ENTRY_OPTIONS.items())),
            seal=dict(type='raw'))),
        host_check=dict(type='dict', options=host_check_options()),
        gpu_strict=dict(type='bool', default=False),
        allow_host_network=dict(type='bool', default=False),
        allow_privileged=dict(type='bool', default=False),
        log_drivers=dict(type='list', elements='str', choices=list(LOG_DRIVERS), default=list(LOG_DRIVERS)),
        log_driver_map=dict(type='dict', default=dict(DEFAULT_LOG_DRIVER_MAP)),
        aws_logs=dict(type='bool', default=False),
        log_addresses=dict(type='list', elements='str', default=[]),
        allowed_roles=dict(type='list', elements='str'),
        allowed_capabilities=dict(type='list', elements='str', default=[]),
        allowed_devices=dict(type='list', elements='str', default=[]),
        allowed_security_options=dict(type='list', elements='str', default=[]),
        nfs_servers=dict(type='list', elements='str', default=[]),
        allow_host_namespaces=dict(type='bool', default=False),
        bind_paths=dict(type='list', elements='str'),
        attributes=dict(type='dict'),
    )
    spec.update(GPU_HOST_OPTIONS)
    spec.update(host_args())
    return spec


ECS_TASK_RULES = dict(
    mutually_exclusive=[('containers', 'task_definition'), ('tasks', 'name'), ('tasks', 'containers'),
                        ('tasks', 'task_definition')],
    required_if=[('gpu_discovery', 'static', ('gpu_devices',))],
)


def ecs_task_info_spec():
    spec = dict(cluster=dict(type='str'), name=dict(type='str'), gpus=dict(type='bool', default=False),
                gpu_discovery=GPU_HOST_OPTIONS['gpu_discovery'], gpu_devices=GPU_HOST_OPTIONS['gpu_devices'])
    spec.update(host_args(lock=False))
    return spec


# The import names of the libraries drover.fleet's modules need on a managed host (drover.fleet.host's
# drover_host_python_packages says which package brings each).
HOST_LIBRARIES = ['docker', 'pyroute2', 'github', 'pynvml']


def host_check_options():
    """What one look at the host asks for: host_info's own options, and ecs_task's host_check."""
    return dict(store_dir=dict(type='path'), store_dir_mode=dict(type='str'), image=dict(type='str'),
                libraries=dict(type='list', elements='str', default=list(HOST_LIBRARIES)))


def host_info_spec():
    spec = host_check_options()
    spec.update(host_args(lock=False))
    return spec


# The options of one pool, as `pool` takes them and as each entry of `pools` may (no defaults here: an option
# an entry leaves out takes the call's own value).
POOL_OPTIONS = dict(
    pool=dict(type='str'),
    hold_until=dict(type='str'),
    repository=dict(type='str'),
    organization=dict(type='str'),
    labels=dict(type='list', elements='str'),
    runner_group_id=dict(type='int'),
    profile=dict(type='dict', options=dict(
        name=dict(type='str', required=True),
        image=dict(type='str', required=True),
        cpus=dict(type='float'),
        memory=dict(type='int'),
        slots=dict(type='int', required=True),
        network_mode=dict(type='str', choices=['bridge', 'host', 'none'], default='bridge'),
        environment=dict(type='dict'),
        pull=dict(type='str', choices=['missing', 'always', 'never'], default='missing'),
        registry_auth=dict(type='dict', options=dict(
            registry=dict(type='str', required=True),
            username=dict(type='str', required=True),
            password=dict(type='str', required=True, no_log=True),
        )),
        capabilities=dict(type='dict', options=dict(
            add=dict(type='list', elements='str'),
            drop=dict(type='list', elements='str'),
        )),
        records=dict(type='dict', options=dict(
            keep=dict(type='int', default=5),
            max_age=dict(type='int'),
        )),
        gpus=dict(type='int', default=0),
        docker=dict(type='str', choices=['none', 'rootless', 'sysbox', 'privileged'], default='none'),
        caches=dict(type='list', elements='dict', options=dict(
            name=dict(type='str', required=True),
            path=dict(type='str', required=True),
            scope=dict(type='str', choices=['slot', 'pool'], default='slot'),
            mode=dict(type='str', choices=['rw', 'ro']),
            max_size=dict(type='int'),
            seed_from=dict(type='str'),
        )),
    )),
    warm=dict(type='int'),
    scale=dict(type='str', choices=['queued', 'fixed']),
    idle_timeout=dict(type='int'),
    name_prefix=dict(type='str'),
    machine_id=dict(type='str'),
    work_folder=dict(type='str'),
    state=dict(type='str', choices=['present', 'absent']),
    kill_busy=dict(type='bool'),
    purge_caches=dict(type='bool'),
    pull_requests_from_forks=dict(type='bool'),
    api_url=dict(type='str'),
    token=dict(type='str', no_log=True),
    app_id=dict(type='int'),
    app_private_key=dict(type='str', no_log=True),
    installation_id=dict(type='int'),
    github_timeout=dict(type='int'),
)
# One entry of `pools`: every option taken as it is given (check_pools checks it and names the entry in its
# message), but the GitHub secrets are declared no_log, so that Ansible hides them in the invocation it logs on
# the host (syslog, the journal) and returns.
POOL_ENTRY_OPTIONS = dict((k, dict(type='raw', no_log=v['no_log']) if 'no_log' in v else dict(type='raw'))
                          for k, v in POOL_OPTIONS.items())
POOL_DEFAULTS = dict(runner_group_id=1, warm=1, scale='queued', idle_timeout=300, name_prefix='drover', work_folder='_work',
                     state='present', kill_busy=False, purge_caches=False,
                     pull_requests_from_forks=False, api_url='https://api.github.com', github_timeout=15)


# The host's registry pull-through mirror for its pools' slot engines (gh_runner_slot's `mirror`, the runner_pools
# role's drover_pools_mirror).
MIRROR_OPTIONS = dict(
    enabled=dict(type='bool', default=False),
    upstream=dict(type='str', default='https://registry-1.docker.io'),
    username=dict(type='str'),
    password=dict(type='str', no_log=True),
    max_size=dict(type='int'),
    image=dict(type='str', default='drover.local/registry:1'),
)


def gh_runner_slot_spec():
    """gh_runner_slot's argument spec: a pool's options with their defaults, `pools` and the host's options."""
    spec = dict((k, dict(v, default=POOL_DEFAULTS[k]) if k in POOL_DEFAULTS else v) for k, v in POOL_OPTIONS.items())
    spec.update(
        pools=dict(type='list', elements='dict', options=POOL_ENTRY_OPTIONS),
        purge=dict(type='bool', default=False),
        allow_host_network=dict(type='bool', default=False),
        allow_privileged=dict(type='bool', default=False),
        metrics_path=dict(type='path'),
        mirror=dict(type='dict', options=MIRROR_OPTIONS),
        slot_subid_floor=dict(type='int'),
    )
    spec.update(GPU_HOST_OPTIONS)
    spec.update(host_args())
    return spec


GH_RUNNER_SLOT_RULES = dict(
    mutually_exclusive=[('pool', 'pools'), ('repository', 'organization'), ('token', 'app_id'),
                        ('token', 'app_private_key')],
    required_one_of=[('pool', 'pools')],
    required_if=[('gpu_discovery', 'static', ('gpu_devices',))],
)


def gh_runner_info_spec():
    spec = dict(pool=dict(type='str'))
    spec.update(host_args(lock=False))
    return spec


def task_netns_spec():
    spec = dict(
        name=dict(type='str', required=True),
        cluster=dict(type='str', default='default'),
        eni_mac=dict(type='str'),
        address=dict(type='str'),
        dhcp=dict(type='bool', default=False),
        gateway=dict(type='str'),
        routes=dict(type='list', elements='dict', options=dict(
            dst=dict(type='str', required=True),
            gateway=dict(type='str'),
        )),
        dns_servers=dict(type='list', elements='str'),
        credential_link=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=30),
        holder_image=dict(type='str', default='drover.local/busybox:1'),
        state=dict(type='str', choices=['present', 'absent'], default='present'),
    )
    spec.update(host_args())
    return spec


TASK_NETNS_RULES = dict(required_if=[('state', 'present', ('eni_mac',))])


def gpu_pin_spec():
    return dict(
        task=dict(type='str', required=True),
        container=dict(type='str'),
        count=dict(type='int'),
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        discovery=dict(type='str', choices=list(MODES), default='auto'),
        devices=dict(type='list', elements='str'),
        strict=dict(type='bool', default=False),
        store_path=dict(type='path', default=DEFAULT_STORE_PATH),
        lock_timeout=dict(type='int', default=LOCK_TIMEOUT),
    )


def gpu_info_spec():
    return dict(
        discovery=dict(type='str', choices=list(MODES), default='auto'),
        devices=dict(type='list', elements='str'),
        store_path=dict(type='path', default=DEFAULT_STORE_PATH),
    )


def values_at(data, path):
    """The values found under `path` (a tuple of keys) in `data`, going into every item of a list on the way."""
    if isinstance(data, list):
        return [v for item in data for v in values_at(item, path)]
    if not path:
        return [data]
    if not isinstance(data, dict) or path[0] not in data:
        return []
    return values_at(data[path[0]], path[1:])
