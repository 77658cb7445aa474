#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: ecs_task
short_description: Converge ECS-style container tasks on a Docker host
version_added: 0.1.0
description:
  - A task is a group of containers that live and die together, in the manner of an Amazon ECS task,
    run on the managed host's Docker engine.
  - Declare one task (O(name), O(containers) or O(task_definition), O(state)) or the whole set of a
    cluster's tasks (O(tasks) with O(purge)). The module starts what is missing, replaces a task whose
    declaration changed, stops and removes what is declared stopped or absent, and leaves the rest alone.
  - A task goes C(PENDING) -> C(RUNNING) -> C(STOPPED) and never back; running it again is a new run.
    When an essential container exits, the whole task stops with the reason
    C(container <name> exited (<code>)) and its containers are removed; the exit codes are kept.
  - Containers start in order, each after the ones it links to, takes volumes from or depends on
    (O(containers[].depends_on), ECS C(dependsOn) with C(START), C(COMPLETE), C(SUCCESS), C(HEALTHY)), and stop
    in the reverse order. A dependency that fails stops the task with a reason that names it, the condition
    and the container that waited for it. A converge waits for
    its tasks' orders at most the longest O(containers[].start_timeout) it needs; a task whose order is not done
    by then stays C(PENDING) and the next converge goes on with it, starting no container twice.
  - Whether a stopped task runs again is its O(restart) policy. The first stop of a streak runs again at
    once, in the same pass that reports it; a task that keeps stopping is held back before each further
    run, 30 s before the second, doubling up to 600 s.
  - Every container carries the labels C(drover.role=task), C(drover.task), C(drover.container),
    C(drover.cluster), C(drover.spec-hash) and C(drover.essential), enough to find the task again after
    the engine restarts or the store is lost. Containers without C(drover.role) are never touched.
  - What cannot be read back from the engine (run history, exit codes, the restart streak and hold)
    lives in the host store, O(store_path). Converges on one host are serialised by a host lock.
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.containers
  - drover.fleet.host
  - drover.fleet.host.LOCK
  - drover.fleet.gpu.HOST
  - drover.fleet.attributes
  - drover.fleet.attributes.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Plans every action and reports it; touches neither the engine nor the store.
  diff_mode:
    support: full
    details:
      - Returns each task's declared status, last status and containers before and after.
  idempotent:
    support: full
    details:
      - A task declared with O(restart=never) that stopped stays stopped; converging again changes nothing.
options:
  name:
    description:
      - The task's name, unique in its cluster. Containers are named C(<name>-<container>).
      - Defaults to the C(family) of O(task_definition).
      - Mutually exclusive with O(tasks).
    type: str
  cluster:
    description:
      - The cluster the task belongs to (a label; a host may run tasks of several clusters).
      - With O(tasks), the default cluster of every entry, and the cluster O(purge) applies to.
    type: str
    default: default
  task_definition:
    description:
      - An ECS task definition as AWS returns it (C(aws ecs describe-task-definition) output's
        C(taskDefinition)), accepted instead of O(containers).
      - Supported keys are C(family), C(containerDefinitions) (C(name), C(image), C(command), C(entryPoint),
        C(environment), C(essential), C(cpu), C(memory), C(portMappings), C(resourceRequirements) of type
        C(GPU), C(linuxParameters) with C(capabilities) (C(add), C(drop)) only, as O(containers[].capabilities)),
        C(networkMode) (C(default) is C(bridge)), C(taskRoleArn), C(executionRoleArn), and the task level (C(cpu),
        C(memory), C(volumes), C(placementConstraints), C(runtimePlatform), C(ipcMode), C(pidMode), as O(cpu),
        O(memory), O(volumes), O(placement_constraints), O(runtime_platform), O(ipc_mode), O(pid_mode)),
        C(enableFaultInjection) (V(false) only; V(true) is refused), C(ephemeralStorage) (accepted with a warning,
        it sizes Fargate storage only). C(proxyConfiguration) (App Mesh), C(inferenceAccelerators) (Elastic
        Inference) and C(trustedExecutionConfiguration) (Nitro enclaves) are refused by name. Keys that only describe a registered
        definition (C(taskDefinitionArn), C(revision), C(status), C(registeredAt), C(registeredBy),
        C(requiresAttributes), C(compatibilities), C(requiresCompatibilities), C(tags)) are accepted and
        ask for nothing.
      - Any other key with a non-empty value is refused with its name; it is never ignored in silence.
    type: dict
  network_mode:
    description:
      - The task's network. V(bridge) (the default), V(host) and V(none) are Docker's own.
      - V(host) (or C(networkMode) C(host) in O(task_definition)) is refused before anything changes unless
        O(allow_host_network) is set, since a task on the host's network sees the traffic of every task on the
        host.
      - V(awsvpc) gives the task a network namespace of its own, built before the first container starts;
        every container joins it (they reach each other on C(localhost), as on AWS), and it is torn down on
        every path that ends the task. It is held by a holder container, labelled with the task, and listed by
        C(ip netns) under the task's name (C(drover-<task>-<digest>)).
      - With O(awsvpc.eni_mac), the namespace is built around that hot-plugged ENI, as
        M(drover.fleet.task_netns) does. The namespace, its credential link and /30 are the task's own (its
        cluster and name together); the link carries traffic to and from the credentials endpoint only. No
        port is published (the ENI's address reaches the containers); O(containers[].port_mappings) are refused.
      - Without O(awsvpc), or without O(awsvpc.eni_mac) (a Fargate task definition on a host with no ENI),
        the holder is on the engine's default bridge network, which addresses and routes the namespace; the
        task's port mappings are published on the holder. The task reaches the credentials endpoint as a
        bridge task does (the holder's bridge address, which its containers share, carries the run's
        credential ID); it needs no credential link and no /30.
    type: str
    choices: [bridge, host, none, awsvpc]
  awsvpc:
    description:
      - The task network of O(network_mode=awsvpc), with the options of M(drover.fleet.task_netns).
      - Optional. Without O(awsvpc.eni_mac), only O(awsvpc.dns_servers) and O(awsvpc.holder_image) may be
        given; the options that only an ENI gives a meaning to (O(awsvpc.address), O(awsvpc.dhcp),
        O(awsvpc.gateway), O(awsvpc.routes), O(awsvpc.credential_link), O(awsvpc.wait_timeout)) are refused by
        name before anything changes.
      - A failure to build it stops the task with C(network setup failed) and leaves nothing behind.
      - A change to it replaces the task.
    type: dict
    suboptions:
      eni_mac:
        description:
          - The MAC address of the ENI the namespace is built around.
          - Without it, the namespace is held on the engine's bridge network (see O(network_mode)).
        type: str
      address:
        description:
          - The ENI's address with its prefix length (CIDR). With an ENI, this or O(awsvpc.dhcp) is required.
          - Mutually exclusive with O(awsvpc.dhcp).
        type: str
      dhcp:
        description: Address the ENI by DHCP (with an ENI, false when not given).
        type: bool
      gateway:
        description: The default gateway (with an ENI).
        type: str
      routes:
        description: Further routes (with an ENI), each a mapping with C(dst) (a CIDR) and C(gateway).
        type: list
        elements: dict
      dns_servers:
        description:
          - Name servers for the task's containers (the holder's, whose C(/etc/resolv.conf) every container of
            the task shares, and C(/etc/netns/<netns>/resolv.conf) for C(ip netns exec)).
          - Not given, the engine's own choice for a bridge-backed namespace (as for a bridge container).
        type: list
        elements: str
      credential_link:
        description:
          - Build the credential link (a veth pair on an allocated /30, and the route to 169.254.170.2/32).
          - With an ENI, true when not given. Without one it is refused.
        type: bool
      wait_timeout:
        description: Seconds to wait for the ENI to appear on the host; 30 when not given.
        type: int
      holder_image:
        description:
          - The image of the container that holds the task's network namespace; it must have C(sleep).
          - The drover.fleet.host role builds the default on the host (role variable C(drover_host_busybox_image)).
            An image the host lacks is pulled; one that cannot be fails the converge before anything changes on the
            host, with a message that names it.
        type: str
        default: drover.local/busybox:1
  cpu:
    description:
      - The task's CPU size (ECS C(cpu) of the task), as AWS takes it, CPU units (V(1024), V("1024"); 1024 is one
        vCPU) or vCPUs (V("1 vCPU"), V("0.5 vCPU")); from 128 (0.125 vCPU) to 196608 (192 vCPU).
      - With O(cpu) or O(memory) the task's containers run in one parent cgroup of their own (Docker's
        C(cgroup_parent)), C(/drover/<task>-<digest of cluster and task>) under the engine's cgroup root, whose CPU
        quota is O(cpu)/1024 CPUs (C(cpu.cfs_quota_us) over C(cpu.cfs_period_us) 100000 on cgroup v1, C(cpu.max)
        on v2). The collection makes it and writes its limits before the first container starts, and removes it on
        every path that ends the task (stop, absent, purge, a failed start); it is found again from cluster and
        task after the store is lost.
      - Needs the engine's C(cgroupfs) cgroup driver (v1 or v2); on the C(systemd) driver a sized task is refused
        before anything changes. The cgroup file system written is the managed host's own (a local engine).
      - Given both here and as C(cpu) in O(task_definition), the two must be equal.
    type: raw
  memory:
    description:
      - The task's memory size (ECS C(memory) of the task), as AWS takes it, MiB (V(2048), V("2048")) or GB
        (V("2 GB"), V("0.5GB"); 1 GB is 1024 MiB); at least 6.
      - The memory limit of the task's parent cgroup (see O(cpu)), C(memory.limit_in_bytes) on cgroup v1,
        C(memory.max) on v2. A container whose O(containers[].memory) or O(containers[].memory_reservation) is
        above it is refused, as on AWS.
    type: raw
  volumes:
    description:
      - The task's volumes (ECS C(volumes)), which O(containers[].mount_points) mount by name.
      - O(volumes[].host.source_path) binds that host path (checked against O(bind_paths)).
      - O(volumes[].host) without a path, a volume with no configuration, and
        O(volumes[].docker_volume_configuration) with O(volumes[].docker_volume_configuration.scope=task) are
        volumes of the task, C(drover-<task>-<digest>-<volume>) on the engine, labelled C(drover.scope=task),
        C(drover.cluster), C(drover.task), C(drover.volume), made before the first container of each run and
        removed with the run on every path that ends it.
      - O(volumes[].docker_volume_configuration.scope=shared) is the engine volume named O(volumes[].name); it
        outlives the task. With O(volumes[].docker_volume_configuration.autoprovision) it is made when missing
        (labelled C(drover.scope=shared)); without, it must be on the engine, else the task is refused before
        anything changes.
      - O(volumes[].efs_volume_configuration) becomes a volume of the task with the engine's C(local) driver and
        NFS options (C(type=nfs), C(o=addr=<server>,nfsvers=4.1,...), C(device=:<root_directory>)).
        C(transitEncryption ENABLED), access points and IAM authorization need the EFS mount helper and are
        refused. ECS's C(fsxWindowsFileServerVolumeConfiguration) (Windows only) and C(configuredAtLaunch) (EBS)
        are refused.
    type: list
    elements: dict
    suboptions:
      name:
        description: The volume's name in the task (letters, digits, C(_) and C(-)). ECS C(name).
        type: str
        required: true
      host:
        description: A host volume. ECS C(host).
        type: dict
        suboptions:
          source_path:
            description: The host path bound; unset, a volume of the task. ECS C(host.sourcePath).
            type: str
      docker_volume_configuration:
        description: An engine volume. ECS C(dockerVolumeConfiguration).
        type: dict
        suboptions:
          scope:
            description: V(task) (the default) lives and dies with each run; V(shared) outlives the task.
            type: str
            choices: [task, shared]
          autoprovision:
            description: With V(shared), make the volume when it is missing (else it must be there).
            type: bool
          driver:
            description: The volume driver; V(local) when unset.
            type: str
          driver_opts:
            description: The driver's options. ECS C(driverOpts).
            type: dict
          labels:
            description: Labels of the volume (not C(drover.*)).
            type: dict
      efs_volume_configuration:
        description:
          - An EFS file system, mounted over NFS 4.1 by the engine's C(local) driver. ECS C(efsVolumeConfiguration).
        type: dict
        suboptions:
          file_system_id:
            description:
              - The EFS file system ID (C(fs-...)), reached as C(<id>.efs.<region>.amazonaws.com) (O(aws_region),
                by default C(us-east-1)); or the name or address of an NFS server that stands in for it.
            type: str
            required: true
          root_directory:
            description: The exported directory mounted; V(/) when unset.
            type: str
          transit_encryption:
            description: Only V(DISABLED) is taken; V(ENABLED) is refused.
            type: str
          transit_encryption_port:
            description: Refused (it is used with transit encryption only).
            type: int
          authorization_config:
            description: Refused when it names an access point or enables IAM.
            type: dict
  placement_constraints:
    description:
      - ECS C(placementConstraints), at most 10. V(memberOf) expressions are evaluated against this host's
        attributes when a task is to run; a host that is not a member refuses the task, naming the expression,
        before anything changes. V(distinctInstance) is always met (a host is one instance).
      - "The attributes: C(ecs.os-type) (V(linux)), C(ecs.os-family) (V(LINUX)), C(ecs.cpu-architecture)
        (V(x86_64) or V(arm64)), and those of O(attributes) (C(ecs.instance-type), C(ecs.availability-zone),
        or any other; unknown unless declared there)."
      - "The expressions of ECS's cluster query language with the subject C(attribute:<name>):
        C(attribute:n == v), C(!=), C(in [a, b]), C(not in [a, b]), C(exists), C(!exists), C(=~ regex) (the whole
        value), C(!~), with C(and), C(or), C(not) and parentheses. Other subjects (C(ec2InstanceId), C(task:group)...)
        describe a fleet and are refused."
    type: list
    elements: dict
    suboptions:
      type:
        description: The constraint's type.
        type: str
        choices: [memberOf, distinctInstance]
        required: true
      expression:
        description: The expression, with V(memberOf).
        type: str
  runtime_platform:
    description:
      - ECS C(runtimePlatform), checked against the host when a task is to run.
    type: dict
    suboptions:
      cpu_architecture:
        description: V(X86_64) (a host whose machine is C(x86_64)) or V(ARM64) (C(aarch64)).
        type: str
        choices: [X86_64, ARM64]
      operating_system_family:
        description: V(LINUX); Windows families are refused by name.
        type: str
  ipc_mode:
    description:
      - ECS C(ipcMode). V(host) gives the containers the host's IPC namespace (refused unless
        O(allow_host_namespaces)); V(task) one IPC namespace shared by the task's containers (the first one's,
        made shareable); V(none) a private one without C(/dev/shm).
    type: str
    choices: [host, task, none]
  pid_mode:
    description:
      - ECS C(pidMode). V(host) gives the containers the host's process namespace (refused unless
        O(allow_host_namespaces)); V(task) one process namespace shared by the task's containers (the first
        one's).
    type: str
    choices: [host, task]
  state:
    description:
      - V(running) starts the task if it has no run going; V(stopped) stops it and keeps its record;
        V(absent) stops it and removes every trace of it, the store record included.
      - V(healthy) is V(running), after which the converge waits until the task is C(HEALTHY) (every essential
        container with a O(containers[].health_check) passed it), at most O(healthy_wait_timeout) seconds; it fails,
        naming the task and its containers' health, when the wait runs out, when the task turns C(UNHEALTHY) or
        when it is not C(RUNNING). A task with no essential container with a health check is refused.
    type: str
    choices: [running, healthy, stopped, absent]
    default: running
  healthy_wait_timeout:
    description:
      - With O(state=healthy), how many seconds the converge waits at most for the task to become C(HEALTHY).
      - V(300) when not given.
    type: int
  task_cleanup_wait:
    description:
      - Seconds a task that stopped on its own (an essential container exited or turned unhealthy) and does not run
        again at once keeps its stopped containers, for C(docker logs), C(docker inspect) or C(docker cp) of what it
        left, as the ECS agent's C(ECS_ENGINE_TASK_CLEANUP_WAIT_DURATION) does. Its network and task level (volumes,
        parent cgroup) stay with them; its GPUs and credentials go at once. They go once the time has passed (at
        the first converge after it), when its restart policy runs it again, or when it is declared stopped, absent
        or changed.
      - V(0) (the default), its containers go when it stops; its last output is kept in any case
        (C(containers[].last_output) of RV(task) and RV(tasks)).
    type: int
    default: 0
  metrics_path:
    description:
      - A directory, such as node_exporter's textfile collector's. After each converge (not in check mode) the module
        writes C(drover_tasks_<cluster>.prom) there whole (a temporary file renamed over the old one, mode 0644), one
        for each cluster of the call, with its tasks by last status and health, its held tasks, the pass's time, and
        the cluster's counters kept in the store (task runs started, stops, holds), which never go down.
      - A file that cannot be written is a warning; the converge is done all the same.
    type: path
  stop_reason:
    description: The reason recorded when this converge stops the task; C(Task stopped) when not given. At most 255 characters, as ECS's StopTask takes.
    type: str
  restart:
    description:
      - V(never) runs the task once (an ECS RunTask); once C(STOPPED) it stays so.
      - V(on-failure) runs it again after it stopped for any reason other than an essential container
        exiting with code 0.
      - V(always) runs it again whenever it stopped by itself (a service of one).
      - The first stop of a streak runs again at once, in the same pass. After that, a new run waits for the
        hold of the task's streak of stops (30 s before the second run, then 60, 120, 240, 480, then 600 s). A
        run that lasted 600 s or more before it stopped starts a new streak.
      - A container's O(containers[].restart_policy) joins it, so that the task runs again after that container's
        exit (unless its code is ignored), whatever O(restart) says.
      - A task stopped by its health checks (C(Task failed container health checks)) counts as a failure.
    type: str
    choices: [never, on-failure, always]
    default: never
  pull:
    description:
      - V(missing) pulls an image that is not on the host; V(always) pulls at the start of every run;
        V(never) fails the run with C(image pull failed) when the image is missing.
    type: str
    choices: [missing, always, never]
    default: missing
  registry_auth:
    description: Credentials for pulls from one registry.
    type: dict
    suboptions:
      registry:
        description: The registry host (and port) whose images these credentials pull, as in the image reference.
        type: str
        required: true
      username:
        description: The user name (with O(registry_auth.password), unless O(registry_auth.ecr)).
        type: str
      password:
        description: The password or token. Never logged or returned.
        type: str
      ecr:
        description:
          - Pull from O(registry_auth.registry) with a token from ECR C(GetAuthorizationToken), made as the task's
            O(execution_role_arn) (assumed through STS with the host's own credentials) or, without one, as the
            host itself, instead of O(registry_auth.username) and O(registry_auth.password).
          - Only for an ECR registry (C(<account>.dkr.ecr.<region>.amazonaws.com)), whose account the token is
            asked for and which alone is handed it; any other O(registry_auth.registry) is refused.
          - Images on an ECR registry are pulled this way with or without this option. The token is never logged
            or returned. Needs C(boto3) on the host.
        type: bool
        default: false
  task_role_arn:
    description:
      - The task's IAM role, an ARN or (as ECS takes it) a role name, which is the role of that name in the account of
        the host's credentials. At each run's start a credential ID is registered for it in the host store,
        each container gets C(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/<credID>),
        C(AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.2/v2/credentials/<credID>) and
        C(AWS_CONTAINER_AUTHORIZATION_TOKEN), the task's token, which the AWS SDKs send to the credentials
        endpoint (on a copy of its environment), and the labels C(drover.task-role), C(drover.cred-id) and
        C(drover.cred-key). The registration is removed on every path that ends the task, and restored from
        the labels when the task is adopted.
      - The token is made from the registration with the host key, C(credentials.key) next to O(store_path)
        (made once, mode 0600); it is never returned, logged or stored. See C(docs/credentials.md).
    type: str
  cred_id:
    description:
      - The credential ID to register for O(task_role_arn); by default a random one for each run.
      - An ID names one task on the host; one registered to another task is refused before anything changes.
    type: str
  revision:
    description:
      - The revision of the service this task is an instance of (1 to 64 letters, digits, C(.), C(_), C(-)), kept as
        the label C(drover.revision) and read back by M(drover.fleet.ecs_task_info). Part of what makes two runs the
        same. M(drover.fleet.service_placement) gives it; a task of your own has no need of it.
    type: str
  execution_role_arn:
    description:
      - The execution role. Images on an ECR registry (or the registry of O(registry_auth) with
        O(registry_auth.ecr)) are pulled with an ECR token got as this role; other pulls use O(registry_auth) or
        the engine's own credentials. With O(aws_logs), containers that log with V(awslogs) log as this role.
    type: str
  aws_region:
    description:
      - The AWS region of the STS and ECR calls for ECR pulls, when the registry's host name does not say it;
        by default C(us-east-1).
    type: str
  aws_endpoint_url:
    description:
      - An endpoint URL for those STS and ECR calls other than AWS's own (a VPC endpoint, or a test server).
    type: str
  gpu_strict:
    description: Make a short GPU ledger fail the task's start (C(container start failed)) instead of running without GPUs.
    type: bool
    default: false
  allow_host_network:
    description:
      - The host's policy for O(network_mode=host). Unset, a task declared to run on the host's network is
        refused (the message names the field) and nothing changes; stopping or removing one is always allowed.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: bool
    default: false
  allow_privileged:
    description:
      - The host's policy for O(containers[].privileged) (ECS C(privileged)). Unset, a task with a privileged
        container is refused (the message names the field) and nothing changes.
      - So is a task privileged in all but name, unless the host lists what it asks for (O(allowed_capabilities),
        O(allowed_devices), O(allowed_security_options), O(nfs_servers)), a capability beyond the engine's
        default set, a host device, a security option other than V(no-new-privileges) (V(seccomp=unconfined),
        V(apparmor=unconfined), V(systempaths=unconfined), V(label=disable), or a profile or label of the host's
        that may be unconfined), a volume of the local driver that mounts a host path or device.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: bool
    default: false
  log_drivers:
    description:
      - The log drivers this host allows for O(containers[].log_configuration) (ECS C(logConfiguration)); a task
        asking for another one is refused. An empty list allows none.
    type: list
    elements: str
    choices: [json-file, local, syslog, journald, gelf, fluentd, none]
    default: [json-file, local, syslog, journald, gelf, fluentd, none]
  log_driver_map:
    description:
      - Log drivers this host cannot serve, and the driver each becomes (its options dropped), with a warning when
        the task's containers are made. By default V(awslogs) and V(splunk) become V(local).
    type: dict
    default: {awslogs: local, splunk: local}
  aws_logs:
    description:
      - This host has AWS access for logs. True, V(awslogs) is served with the engine's own C(awslogs) driver,
        whatever O(log_driver_map) and O(log_drivers) say; false, it is mapped as O(log_driver_map) says.
      - The container's options are ECS's (C(awslogs-group), C(awslogs-region), C(awslogs-stream-prefix),
        C(awslogs-create-group), C(awslogs-endpoint), C(awslogs-datetime-format), C(awslogs-multiline-pattern),
        C(mode), C(max-buffer-size)); the stream is C(<prefix>/<container>/<task name>), the region and endpoint
        default to O(aws_region) and O(aws_endpoint_url).
      - A task with an execution role logs with that role's credentials, which the engine fetches from the host's
        credentials endpoint (the C(drover-credentials) service of the host role, which must run) under a random
        credential ID served to the host alone; a task without one logs with the engine's own AWS credentials.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: bool
    default: false
  allowed_capabilities:
    description:
      - The host's policy for O(containers[].capabilities) C(add) (ECS C(linuxParameters.capabilities.add))
        without O(allow_privileged), the capabilities a task may add beyond the engine's default set (C(AUDIT_WRITE),
        C(CHOWN), C(DAC_OVERRIDE), C(FOWNER), C(FSETID), C(KILL), C(MKNOD), C(NET_BIND_SERVICE), C(NET_RAW),
        C(SETFCAP), C(SETGID), C(SETPCAP), C(SETUID), C(SYS_CHROOT)). Any other (C(SYS_ADMIN), C(SYS_MODULE),
        C(DAC_READ_SEARCH), C(NET_ADMIN), C(SYS_TIME), C(ALL)...) reaches past the container; a task adding one
        not listed is refused (the message names the field) and nothing changes.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
    default: []
  allowed_devices:
    description:
      - The host's policy for O(containers[].devices) (ECS C(linuxParameters.devices)) without O(allow_privileged),
        shell-style patterns of the host devices a task may be given (V(/dev/dri/renderD*), V(/dev/neuron*)). A
        host device is what the host keeps behind it (V(/dev/sda) is its disk, V(/dev/mem) its memory); a task
        naming one not listed is refused and nothing changes.
      - Without O(allow_privileged), a volume of the local driver with
        O(volumes[].docker_volume_configuration.driver_opts) is likewise only a V(tmpfs) or an V(nfs) export of one
        of O(nfs_servers).
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
    default: []
  allowed_security_options:
    description:
      - The host's policy for O(containers[].docker_security_options) (ECS C(dockerSecurityOptions)) without
        O(allow_privileged), the options, exactly as a task gives them, that a task may set besides
        V(no-new-privileges), the only one that confines a container further whatever the host. Any other may
        lift a confinement (V(seccomp=unconfined), V(systempaths=unconfined), V(label=disable), or an AppArmor
        profile or SELinux label of the host's that is unconfined); list the profiles and labels this host's
        operator knows (V(apparmor=docker-strict), V(label=type:svirt_apache_t)). A task setting one not listed
        is refused (the message names the field) and nothing changes.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
    default: []
  nfs_servers:
    description:
      - The NFS servers a task's volumes may mount from (the local driver's V(nfs) C(addr=), or an EFS volume whose
        C(fileSystemId) names a server rather than an EFS file system ID). The engine mounts them as root from the
        host's network, so an export that trusts the host trusts the task. A task naming another is refused and
        nothing changes; so are the V(nfs) options C(mountaddr) and C(clientaddr).
      - An EFS file system ID (V(fs-...)) is not checked here; it is mounted the same way, as root from the
        host's network, so a task may mount any EFS file system whose mount targets admit this host. Keep the
        host's security groups and the file systems' access points to what its tasks may read.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
    default: []
  allowed_roles:
    description:
      - The host's policy for O(task_role_arn) and O(execution_role_arn) (ECS C(taskRoleArn),
        C(executionRoleArn)), shell-style patterns (V(arn:aws:iam::123456789012:role/app-*)) of the roles a task
        may take. A declared ARN must match an ARN pattern, a bare role name (a role of the host's account) a
        pattern without C(arn:). A task naming another role is refused (the message names the field) and
        nothing changes; stopping or removing one is always allowed.
      - Unset, a task may name any role the host's credentials can assume, and so can whoever writes the
        declarations; set it on a host whose tasks come from more than one team.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
  log_addresses:
    description:
      - The host's policy for where a container's logs may be sent from the host (ECS C(logConfiguration)), the
        addresses, exactly as a task gives them, that the V(syslog) (C(syslog-address)), V(gelf)
        (C(gelf-address)) and V(fluentd) (C(fluentd-address)) drivers may send to, and V(awslogs) endpoints
        (C(awslogs-endpoint)) other than O(aws_endpoint_url). These drivers send from the host's network, around
        an awsvpc task's isolation, and can write into the host's own logs.
      - A driver given no address sends to its default, which must be listed too (V(unix:///dev/log) for
        V(syslog), the host's syslog; V(tcp://127.0.0.1:24224) for V(fluentd)); V(gelf) needs an address.
        Empty (the default), a task using one of these drivers is refused (the message names the field) and
        nothing changes; V(json-file), V(local), V(journald), V(none), V(awsfirelens) and V(awslogs) to AWS need
        nothing here.
      - An address that reaches the collection's own sockets (a task's log router, under C(/run/drover)), read
        as the engine reads it, is refused even when listed. The options that name an address are never taken
        as secret options.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
    default: []
  allow_host_namespaces:
    description:
      - The host's policy for O(ipc_mode=host) and O(pid_mode=host) (ECS C(ipcMode), C(pidMode)). Unset, a task
        declared to run in the host's IPC or process namespace is refused (the message names the field) and
        nothing changes; a container there sees the host's shared memory or every process of the host.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: bool
    default: false
  bind_paths:
    description:
      - The host's policy for host binds (O(volumes[].host.source_path), ECS C(host.sourcePath)), the host path
        prefixes a bind may be under (a prefix is a whole path component, V(/srv) allows C(/srv/data), not
        C(/srv2)). Unset, any absolute path. A path with a C(..) component is always refused, and so is an empty
        prefix.
      - A path is checked as the engine will bind it, its symbolic links resolved (a link under a prefix that
        points elsewhere is refused), and against the prefixes resolved the same way.
      - A task binding a path outside them is refused (the message names the field) and nothing changes.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: list
    elements: str
  attributes:
    description:
      - This host's attributes, for O(placement_constraints) (ECS C(attribute:<name>)), for example
        C(ecs.instance-type), C(ecs.availability-zone), or attributes of your own. C(ecs.os-type) and
        C(ecs.cpu-architecture) are the host's own and cannot be declared otherwise.
      - Not an option of the entries of O(tasks); it is the host's, for the whole call.
    type: dict
  tasks:
    description:
      - A set of task declarations, each with the options O(name), O(cluster), O(containers),
        O(task_definition), O(network_mode), O(awsvpc), O(state), O(stop_reason), O(restart), O(pull), O(registry_auth),
        O(task_role_arn), O(cred_id), O(revision), O(execution_role_arn), O(cpu), O(memory), O(volumes),
        O(placement_constraints), O(runtime_platform), O(ipc_mode), O(pid_mode). Options given at the top level
        are the defaults (but not the task-level O(cpu), O(memory), O(volumes), O(placement_constraints),
        O(runtime_platform), O(ipc_mode), O(pid_mode), which are given in each entry).
      - The same task declared twice is one task; a stop or removal wins over a start.
      - Each entry is checked as the top-level options are, and a message names the entry (C(tasks[2].state...)).
        Its registry password (O(tasks[].registry_auth.password)) is hidden as the top-level one is, in the
        invocation Ansible logs on the host (syslog or the journal) and in the module's output.
    type: list
    elements: dict
    suboptions:
      name:
        description: As O(name).
        type: raw
      cluster:
        description: As O(cluster); by default the top-level O(cluster).
        type: raw
      containers:
        description: As O(containers).
        type: raw
      task_definition:
        description: As O(task_definition).
        type: raw
      network_mode:
        description: As O(network_mode); by default the top-level O(network_mode).
        type: raw
      awsvpc:
        description: As O(awsvpc).
        type: raw
      state:
        description: As O(state); by default the top-level O(state).
        type: raw
      stop_reason:
        description: As O(stop_reason).
        type: raw
      restart:
        description: As O(restart); by default the top-level O(restart).
        type: raw
      pull:
        description: As O(pull); by default the top-level O(pull).
        type: raw
      registry_auth:
        description: As O(registry_auth); by default the top-level O(registry_auth).
        type: dict
        suboptions:
          registry:
            description: As O(registry_auth.registry).
            type: raw
          username:
            description: As O(registry_auth.username).
            type: raw
          password:
            description: As O(registry_auth.password). Never logged or returned.
            type: raw
          ecr:
            description: As O(registry_auth.ecr).
            type: raw
      task_role_arn:
        description: As O(task_role_arn).
        type: raw
      execution_role_arn:
        description: As O(execution_role_arn).
        type: raw
      cred_id:
        description: As O(cred_id).
        type: raw
      revision:
        description: As O(revision).
        type: raw
      cpu:
        description: As O(cpu).
        type: raw
      memory:
        description: As O(memory).
        type: raw
      volumes:
        description: As O(volumes).
        type: raw
      placement_constraints:
        description: As O(placement_constraints).
        type: raw
      runtime_platform:
        description: As O(runtime_platform).
        type: raw
      ipc_mode:
        description: As O(ipc_mode).
        type: raw
      pid_mode:
        description: As O(pid_mode).
        type: raw
  purge:
    description:
      - With O(tasks), stop and remove every task of O(cluster) on the host that O(tasks) does not declare.
    type: bool
    default: false
  purge_keep:
    description:
      - With O(purge), the services whose instances purge leaves alone - each C(service) and its C(cluster) (by default
        C(default)) - the tasks C(<service>-<index>) of that cluster. C(drover.fleet.converge)'s first pass uses it -
        the services' instances are placed after it, and only a host whose share changes gets a second pass.
      - A declared task with the name of one of those instances is refused, and nothing changes.
    type: list
    elements: dict
    suboptions:
      cluster:
        description: The service's cluster.
        type: str
      service:
        description: The service's name.
        type: str
        required: true
  look:
    description:
      - After the pass, look at the whole host as M(drover.fleet.ecs_task_info) does (every task of every cluster
        with its C(revision) and C(health_checked), C(capacity), C(service_revisions)) and return it as RV(look),
        in the same module run. C(drover.fleet.converge) places the services from it.
    type: dict
    suboptions:
      gpus:
        description: Count the host's GPUs into the capacity, as M(drover.fleet.ecs_task_info)'s O(drover.fleet.ecs_task_info#module:gpus).
        type: bool
        default: false
  service_revisions:
    description:
      - The revision records of services to keep in the host store, as M(drover.fleet.service_placement) hands them
        to the host (its RV(drover.fleet.service_placement#module:revisions)) - each C(cluster), C(service),
        C(revision), C(number), C(status) (C(in_progress), C(completed), C(failed), C(replaced)), C(rollback_of),
        C(generation), C(declaration) (a task without its registry password; one with a password is refused) and
        C(seal).
      - C(number), C(rollback_of) and C(generation) are whole numbers below 2**31; one out of bounds is refused,
        naming the field, and nothing changes.
      - Each service named then holds these records and no other; written after the pass, not in check mode.
        The records are the controller's bookkeeping - writing them is not a change of what the host runs
        (C(changed) stays as the tasks leave it), and RV(service_revisions_written) says whether a record changed.
    type: list
    elements: dict
    suboptions:
      cluster:
        description: The service's cluster.
        type: raw
      service:
        description: The service's name.
        type: raw
      revision:
        description: The revision (the digest of the service's task).
        type: raw
      number:
        description: Its number (1, 2...), as the recap tells it.
        type: raw
      status:
        description: Where its deployment stands.
        type: raw
      rollback_of:
        description: The number of the failed revision it is rolling back (or rolled back), else null.
        type: raw
      generation:
        description:
          - Which change of the service's records this record is of (every change takes the next number); where
            hosts hold a revision differently, the highest wins.
        type: raw
      declaration:
        description: The revision's task - the keys of an entry of O(tasks) that a service declares.
        type: dict
        suboptions:
          name:
            description: As O(tasks[].name).
            type: raw
          cluster:
            description: As O(tasks[].cluster).
            type: raw
          containers:
            description: As O(tasks[].containers).
            type: raw
          task_definition:
            description: As O(tasks[].task_definition).
            type: raw
          network_mode:
            description: As O(tasks[].network_mode).
            type: raw
          awsvpc:
            description: As O(tasks[].awsvpc).
            type: raw
          state:
            description: As O(tasks[].state).
            type: raw
          stop_reason:
            description: As O(tasks[].stop_reason).
            type: raw
          restart:
            description: As O(tasks[].restart).
            type: raw
          pull:
            description: As O(tasks[].pull).
            type: raw
          registry_auth:
            description: As O(tasks[].registry_auth), without its password.
            type: dict
            suboptions:
              registry:
                description: As O(registry_auth.registry).
                type: raw
              username:
                description: As O(registry_auth.username).
                type: raw
              password:
                description: Refused - a registry password is never stored. Never logged or returned.
                type: raw
              ecr:
                description: As O(registry_auth.ecr).
                type: raw
          task_role_arn:
            description: As O(tasks[].task_role_arn).
            type: raw
          execution_role_arn:
            description: As O(tasks[].execution_role_arn).
            type: raw
          cred_id:
            description: As O(tasks[].cred_id).
            type: raw
          revision:
            description: As O(tasks[].revision).
            type: raw
          cpu:
            description: As O(tasks[].cpu).
            type: raw
          memory:
            description: As O(tasks[].memory).
            type: raw
          volumes:
            description: As O(tasks[].volumes).
            type: raw
          placement_constraints:
            description: As O(tasks[].placement_constraints).
            type: raw
          runtime_platform:
            description: As O(tasks[].runtime_platform).
            type: raw
          ipc_mode:
            description: As O(tasks[].ipc_mode).
            type: raw
          pid_mode:
            description: As O(tasks[].pid_mode).
            type: raw
      seal:
        description:
          - The controller's seal over the record's other fields (an HMAC under a key that only the controller
            holds), kept as it is given. M(drover.fleet.service_placement) takes back only records it sealed, from
            the hosts that declare the service.
        type: raw
  host_check:
    description:
      - Look at the host first, as M(drover.fleet.host_info) does (the engine of O(docker_host), the store
        directory of O(store_path)), in the same module run.
      - On a host that lacks something, nothing is converged and nothing changes; RV(host) says what it lacks
        (the C(drover.fleet.converge) playbook then prepares the host and calls again). On a ready host the
        converge goes on as without this option.
    type: dict
    suboptions:
      store_dir:
        description: The store's directory, as in M(drover.fleet.host_info); by default that of O(store_path).
        type: path
      store_dir_mode:
        description: The mode it must have, in octal, as in M(drover.fleet.host_info).
        type: str
      image:
        description: An image the engine must have (the netns holder image).
        type: str
      libraries:
        description: The import names of the Python libraries the module interpreter must find.
        type: list
        elements: str
        default: [docker, pyroute2, github, pynvml]
notes:
  - Registry passwords are never written to the module's output, the store, a label or a log.
  - Containers run without the C(NET_RAW) capability unless they add it back (O(containers[].capabilities)); the
    netns holder of an awsvpc task runs without it too.
seealso:
  - module: drover.fleet.ecs_task_info
'''

EXAMPLES = r'''
- name: Run a one-off task
  drover.fleet.ecs_task:
    name: hello
    containers:
      - name: main
        image: drover.local/busybox:1
        command: [sh, -c, "echo hello; sleep 3600"]
        memory: 64
        cpu: 256

- name: A web service of one, restarted whenever it stops
  drover.fleet.ecs_task:
    name: web
    cluster: prod
    restart: always
    containers:
      - name: httpd
        image: drover.local/busybox:1
        command: [httpd, -f, -p, "8080"]
        port_mappings:
          - container_port: 8080
            host_port: 18080

- name: Bring an ECS task definition as it is
  drover.fleet.ecs_task:
    task_definition: "{{ lookup('file', 'web-td.json') | from_json }}"

- name: Converge the cluster's whole set, removing tasks no longer declared
  drover.fleet.ecs_task:
    cluster: prod
    purge: true
    tasks: "{{ drover_tasks }}"

- name: Converge the set only on a host that has what it needs (drover.fleet.converge's first pass)
  drover.fleet.ecs_task:
    cluster: prod
    purge: true
    tasks: "{{ drover_tasks }}"
    host_check:
      store_dir_mode: "0700"
      image: drover.local/busybox:1
  register: first

- name: Say what the host lacks, where it lacks something
  ansible.builtin.debug:
    msg: "{{ first.host.needs }}"
  when: not first.host.ready

- name: An awsvpc task around a hot-plugged ENI
  drover.fleet.ecs_task:
    name: api
    network_mode: awsvpc
    awsvpc:
      eni_mac: "02:00:c6:12:00:10"
      address: 198.18.7.2/24
      gateway: 198.18.7.1
    containers:
      - name: app
        image: drover.local/busybox:1
        command: [httpd, -f, -p, "80"]

- name: An awsvpc task on a host with no ENI (its namespace on the engine's bridge, port 8080 published)
  drover.fleet.ecs_task:
    name: shop
    network_mode: awsvpc
    containers:
      - name: app
        image: drover.local/busybox:1
        command: [httpd, -f, -p, "8080"]
        port_mappings:
          - container_port: 8080
      - name: side
        image: drover.local/busybox:1
        command: [sh, -c, "while sleep 5; do wget -q -O - http://localhost:8080/ >/dev/null; done"]

- name: A sized task whose two containers share a volume of the task and one IPC namespace
  drover.fleet.ecs_task:
    name: pipeline
    cpu: 0.5 vCPU
    memory: 1 GB
    ipc_mode: task
    volumes:
      - name: scratch
    placement_constraints:
      - type: memberOf
        expression: attribute:ecs.cpu-architecture == x86_64
    containers:
      - name: producer
        image: drover.local/busybox:1
        command: [sh, -c, "date > /work/stamp; sleep 3600"]
        mount_points:
          - {source_volume: scratch, container_path: /work}
      - name: consumer
        image: drover.local/busybox:1
        command: [sh, -c, "sleep 3600"]
        mount_points:
          - {source_volume: scratch, container_path: /work, read_only: true}

- name: Stop a task with a reason
  drover.fleet.ecs_task:
    name: web
    cluster: prod
    state: stopped
    stop_reason: maintenance window
'''

RETURN = r'''
task:
  description: The task, when one task was declared (O(name)).
  returned: when O(tasks) is not given, unless O(host_check) found the host lacking something
  type: dict
  contains:
    name:
      description: The task's name.
      type: str
      sample: web
    cluster:
      description: The task's cluster.
      type: str
      sample: default
    last_status:
      description: C(PENDING), C(RUNNING) or C(STOPPED).
      type: str
      sample: RUNNING
    desired_status:
      description: C(RUNNING) or C(STOPPED).
      type: str
      sample: RUNNING
    stopped_reason:
      description: Why the last run stopped.
      type: str
      sample: container main exited (1)
    started_at:
      description: When the current or last run started (ISO 8601, UTC).
      type: str
      sample: '2026-12-02T14:22:28Z'
    stopped_at:
      description: When the last run stopped (ISO 8601, UTC).
      type: str
    restart:
      description: The restart policy.
      type: str
    streak:
      description: Stops in a row, which set the hold before the next run.
      type: int
    held_until:
      description: The next run waits until then (ISO 8601, UTC).
      type: str
    changed_fields:
      description:
        - When this pass replaces (or, in check mode, would replace) the task's containers because its declaration
          changed, the fields that changed, as C(containers[<name>].<option>) or a task option (C(network_mode),
          C(awsvpc)...). Only names, never values. In diff mode it is in the C(after) of the task too.
      type: list
      elements: str
      returned: when a changed declaration replaces the task
      sample: ['containers[httpd].memory', 'containers[httpd].health_check']
    network:
      description: The task network of an awsvpc task, in the shape M(drover.fleet.task_netns) returns it.
      type: dict
      returned: for awsvpc tasks that run
    health_status:
      description:
        - C(HEALTHY) when every essential container declared with a health check passes it, C(UNHEALTHY) when one
          of them fails it, C(UNKNOWN) otherwise (no such container, a check still starting, a task not running).
        - An essential container that turns unhealthy stops the task (C(Task failed container health checks)).
      type: str
      sample: HEALTHY
    containers:
      description: The containers of the current or last run.
      type: list
      elements: dict
      contains:
        name:
          description: The container's name in the task.
          type: str
        image:
          description: The image.
          type: str
        runtime_id:
          description: The Docker container ID.
          type: str
        last_status:
          description: C(PENDING), C(RUNNING) or C(STOPPED).
          type: str
        exit_code:
          description: The exit code, once stopped.
          type: int
        last_output:
          description:
            - The last lines a container that exited printed (stdout and stderr, at most 100 lines and 64 KiB, the
              newest), read before its containers are removed, with every value the container was given hidden
              as C(********) (its environment's values but its image's own, its log options'; values shorter than 4
              characters are left). Kept with the task's record until its next run; absent where it printed
              nothing, was stopped while running, or its log driver cannot be read back.
          type: str
          returned: when a container exited and printed something
        gpu_ids:
          description: The GPU UUIDs pinned to the container.
          type: list
          elements: str
        health_status:
          description:
            - C(HEALTHY) or C(UNHEALTHY) as the engine last ran its declared O(containers[].health_check);
              C(UNKNOWN) while it starts, when the container is not running, or without a declared check (an image's
              own C(HEALTHCHECK) does not count).
          type: str
        network_bindings:
          description:
            - Where the host publishes the running container's ports (ECS's C(networkBindings)), as the engine's
              listing shows them - a port mapped with O(containers[].port_mappings[].host_port) unset or V(0) is
              the free port the host picked. A port published on IPv4 and IPv6 is two entries. Empty for a
              container that is not running.
          type: list
          elements: dict
          contains:
            bind_ip:
              description: The host address the port is published on (V(0.0.0.0), V(::) or one address).
              type: str
            container_port:
              description: The container's port.
              type: int
            host_port:
              description: The host's port.
              type: int
            protocol:
              description: V(tcp), V(udp) or V(sctp).
              type: str
tasks:
  description:
    - Every task declared (and purged), in the shape of RV(task); empty when O(host_check) found the host
      lacking something.
  returned: when O(tasks) is given
  type: list
  elements: dict
look:
  description:
    - What O(look) found after the pass - C(tasks), C(capacity) and C(service_revisions), as
      M(drover.fleet.ecs_task_info) returns them. Absent when the GPUs could not be counted (a warning says why).
    - With O(purge_keep), an instance of those services that the host's settings now make otherwise than it runs
      (its revision's task, from the host's revision records, declared with the host's settings, has another spec -
      O(log_driver_map) or O(log_drivers) changed), or that they now refuse (O(log_drivers), O(allow_privileged),
      O(bind_paths) taken away), carries C(restated) - the fields that differ, or the refusal - and the placement
      gives its host a second pass, which starts it anew (or fails, naming the refusal).
  returned: with O(look)
  type: dict
service_revisions_written:
  description: Whether the pass changed a record of O(service_revisions) in the host store.
  returned: when O(service_revisions) is given, outside check mode
  type: bool
events:
  description:
    - One event per state change, for the C(drover.fleet.events) callback.
    - C(task.running); C(task.stopped) with C(reason); C(task.held) with C(until) and C(streak).
    - C(task.healthy) when the task's RV(task.health_status) turns C(HEALTHY); C(task.unhealthy), with the
      C(containers) that failed their check, when it turns C(UNHEALTHY) (before the C(task.stopped) it causes).
  returned: always
  type: list
  elements: dict
  sample:
    - {event: task.stopped, at: '2026-12-02T14:22:28Z', cluster: default, task: web,
       subject: task/default/web, reason: container main exited (1)}
host:
  description:
    - The look at the host of O(host_check), in the shape of M(drover.fleet.host_info)'s return values
      (C(ready), C(needs), C(engine), C(libraries_missing), C(store_dir), C(image), C(python)).
  returned: when O(host_check) is given
  type: dict
  sample: {ready: false, needs: [store_dir], libraries_missing: []}
ansible_facts:
  description: Facts about the host, set on it by Ansible.
  returned: success, unless O(host_check) found the host lacking something
  type: dict
  contains:
    drover_host_pools:
      description:
        - The runner pools the host holds (the store's, and those only runner containers of this store still
          name). The C(drover.fleet.runner_pools) role makes no drain pass where it declares no pool and this
          is empty.
      type: list
      elements: str
      sample: []
'''


from ansible.module_utils.basic import missing_required_lib

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module, require_docker
from ansible_collections.drover.fleet.plugins.module_utils.host.check import look
from ansible_collections.drover.fleet.plugins.module_utils.aws.model import BOTOCORE_IMPORT_ERROR, HAS_BOTOCORE
from ansible_collections.drover.fleet.plugins.module_utils.tasks.apply import TaskFailure, converge


def main():
    module = make_module(
        argument_spec=_argspecs.ecs_task_spec(),
        supports_check_mode=True,
        entries=('tasks',),
        **_argspecs.ECS_TASK_RULES
    )
    seen = None
    if module.params.get('host_check') is not None:
        seen = look(module.params)
        if not seen['ready']:
            # Nothing converged on a host that lacks something: the caller prepares it, then calls again.
            deferred = dict(changed=False, host=seen, events=[],
                            msg='the host lacks %s: no task was converged' % ', '.join(seen['needs']))
            if module.params.get('tasks') is not None:
                deferred['tasks'] = []
            module.exit_json(**deferred)
    require_docker(module)
    given = [module.params.get('task_definition')] + [t.get('task_definition') for t in module.params.get('tasks') or []
                                                      if isinstance(t, dict)]
    if not HAS_BOTOCORE and any(td is not None for td in given):
        module.fail_json(msg=missing_required_lib('botocore', reason='to check task_definition by AWS\'s model of ECS'),
                         exception=BOTOCORE_IMPORT_ERROR)
    try:
        result = converge(module.params, check_mode=module.check_mode, diff=module._diff)
    except TaskFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    for warning in result.pop('warnings', []):
        module.warn(warning)
    if module.params.get('tasks') is None:
        result['task'] = result.pop('tasks')[0]
    if seen is not None:
        result['host'] = seen
    module.exit_json(**result)


if __name__ == '__main__':
    main()
