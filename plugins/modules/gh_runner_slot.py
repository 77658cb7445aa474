#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: gh_runner_slot
short_description: Converge a pool of ephemeral just-in-time GitHub Actions runners on a Docker host
version_added: 0.1.0
description:
  - A pool serves one repository or organization with a profile (an image, CPUs, memory and a number of
    slots) and a set of labels. A slot is free or holds exactly one runner; one runner is one container is
    one job. A runner container is never restarted and a JIT config is never used twice.
  - "One call is one pass, in this order: collect the slots whose container ended (inspect, read the log,
    remove, deregister); list the pool's runners and delete this host's registrations that no slot holds;
    list the queued jobs whose labels the pool has; plan; apply."
  - "The plan: runners wanted are the queued jobs plus O(warm), less the idle runners, up to the slots
    (O(scale=queued)), or every slot always (O(scale=fixed)). Idle runners beyond that which waited
    O(idle_timeout) stop: their registration is deleted first, and a runner that took a job meanwhile is kept."
  - A runner that ends without taking a job holds the pool back before its next start, 30 s doubling up to
    600 s; one that waited O(idle_timeout) and then ended is an idle exit, and the second in a row holds the
    pool. A hold is never lengthened by runners that fail while it lasts; C(runner.failed) is announced
    once per streak. Holds, streaks and slots live in the host store.
  - The JIT config reaches the container only as a root-only file (mode 0400) mounted at
    C(/runner/.jitconfig); it is never in the environment, the command, a label, a log line, the output or
    an event. The runner image must read it from there.
  - A listing that cannot be read (a 5xx, a timeout, a rate limit) decides nothing; after a rate limit no
    request is sent until its reset.
  - "One call may also pass over many pools: O(pools) lists their declarations, and the call's own options are
    the default of each. The pools share one engine listing, one store and one host lock, so a pass over many
    pools costs about one module run. With O(purge), pools this host holds that O(pools) no longer declares
    are drained in the same pass."
author:
  - drover.fleet contributors (@drover)
extends_documentation_fragment:
  - drover.fleet.host
  - drover.fleet.host.LOCK
  - drover.fleet.gpu.HOST
  - drover.fleet.attributes
  - drover.fleet.attributes.ACTIONGROUP
attributes:
  check_mode:
    support: full
    details:
      - Reads the engine's and GitHub's listings and plans; sends no POST or DELETE, creates or removes no
        container and writes no store row.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - With nothing queued and nothing ended, a second pass changes nothing.
options:
  pool:
    description: The pool's name, unique on the host. Exactly one of O(pool) and O(pools) is given.
    type: str
  pools:
    description:
      - Many pools in one pass, each a mapping of this module's pool options (O(pool), O(repository) or
        O(organization), O(labels), O(profile), O(warm), O(scale), O(state), O(hold_until), O(token), ...).
      - An option an entry leaves out takes the call's own value; an error in any entry fails the call
        before anything changes, and the message names the entry (C(pools[2] (pool x)...)).
      - A pool whose GitHub listing cannot be read decides nothing, as in a one-pool pass; the others go on.
      - The secrets of an entry (O(pools[].token), O(pools[].app_private_key), the password of its
        O(profile.registry_auth)) are hidden as the top-level ones are, in the invocation Ansible logs on the host
        (syslog or the journal) and in the module's output.
    type: list
    elements: dict
    suboptions:
      pool:
        description: As O(pool).
        type: raw
      hold_until:
        description: As O(hold_until).
        type: raw
      repository:
        description: As O(repository).
        type: raw
      organization:
        description: As O(organization).
        type: raw
      labels:
        description: As O(labels).
        type: raw
      runner_group_id:
        description: As O(runner_group_id).
        type: raw
      profile:
        description: As O(profile).
        type: raw
      warm:
        description: As O(warm).
        type: raw
      scale:
        description: As O(scale).
        type: raw
      idle_timeout:
        description: As O(idle_timeout).
        type: raw
      name_prefix:
        description: As O(name_prefix).
        type: raw
      machine_id:
        description: As O(machine_id).
        type: raw
      work_folder:
        description: As O(work_folder).
        type: raw
      state:
        description: As O(state).
        type: raw
      kill_busy:
        description: As O(kill_busy).
        type: raw
      purge_caches:
        description: As O(purge_caches).
        type: raw
      pull_requests_from_forks:
        description: As O(pull_requests_from_forks).
        type: raw
      api_url:
        description: As O(api_url).
        type: raw
      token:
        description: As O(token). Never logged or returned.
        type: raw
      app_id:
        description: As O(app_id).
        type: raw
      app_private_key:
        description: As O(app_private_key). Never logged or returned.
        type: raw
      installation_id:
        description: As O(installation_id).
        type: raw
      github_timeout:
        description: As O(github_timeout).
        type: raw
  purge:
    description:
      - With O(pools), drain the pools that this host holds (in its store, or as runner containers only) and
        that O(pools) does not declare, as O(state=absent) does, with the call's own GitHub options and
        O(kill_busy). A pool with busy runners is drained again by the next pass.
    type: bool
    default: false
  hold_until:
    description:
      - A hold from outside this host, as a UTC time C(YYYY-MM-DDTHH:MM:SSZ) (the fleet-wide holds that the
        C(drover.fleet.events) callback keeps, passed on by C(drover.fleet.reconcile)). Until then the pool
        starts no runner, as if held; it is reported as RV(pool.hold) with C(cause=fleet) while it is the later
        hold. It is not stored and changes no streak; a time in the past holds nothing.
    type: str
  repository:
    description:
      - The repository the pool serves, as C(owner/name). Mutually exclusive with O(organization).
      - GitHub's names; the owner is 1 to 39 letters, digits and single hyphens, not first or last; the name
        1 to 100 letters, digits, C(.), C(_) or C(-), not C(.) or C(..).
    type: str
  organization:
    description:
      - The organization the pool serves (organization runners). Mutually exclusive with O(repository).
      - 1 to 39 letters, digits and single hyphens, not first or last.
    type: str
  labels:
    description: The runners' labels; at least one. A job matches when every label it asks for is one of these.
    type: list
    elements: str
  runner_group_id:
    description: The runner group of the registrations.
    type: int
    default: 1
  profile:
    description: What each slot's runner container is.
    type: dict
    suboptions:
      name:
        description: The profile's name, part of each runner's name.
        type: str
        required: true
      image:
        description: The runner image; it reads its JIT config from C(/runner/.jitconfig).
        type: str
        required: true
      cpus:
        description: CPUs of each runner container.
        type: float
      memory:
        description: Memory limit of each runner container in MiB (at least 6).
        type: int
      slots:
        description: How many runners the pool may hold at once.
        type: int
        required: true
      network_mode:
        description:
          - The runner containers' network.
          - V(host) is refused before anything changes unless O(allow_host_network) is set, since a runner (and any
            job in it) on the host's network sees the traffic of every task and runner on the host.
        type: str
        choices: [bridge, host, none]
        default: bridge
      environment:
        description: Environment variables of the runner containers (never the JIT config); at most 64 KiB in all.
        type: dict
      pull:
        description:
          - When the runner image is pulled, before the runner is registered. V(missing) pulls it when the host
            has no copy, V(always) at every start, V(never) fails the start (the pool is held, cause C(start)) when
            it is missing.
          - A pull that fails registers nothing and holds the pool (cause C(start)) with C(image pull failed).
        type: str
        choices: [missing, always, never]
        default: missing
      registry_auth:
        description: Credentials for pulling the runner image, used when the image's registry is O(profile.registry_auth.registry).
        type: dict
        suboptions:
          registry:
            description: The registry host (and port), as in the image reference.
            type: str
            required: true
          username:
            description: The user name.
            type: str
            required: true
          password:
            description: The password or token. Never logged or returned.
            type: str
            required: true
      capabilities:
        description:
          - Linux capabilities given to or taken from the engine's default set, with ECS's names (V(NET_RAW),
            V(SYS_PTRACE), V(ALL)...).
          - Runner containers run B(without) C(NET_RAW) (no raw or packet sockets, so no forged ARP or sniffing on the
            bridge by a job) unless O(profile.capabilities.add) names it (or V(ALL)).
        type: dict
        suboptions:
          add:
            description: Capabilities added (Docker's C(--cap-add)).
            type: list
            elements: str
          drop:
            description: Capabilities dropped (Docker's C(--cap-drop)); V(NET_RAW) is dropped without being named here.
            type: list
            elements: str
      docker:
        description:
          - A Docker engine for the jobs (C(services:), C(container:) jobs, Docker actions, C(docker build)), never the
            host's. V(none), the default, gives none.
          - V(rootless) gives each slot an engine of its own - Debian's C(dockerd-rootless.sh) run as an unprivileged
            host user of the slot's own (C(drv<10 hex>), a subordinate ID range of 65,536 IDs at or above
            O(slot_subid_floor)), its data under C(/var/lib/drover-slots/<id>) (a directory of root's; its folders below
            are that user's), in the network namespace of a holder container the slot's runner joins, on the pools' own
            network (so a step reaches a service it published at C(localhost:<port>), and no other container of the
            host does). The runner runs as that user, with the engine's socket (root's link to it, once proven to be
            that engine's) at C(/var/run/docker.sock), C(DOCKER_BUILDKIT=1), and its work folder at the same path as
            the engine sees it (C(docker run -v "$PWD:/w") works). In the engine's own view of the filesystem, the
            runner's externals folder (C(<the image's WORKDIR>/externals), a root-owned, read-only copy of the image's)
            and C(/var/run/docker.sock) (the slot's own engine) are where the runner binds them from, so C(container:)
            jobs and Docker actions run (docs/gh_runner_slot.md has the runner image contract). After each job nothing it
            made stays for the next
            - the slot engine's containers, volumes, networks, build cache and images go (but an image pulled from
            Docker Hub, kept as C(drover-kept:<ID>) alone, and none in a O(pull_requests_from_forks) pool), and the
            work folder and home are emptied. A drained pool stops its slot engines, and with
            O(purge_caches) removes their data and users. Needs O(profile.network_mode=bridge) and, on the host,
            rootlesskit, slirp4netns, uidmap and a /dev/net/tun any user can open (the host role's
            C(drover_host_slot_engines)).
          - V(sysbox) and V(privileged) run the engine the runner's image brings (its entrypoint starts C(dockerd))
            inside the runner's container, with its data in an anonymous volume at C(/var/lib/docker) removed with
            the container (a fresh engine for each job, no layer cache), and C(DOCKER_BUILDKIT=1). V(sysbox) runs the
            runner under the host's Sysbox runtime (C(sysbox-runc)), whose user namespace keeps the container's root
            an unprivileged host user; a host whose engine lacks the runtime refuses the pool before anything
            changes. V(privileged) runs the runner privileged (Docker in Docker) - any job is root on the host - so it
            is refused unless O(allow_privileged) is set. Both need O(profile.network_mode=bridge).
        type: str
        choices: [none, rootless, sysbox, privileged]
        default: none
      gpus:
        description:
          - GPUs pinned to each runner of the pool from the host's GPU ledger (the one M(drover.fleet.ecs_task)'s
            tasks and M(drover.fleet.gpu_pin) use), delivered by O(gpu_delivery); released when the runner ends. A
            GPU is never shared, and a slot that cannot get its GPUs waits (event C(runner.waiting) with C(cause=gpu),
            RV(pool.waiting)) and starts at a later pass once they are free. A runner's GPUs are labelled on its
            container (C(drover.gpus)), and pinned again from there when the store is lost.
        type: int
        default: 0
      caches:
        description:
          - Caches that outlive the pool's ephemeral runners. Each is an engine volume of each slot's own
            (C(drover-cache-<store>-<pool>-<name>-<slot>), labelled with the store, the pool, the cache and the slot),
            made when the slot's first runner starts and mounted read-write at O(profile.caches[].path) in every
            runner of that slot, one at a time; another pool, or another slot, never sees it.
          - O(profile.caches[].max_size) (MiB) is kept after each runner ends, while its slot is vacant, by removing
            the oldest files (links are removed, never followed); event C(cache.trimmed).
          - A job shapes its cache as it likes, so a trim, a snapshot's copy and a cache's size look 100 levels deep and
            at 500,000 entries at most, and warn with the count of what they left out (a trim then removes the oldest
            of what it saw); a copy that did not reach all of slot 1's volume is no snapshot, and the current one
            stays.
          - A store made again at the same path finds its caches again by name and labels. A pool declared absent
            keeps its caches unless O(purge_caches). M(drover.fleet.gh_runner_info) shows each cache's size.
          - A pool snapshot (C(scope=pool), C(mode=ro)) is read-only in every runner that mounts it (a write fails
            with C(EROFS)). With C(seed_from=slot1), slot 1 writes a volume of its own (as a slot cache) and, once
            slot 1 is vacant after a job ran there, a new generation of the snapshot is copied from it
            (C(drover-cache-<store>-<pool>-<name>-g<n>), label C(drover.snapshot=<n>); directories, files and links,
            never a device node or FIFO, no setuid bit; event C(cache.seeded)); runners started later mount the new
            one, a running one keeps its own, which never changes under it, and a generation no container mounts any
            more is removed. With C(seed_from=pool:<name>), every runner mounts that pool's current snapshot.
          - A pool that serves pull requests from forks (O(pull_requests_from_forks)) takes only snapshots of
            another pool, as a job of a fork must never write what a later job reads.
        type: list
        elements: dict
        suboptions:
          name:
            description: The cache's name, unique in the profile.
            type: str
            required: true
          path:
            description: Where the runner sees it (an absolute path other than C(/)).
            type: str
            required: true
          scope:
            description: V(slot), a volume of each slot's own; V(pool), a read-only snapshot every slot mounts.
            type: str
            choices: [slot, pool]
            default: slot
          mode:
            description:
              - V(rw) for a slot cache (its runner is its one writer), V(ro) for a pool snapshot; by default the one
                its O(profile.caches[].scope) takes.
            type: str
            choices: [rw, ro]
          max_size:
            description: MiB the cache keeps at most, trimmed while its slot is vacant (with C(seed_from=slot1), slot 1's
              volume, so every snapshot copied from it too).
            type: int
          seed_from:
            description:
              - What a pool snapshot is copied from, required with O(profile.caches[].scope=pool), V(slot1) (slot 1's
                own volume, after a job ran there) or V(pool:<name>) (the snapshot of another pool of this host with
                a cache of the same name).
            type: str
      records:
        description:
          - Records of failed jobs. When a runner's job ends with C(Failed), its stopped container is committed as the
            image C(drover-record/<pool>:<runner>-<container>) (the container's ID, 12 characters; labelled with the
            repository, the job and the result) before it is removed, and the runner's output (its newest 1 MiB) is
            written, mode 0600, to C(<store dir>/records/<pool>/<runner>-<container>.log). The JIT config, a bind
            mount, never enters a record; a record whose filesystem diff holds a runner's credentials or a JIT config (a path named C(.jitconfig),
            C(.credentials), C(.credentials_rsaparams) or C(.runner)) is not kept, and the C(runner.recorded) event
            says why. The slot is free in the same pass.
          - The oldest records beyond O(profile.records.keep), or older than O(profile.records.max_age), are
            removed after each pass; a pool declared absent removes its records. M(drover.fleet.gh_runner_info)
            lists them.
        type: dict
        suboptions:
          keep:
            description: How many records the pool keeps (the newest), 1 to 100.
            type: int
            default: 5
          max_age:
            description: Seconds a record is kept at most (60 or more); unset, no age limit.
            type: int
  warm:
    description: Idle runners kept ready for jobs not queued yet (with O(scale=queued)).
    type: int
    default: 1
  scale:
    description: V(queued) starts runners for matching queued jobs plus O(warm); V(fixed) keeps every slot full.
    type: str
    choices: [queued, fixed]
    default: queued
  idle_timeout:
    description: Seconds an idle runner waits before it may be stopped as surplus, and the line between an early failure and an idle exit.
    type: int
    default: 300
  name_prefix:
    description:
      - The first part of every runner name, C(<prefix>-<machine-id>-<profile>-<slot>-<unix-seconds>).
      - Runners whose names have exactly this prefix and this host's machine ID as their first two parts and
        that no slot of any pool on this host holds are orphans and are deleted. Pools on one host should use distinct profile names, so that their
        runner (and container) names never meet; a call with O(pools) refuses two pools with the same one.
    type: str
    default: drover
  machine_id:
    description:
      - This host's ID in runner names; by default the first 12 characters of C(/etc/machine-id) (or of the host
        name, with every character but letters, digits, C(_) and C(.) made C(_), when there is none).
      - 1 to 64 letters, digits, C(_) or C(.), starting with a letter or digit; no C(-), so that the second part
        of a runner name is exactly the machine ID and orphan cleanup never takes another host's runners.
    type: str
  work_folder:
    description: The runners' work folder.
    type: str
    default: _work
  state:
    description:
      - V(present) converges the pool. V(absent) drains it; idle runners go, busy ones finish (unless
        O(kill_busy)), and the pool's record goes once no slot is occupied.
    type: str
    choices: [present, absent]
    default: present
  kill_busy:
    description: With O(state=absent), kill busy runners too; their registrations are deleted by a later orphan cleanup.
    type: bool
    default: false
  purge_caches:
    description:
      - With O(state=absent), remove the pool's caches (O(profile.caches)) once no runner of it is left; without it
        they stay, for a pool declared again. A snapshot that another pool's runner mounts stays (a warning).
    type: bool
    default: false
  pull_requests_from_forks:
    description:
      - The pool serves pull requests from forks (untrusted code). Its caches can only be snapshots of another pool
        (O(profile.caches[].scope=pool), O(profile.caches[].seed_from=pool:<name>)), read-only; any other cache is
        refused, naming the field.
    type: bool
    default: false
  api_url:
    description: The GitHub API, for example V(https://github.example.com/api/v3) for GitHub Enterprise Server.
    type: str
    default: https://api.github.com
  token:
    description: A token that may manage the runners. Never logged or returned.
    type: str
  app_id:
    description: A GitHub App's ID, with O(app_private_key) and O(installation_id) instead of O(token).
    type: int
  app_private_key:
    description: The App's PEM private key. Never logged or returned.
    type: str
  installation_id:
    description: The App installation's ID.
    type: int
  github_timeout:
    description: Seconds to wait for any one GitHub answer.
    type: int
    default: 15
  allow_host_network:
    description:
      - The host's policy for O(profile.network_mode=host). Unset, a pool whose profile runs on the host's network
        is refused with O(state=present) (the message names the field) and nothing changes; draining one is
        always allowed.
      - The call's own option, for every pool of O(pools); not an option of an entry.
    type: bool
    default: false
  allow_privileged:
    description:
      - The host's policy for O(profile.docker=privileged). Unset, a pool whose runners would run privileged (Docker
        in Docker, root on the host for any job) is refused with O(state=present) (the message names the field) and
        nothing changes; draining one is always allowed.
      - The call's own option, for every pool of O(pools); not an option of an entry.
    type: bool
    default: false
  metrics_path:
    description:
      - A directory, such as node_exporter's textfile collector's. After each pass (not in check mode) the module
        writes C(drover_pools.prom) there whole (a temporary file renamed over the old one, mode 0644), with the
        gauges of the pools of this call (slots by state, queued jobs, holds with their cause, the pass's time) and the
        host's counters kept in the store (runners started and ended by result, OOM kills, runner faults, holds by
        cause, GitHub requests, 304 answers, rate limits and errors, events by kind), which never go down.
      - A file that cannot be written is a warning; the pass is done all the same.
      - The call's own option; not an option of an entry.
    type: path
  mirror:
    description:
      - A registry pull-through mirror for the slot engines of the call's pools (O(profile.docker=rootless)), which is
        Debian's docker-registry in proxy mode, in a container of the collection's registry image
        (C(drover-mirror-<store>), on the pools' own network C(drover-pools-<store>) with the slot holders alone, no
        published host port), made before the first
        runner of a pass where a pool of the call runs slot engines. Each slot engine has it as its only
        C(registry-mirrors) entry and among its C(insecure-registries) (so BuildKit's builds come through it too; the engine
        starts again with them, before the slot's next runner, when the mirror's address changes), so the jobs' pulls
        of Docker Hub images go through it; a job can pull through it, never push to it.
      - Its configuration, with O(mirror.password), is a file only root reads (C(mirror/) beside the store), mounted
        read-only into the mirror's container alone; its blobs are in the engine volume C(drover-mirror-<store>).
      - A mirror that is not running or does not answer within 10 s holds no runner back - the pass tells it
        (event C(mirror.down), with C(reason), and a warning), the slot engines keep their configuration (an engine
        falls back to the upstream itself), and the next pass makes it again.
      - Not enabled, a mirror the host has is removed, with its blobs and its configuration.
      - The call's own option; not an option of an entry.
    type: dict
    suboptions:
      enabled:
        description: Run the mirror.
        type: bool
        default: false
      upstream:
        description: The registry it mirrors, C(http[s]://host[:port]) alone (no path, no credentials).
        type: str
        default: https://registry-1.docker.io
      username:
        description: The upstream's user (with O(mirror.password)); a registry that hands out bearer tokens, as Docker Hub does.
        type: str
      password:
        description: The upstream user's password or access token; it reaches the mirror's container alone.
        type: str
      max_size:
        description: MiB of blobs the mirror keeps; past it, the next pass removes them whole (event C(mirror.trimmed)) and the mirror fills again.
        type: int
      image:
        description: The mirror's image (the host role builds it with C(drover_host_slot_engines)).
        type: str
        default: drover.local/registry:1
  slot_subid_floor:
    description:
      - Where the subordinate ID ranges of the slot users (O(profile.docker=rootless)) may start. A slot's user gets
        65,536 IDs of its own at or above it, above every range given out there, holding no ID of an account of the
        host (C(getent passwd), C(getent group)); a job container's user N runs as the host's ID I(start + N - 1),
        so no range may hold a real account's ID. A slot's range below it, or holding an account's ID, is given up
        for a new one at its next start (and its engine's data removed).
      - The default, 2147483648 (2**31), lies above what SSSD (200000 to 2000200000) and FreeIPA map directory users
        to; set it where the host's accounts or another tool's ranges go higher.
      - The call's own option; not an option of an entry.
    type: int
seealso:
  - module: drover.fleet.gh_runner_info
'''

EXAMPLES = r'''
- name: Two slots of ephemeral runners for a repository
  drover.fleet.gh_runner_slot:
    pool: app-ci
    repository: example/app
    labels: [self-hosted, linux, drover]
    profile:
      name: small
      image: registry.example.com/actions-runner:2.321
      cpus: 2
      memory: 4096
      slots: 2
    warm: 1
    token: "{{ vault_github_token }}"

- name: An organization pool on GitHub Enterprise Server, as a GitHub App
  drover.fleet.gh_runner_slot:
    pool: org-ci
    organization: example
    labels: [self-hosted, large]
    runner_group_id: 3
    api_url: https://github.example.com/api/v3
    app_id: 12345
    installation_id: 67890
    app_private_key: "{{ vault_app_key }}"
    profile: {name: large, image: registry.example.com/actions-runner:2.321, slots: 4}

- name: Every pool of the host in one pass; pools no longer listed are drained
  drover.fleet.gh_runner_slot:
    token: "{{ vault_github_token }}"
    labels: [self-hosted, linux]
    pools:
      - pool: app-ci
        repository: example/app
        profile: {name: small, image: registry.example.com/actions-runner:2.321, slots: 2}
      - pool: docs-ci
        repository: example/docs
        scale: fixed
        profile: {name: tiny, image: registry.example.com/actions-runner:2.321, slots: 1}
    purge: true

- name: Drain a pool; busy runners finish first
  drover.fleet.gh_runner_slot:
    pool: app-ci
    repository: example/app
    state: absent
    token: "{{ vault_github_token }}"
'''

RETURN = r'''
pool:
  description: The pool after the pass.
  returned: when O(pool) is given
  type: dict
  contains:
    name:
      description: The pool's name.
      type: str
    owner:
      description: The repository or organization it serves.
      type: str
    slots:
      description: Each slot, C(index) from 1, C(state) (free, starting, idle, busy), C(runner_name), C(runner_id), C(container_id), C(started_at), C(gpu_ids).
      type: list
      elements: dict
    waiting:
      description: The slots that wait this pass, each with C(slot) and C(cause) (V(gpu)).
      type: list
      elements: dict
    hold:
      description:
        - C(until) and C(cause) while held, and the C(failures) and C(idle_exits) streaks.
        - C(cause) is V(fleet) while O(hold_until) is the later hold.
      type: dict
pools:
  description:
    - With O(pools), each pool after the pass (the declared ones in order, then the purged ones), in the shape
      of RV(pool), with its own C(changed), C(queued), C(started), C(stopped), C(released), C(orphans_deleted),
      C(github_requests) and C(github_not_modified).
  returned: when O(pools) is given
  type: list
  elements: dict
started:
  description: Names of the runners started.
  returned: always
  type: list
  elements: str
stopped:
  description: Names of the idle (or killed) runners stopped.
  returned: always
  type: list
  elements: str
released:
  description: Names of the ended runners whose slots were freed.
  returned: always
  type: list
  elements: str
orphans_deleted:
  description: This host's registrations that no slot held, deleted.
  returned: always
  type: list
  elements: str
github_requests:
  description:
    - GitHub API requests the pass made (every page of a listing counts), over all its pools. Each one counts
      against the token's or installation's rate limit (5,000 an hour for a token).
    - A pool costs 3 requests per pass plus one per open workflow run (list runners, queued and in-progress
      runs, each run's jobs), plus one per runner started (registration) and one per runner removed.
  returned: always
  type: int
github_not_modified:
  description:
    - Of RV(github_requests), the listings GitHub answered C(304 Not Modified). Asked with the ETag of the last
      pass's answer (kept in C(github-etags.json) beside the store, mode 0600), they do not count against the
      rate limit.
  returned: always
  type: int
queued:
  description: Queued jobs that match the pool (null when the listing could not be read).
  returned: when O(pool) is given
  type: int
events:
  description:
    - C(runner.started), C(runner.ended) (with C(took_job), C(job), C(result), C(runner_fault), C(runner_version),
      C(oom_killed), C(exit_code)), C(runner.recorded) (a failed job's record, with C(kept), C(image), C(output), or
      C(reason) when not kept), C(runner.stopped),
      C(runner.failed) (with C(cause), C(held_for)), C(pool.held), C(pool.released), C(github.rate_limited),
      C(github.error) (a GitHub request that failed otherwise, with C(call), C(status) and C(error); the pass
      decides nothing from a listing it could not read), C(mirror.started), C(mirror.down) (with C(reason)),
      C(mirror.trimmed) (with C(bytes)), C(mirror.removed).
  returned: always
  type: list
  elements: dict
mirror:
  description:
    - The host's registry mirror after the pass, C(enabled) and C(url) (the address the slot engines pull through;
      null when it is not enabled, no pool of the call runs slot engines, it is down this pass, or in check mode).
  returned: always
  type: dict
'''

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

# (first: the collection's other module_utils are then imported from the host's byte code cache)
from ansible_collections.drover.fleet.plugins.module_utils import _code_cache  # noqa: F401 pylint: disable=unused-import
from ansible_collections.drover.fleet.plugins.module_utils.front import argspecs as _argspecs
from ansible_collections.drover.fleet.plugins.module_utils.front.args import make_module, not_mappings, require_docker
from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import converge
from ansible_collections.drover.fleet.plugins.module_utils.pools.github import HAS_GITHUB, GITHUB_IMPORT_ERROR
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure


POOL_OPTIONS = _argspecs.POOL_OPTIONS


def check_pools(module):
    """Each entry of `pools` checked and converted as the module's own options are; fails naming the entry."""
    validator = ArgumentSpecValidator(POOL_OPTIONS)
    checked = []
    for index, entry in enumerate(module.params.get('pools') or []):
        if not isinstance(entry, dict):
            module.fail_json(msg='pools[%d] must be a mapping (a pool declaration)' % index)
        entry = dict((k, v) for k, v in entry.items() if v is not None)   # left out: the call's own value
        bad = not_mappings(POOL_OPTIONS, entry)
        if bad:
            module.fail_json(msg='pools[%d]: %s' % (index, '; '.join('%s must be %s, got %s' % (
                where, kind, type(value).__name__) for where, kind, value in bad)))
        result = validator.validate(entry)
        module.no_log_values.update(result._no_log_values)
        if result.error_messages:
            where = 'pools[%d]%s' % (index, ' (pool %s)' % entry['pool'] if isinstance(entry.get('pool'), str) else '')
            errors = ['unsupported keys: %s' % ', '.join(sorted(result.unsupported_parameters))
                      if msg.endswith('.') and 'Supported parameters include' in msg else msg
                      for msg in result.error_messages]
            module.fail_json(msg='%s: %s' % (where, '; '.join(errors)))
        checked.append(dict((k, v) for k, v in result.validated_parameters.items() if v is not None))
    module.params['pools'] = checked if module.params.get('pools') is not None else None


def main():
    module = make_module(
        argument_spec=_argspecs.gh_runner_slot_spec(),
        supports_check_mode=True,
        entries=('pools',),
        # An entry's profile is taken whole: the registry password inside it is hidden all the same.
        nested_secrets=[('pools', 'profile', 'registry_auth', 'password')],
        **_argspecs.GH_RUNNER_SLOT_RULES
    )
    check_pools(module)
    require_docker(module)
    if not HAS_GITHUB:
        module.fail_json(msg=missing_required_lib('PyGithub'), exception=GITHUB_IMPORT_ERROR)
    try:
        result = converge(module.params, check_mode=module.check_mode)
    except TaskFailure as exc:
        module.fail_json(msg=exc.msg)
    for warning in result.pop('warnings', []):
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
