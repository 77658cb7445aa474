# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Made by hack/gen-docs.py from plugins/module_utils/tasks/settings.py: change the table, then run it.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # ecs_task's containers: one entry per row of the table of container settings.
    DOCUMENTATION = r'''
options:
  containers:
    description:
    - The task's containers, started in this order.
    - Required with O(state=running) unless O(task_definition) is given.
    - At most 10, as in an ECS task definition. Each setting says the field of an ECS container definition it is; a change
      to any of them replaces the task's containers.
    type: list
    elements: dict
    suboptions:
      name:
        description:
        - The container's name in the task.
        - ECS C(name).
        type: str
        required: true
      image:
        description:
        - The image reference, for example V(drover.local/busybox:1).
        - ECS C(image).
        type: str
        required: true
      command:
        description:
        - The command, as a list of arguments (exec form). A plain string is refused, so that C(sh -c "a; b") is never
          split in a surprising place.
        - At most 64 KiB, as is O(containers[].entrypoint).
        - ECS C(command).
        type: raw
      entrypoint:
        description:
        - The entrypoint, as a list of arguments (exec form).
        - ECS C(entryPoint).
        type: raw
      environment:
        description:
        - Environment variables; values are turned into strings.
        - At most 64 KiB in all (the C(NAME=value) strings in UTF-8), the size of a whole ECS task definition.
        - ECS C(environment).
        type: dict
      essential:
        description:
        - When an essential container exits, the whole task stops.
        - ECS C(essential).
        type: bool
        default: true
      cpu:
        description:
        - CPU units, 1024 to one CPU, given to the container as relative CPU shares (as ECS does on EC2); from 2 to 262144.
        - V(0) or unset gives the engine's default.
        - ECS C(cpu).
        type: int
      memory:
        description:
        - The hard memory limit in MiB; at least 6 (the engine's minimum).
        - ECS C(memory).
        type: int
      memory_reservation:
        description:
        - The soft memory limit in MiB (Docker's C(--memory-reservation)); below O(containers[].memory) when both are
          given.
        - ECS C(memoryReservation).
        type: int
      port_mappings:
        description:
        - Published ports, with O(network_mode=bridge), or O(network_mode=awsvpc) without O(awsvpc.eni_mac) (then they
          are published on the task's network holder).
        - With O(network_mode=awsvpc), as AWS requires, O(containers[].port_mappings[].host_port) is left out (the port
          is published on the host port of the same number) or equal to O(containers[].port_mappings[].container_port);
          any other host port is refused. A port is mapped by one container of the task only (they share one network namespace).
        - ECS C(portMappings).
        type: list
        elements: dict
        suboptions:
          container_port:
            description:
            - The port inside the container; required unless O(containers[].port_mappings[].container_port_range) is given.
            - ECS C(containerPort).
            type: int
          host_port:
            description:
            - The port on the host; unset or V(0) picks a free one (with O(network_mode=awsvpc), the container port).
            - ECS C(hostPort).
            type: int
          protocol:
            description:
            - The protocol; V(tcp) when unset.
            - ECS C(protocol).
            type: str
            choices:
            - tcp
            - udp
          name:
            description:
            - A name of the port (ECS Service Connect); changes nothing on the host.
            - ECS C(name).
            type: str
          app_protocol:
            description:
            - The application protocol (ECS Service Connect); changes nothing on the host.
            - ECS C(appProtocol).
            type: str
          container_port_range:
            description:
            - 'A range of container ports, V(first-last), instead of O(containers[].port_mappings[].container_port) (without
              O(containers[].port_mappings[].host_port)): each port is published on a free host port with O(network_mode=bridge),
              as ECS picks a host port range, and on the same port with O(network_mode=awsvpc). At most 1024 ports a container.'
            - ECS C(containerPortRange).
            type: str
      gpu:
        description:
        - How many GPUs the container asks for (ECS C(resourceRequirements) of type C(GPU)). They are pinned to it in
          the host's GPU ledger before it starts (all or nothing), handed to it as O(gpu_delivery) says, reported as C(gpu_ids),
          and released on every path that ends the task.
        - When the ledger is short the container runs without GPUs and a warning says so, unless O(gpu_strict) is set.
        type: int
        default: 0
      capabilities:
        description:
        - Linux capabilities given to or taken from the engine's default set, as ECS's C(linuxParameters.capabilities)
          does, with ECS's names (V(NET_RAW), V(SYS_PTRACE), V(ALL)...).
        - Every container runs B(without) C(NET_RAW) (no raw or packet sockets, so no forged ARP or sniffing of the other
          containers on the bridge) unless O(containers[].capabilities.add) names it (or V(ALL)). C(ping) in a container
          needs it back, or an image whose C(ping) uses ICMP datagram sockets.
        - ECS C(linuxParameters.capabilities).
        type: dict
        suboptions:
          add:
            description:
            - Capabilities added (Docker's C(--cap-add)).
            - ECS C(add).
            type: list
            elements: str
          drop:
            description:
            - Capabilities dropped (Docker's C(--cap-drop)); V(NET_RAW) is dropped without being named here.
            - ECS C(drop).
            type: list
            elements: str
      mount_points:
        description:
        - Volumes of the task (ECS C(volumes)) mounted into the container (Docker binds).
        - ECS C(mountPoints).
        type: list
        elements: dict
        suboptions:
          source_volume:
            description:
            - The name of the task volume.
            - ECS C(sourceVolume).
            type: str
            required: true
          container_path:
            description:
            - Where it is mounted (an absolute path).
            - ECS C(containerPath).
            type: str
            required: true
          read_only:
            description:
            - Mount it read-only.
            - ECS C(readOnly).
            type: bool
      volumes_from:
        description:
        - Mount every volume of another container of the task (Docker's C(--volumes-from)); that container is started
          first.
        - ECS C(volumesFrom).
        type: list
        elements: dict
        suboptions:
          source_container:
            description:
            - The other container's name in the task.
            - ECS C(sourceContainer).
            type: str
            required: true
          read_only:
            description:
            - Mount them read-only.
            - ECS C(readOnly).
            type: bool
      links:
        description:
        - Other containers of the task this one reaches by name, each V(name) or V(name:alias) (Docker's C(--link)); with
          O(network_mode=bridge) only. They are started first (containers that need each other in a cycle are refused).
        - ECS C(links).
        type: list
        elements: str
      ulimits:
        description:
        - Resource limits (Docker's C(--ulimit)).
        - ECS C(ulimits).
        type: list
        elements: dict
        suboptions:
          name:
            description:
            - The limit.
            - ECS C(name).
            type: str
            required: true
            choices:
            - core
            - cpu
            - data
            - fsize
            - locks
            - memlock
            - msgqueue
            - nice
            - nofile
            - nproc
            - rss
            - rtprio
            - rttime
            - sigpending
            - stack
          soft_limit:
            description:
            - The soft limit.
            - ECS C(softLimit).
            type: int
            required: true
          hard_limit:
            description:
            - The hard limit, at least the soft one.
            - ECS C(hardLimit).
            type: int
            required: true
      user:
        description:
        - 'The user (and group) the command runs as: V(name), V(uid), V(uid:gid)...'
        - ECS C(user).
        type: str
      working_directory:
        description:
        - The working directory of the command.
        - ECS C(workingDirectory).
        type: str
      hostname:
        description:
        - The container's host name; not with O(network_mode=awsvpc), as on AWS.
        - ECS C(hostname).
        type: str
      dns_servers:
        description:
        - Name servers; not with O(network_mode=awsvpc), as on AWS.
        - ECS C(dnsServers).
        type: list
        elements: str
      dns_search_domains:
        description:
        - DNS search domains; not with O(network_mode=awsvpc).
        - ECS C(dnsSearchDomains).
        type: list
        elements: str
      extra_hosts:
        description:
        - Entries added to the container's C(/etc/hosts); not with O(network_mode=awsvpc).
        - ECS C(extraHosts).
        type: list
        elements: dict
        suboptions:
          hostname:
            description:
            - The host name.
            - ECS C(hostname).
            type: str
            required: true
          ip_address:
            description:
            - Its address.
            - ECS C(ipAddress).
            type: str
            required: true
      disable_networking:
        description:
        - Run the container without a network; not with O(network_mode=awsvpc).
        - ECS C(disableNetworking).
        type: bool
      docker_labels:
        description:
        - 'Labels of the container. Names that start with C(drover.) are the collection''s own (it reads them back to
          know its containers): one given here is left out, with a warning.'
        - ECS C(dockerLabels).
        type: dict
      privileged:
        description:
        - 'Run the container privileged: it gets every capability and every device of the host.'
        - Refused unless the host allows it (O(allow_privileged)).
        - ECS C(privileged).
        type: bool
      readonly_root_filesystem:
        description:
        - Mount the container's root file system read-only.
        - ECS C(readonlyRootFilesystem).
        type: bool
      docker_security_options:
        description:
        - Security options (Docker's C(--security-opt)), for example V(no-new-privileges), V(apparmor=PROFILE), V(label:type:T).
        - ECS C(dockerSecurityOptions).
        type: list
        elements: str
      system_controls:
        description:
        - Kernel parameters of the container's namespaces (Docker's C(--sysctl)).
        - ECS C(systemControls).
        type: list
        elements: dict
        suboptions:
          namespace:
            description:
            - The parameter, for example V(net.core.somaxconn).
            - ECS C(namespace).
            type: str
            required: true
          value:
            description:
            - Its value.
            - ECS C(value).
            type: str
            required: true
      pseudo_terminal:
        description:
        - Give the container a terminal (Docker's C(--tty)).
        - ECS C(pseudoTerminal).
        type: bool
      interactive:
        description:
        - Keep the container's standard input open (Docker's C(--interactive)).
        - ECS C(interactive).
        type: bool
      init_process_enabled:
        description:
        - Run an init process as PID 1 that forwards signals and reaps zombies (Docker's C(--init)).
        - ECS C(linuxParameters.initProcessEnabled).
        type: bool
      devices:
        description:
        - Host devices given to the container (Docker's C(--device)).
        - ECS C(linuxParameters.devices).
        type: list
        elements: dict
        suboptions:
          host_path:
            description:
            - The device on the host.
            - ECS C(hostPath).
            type: str
            required: true
          container_path:
            description:
            - Its path in the container; the host path when unset.
            - ECS C(containerPath).
            type: str
          permissions:
            description:
            - Of V(read), V(write), V(mknod); all three when unset.
            - ECS C(permissions).
            type: list
            elements: str
      shared_memory_size:
        description:
        - The size of C(/dev/shm) in MiB.
        - ECS C(linuxParameters.sharedMemorySize).
        type: int
      tmpfs:
        description:
        - tmpfs mounts (Docker's C(--tmpfs)).
        - ECS C(linuxParameters.tmpfs).
        type: list
        elements: dict
        suboptions:
          container_path:
            description:
            - Where it is mounted.
            - ECS C(containerPath).
            type: str
            required: true
          size:
            description:
            - Its size in MiB.
            - ECS C(size).
            type: int
            required: true
          mount_options:
            description:
            - Mount options, for example V(noexec), V(nosuid).
            - ECS C(mountOptions).
            type: list
            elements: str
      max_swap:
        description:
        - Swap the container may use, in MiB, on top of O(containers[].memory) (which it needs); V(0) means none.
        - ECS C(linuxParameters.maxSwap).
        type: int
      swappiness:
        description:
        - How readily the kernel swaps the container's memory, 0 to 100.
        - ECS C(linuxParameters.swappiness).
        type: int
      health_check:
        description:
        - 'The container''s health check (Docker''s C(HEALTHCHECK)), with ECS''s defaults: interval 30 s, timeout 5 s,
          3 retries, start period 0 s.'
        - ECS C(healthCheck).
        type: dict
        suboptions:
          command:
            description:
            - 'The check: V([CMD-SHELL, "curl -f http://localhost/"]) or V([CMD, exe, arg...]).'
            - ECS C(command).
            type: list
            elements: str
            required: true
          interval:
            description:
            - Seconds between checks, 5 to 300.
            - ECS C(interval).
            type: int
          timeout:
            description:
            - Seconds a check may take, 2 to 60.
            - ECS C(timeout).
            type: int
          retries:
            description:
            - Failures in a row that make the container unhealthy, 1 to 10.
            - ECS C(retries).
            type: int
          start_period:
            description:
            - Seconds after the start when failures do not count, 0 to 300.
            - ECS C(startPeriod).
            type: int
      restart_policy:
        description:
        - 'The container''s restart policy (ECS C(restartPolicy)). ECS restarts the container in place; here it joins
          the task''s O(restart): when the task stops because this container exited, with a code not in O(containers[].restart_policy.ignored_exit_codes),
          the task runs again (as with O(restart=always)), with the task''s backoff; with an ignored code the task''s
          O(restart) decides alone.'
        - Only on an essential container (the exit of one that is not essential does not stop the task).
        - ECS C(restartPolicy).
        type: dict
        suboptions:
          enabled:
            description:
            - Whether the policy applies.
            - ECS C(enabled).
            type: bool
            required: true
          ignored_exit_codes:
            description:
            - Exit codes that do not run the task again (at most 50).
            - ECS C(ignoredExitCodes).
            type: list
            elements: int
          restart_attempt_period:
            description:
            - 'Seconds, 60 to 1800 (V(300) when unset): a run that lasted this long before the container exited runs again
              at once and starts a new streak; one that ended sooner runs again after the backoff (30 s doubling to 600
              s).'
            - ECS C(restartAttemptPeriod).
            type: int
      stop_timeout:
        description:
        - Seconds between the stop signal and the kill when the task stops (the engine's C(StopTimeout)); 2 to 120.
        - Unset, a stopping task's container is killed at once.
        - ECS C(stopTimeout).
        type: int
      depends_on:
        description:
        - Other containers of the task this one waits for before it starts, each with the condition it waits for (ECS
          C(dependsOn)). The task's containers start in that order (and after the ones they link to or take volumes from);
          they stop in the reverse order, each with its O(containers[].stop_timeout).
        - 'V(START): the other container was started. V(COMPLETE): it exited, with any code. V(SUCCESS): it exited with
          code 0; any other code stops the task. V(HEALTHY): its O(containers[].health_check) passed.'
        - V(COMPLETE) and V(SUCCESS) name a container that is not essential; V(HEALTHY) one with a health check. A name
          that is not another container of the task, or containers that wait for each other in a cycle, are refused.
        - 'The other container''s O(containers[].start_timeout) bounds the wait: when it has not reached the condition
          that long after it started, the task stops with a reason that names it and the condition. A container that ran
          to completion stays exited: it is not started again, and its exit does not stop the task (it is not essential).'
        - ECS C(dependsOn).
        type: list
        elements: dict
        suboptions:
          container_name:
            description:
            - The other container's name in the task.
            - ECS C(containerName).
            type: str
            required: true
          condition:
            description:
            - What this container waits for.
            - ECS C(condition).
            type: str
            required: true
            choices:
            - START
            - COMPLETE
            - SUCCESS
            - HEALTHY
      start_timeout:
        description:
        - How long the containers that depend on this one (O(containers[].depends_on)) wait, from its start, for it to
          reach the condition they wait for, in seconds; V(180) (3 minutes, as ECS) when unset.
        - Kept with the container as the label C(drover.start-timeout).
        - ECS C(startTimeout).
        type: int
      repository_credentials:
        description:
        - 'Pull credentials for the container''s image from AWS Secrets Manager (ECS''s private registry authentication):
          the secret holds a JSON object with C(username) and C(password). It is read when the image is pulled, as the
          task''s O(execution_role_arn) (assumed through STS with the host''s credentials), which the task must have (as
          ECS requires: never as the host), in the region of its ARN (else O(aws_region)), through O(aws_endpoint_url)
          when set; the credentials serve that pull only and are never kept, logged or returned.'
        - A secret that cannot be read stops the task with a reason that names its ARN and AWS's error code. For this
          container's image it takes the place of O(registry_auth).
        - ECS C(repositoryCredentials).
        type: dict
        suboptions:
          credentials_parameter:
            description:
            - 'The secret: its ARN, or its name.'
            - ECS C(credentialsParameter).
            type: str
            required: true
      secrets:
        description:
        - 'Environment variables whose values are read from AWS when the task starts (ECS''s C(secrets)): an SSM Parameter
          Store parameter (its name, or its ARN; SecureString values decrypted) or a Secrets Manager secret (its ARN;
          with ECS''s suffix C(:json-key:version-stage:version-id) one key of a JSON secret, or a version of it).'
        - They are read as the task's O(execution_role_arn) (assumed through STS with the host's credentials), or as the
          host when there is none; an SSM name is read in O(aws_region), an ARN in its own region; O(aws_endpoint_url)
          is used when set. A secret that cannot be read stops the task with a reason that names it and AWS's error code;
          nothing of the task is left started.
        - 'A value goes only into the environment of this container (a secret wins over O(containers[].environment) and
          over O(containers[].environment_files), as ECS''s agent has it): never into results, diffs, events, labels,
          the store or logs. The task''s spec holds O(containers[].secrets[].value_from), not the value: a changed value_from
          replaces the task''s containers, a value changed in AWS does not (as on AWS; the next run of the task reads
          it).'
        - ECS C(secrets).
        type: list
        elements: dict
        suboptions:
          name:
            description:
            - The environment variable.
            - ECS C(name).
            type: str
            required: true
          value_from:
            description:
            - The SSM parameter (name or ARN) or the Secrets Manager secret (ARN, with the optional ECS suffix).
            - ECS C(valueFrom).
            type: str
            required: true
      environment_files:
        description:
        - 'Files of C(VARIABLE=VALUE) lines in S3 whose variables join the container''s environment when the task starts
          (ECS''s C(environmentFiles)): C(#) comments and blank lines are skipped, values are taken as they are. Read
          as O(containers[].secrets) are (the execution role, O(aws_endpoint_url)); a file that cannot be read, is over
          1 MiB or is not such lines stops the task with a reason that names it.'
        - O(containers[].environment) wins over a file, and a variable in two files takes its value from the first one
          listed (as ECS's agent merges them). At most 10 files.
        - ECS C(environmentFiles).
        type: list
        elements: dict
        suboptions:
          value:
            description:
            - 'The S3 object''s ARN: V(arn:aws:s3:::bucket/path/to/file.env).'
            - ECS C(value).
            type: str
            required: true
          type:
            description:
            - 'Where the file is: V(s3) (the only kind; the default).'
            - ECS C(type).
            type: str
            choices:
            - s3
      firelens_configuration:
        description:
        - 'Makes this container the task''s log router (ECS''s FireLens): the containers whose O(containers[].log_configuration.log_driver)
          is V(awsfirelens) send their logs to it. The collection writes its Fluent Bit configuration (a forward input
          on the socket C(/var/run/fluent.sock), ECS''s metadata C(ecs_cluster), C(ecs_task_definition), C(ecs_task_id)
          unless switched off, the file named in the options, and one output per container from that container''s log
          options) and mounts it at C(/fluent-bit/etc/fluent-bit.conf); the files live next to the host store and go with
          the task.'
        - The router starts before the containers that log to it. A task has one router; a container that logs with V(awsfirelens)
          needs one.
        - ECS C(firelensConfiguration).
        type: dict
        suboptions:
          type:
            description:
            - 'The router: V(fluentbit).'
            - ECS C(type).
            type: str
            required: true
            choices:
            - fluentbit
            - fluentd
          options:
            description:
            - 'C(enable-ecs-log-metadata) (V(true), the default, or V(false)), C(config-file-type) V(file) and C(config-file-value)
              (an absolute path in the router''s image: the configuration of your own that the written one includes).'
            - ECS C(options).
            type: dict
      log_configuration:
        description:
        - The container's log driver and its options. The host's O(log_drivers) says which drivers are allowed; a driver
          this host cannot serve is replaced as O(log_driver_map) says (V(awslogs) becomes V(local)), with a warning.
          On a host with AWS access for logs (O(aws_logs)), V(awslogs) is the engine's own driver, with the execution
          role's credentials.
        - V(awsfirelens) sends the container's logs to the task's log router (the container with O(containers[].firelens_configuration))
          through the engine's V(fluentd) driver, which the host's O(log_drivers) must allow; its options (C(Name) and
          the plugin's own) become the router's output for this container.
        - ECS C(logConfiguration).
        type: dict
        suboptions:
          log_driver:
            description:
            - 'The driver: V(json-file), V(local), V(syslog), V(journald), V(gelf), V(fluentd), V(none) (or one O(log_driver_map)
              maps; V(awslogs) with O(aws_logs)).'
            - ECS C(logDriver).
            type: str
            required: true
          options:
            description:
            - The driver's options.
            - ECS C(options).
            type: dict
          secret_options:
            description:
            - 'Driver options whose values are read from AWS when the task starts (ECS''s C(secretOptions)): the option''s
              name -> an SSM parameter or a Secrets Manager secret, as O(containers[].secrets[].value_from) is; the value
              goes only into this container''s log configuration (with V(awsfirelens), into the environment of the task''s
              log router, whose configuration names it as C(${VARIABLE})).'
            - ECS C(secretOptions).
            type: dict
'''
