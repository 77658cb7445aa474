# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drover.fleet bench: its modules against their anchors, measured side by side in one run.

Run through bench/run.sh (`make bench`), which sets up the anchor venv and the environment. Each
repetition (a "round") runs every measurement of the selected groups once, in an order rotated from round
to round, and removes what each measurement made before the next, so each cold run starts from nothing and
drift hits all measurements alike. The report gives medians and their ratios; nothing here asserts a time.

Groups (BENCH_GROUPS, comma- or space-separated; all by default) and their measurements (wall time of one
process, started and waited for by this script):
  (every group) ping  ansible-playbook, one ansible.builtin.ping on localhost (the fixed cost of a run)
  ecs     ping_anchor the same in the anchor venv (the fixed cost of the docker_container runs)
          sdk         bench/sdk_floor.py: the Docker SDK creating + starting N containers in one process
          ecs_cold    ansible-playbook, one drover.fleet.ecs_task call converging N tasks from nothing
          ecs_noop    the same playbook again, right after: nothing to do
          dc_loop     ansible-playbook (anchor venv), community.docker.docker_container looped over N containers
  awsvpc  awsvpc_up   ansible-playbook, ecs_task: one awsvpc task (one container) around a stand-in ENI, from nothing
          awsvpc_down ansible-playbook, ecs_task state absent: that task and its network torn down
          hand_up     bench/awsvpc_by_hand.sh up: the same made by hand (ip netns attach, ip link set netns,
                      docker run --network container:)
          hand_down   bench/awsvpc_by_hand.sh down
  pools   pools1_noop  ansible-playbook, gh_runner_slot over 1 pool of S slots, every slot an idle runner
          pools1_hand  bench/pools_by_hand.sh: that pool's listings made by hand (docker ps, two curls)
          poolsP_noop  the same over P pools (P module calls in one playbook)
          poolsP_hand  the listings of the P pools by hand

Then, once, untimed: the same runs through a counting proxy of the engine socket, for the number and
kind of engine API calls each makes (and, for the pools group, the GitHub stand-in's requests).

Settings come from the environment: BENCH_GROUPS (ecs,awsvpc,pools), BENCH_REPEAT (5), BENCH_WARMUP (1),
BENCH_COUNT (20), BENCH_WORKDIR (/tmp/drover-bench), BENCH_IMAGE (drover.local/busybox:1), BENCH_CLUSTER
(bench), BENCH_CALLS (1: count engine calls; 0: skip), BENCH_SETTLE (0.5 s of quiet before each timed run),
BENCH_SNAPSHOT (1: measure a copy of the collection taken at the start; 0: the live tree), BENCH_RETRIES (2:
rounds that may be dropped and run again when the engine stops answering mid-round), BENCH_POOLS (10),
BENCH_SLOTS (4), BENCH_RUNNER_IMAGE (drover.local/runner:1), BENCH_RUNNER_POLL (10 s between a runner's job
polls), BENCH_ENI_MAC (02:00:c6:12:d2:02), VENV (the project venv), BENCH_ANCHOR_VENV (bench/.venv-anchor),
BENCH_RESULTS (bench/results).
"""

import datetime
import hashlib
import json
import os
import platform
import re
import secrets
import select
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request

import docker
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import apiproxy  # noqa: E402


def _env(name, default):
    value = os.environ.get(name)
    return default if value in (None, '') else value


ALL_GROUPS = ('ecs', 'awsvpc', 'pools')


def _groups():
    raw = _env('BENCH_GROUPS', 'all').replace(',', ' ').split()
    if raw in ([], ['all']):
        return ALL_GROUPS
    unknown = [g for g in raw if g not in ALL_GROUPS]
    if unknown:
        sys.stderr.write('[bench] BENCH_GROUPS: unknown group(s) %s; the groups are %s (or all)\n'
                         % (', '.join(unknown), ', '.join(ALL_GROUPS)))
        sys.exit(2)
    return tuple(g for g in ALL_GROUPS if g in raw)


GROUPS = _groups()
REPEAT = int(_env('BENCH_REPEAT', 5))
WARMUP = int(_env('BENCH_WARMUP', 1))
COUNT = int(_env('BENCH_COUNT', 20))
WORK = os.path.abspath(_env('BENCH_WORKDIR', '/tmp/drover-bench'))
IMAGE = _env('BENCH_IMAGE', 'drover.local/busybox:1')
CLUSTER = _env('BENCH_CLUSTER', 'bench')
CALLS = _env('BENCH_CALLS', '1') not in ('0', 'false', 'no')
SETTLE = float(_env('BENCH_SETTLE', 0.5))
SNAPSHOT = _env('BENCH_SNAPSHOT', '1') not in ('0', 'false', 'no')
RETRIES = int(_env('BENCH_RETRIES', 2))
VENV = os.path.abspath(_env('VENV', os.path.join(ROOT, '.venv')))
ANCHOR_VENV = os.path.abspath(_env('BENCH_ANCHOR_VENV', os.path.join(HERE, '.venv-anchor')))
RESULTS = os.path.abspath(_env('BENCH_RESULTS', os.path.join(HERE, 'results')))
COLLECTIONS_PATH = _env('ANSIBLE_COLLECTIONS_PATH', os.path.join(ROOT, 'collection', 'dev'))

STORE = os.path.join(WORK, 'store.db')
PROXY_SOCKET = os.path.join(WORK, 'docker.sock')
LOGS = os.path.join(WORK, 'logs')
PROJECT_PY = os.path.join(VENV, 'bin', 'python')
ANCHOR_PY = os.path.join(ANCHOR_VENV, 'bin', 'python')

# Labels that mark what the bench made (ecs_task adds drover.cluster itself).
DC_LABEL = ('drover-bench', 'dc')
SDK_LABEL = ('drover-bench', 'sdk')
ECS_TASK_PREFIX = 'bench-t'
DC_PREFIX = 'bench-dc-'
SDK_PREFIX = 'bench-sdk-'

# The awsvpc group: one task around a stand-in ENI (a veth pair the bench makes before each measurement:
# the host end carries the ENI's MAC, the peer is the VPC's gateway in a namespace of its own).
VPC_CLUSTER = 'benchnet'
VPC_TASK = 'drvbench-vpc'
# What ecs_task names the task's netns (module_utils/network/spec.netns_name: the start of the task's name and a
# digest of cluster and task).
VPC_NETNS = 'drover-%s-%s' % (VPC_TASK[:24], hashlib.sha1(('%s/%s' % (VPC_CLUSTER, VPC_TASK)).encode()).hexdigest()[:10])
VPC_CRED_IF = 'dv' + hashlib.sha1(VPC_NETNS.encode()).hexdigest()[:10]   # ecs_task's host side of the link
VPC_STORE = os.path.join(WORK, 'awsvpc', 'store.db')
ENI_IF = 'drvbench-eni'
ENI_MAC = _env('BENCH_ENI_MAC', '02:00:c6:12:d2:02').lower()
ENI_ADDRESS = '198.18.210.2/24'
ENI_GATEWAY = '198.18.210.1'
PEER_NS = 'drvbench-peer'
PEER_IF = 'drvbench-gw'
HAND_NETNS = 'drvbench-hand'
HAND_NAME = 'drvbench-hand'                          # containers drvbench-hand-holder, drvbench-hand-main
HAND_LABEL = ('drover-bench', 'awsvpc-hand')
HAND_CRED_IF = 'drvbh-cred'
HAND_VPC_SH = os.path.join(HERE, 'awsvpc_by_hand.sh')

# The pools group: P pools of S slots, one repository each, against the GitHub stand-in.
POOLS = int(_env('BENCH_POOLS', 10))
SLOTS = int(_env('BENCH_SLOTS', 4))
RUNNER_IMAGE = _env('BENCH_RUNNER_IMAGE', 'drover.local/runner:1')
RUNNER_POLL = _env('BENCH_RUNNER_POLL', '10')
ONLINE_TIMEOUT = 90
POOL_NAMES = ['drvbench-p%02d' % (i + 1) for i in range(POOLS)]
POOL_REPOS = ['drvbench/r%02d' % (i + 1) for i in range(POOLS)]
POOL_MACHINE_ID = 'drvbench'
POOL_LABELS = ['self-hosted', 'linux', 'drvbench']
POOL_DIR = os.path.join(WORK, 'pools')
POOL_STORE = os.path.join(POOL_DIR, 'store.db')
RUNNER_PREFIX = 'drover-%s-' % POOL_MACHINE_ID          # gh_runner_slot's runner (and container) names
HAND_POOLS_SH = os.path.join(HERE, 'pools_by_hand.sh')
STANDIN_PATH = os.path.join(ROOT, 'tests', 'fixtures')
GH_TOKEN = 'drvbench-%s' % secrets.token_hex(12)       # the stand-in's token, fresh for each run

# Names of containers the bench makes (the others on the engine are someone else's).
BENCH_NAME_PREFIXES = (ECS_TASK_PREFIX, DC_PREFIX, SDK_PREFIX, VPC_TASK + '-', 'drover-netns-' + VPC_TASK,
                       HAND_NAME + '-', RUNNER_PREFIX)

P = POOLS
MEASUREMENTS = (
    ('ping', None, 'ansible-playbook: one ansible.builtin.ping on localhost (project venv)'),
    ('ping_anchor', 'ecs', 'ansible-playbook: one ansible.builtin.ping on localhost (anchor venv)'),
    ('sdk', 'ecs', 'Docker SDK: %d creates + starts in one Python process (the floor)' % COUNT),
    ('ecs_cold', 'ecs', 'ansible-playbook: drover.fleet.ecs_task, %d tasks in one call, from nothing' % COUNT),
    ('ecs_noop', 'ecs', 'ansible-playbook: the same ecs_task playbook again, nothing to do'),
    ('dc_loop', 'ecs', 'ansible-playbook: community.docker.docker_container looped over %d containers, from nothing'
     % COUNT),
    ('ecs_purge', 'ecs', 'context: ansible-playbook, ecs_task tasks: [] purge: true, removing the %d tasks (the '
     'clean-up)' % COUNT),
    ('awsvpc_up', 'awsvpc', 'ansible-playbook: ecs_task, one awsvpc task (1 container, credential link) from nothing'),
    ('awsvpc_down', 'awsvpc', 'ansible-playbook: ecs_task state absent, the task and its network torn down'),
    ('awsvpc_total', 'awsvpc', 'awsvpc_up + awsvpc_down, summed round by round'),
    ('hand_up', 'awsvpc', 'bench/awsvpc_by_hand.sh up: the same task and network made by hand (ip, docker CLI)'),
    ('hand_down', 'awsvpc', 'bench/awsvpc_by_hand.sh down: torn down by hand'),
    ('hand_total', 'awsvpc', 'hand_up + hand_down, summed round by round'),
    ('pools1_noop', 'pools', 'ansible-playbook: gh_runner_slot over 1 pool of %d idle runners, nothing to do' % SLOTS),
    ('pools1_hand', 'pools', 'bench/pools_by_hand.sh: 1 pool\'s listings by hand (docker ps, 2 curls)'),
    ('pools%d_noop' % P, 'pools', 'ansible-playbook: ONE gh_runner_slot call with `pools:` over %d pools of %d idle '
     'runners, nothing to do' % (P, SLOTS)),
    ('pools%d_calls' % P, 'pools', 'context: ansible-playbook, the same %d pools with one gh_runner_slot call (task) '
     'each, nothing to do' % P),
    ('pools%d_hand' % P, 'pools', 'bench/pools_by_hand.sh: %d pools\' listings by hand (%d docker ps, %d curls)'
     % (P, P, 2 * P)),
)
WHAT = dict((name, what) for name, group, what in MEASUREMENTS)
MEASURED = tuple(name for name, group, what in MEASUREMENTS if group is None or group in GROUPS)
# Sums of two measurements of one round, kept as measurements of their own.
SUMS = {'awsvpc_total': ('awsvpc_up', 'awsvpc_down'), 'hand_total': ('hand_up', 'hand_down')}
# A unit is what runs back to back in a round; the order of the units rotates from round to round.
GROUP_UNITS = {
    'ecs': (('sdk',), ('ecs_cold', 'ecs_noop'), ('dc_loop',), ('ping_anchor',)),
    'awsvpc': (('awsvpc_up', 'awsvpc_down'), ('hand_up', 'hand_down')),
    # One unit: the stand-in, 1 pool then P pools converged (untimed), each measured with its anchor.
    'pools': (('pools1_noop', 'pools1_hand', 'pools%d_noop' % P, 'pools%d_hand' % P, 'pools%d_calls' % P),),
}
UNITS = (('ping',),) + tuple(u for g in GROUPS for u in GROUP_UNITS[g])

RECAP = re.compile(r'^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', re.M)


class BenchError(Exception):
    pass


def log(msg):
    sys.stderr.write('[bench %s] %s\n' % (time.strftime('%H:%M:%S'), msg))
    sys.stderr.flush()


# --- the playbooks --------------------------------------------------------------------------------

def ecs_tasks():
    return [{'name': '%s%02d' % (ECS_TASK_PREFIX, i),
             'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600']}]}
            for i in range(COUNT)]


def _play(name, tasks):
    return [{'name': name, 'hosts': 'bench', 'gather_facts': False, 'tasks': tasks}]


def _ecs(tasks, docker_host=None):
    args = {'cluster': CLUSTER, 'purge': True, 'store_path': STORE, 'tasks': tasks}
    if docker_host:
        args['docker_host'] = docker_host
    return args


def _dc(docker_host=None):
    args = {'name': '{{ item }}', 'image': IMAGE, 'command': ['sleep', '3600'],
            'labels': {DC_LABEL[0]: DC_LABEL[1]}, 'state': 'started'}
    if docker_host:
        args['docker_host'] = docker_host
    return {'name': 'Create and start each container', 'community.docker.docker_container': args,
            'loop': ['%s%02d' % (DC_PREFIX, i) for i in range(COUNT)]}


def _vpc(state, docker_host=None):
    args = {'name': VPC_TASK, 'cluster': VPC_CLUSTER, 'store_path': VPC_STORE}
    if state == 'running':
        args.update({'network_mode': 'awsvpc',
                     'awsvpc': {'eni_mac': ENI_MAC, 'address': ENI_ADDRESS, 'gateway': ENI_GATEWAY,
                                'credential_link': True},
                     # NET_RAW back: the check pings the gateway from the task container
                     'containers': [{'name': 'main', 'image': IMAGE, 'command': ['sleep', '3600'],
                                     'capabilities': {'add': ['NET_RAW']}}]})
    else:
        args['state'] = 'absent'
    if docker_host:
        args['docker_host'] = docker_host
    return args


def _pool(i, url, state='present', docker_host=None):
    args = {'pool': POOL_NAMES[i], 'repository': POOL_REPOS[i], 'machine_id': POOL_MACHINE_ID,
            'api_url': url, 'token': GH_TOKEN, 'store_path': POOL_STORE}
    if state == 'present':
        args.update({'labels': list(POOL_LABELS), 'scale': 'fixed', 'allow_host_network': True,
                     'profile': {'name': 'p%02d' % (i + 1), 'image': RUNNER_IMAGE, 'slots': SLOTS,
                                 'network_mode': 'host', 'memory': 64,
                                 'environment': {'DROVER_POLL_SECONDS': str(RUNNER_POLL)}}})
    else:
        args.update({'state': 'absent', 'kill_busy': True})
    if docker_host:
        args['docker_host'] = docker_host
    return {'name': 'Pool %s' % POOL_NAMES[i], 'drover.fleet.gh_runner_slot': args}


def _pools(indices, url, docker_host=None):
    """One gh_runner_slot call over many pools (`pools`): the common options once, each pool's own in its entry."""
    args = {'machine_id': POOL_MACHINE_ID, 'api_url': url, 'token': GH_TOKEN, 'store_path': POOL_STORE,
            'labels': list(POOL_LABELS), 'scale': 'fixed', 'pools': []}
    for i in indices:
        one = _pool(i, url)['drover.fleet.gh_runner_slot']
        args['pools'].append({'pool': one['pool'], 'repository': one['repository'], 'profile': one['profile']})
    if docker_host:
        args['docker_host'] = docker_host
    return {'name': '%d pools in one pass' % len(indices), 'drover.fleet.gh_runner_slot': args}


def _write(books):
    os.makedirs(os.path.join(WORK, 'playbooks'), mode=0o700, exist_ok=True)
    for name, book in books.items():
        path = os.path.join(WORK, 'playbooks', name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)     # the pools' hold the token
        with os.fdopen(fd, 'w') as f:
            f.write('---\n# Generated by bench/bench.py; rewritten on every run.\n')
            yaml.safe_dump(book, f, sort_keys=False, default_flow_style=False, width=120)


def write_playbooks():
    """The playbooks, generated with literal values (no templating but docker_container's loop item)."""
    proxy = 'unix://' + PROXY_SOCKET
    books = {
        'ping.yml': _play('bench - the fixed cost of a playbook run', [
            {'name': 'Ping', 'ansible.builtin.ping': None}]),
        'ecs_converge.yml': _play('bench - ecs_task converges the bench cluster in one call', [
            {'name': 'Converge %d tasks' % COUNT, 'drover.fleet.ecs_task': _ecs(ecs_tasks())}]),
        'ecs_purge.yml': _play('bench - ecs_task removes every task of the bench cluster', [
            {'name': 'Purge', 'drover.fleet.ecs_task': _ecs([])}]),
        'dc_loop.yml': _play('bench - docker_container, one call per container', [_dc()]),
        'ecs_converge_counted.yml': _play('bench - ecs_task through the counting proxy', [
            {'name': 'Converge %d tasks' % COUNT, 'drover.fleet.ecs_task': _ecs(ecs_tasks(), proxy)}]),
        'dc_loop_counted.yml': _play('bench - docker_container through the counting proxy', [_dc(proxy)]),
        'awsvpc_up.yml': _play('bench - ecs_task runs one awsvpc task', [
            {'name': 'Converge the awsvpc task', 'drover.fleet.ecs_task': _vpc('running')}]),
        'awsvpc_down.yml': _play('bench - ecs_task removes the awsvpc task', [
            {'name': 'Remove the awsvpc task', 'drover.fleet.ecs_task': _vpc('absent')}]),
        'awsvpc_up_counted.yml': _play('bench - ecs_task runs one awsvpc task, through the counting proxy', [
            {'name': 'Converge the awsvpc task', 'drover.fleet.ecs_task': _vpc('running', proxy)}]),
        'awsvpc_down_counted.yml': _play('bench - ecs_task removes the awsvpc task, through the counting proxy', [
            {'name': 'Remove the awsvpc task', 'drover.fleet.ecs_task': _vpc('absent', proxy)}]),
    }
    _write(books)
    for side, py in (('project', PROJECT_PY), ('anchor', ANCHOR_PY)):
        with open(os.path.join(WORK, 'playbooks', 'inventory-%s.ini' % side), 'w') as f:
            f.write('[bench]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n' % py)


def write_pool_playbooks(url):
    """The pools' playbooks name the stand-in's URL, which changes with each start: written for each."""
    proxy = 'unix://' + PROXY_SOCKET
    _write({
        'pools1.yml': _play('bench - gh_runner_slot, 1 pool', [_pool(0, url)]),
        'pools%d.yml' % P: _play('bench - gh_runner_slot, %d pools in one call' % P, [_pools(range(P), url)]),
        'pools%d_calls.yml' % P: _play('bench - gh_runner_slot, %d pools, one call each' % P,
                                       [_pool(i, url) for i in range(P)]),
        'pools_absent.yml': _play('bench - gh_runner_slot, every pool drained, busy runners killed',
                                  [_pool(i, url, 'absent') for i in range(P)]),
        'pools1_counted.yml': _play('bench - gh_runner_slot, 1 pool, through the counting proxy',
                                    [_pool(0, url, docker_host=proxy)]),
        'pools%d_counted.yml' % P: _play('bench - gh_runner_slot, %d pools in one call, through the counting proxy'
                                         % P, [_pools(range(P), url, docker_host=proxy)]),
        'pools%d_calls_counted.yml' % P: _play('bench - gh_runner_slot, %d pools, one call each, through the counting '
                                               'proxy' % P, [_pool(i, url, docker_host=proxy) for i in range(P)]),
    })


def playbook_cmd(side, book):
    venv = VENV if side == 'project' else ANCHOR_VENV
    return [os.path.join(venv, 'bin', 'ansible-playbook'),
            '-i', os.path.join(WORK, 'playbooks', 'inventory-%s.ini' % side),
            os.path.join(WORK, 'playbooks', book)]


def child_env(side):
    env = dict(os.environ)
    venv = VENV if side == 'project' else ANCHOR_VENV
    env['PATH'] = os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', '')
    env['VIRTUAL_ENV'] = venv
    env['ANSIBLE_COLLECTIONS_PATH'] = COLLECTIONS_PATH
    env['ANSIBLE_PYTHON_INTERPRETER'] = os.path.join(venv, 'bin', 'python')
    env['ANSIBLE_LOCALHOST_WARNING'] = 'false'
    env['ANSIBLE_INVENTORY_UNPARSED_WARNING'] = 'false'
    env['ANSIBLE_NOCOLOR'] = 'true'
    env.pop('DOCKER_HOST', None)
    return env


# --- the host's network, through iproute2 (untimed) ---------------------------------------------------

def ip(*args, **kw):
    proc = subprocess.run(['ip'] + list(args), capture_output=True, text=True, check=False)
    if kw.get('check', True) and proc.returncode != 0:
        raise BenchError('ip %s: %s' % (' '.join(args), (proc.stderr or proc.stdout).strip()))
    return proc


def netns_exists(name):
    return os.path.exists(os.path.join('/run/netns', name))


def link_exists(name, netns=None):
    return ip(*((['-n', netns] if netns else []) + ['link', 'show', 'dev', name]), check=False).returncode == 0


def link_rules(name):
    """(chain, rule args) of every filter rule naming link `name` (a credential link's filter)."""
    out = subprocess.run(['iptables', '-w', '10', '-S'], capture_output=True, text=True, check=False).stdout
    rules = []
    for line in out.splitlines():
        words = line.split()
        if len(words) > 2 and words[0] == '-A' and any(
                words[i + 1] == name for i, w in enumerate(words[:-1]) if w in ('-i', '-o')):
            rules.append((words[1], words[2:]))
    return rules


def links_with_mac(mac):
    """Names of the host's links with this MAC."""
    rows = json.loads(ip('-j', 'link', 'show').stdout or '[]')
    return [r['ifname'] for r in rows if (r.get('address') or '').lower() == mac]


def eni_plug():
    """The stand-in ENI: a veth pair, the host end with the ENI's MAC, the peer (the gateway) in PEER_NS."""
    eni_unplug()
    ip('netns', 'add', PEER_NS)
    ip('-n', PEER_NS, 'link', 'set', 'lo', 'up')
    ip('link', 'add', ENI_IF, 'address', ENI_MAC, 'type', 'veth', 'peer', 'name', PEER_IF, 'netns', PEER_NS)
    ip('-n', PEER_NS, 'addr', 'add', ENI_GATEWAY + '/24', 'dev', PEER_IF)
    ip('-n', PEER_NS, 'link', 'set', PEER_IF, 'up')


def eni_unplug():
    """Delete the stand-in ENI (wherever its host end is, deleting the peer's namespace deletes the pair)."""
    if link_exists(ENI_IF):
        ip('link', 'del', ENI_IF)
    if netns_exists(PEER_NS):
        ip('netns', 'del', PEER_NS)


# --- the GitHub stand-in, as a process of its own -------------------------------------------------------

class StandIn:
    """tests/fixtures/github_standin run in the background (`python -m github_standin.server`), one
    repository per pool. Read through its control API: state, requests, violations."""

    def __init__(self, log_path):
        self.log_path = log_path
        self.proc = None
        self.url = None

    def start(self):
        cmd = [PROJECT_PY, '-m', 'github_standin.server', '--port', '0', '--token', GH_TOKEN]
        for repo in POOL_REPOS:
            cmd += ['--repo', repo]
        env = child_env('project')
        env['PYTHONPATH'] = STANDIN_PATH
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._log)
        ready, dummy, dummy = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode().strip() if ready else ''
        if not line.startswith('http://'):
            self.stop()
            raise BenchError('the GitHub stand-in did not start (see %s)' % self.log_path)
        self.url = line
        return self

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as reply:
            return json.loads(reply.read().decode() or 'null')

    def mark(self):
        return len(self.get('/_standin/requests'))

    def github_requests(self, mark):
        """GitHub API requests (not the control API's) since `mark`."""
        return [r for r in self.get('/_standin/requests')[mark:] if not r.get('control')]

    def runners(self):
        return [r for r in self.get('/_standin/state')['runners'] if (r.get('name') or '').startswith(RUNNER_PREFIX)]

    def wait_online(self, want, timeout=ONLINE_TIMEOUT):
        """Until `want` runners are registered and every one is online (its container polled) and idle."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.runners()
            if len(rows) == want and all(r['status'] == 'online' and not r['busy'] for r in rows):
                return rows
            if time.monotonic() > deadline:
                raise BenchError('the stand-in shows %d runners, %d online, after %d s; %d expected'
                                 % (len(rows), sum(1 for r in rows if r['status'] == 'online'), timeout, want))
            time.sleep(0.25)

    def stop(self):
        """Stop it; returns its OpenAPI violations (what it noted of requests and answers)."""
        violations = []
        if self.proc is None:
            return violations
        if self.proc.poll() is None and self.url:
            try:
                violations = self.get('/_standin/violations')
            except (OSError, ValueError) as exc:
                violations = ['could not read the violations: %s' % exc]
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc.stdout.close()
        self._log.close()
        self.proc = None
        return violations


# --- running ----------------------------------------------------------------------------------------

class Runner:
    def __init__(self):
        self.api = docker.APIClient(base_url=os.environ.get('DOCKER_HOST') or 'unix:///var/run/docker.sock')
        self.serial = 0
        self.forced_cleanups = 0
        self.forced = []            # what was forced away, and after which measurement
        self.violations = []        # the GitHub stand-in's

    def _run(self, tag, cmd, env):
        """Run one command, its output into a log file; returns (seconds, output)."""
        self.serial += 1
        path = os.path.join(LOGS, '%03d-%s.log' % (self.serial, tag))
        with open(path, 'wb') as out:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, cwd=WORK, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, check=False)
            seconds = time.perf_counter() - t0
        with open(path, 'r', errors='replace') as f:
            output = f.read()
        if proc.returncode != 0:
            raise BenchError('%s exited %d; its output is in %s:\n%s' % (tag, proc.returncode, path, output[-3000:]))
        return seconds, output

    def log_path(self, tag):
        self.serial += 1
        return os.path.join(LOGS, '%03d-%s.log' % (self.serial, tag))

    def playbook(self, tag, side, book, changed=None):
        """Run one playbook; fail unless its recap shows no failure (and `changed` as expected)."""
        seconds, output = self._run(tag, playbook_cmd(side, book), child_env(side))
        recap = RECAP.findall(output)
        if not recap:
            raise BenchError('%s: no play recap in its output' % tag)
        was_changed, unreachable, failed = (int(x) for x in recap[-1][1:])
        if failed or unreachable:
            raise BenchError('%s: failed=%d unreachable=%d' % (tag, failed, unreachable))
        if changed is not None and bool(was_changed) != changed:
            raise BenchError('%s: expected changed=%s, the recap says changed=%d' % (tag, int(changed), was_changed))
        return seconds

    def script(self, tag, cmd, docker_host=None, extra_env=None):
        """Run a shell anchor (bash, the project venv first on PATH); returns its seconds."""
        env = child_env('project')
        env.update(extra_env or {})
        if docker_host:
            env['DOCKER_HOST'] = docker_host
        return self._run(tag, ['bash'] + cmd, env)[0]

    def sdk(self, tag, docker_host=None):
        cmd = [PROJECT_PY, os.path.join(HERE, 'sdk_floor.py'), '--count', str(COUNT), '--image', IMAGE,
               '--prefix', SDK_PREFIX, '--label', '%s=%s' % SDK_LABEL]
        if docker_host:
            cmd += ['--docker-host', docker_host]
        seconds, output = self._run(tag, cmd, child_env('project'))
        try:
            inner = json.loads(output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            inner = {}
        return seconds, inner

    def forced_away(self, what, after):
        self.forced_cleanups += 1
        self.forced.append('%s (after %s)' % (what, after))
        log('%s left %s: forcing it away' % (after, what))

    # --- the engine, seen directly (untimed) ---

    def running(self, label):
        return sorted((c['Names'][0].lstrip('/'), c['Id'])
                      for c in self.api.containers(filters={'label': label}))

    def every(self, label):
        return self.api.containers(all=True, filters={'label': label})

    def expect_running(self, tag, label, prefix):
        names = [n for n, dummy in self.running(label)]
        want = ['%s%02d%s' % (prefix, i, '-main' if prefix == ECS_TASK_PREFIX else '') for i in range(COUNT)]
        if names != want:
            raise BenchError('%s: expected %d running containers %s..., found %d: %s'
                             % (tag, COUNT, want[0], len(names), ', '.join(names[:5])))

    def remove_label(self, label):
        for c in self.every(label):
            try:
                self.api.remove_container(c['Id'], force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:      # 409: its removal is already under way
                    raise

    def ecs_clean(self):
        """ecs_task removes its own tasks (and their store records); anything it left is forced away.
        Returns the seconds the purge playbook took."""
        seconds = self.playbook('ecs-purge', 'project', 'ecs_purge.yml')
        left = self.every('drover.cluster=%s' % CLUSTER)
        stored = store_rows()
        if left or stored:
            self.forced_away('%d containers and %d store records' % (len(left), stored), 'ecs_task purge')
            self.remove_label('drover.cluster=%s' % CLUSTER)
            remove_store()
        return seconds

    # --- the awsvpc group (untimed checks and clean-up) ---

    def vpc_check_up(self, tag, netns, label):
        """The task runs in its netns: the ENI with its address and the default route, the credential link
        with its /30 and the route to 169.254.170.2, the container joined to the holder, the gateway answering."""
        addrs = ip('-n', netns, '-o', '-4', 'addr', 'show').stdout
        routes = ip('-n', netns, 'route', 'show').stdout
        problems = []
        if not re.search(r'\s%s\s+inet %s\s' % (re.escape(ENI_IF), re.escape(ENI_ADDRESS)), addrs):
            problems.append('no %s on %s' % (ENI_ADDRESS, ENI_IF))
        if not re.search(r'\sdrover-cred\s+inet 169\.254\.\d+\.\d+/30\s', addrs):
            problems.append('no /30 on drover-cred')
        if 'default via %s' % ENI_GATEWAY not in routes or not re.search(r'^169\.254\.170\.2 via ', routes, re.M):
            problems.append('routes: %s' % routes.strip().replace('\n', '; '))
        boxes = [c for c in self.api.containers(filters={'label': label}) if c['Names'][0].endswith('-main')]
        if len(boxes) != 1:
            problems.append('%d running task containers' % len(boxes))
        else:
            mode = self.api.inspect_container(boxes[0]['Id'])['HostConfig']['NetworkMode']
            if not mode.startswith('container:'):
                problems.append('the task container\'s network is %s' % mode)
            else:
                run = self.api.exec_create(boxes[0]['Id'], ['ping', '-c', '1', '-W', '2', ENI_GATEWAY])
                self.api.exec_start(run['Id'])
                if self.api.exec_inspect(run['Id'])['ExitCode'] != 0:
                    problems.append('the gateway %s does not answer from the task' % ENI_GATEWAY)
        if problems:
            raise BenchError('%s: the awsvpc task is not as declared: %s' % (tag, '; '.join(problems)))

    def vpc_leftovers(self, netns, cred_if, label, store=None):
        left = []
        if netns_exists(netns):
            left.append('netns %s' % netns)
        if os.path.isdir(os.path.join('/etc/netns', netns)):
            left.append('/etc/netns/%s' % netns)
        if link_exists(cred_if):
            left.append('link %s' % cred_if)
        if link_rules(cred_if):
            left.append('%d filter rules of link %s' % (len(link_rules(cred_if)), cred_if))
        boxes = self.every(label)
        if boxes:
            left.append('%d containers' % len(boxes))
        if not link_exists(ENI_IF):
            left.append('the ENI not back on the host')
        if store and os.path.exists(store):
            db = sqlite3.connect('file:%s?mode=ro' % store, uri=True)
            try:
                rows = db.execute('SELECT count(*) FROM link_allocations').fetchone()[0]
                tasks = db.execute('SELECT count(*) FROM tasks').fetchone()[0]
            except sqlite3.Error:
                rows = tasks = 0
            finally:
                db.close()
            if rows or tasks:
                left.append('%d /30 allocations and %d task records in the store' % (rows, tasks))
        return left

    def vpc_check_gone(self, tag, side):
        if side == 'ecs':
            left = self.vpc_leftovers(VPC_NETNS, VPC_CRED_IF, 'drover.cluster=%s' % VPC_CLUSTER, VPC_STORE)
        else:
            left = self.vpc_leftovers(HAND_NETNS, HAND_CRED_IF, '%s=%s' % HAND_LABEL)
        if left:
            self.forced_away(', '.join(left), tag)
            self.vpc_force_clean()

    def vpc_force_clean(self):
        self.remove_label('drover.cluster=%s' % VPC_CLUSTER)
        self.remove_label('%s=%s' % HAND_LABEL)
        for netns in (VPC_NETNS, HAND_NETNS):
            if netns_exists(netns):
                ip('netns', 'del', netns)
            shutil.rmtree(os.path.join('/etc/netns', netns), ignore_errors=True)
        for link in (VPC_CRED_IF, HAND_CRED_IF):
            if link_exists(link):
                ip('link', 'del', link)
            for chain, rule in link_rules(link):
                subprocess.run(['iptables', '-w', '10', '-D', chain] + rule, capture_output=True, check=False)
        shutil.rmtree(os.path.dirname(VPC_STORE), ignore_errors=True)

    # --- the pools group ---

    def pool_containers(self):
        return sorted((c['Names'][0].lstrip('/'), c['Id'], c['State'])
                      for name in POOL_NAMES for c in self.every('drover.pool=%s' % name))

    def pools_clean(self, url=None):
        """gh_runner_slot drains every pool (kill_busy); anything left is forced away."""
        if url:
            write_pool_playbooks(url)
            try:
                self.playbook('pools-absent', 'project', 'pools_absent.yml')
            except BenchError as exc:
                log('the pools\' teardown failed: %s' % str(exc).splitlines()[0])
        left = self.pool_containers()
        if left:
            self.forced_away('%d runner containers' % len(left), 'gh_runner_slot state absent')
            for name in POOL_NAMES:
                self.remove_label('drover.pool=%s' % name)
        shutil.rmtree(POOL_DIR, ignore_errors=True)

    # --- all of it ---

    def others(self):
        """Containers on the engine that the bench did not make (other work sharing the engine)."""
        rows = self.api.containers(all=True)
        return {'running': sum(1 for c in rows if c.get('State') == 'running'
                               and not c['Names'][0].lstrip('/').startswith(BENCH_NAME_PREFIXES)),
                'all': sum(1 for c in rows if not c['Names'][0].lstrip('/').startswith(BENCH_NAME_PREFIXES))}

    def clean_all(self):
        self.remove_label('drover.cluster=%s' % CLUSTER)
        self.remove_label('%s=%s' % DC_LABEL)
        self.remove_label('%s=%s' % SDK_LABEL)
        remove_store()
        if 'awsvpc' in GROUPS:
            self.vpc_force_clean()
            eni_unplug()
        if 'pools' in GROUPS:
            for name in POOL_NAMES:
                self.remove_label('drover.pool=%s' % name)
            shutil.rmtree(POOL_DIR, ignore_errors=True)

    def engine_version(self):
        return self.api.version()

    def engine_answers(self):
        try:
            return self.api.ping()
        except Exception:  # noqa: BLE001 - any failure means no
            return False

    def wait_engine(self, seconds=60):
        """Other work on this host may restart the engine: wait for it rather than fail a run on it."""
        deadline = time.monotonic() + seconds
        while not self.engine_answers():
            if time.monotonic() > deadline:
                raise BenchError('the Docker engine has not answered for %d s' % seconds)
            time.sleep(1)

    def wait_engine_stable(self, seconds=180, quiet=5.0):
        """After the engine went away: wait for one that answers and keeps answering for `quiet` seconds
        (a restart first stops the old engine, which answers for a while as it shuts down)."""
        deadline = time.monotonic() + seconds
        since = None
        while True:
            if self.engine_answers():
                since = since or time.monotonic()
                if time.monotonic() - since >= quiet:
                    return
            else:
                since = None
            if time.monotonic() > deadline:
                raise BenchError('the Docker engine has not answered steadily for %d s' % seconds)
            time.sleep(0.5)

    def clean_after_engine_loss(self, tries=5):
        """clean_all once the engine is back and steady; again if it goes away meanwhile."""
        for attempt in range(tries):
            self.wait_engine_stable()
            try:
                self.clean_all()
                return
            except (docker.errors.DockerException, OSError) as exc:
                if attempt == tries - 1:
                    raise
                log('clean-up cut short by the engine (%s); waiting for it again' % str(exc).splitlines()[0][:200])


# What an engine that went away looks like in an error (ecs_task's, the SDK's, community.docker's).
ENGINE_GONE = re.compile(r'cannot be reached|Cannot connect to the Docker daemon|Connection (refused|aborted|reset)'
                         r'|Error connecting|No such file or directory', re.I)


def engine_pid():
    """The running dockerd's PID as its pid file says: a new one means the engine was restarted."""
    try:
        with open('/var/run/docker.pid') as f:
            return f.read().strip()
    except OSError:
        return None


def engine_lost(runner, pid, exc):
    """Whether a failure came from the engine going away or restarting (since it had PID `pid`)."""
    return not runner.engine_answers() or engine_pid() != pid or ENGINE_GONE.search(str(exc)) is not None


def store_rows():
    if not os.path.exists(STORE):
        return 0
    db = sqlite3.connect('file:%s?mode=ro' % STORE, uri=True)
    try:
        return db.execute('SELECT count(*) FROM tasks WHERE cluster = ?', (CLUSTER,)).fetchone()[0]
    finally:
        db.close()


def remove_store():
    for suffix in ('', '-wal', '-shm', '.lock'):
        if os.path.exists(STORE + suffix):
            os.unlink(STORE + suffix)


# --- one round ----------------------------------------------------------------------------------------

def settle():
    if SETTLE > 0:
        time.sleep(SETTLE)


def vpc_unit(runner, tag, side, got, counted=None):
    """One awsvpc side, from nothing and back: the ENI plugged, up (timed), checked, down (timed), checked,
    the ENI deleted. `counted`: a function(name, fn) that runs fn through the counting proxy instead."""
    proxy = 'unix://' + PROXY_SOCKET
    if side == 'ecs':
        names, netns, label = ('awsvpc_up', 'awsvpc_down'), VPC_NETNS, 'drover.cluster=%s' % VPC_CLUSTER
    else:
        names, netns, label = ('hand_up', 'hand_down'), HAND_NETNS, '%s=%s' % HAND_LABEL

    def step(name):
        """Run one side's up or down; its seconds."""
        if side == 'ecs':
            book = '%s%s.yml' % (name, '_counted' if counted else '')
            return runner.playbook('%s-%s' % (tag, name.replace('_', '-')), 'project', book, changed=True)
        return runner.script('%s-%s' % (tag, name.replace('_', '-')), [HAND_VPC_SH, name.split('_')[1]],
                             docker_host=proxy if counted else None)

    eni_plug()
    try:
        for name in names:
            if counted:
                counted(name, lambda name=name: step(name))
            else:
                settle()
                got[name].append(step(name))
            if name.endswith('_up'):
                runner.vpc_check_up('%s %s' % (tag, name), netns, label)
        runner.vpc_check_gone('%s %s' % (tag, names[1]), side)
    except BaseException:
        runner.vpc_force_clean()
        raise
    finally:
        eni_unplug()


def pools_unit(runner, tag, hand_first, got, got_extra, counted=None):
    """The stand-in started; 1 pool converged (untimed), its runners online, its no-op pass and its hand
    listings measured; then P pools, the same; then every pool drained and the stand-in stopped.
    `counted`: a function(name, fn) that runs fn through the counting proxy instead of timing it."""
    gh = StandIn(runner.log_path('%s-standin' % tag)).start()
    try:
        write_pool_playbooks(gh.url)
        for n in (1, P):
            book = 'pools%d.yml' % n
            runner.playbook('%s-pools%d-converge' % (tag, n), 'project', book, changed=True)
            gh.wait_online(n * SLOTS)
            before = runner.pool_containers()
            if len(before) != n * SLOTS or any(state != 'running' for dummy, dummy, state in before):
                raise BenchError('%s: %d runner containers, %d expected running' % (tag, len(before), n * SLOTS))
            hand = [HAND_POOLS_SH] + ['%s=%s' % (POOL_NAMES[i], POOL_REPOS[i]) for i in range(n)]
            hand_env = {'BENCH_GH_URL': gh.url, 'BENCH_GH_TOKEN': GH_TOKEN}
            proxy = 'unix://' + PROXY_SOCKET
            steps = [
                ('pools%d_noop' % n, lambda n=n: runner.playbook(
                    '%s-pools%d-noop' % (tag, n), 'project',
                    'pools%d_counted.yml' % n if counted else 'pools%d.yml' % n, changed=False)),
                ('pools%d_hand' % n, lambda n=n, hand=hand: runner.script(
                    '%s-pools%d-hand' % (tag, n), hand, docker_host=proxy if counted else None,
                    extra_env=hand_env)),
            ]
            if hand_first:
                steps.reverse()
            if n == P:
                steps.append(('pools%d_calls' % n, lambda n=n: runner.playbook(
                    '%s-pools%d-calls' % (tag, n), 'project',
                    'pools%d_calls_counted.yml' % n if counted else 'pools%d_calls.yml' % n, changed=False)))
            for name, fn in steps:
                mark = gh.mark()
                if counted:
                    counted(name, fn)
                else:
                    settle()
                    got[name].append(fn())
                reqs = gh.github_requests(mark)
                writes = ['%s %s' % (r['method'], r['path']) for r in reqs if r['method'] != 'GET']
                if writes:
                    raise BenchError('%s %s: a pass with nothing to do sent %s' % (tag, name, ', '.join(writes)))
                by = {}
                for r in reqs:
                    key = '%s %s' % (r['method'], re.sub(r'/repos/[^/]+/[^/]+/', '/repos/{owner}/{repo}/', r['path']))
                    by[key] = by.get(key, 0) + 1
                got_extra['github'].setdefault(name, []).append({'total': len(reqs), 'by_endpoint': by})
            after = runner.pool_containers()
            if after != before:
                raise BenchError('%s: the no-op passes changed the runner containers' % tag)
            rows = gh.runners()
            if len(rows) != n * SLOTS or not all(r['status'] == 'online' and not r['busy'] for r in rows):
                raise BenchError('%s: the runners are no longer all online and idle' % tag)
    finally:
        try:
            runner.pools_clean(gh.url)
        finally:
            found = gh.stop()
            if found:
                runner.violations.extend('%s: %s' % (tag, v) for v in found)


def run_unit(runner, unit, tag, samples, extra, round_index):
    if unit == ('ping',):
        settle()
        samples['ping'].append(runner.playbook('%s-ping' % tag, 'project', 'ping.yml'))
    elif unit == ('ping_anchor',):
        settle()
        samples['ping_anchor'].append(runner.playbook('%s-ping-anchor' % tag, 'anchor', 'ping.yml'))
    elif unit == ('sdk',):
        settle()
        seconds, inner = runner.sdk('%s-sdk' % tag)
        runner.expect_running('sdk', '%s=%s' % SDK_LABEL, SDK_PREFIX)
        samples['sdk'].append(seconds)
        extra['sdk_inner'].append(inner)
        runner.remove_label('%s=%s' % SDK_LABEL)
    elif unit == ('ecs_cold', 'ecs_noop'):
        settle()
        seconds = runner.playbook('%s-ecs-cold' % tag, 'project', 'ecs_converge.yml', changed=True)
        runner.expect_running('ecs_cold', 'drover.cluster=%s' % CLUSTER, ECS_TASK_PREFIX)
        before = runner.running('drover.cluster=%s' % CLUSTER)
        samples['ecs_cold'].append(seconds)
        settle()
        seconds = runner.playbook('%s-ecs-noop' % tag, 'project', 'ecs_converge.yml', changed=False)
        if runner.running('drover.cluster=%s' % CLUSTER) != before:
            raise BenchError('ecs_noop: the no-op converge replaced containers')
        samples['ecs_noop'].append(seconds)
        samples['ecs_purge'].append(runner.ecs_clean())
    elif unit == ('dc_loop',):
        settle()
        seconds = runner.playbook('%s-dc-loop' % tag, 'anchor', 'dc_loop.yml', changed=True)
        runner.expect_running('dc_loop', '%s=%s' % DC_LABEL, DC_PREFIX)
        samples['dc_loop'].append(seconds)
        runner.remove_label('%s=%s' % DC_LABEL)
    elif unit == ('awsvpc_up', 'awsvpc_down'):
        vpc_unit(runner, tag, 'ecs', samples)
    elif unit == ('hand_up', 'hand_down'):
        vpc_unit(runner, tag, 'hand', samples)
    elif unit == GROUP_UNITS['pools'][0]:
        # Within the unit, each no-op pass and its hand-made listings run back to back; which goes first
        # alternates from round to round.
        pools_unit(runner, tag, round_index % 2 == 1, samples, extra)
    else:  # pragma: no cover
        raise AssertionError(unit)


def unit_names(unit, round_index):
    if unit == GROUP_UNITS['pools'][0] and round_index % 2 == 1:
        return [unit[1], unit[0], unit[3], unit[2], unit[4]]
    return list(unit)


def run_rounds(runner):
    """Every round; a round cut short by the engine going away (other work on this host restarts it)
    is dropped whole and run again, at most RETRIES times in all."""
    samples = dict((name, []) for name in MEASURED)
    warm = dict((name, []) for name in MEASURED)
    extra = {'sdk_inner': [], 'orders': [], 'retried': [], 'github': {}}
    warm_extra = {'sdk_inner': [], 'orders': [], 'github': {}}
    retries = RETRIES
    r = 0
    while r < WARMUP + REPEAT:
        warmup = r < WARMUP
        k = r % len(UNITS)
        order = UNITS[k:] + UNITS[:k]
        names = [n for unit in order for n in unit_names(unit, r)]
        tag = 'warmup%d' % (r + 1) if warmup else 'round%d' % (r - WARMUP + 1)
        log('%s: %s' % (tag, ' '.join(names)))
        got = dict((name, []) for name in MEASURED)
        got_extra = {'sdk_inner': [], 'github': {}}
        engine = engine_pid()
        try:
            for unit in order:
                runner.wait_engine()
                run_unit(runner, unit, tag, got, got_extra, r)
        except (BenchError, docker.errors.DockerException, OSError) as exc:
            if retries <= 0 or not engine_lost(runner, engine, exc):
                raise
            retries -= 1
            log('%s: the engine went away or restarted (%s); dropping the round and running it again'
                % (tag, str(exc).strip().splitlines()[0][:200]))
            extra['retried'].append(tag)
            runner.clean_after_engine_loss()
            continue
        for total, (a, b) in SUMS.items():
            if total in got and got[a] and got[b]:
                got[total].append(got[a][-1] + got[b][-1])
        into, into_extra = (warm, warm_extra) if warmup else (samples, extra)
        for name in got:
            into[name].extend(got[name])
        into_extra['sdk_inner'].extend(got_extra['sdk_inner'])
        for name, rows in got_extra['github'].items():
            into_extra['github'].setdefault(name, []).extend(rows)
        into_extra['orders'].append(names)
        if not warmup:
            log('%s: %s' % (tag, '  '.join('%s %.2fs' % (n, got[n][-1]) for n in names)))
        r += 1
    return samples, warm, extra


# --- counting engine calls ------------------------------------------------------------------------------

def _summary(snapshot):
    by = {}
    for dummy, method, target in snapshot['calls']:
        key = apiproxy.endpoint(method, target)
        by[key] = by.get(key, 0) + 1
    return {
        'total': len(snapshot['calls']),
        'by_endpoint': dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))),
        'connections': snapshot['connections'],
        'unframed_connections': snapshot['unframed'],
    }


def count_calls(runner):
    """Run each engine-touching measurement once more, through the counting proxy (untimed)."""
    proxy = apiproxy.CountingProxy(PROXY_SOCKET).start()
    address = 'unix://' + PROXY_SOCKET
    out = {}
    github = {}
    try:
        def counted(name, fn):
            proxy.reset()
            fn()
            time.sleep(0.2)          # the last bytes of a closing connection
            snap = proxy.snapshot()
            out[name] = _summary(snap)
            if name in ('ecs_noop', 'pools1_noop', 'pools%d_noop' % P):
                out[name]['calls'] = ['%s %s' % (m, t) for dummy, m, t in snap['calls']]
            log('calls %s: %d (%s)' % (name, out[name]['total'], ', '.join(
                '%s x%d' % kv for kv in out[name]['by_endpoint'].items())))

        if 'ecs' in GROUPS:
            counted('ecs_cold', lambda: runner.playbook('calls-ecs-cold', 'project', 'ecs_converge_counted.yml',
                                                        changed=True))
            runner.expect_running('calls ecs_cold', 'drover.cluster=%s' % CLUSTER, ECS_TASK_PREFIX)
            counted('ecs_noop', lambda: runner.playbook('calls-ecs-noop', 'project', 'ecs_converge_counted.yml',
                                                        changed=False))
            runner.ecs_clean()
            counted('dc_loop', lambda: runner.playbook('calls-dc-loop', 'anchor', 'dc_loop_counted.yml',
                                                       changed=True))
            runner.expect_running('calls dc_loop', '%s=%s' % DC_LABEL, DC_PREFIX)
            runner.remove_label('%s=%s' % DC_LABEL)
            counted('sdk', lambda: runner.sdk('calls-sdk', address))
            runner.expect_running('calls sdk', '%s=%s' % SDK_LABEL, SDK_PREFIX)
            runner.remove_label('%s=%s' % SDK_LABEL)
        if 'awsvpc' in GROUPS:
            vpc_unit(runner, 'calls', 'ecs', None, counted)
            vpc_unit(runner, 'calls', 'hand', None, counted)
        if 'pools' in GROUPS:
            extra = {'github': {}}
            pools_unit(runner, 'calls', False, None, extra, counted)
            github = dict((name, rows[0]) for name, rows in extra['github'].items())
    finally:
        proxy.stop()
    for name, row in github.items():
        if name in out:
            out[name]['github'] = row
    return out


# --- the report ------------------------------------------------------------------------------------------

def _stats(values):
    if not values:
        return {'samples': [], 'median': None, 'min': None, 'max': None}
    return {'samples': [round(v, 3) for v in values], 'median': round(statistics.median(values), 3),
            'min': round(min(values), 3), 'max': round(max(values), 3)}


def _paired(samples, names, fn):
    """The median of a ratio taken round by round (a check on the ratio of medians under drift)."""
    n = min(len(samples[k]) for k in names)
    values = [fn(dict((k, samples[k][i]) for k in names)) for i in range(n)]
    return round(statistics.median(values), 3) if values else None


# The ratios: (key, group, what, target, the measurements it needs, the function of their values).
RATIOS = (
    ('noop_over_ping', 'ecs', 'ecs_task no-op converge / ping run', 2.0,
     ('ecs_noop', 'ping'), lambda s: s['ecs_noop'] / s['ping']),
    ('cold_over_floor', 'ecs', 'ecs_task cold converge / (SDK floor + ping run)', 1.3,
     ('ecs_cold', 'sdk', 'ping'), lambda s: s['ecs_cold'] / (s['sdk'] + s['ping'])),
    ('dc_loop_over_cold', 'ecs', 'docker_container loop / ecs_task cold converge (context)', None,
     ('dc_loop', 'ecs_cold'), lambda s: s['dc_loop'] / s['ecs_cold']),
    ('awsvpc_over_hand', 'awsvpc', 'awsvpc task up + down: ecs_task (2 playbook runs) / by hand', 1.5,
     ('awsvpc_total', 'hand_total'), lambda s: s['awsvpc_total'] / s['hand_total']),
    ('awsvpc_less_ping_over_hand', 'awsvpc', '(ecs_task up + down - 2 ping runs) / by hand (context)', None,
     ('awsvpc_total', 'hand_total', 'ping'), lambda s: (s['awsvpc_total'] - 2 * s['ping']) / s['hand_total']),
    ('awsvpc_up_over_hand', 'awsvpc', 'up alone: ecs_task / by hand (context)', None,
     ('awsvpc_up', 'hand_up'), lambda s: s['awsvpc_up'] / s['hand_up']),
    ('awsvpc_down_over_hand', 'awsvpc', 'down alone: ecs_task / by hand (context)', None,
     ('awsvpc_down', 'hand_down'), lambda s: s['awsvpc_down'] / s['hand_down']),
    ('pools1_over_anchor', 'pools', 'no-op pass, 1 pool / (its listings by hand + ping run)', 2.0,
     ('pools1_noop', 'pools1_hand', 'ping'), lambda s: s['pools1_noop'] / (s['pools1_hand'] + s['ping'])),
    ('pools%d_over_anchor' % P, 'pools', 'no-op pass, %d pools / (their listings by hand + ping run)' % P, 2.0,
     ('pools%d_noop' % P, 'pools%d_hand' % P, 'ping'),
     lambda s: s['pools%d_noop' % P] / (s['pools%d_hand' % P] + s['ping'])),
    ('pools%d_calls_over_anchor' % P, 'pools', 'context: %d pools, one call each / (their listings by hand + ping run)'
     % P, None, ('pools%d_calls' % P, 'pools%d_hand' % P, 'ping'),
     lambda s: s['pools%d_calls' % P] / (s['pools%d_hand' % P] + s['ping'])),
)


def provenance():
    def out(cmd, cwd=ROOT):
        try:
            return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout.rstrip()
        except (OSError, subprocess.CalledProcessError):
            return None

    def version(py, dist):
        return out([py, '-c', 'import importlib.metadata as m; print(m.version(%r))' % dist])

    manifest = out([ANCHOR_PY, '-c', 'import ansible, os, json; print(json.load(open(os.path.join(os.path.dirname('
                    'os.path.dirname(ansible.__file__)), "ansible_collections", "community", "docker", '
                    '"MANIFEST.json")))["collection_info"]["version"])'])
    cpu = None
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next((line.split(':', 1)[1].strip() for line in f if line.startswith('model name')), None)
    except OSError:
        pass
    return {
        'git_head': out(['git', 'rev-parse', '--short', 'HEAD']),
        'git_dirty_paths': [line[3:] for line in (out(['git', 'status', '--porcelain', '--', 'plugins']) or '')
                            .splitlines() if len(line) > 3],
        'plugins_sha256': plugins_digest(),     # of the collection measured
        'python': platform.python_version(),
        'ansible_core_project': version(PROJECT_PY, 'ansible-core'),
        'ansible_core_anchor': version(ANCHOR_PY, 'ansible-core'),
        'ansible_anchor': version(ANCHOR_PY, 'ansible'),
        'community_docker': manifest,
        'docker_sdk': version(PROJECT_PY, 'docker'),
        'pygithub': version(PROJECT_PY, 'PyGithub'),
        'pyroute2': version(PROJECT_PY, 'pyroute2'),
        'iproute2': out(['ip', '-V']),
        'curl': (out(['curl', '--version']) or '').split('\n')[0] or None,
        'kernel': platform.release(),
        'cpus': os.cpu_count(),
        'cpu_model': cpu,
    }


def plugins_digest():
    root = os.path.realpath(os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'drover', 'fleet'))
    paths = sorted(os.path.join(base, name) for base, dummy, files in os.walk(os.path.join(root, 'plugins'))
                   for name in files if name.endswith('.py'))
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.path.relpath(path, root).encode())
        with open(path, 'rb') as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def _r(value, digits=3):
    return None if value is None else round(value, digits)


def _derived(med, extra):
    def have(*names):
        return all(med.get(n) is not None for n in names)

    out = {}
    if have('ecs_noop', 'ping', 'ecs_cold', 'dc_loop', 'ping_anchor'):
        inner = extra['sdk_inner']
        out.update({
            'ecs_noop_minus_ping_s': _r(med['ecs_noop'] - med['ping']),
            'ecs_cold_minus_noop_per_task_s': _r((med['ecs_cold'] - med['ecs_noop']) / COUNT),
            'dc_loop_minus_ping_anchor_per_container_s': _r((med['dc_loop'] - med['ping_anchor']) / COUNT),
            'sdk_create_start_per_container_s': round(statistics.median([i['per_container_s'] for i in inner]), 4)
            if inner and all('per_container_s' in i for i in inner) else None,
            'sdk_import_docker_s': round(statistics.median([i['import_s'] for i in inner]), 4)
            if inner and all('import_s' in i for i in inner) else None,
        })
    if have('awsvpc_up', 'awsvpc_down', 'awsvpc_total', 'hand_total', 'ping'):
        out.update({
            'awsvpc_up_minus_ping_s': _r(med['awsvpc_up'] - med['ping']),
            'awsvpc_down_minus_ping_s': _r(med['awsvpc_down'] - med['ping']),
            'awsvpc_total_minus_2_ping_s': _r(med['awsvpc_total'] - 2 * med['ping']),
            'awsvpc_total_minus_hand_s': _r(med['awsvpc_total'] - med['hand_total']),
        })
    n1, nP, h1, hP = 'pools1_noop', 'pools%d_noop' % P, 'pools1_hand', 'pools%d_hand' % P
    if have(n1, nP, h1, hP, 'ping') and P > 1:
        out.update({
            'pools1_noop_minus_ping_s': _r(med[n1] - med['ping']),
            'pools_noop_per_further_pool_s': _r((med[nP] - med[n1]) / (P - 1)),
            'pools_hand_per_pool_s': _r(med[hP] / P),
            'pools%d_noop_minus_anchor_s' % P: _r(med[nP] - med[hP] - med['ping']),
        })
    github = {}
    for name, rows in sorted(extra.get('github', {}).items()):
        totals = sorted(set(r['total'] for r in rows))
        github[name] = {'per_pass': totals, 'by_endpoint': rows[-1]['by_endpoint'] if rows else {}}
    if github:
        out['github_requests_timed'] = github
    return out


def report(samples, warm, extra, calls, info, notes, started, finished, runner):
    stats = dict((name, _stats(samples[name])) for name in MEASURED)
    for name in MEASURED:
        stats[name]['warmup'] = [round(v, 3) for v in warm[name]]
    med = dict((name, stats[name]['median']) for name in stats)
    ratios = {}
    for key, group, what, target, names, fn in RATIOS:
        if group not in GROUPS:
            continue
        value = None if any(med.get(n) is None for n in names) else fn(med)
        ratios[key] = {'value': _r(value), 'target': target, 'paired_median': _paired(samples, names, fn),
                       'what': what, 'group': group,
                       'holds': None if target is None or value is None else value <= target}
    return {
        'bench': 'drover.fleet: %s' % ', '.join(GROUPS),
        'groups': list(GROUPS),
        'date': started.strftime('%Y-%m-%d'),
        'started': started.isoformat(timespec='seconds'),
        'finished': finished.isoformat(timespec='seconds'),
        'config': {'repeat': REPEAT, 'warmup': WARMUP, 'count': COUNT, 'image': IMAGE, 'cluster': CLUSTER,
                   'store_path': STORE, 'settle_s': SETTLE, 'pools': POOLS, 'slots': SLOTS,
                   'runner_image': RUNNER_IMAGE, 'runner_poll_s': RUNNER_POLL, 'eni_mac': ENI_MAC,
                   'orders': extra['orders'], 'rounds_dropped_and_rerun': extra['retried']},
        'host': info,
        'measurements': dict((name, dict(stats[name], what=WHAT[name], group=group or 'all'))
                             for name, group, what in MEASUREMENTS if name in stats),
        'ratios': ratios,
        'derived': _derived(med, extra),
        'api_calls': calls,
        'forced_cleanups': runner.forced_cleanups,
        'forced': runner.forced,
        'standin_violations': runner.violations,
        'notes': notes,
    }


def _calls_row(name, c):
    row = '| `%s` | %d | %s |' % (name, c['total'], ', '.join('`%s` x%d' % kv for kv in c['by_endpoint'].items()))
    if 'github' in c:
        row = row[:-2] + ' | %d: %s |' % (c['github']['total'], ', '.join(
            '`%s` x%d' % kv for kv in sorted(c['github']['by_endpoint'].items())))
    return row


def markdown(res):
    m = res['measurements']
    h = res['host']
    lines = [
        '# drover.fleet bench, %s' % res['date'],
        '',
        'Groups %s; %d rounds (+%d warm-up), medians of wall time in seconds; host: %s CPUs (%s), kernel %s, '
        'Docker %s, Python %s, ansible-core %s, community.docker %s, docker SDK %s, PyGithub %s, pyroute2 %s, %s; '
        'drover.fleet at %s%s (plugins %s). Load average %s at the start, %s at the end; other containers on the '
        'engine: %s running at the start, %s at the end.' % (
            ', '.join(res['groups']), res['config']['repeat'], res['config']['warmup'], h['cpus'], h['cpu_model'],
            h['kernel'], h.get('engine'), h['python'], h['ansible_core_project'], h['community_docker'],
            h['docker_sdk'], h.get('pygithub'), h.get('pyroute2'), h.get('iproute2'), h['git_head'],
            ' with uncommitted changes' if h['git_dirty_paths'] else '', h['plugins_sha256'],
            h['loadavg_start'][0], h['loadavg_end'][0], h['other_containers_start']['running'],
            h['other_containers_end']['running']),
        '',
        '| measurement | median s | min s | max s | samples |',
        '| --- | ---: | ---: | ---: | --- |',
    ]
    for name, group, what in MEASUREMENTS:
        if name not in m or m[name]['median'] is None:
            continue
        s = m[name]
        lines.append('| `%s`: %s | %.2f | %.2f | %.2f | %s |' % (
            name, s['what'], s['median'], s['min'], s['max'], ' '.join('%.2f' % v for v in s['samples'])))
    lines += ['', '| ratio (of medians) | value | target | holds | median of per-round ratios |',
              '| --- | ---: | ---: | --- | ---: |']
    for r in res['ratios'].values():
        if r['value'] is None:
            continue
        lines.append('| %s | %.2f | %s | %s | %s |' % (
            r['what'], r['value'], '<= %.1f' % r['target'] if r['target'] is not None else '-',
            {True: 'yes', False: '**no**', None: '-'}[r['holds']],
            '-' if r['paired_median'] is None else '%.2f' % r['paired_median']))
    d = res['derived']
    if 'ecs_noop_minus_ping_s' in d:
        lines += ['', 'Derived (ecs): no-op minus ping %.2f s; ecs_task cold minus no-op, per task %.3f s; '
                  'docker_container loop minus its ping, per container %.3f s; SDK create+start per container '
                  '%.3f s; `import docker` %.3f s.' % (
                      d['ecs_noop_minus_ping_s'], d['ecs_cold_minus_noop_per_task_s'],
                      d['dc_loop_minus_ping_anchor_per_container_s'], d['sdk_create_start_per_container_s'] or 0,
                      d['sdk_import_docker_s'] or 0)]
    if 'awsvpc_total_minus_2_ping_s' in d:
        lines += ['', 'Derived (awsvpc): up minus ping %.2f s, down minus ping %.2f s; up + down minus two ping '
                  'runs %.2f s; ecs_task up + down minus by hand %.2f s.' % (
                      d['awsvpc_up_minus_ping_s'], d['awsvpc_down_minus_ping_s'], d['awsvpc_total_minus_2_ping_s'],
                      d['awsvpc_total_minus_hand_s'])]
    if 'pools_noop_per_further_pool_s' in d:
        lines += ['', 'Derived (pools): 1-pool no-op minus ping %.2f s; each further pool adds %.3f s to the no-op '
                  'pass; by hand, %.3f s a pool; the %d-pool no-op minus its anchor %.2f s.' % (
                      d['pools1_noop_minus_ping_s'], d['pools_noop_per_further_pool_s'], d['pools_hand_per_pool_s'],
                      P, d['pools%d_noop_minus_anchor_s' % P])]
    if d.get('github_requests_timed'):
        lines += ['', 'GitHub stand-in requests per timed pass (every sample): %s.' % '; '.join(
            '`%s` %s (%s)' % (name, '/'.join(str(t) for t in g['per_pass']), ', '.join(
                '`%s` x%d' % kv for kv in sorted(g['by_endpoint'].items())))
            for name, g in d['github_requests_timed'].items())]
    if res['api_calls']:
        pools = any('github' in c for c in res['api_calls'].values())
        lines += ['', '| engine API calls (counting proxy, one untimed run each) | total | by endpoint |%s' % (
            ' GitHub requests |' if pools else ''), '| --- | ---: | --- |%s' % (' --- |' if pools else '')]
        for name, c in res['api_calls'].items():
            row = _calls_row(name, c)
            if pools and 'github' not in c:
                row += ' |'
            lines.append(row)
    if res['notes']:
        lines += [''] + ['Note: %s' % n for n in res['notes']]
    return '\n'.join(lines) + '\n'


# --- main --------------------------------------------------------------------------------------------------

def snapshot_collection():
    """Measure the collection as it is now: other work may edit plugins/ while the bench runs, and a
    run must not mix two versions of the modules. The copy replaces the collection path for every run."""
    global COLLECTIONS_PATH
    source = os.path.realpath(os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'drover', 'fleet'))
    base = os.path.join(WORK, 'collection')
    target = os.path.join(base, 'ansible_collections', 'drover', 'fleet')
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(target)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
    for name in ('plugins', 'meta'):
        if os.path.isdir(os.path.join(source, name)):
            shutil.copytree(os.path.join(source, name), os.path.join(target, name), ignore=ignore)
    if os.path.exists(os.path.join(source, 'galaxy.yml')):
        shutil.copy2(os.path.join(source, 'galaxy.yml'), target)
    COLLECTIONS_PATH = base


def preflight(runner):
    need = [PROJECT_PY]
    if 'ecs' in GROUPS:
        need += [ANCHOR_PY, os.path.join(ANCHOR_VENV, 'bin', 'ansible-playbook')]
    for path in need:
        if not os.path.exists(path):
            raise BenchError('%s is missing: run bench/run.sh (or make bench), which makes it' % path)
    link = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'drover', 'fleet')
    if not os.path.isdir(os.path.join(link, 'plugins')):
        raise BenchError('drover.fleet is not found at %s: run `make collection`' % link)
    images = [(IMAGE, 'hack/images.sh')] + ([(RUNNER_IMAGE, 'hack/runner-image.sh')] if 'pools' in GROUPS else [])
    for image, how in images:
        try:
            runner.api.inspect_image(image)
        except docker.errors.ImageNotFound:
            raise BenchError('image %s is missing: run %s' % (image, how))
    if ('awsvpc' in GROUPS or 'pools' in GROUPS) and os.geteuid() != 0:
        raise BenchError('the awsvpc and pools groups need root (namespaces, veths, the JIT files): run as root '
                         'or set BENCH_GROUPS=ecs')
    if 'awsvpc' in GROUPS:
        for tool in ('ip', 'bash'):
            if not shutil.which(tool):
                raise BenchError('the awsvpc group needs %s' % tool)
    if 'pools' in GROUPS:
        if not shutil.which('curl'):
            raise BenchError('the pools group needs curl')
        spec = os.path.join(STANDIN_PATH, 'github_standin', 'node_modules', '@octokit', 'openapi', 'generated',
                            'api.github.com.json')
        if not os.path.exists(spec):
            raise BenchError('the GitHub stand-in has no OpenAPI description: run `make standin-deps`')
        if subprocess.run([PROJECT_PY, '-c', 'import github'], capture_output=True, check=False).returncode != 0:
            raise BenchError('PyGithub is missing from %s: run `make venv`' % VENV)
    taken = [c['Names'][0].lstrip('/') for c in runner.api.containers(all=True)
             if c['Names'][0].lstrip('/').startswith(BENCH_NAME_PREFIXES)]
    runner.clean_all()
    still = [c['Names'][0].lstrip('/') for c in runner.api.containers(all=True)
             if c['Names'][0].lstrip('/').startswith(BENCH_NAME_PREFIXES)]
    if still:
        raise BenchError('containers not made by the bench hold its names: %s' % ', '.join(still))
    if taken:
        log('removed %d bench containers left from an earlier run' % len(taken))
    if 'awsvpc' in GROUPS:
        others = links_with_mac(ENI_MAC)
        if others:
            raise BenchError('link(s) %s already carry the MAC %s of the bench\'s stand-in ENI: set BENCH_ENI_MAC'
                             % (', '.join(others), ENI_MAC))


def main():
    if REPEAT < 1:
        raise BenchError('BENCH_REPEAT must be at least 1')
    if POOLS < 2 or SLOTS < 1:
        raise BenchError('BENCH_POOLS must be at least 2 and BENCH_SLOTS at least 1')
    os.makedirs(WORK, mode=0o700, exist_ok=True)
    shutil.rmtree(LOGS, ignore_errors=True)
    os.makedirs(LOGS)
    runner = Runner()
    preflight(runner)
    if SNAPSHOT:
        snapshot_collection()
    info = provenance()
    info['measured_collection'] = COLLECTIONS_PATH + (' (a copy of plugins/, meta/, galaxy.yml taken at the start)'
                                                      if SNAPSHOT else '')
    write_playbooks()
    info['engine'] = runner.engine_version().get('Version')
    info['loadavg_start'] = [round(x, 2) for x in os.getloadavg()]
    info['other_containers_start'] = runner.others()
    started = datetime.datetime.now(datetime.timezone.utc)
    log('groups %s; N=%d, %d rounds + %d warm-up, work dir %s' % (', '.join(GROUPS), COUNT, REPEAT, WARMUP, WORK))
    try:
        samples, warm, extra = run_rounds(runner)
        calls = {}
        for attempt in range(RETRIES + 1 if CALLS else 0):
            engine = engine_pid()
            try:
                calls = count_calls(runner)
                break
            except (BenchError, docker.errors.DockerException, OSError) as exc:
                if attempt == RETRIES or not engine_lost(runner, engine, exc):
                    raise
                log('counting calls: the engine went away or restarted (%s); counting again'
                    % str(exc).strip().splitlines()[0][:200])
                runner.clean_after_engine_loss()
    finally:
        try:
            runner.clean_all()
        except (docker.errors.DockerException, OSError) as exc:
            log('final clean-up failed (%s); waiting for the engine to do it again' % str(exc).splitlines()[0][:200])
            try:
                runner.clean_after_engine_loss()
            except Exception as again:  # noqa: BLE001 - the original error matters more
                log('final clean-up failed: %s' % again)
        except Exception as exc:  # noqa: BLE001 - the original error matters more
            log('final clean-up failed: %s' % exc)
    finished = datetime.datetime.now(datetime.timezone.utc)
    info['loadavg_end'] = [round(x, 2) for x in os.getloadavg()]
    info['other_containers_end'] = runner.others()
    notes = []
    if not SNAPSHOT and plugins_digest() != info['plugins_sha256']:
        notes.append('plugins/ changed while the bench ran: the samples may mix two versions of the modules')
    if runner.forced_cleanups:
        notes.append('the modules\' own clean-up left something %d times; the bench removed it itself: %s'
                     % (runner.forced_cleanups, '; '.join(runner.forced)))
    if runner.violations:
        notes.append('the GitHub stand-in noted %d OpenAPI violations (in the JSON)' % len(runner.violations))
    res = report(samples, warm, extra, calls, info, notes, started, finished, runner)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, 'latest.json'), 'w') as f:
        json.dump(res, f, indent=2)
        f.write('\n')
    text = markdown(res)
    with open(os.path.join(RESULTS, 'latest.md'), 'w') as f:
        f.write(text)
    sys.stdout.write(text)
    log('results: %s/latest.json and latest.md; logs and playbooks: %s' % (RESULTS, WORK))


if __name__ == '__main__':
    try:
        main()
    except BenchError as exc:
        log('FAILED: %s' % exc)
        sys.exit(1)
