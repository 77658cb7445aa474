# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drover.fleet bench: ecs_task against its anchors, measured side by side in one run.

Run through bench/run.sh (`make bench`), which sets up the anchor venv and the environment. Each
repetition (a "round") runs every measurement once, in an order rotated from round to round, and
removes every bench container between measurements, so each cold run starts from nothing and drift
hits all measurements alike. The report gives medians and their ratios; nothing here asserts a time.

Measurements (wall time of one process, started and waited for by this script):
  ping        ansible-playbook, one ansible.builtin.ping on localhost (the fixed cost of a run)
  ping_anchor the same in the anchor venv (the fixed cost of the docker_container runs)
  sdk         bench/sdk_floor.py: the Docker SDK creating + starting N containers in one process
  ecs_cold    ansible-playbook, one drover.fleet.ecs_task call converging N tasks from nothing
  ecs_noop    the same playbook again, right after: nothing to do
  dc_loop     ansible-playbook (anchor venv), community.docker.docker_container looped over N containers

Then, once, untimed: the same runs through a counting proxy of the engine socket, for the number and
kind of engine API calls each makes.

Settings come from the environment: BENCH_REPEAT (5), BENCH_WARMUP (1), BENCH_COUNT (20),
BENCH_WORKDIR (/tmp/drover-bench), BENCH_IMAGE (drover.local/busybox:1), BENCH_CLUSTER (bench),
BENCH_CALLS (1: count engine calls; 0: skip), BENCH_SETTLE (0.5 s of quiet before each timed run),
BENCH_SNAPSHOT (1: measure a copy of the collection taken at the start; 0: the live tree),
BENCH_RETRIES (2: rounds that may be dropped and run again when the engine stops answering mid-round),
VENV (the project venv), BENCH_ANCHOR_VENV (bench/.venv-anchor), BENCH_RESULTS (bench/results).
"""

import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

import docker
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import apiproxy  # noqa: E402


def _env(name, default):
    value = os.environ.get(name)
    return default if value in (None, '') else value


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

MEASUREMENTS = (
    ('ping', 'ansible-playbook: one ansible.builtin.ping on localhost (project venv)'),
    ('ping_anchor', 'ansible-playbook: one ansible.builtin.ping on localhost (anchor venv)'),
    ('sdk', 'Docker SDK: %d creates + starts in one Python process (the floor)'),
    ('ecs_cold', 'ansible-playbook: drover.fleet.ecs_task, %d tasks in one call, from nothing'),
    ('ecs_noop', 'ansible-playbook: the same ecs_task playbook again, nothing to do'),
    ('dc_loop', 'ansible-playbook: community.docker.docker_container looped over %d containers, from nothing'),
    ('ecs_purge', 'context: ansible-playbook, ecs_task tasks: [] purge: true, removing the %d tasks (the clean-up)'),
)
MEASURED = tuple(name for name, what in MEASUREMENTS)
# A unit is what runs back to back in a round; the order of the units rotates from round to round.
UNITS = (('ping',), ('sdk',), ('ecs_cold', 'ecs_noop'), ('dc_loop',), ('ping_anchor',))

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
    }
    os.makedirs(os.path.join(WORK, 'playbooks'), exist_ok=True)
    for name, book in books.items():
        with open(os.path.join(WORK, 'playbooks', name), 'w') as f:
            f.write('---\n# Generated by bench/bench.py; rewritten on every run.\n')
            yaml.safe_dump(book, f, sort_keys=False, default_flow_style=False, width=120)
    for side, py in (('project', PROJECT_PY), ('anchor', ANCHOR_PY)):
        with open(os.path.join(WORK, 'playbooks', 'inventory-%s.ini' % side), 'w') as f:
            f.write('[bench]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n' % py)


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


# --- running ----------------------------------------------------------------------------------------

class Runner:
    def __init__(self):
        self.api = docker.APIClient(base_url=os.environ.get('DOCKER_HOST') or 'unix:///var/run/docker.sock')
        self.serial = 0
        self.forced_cleanups = 0

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
            self.forced_cleanups += 1
            log('ecs_task purge left %d containers and %d store records: forcing them away' % (len(left), stored))
            self.remove_label('drover.cluster=%s' % CLUSTER)
            remove_store()
        return seconds

    def others(self):
        """Containers on the engine that the bench did not make (other work sharing the engine)."""
        mine = (ECS_TASK_PREFIX, DC_PREFIX, SDK_PREFIX)
        rows = self.api.containers(all=True)
        return {'running': sum(1 for c in rows if c.get('State') == 'running'
                               and not c['Names'][0].lstrip('/').startswith(mine)),
                'all': sum(1 for c in rows if not c['Names'][0].lstrip('/').startswith(mine))}

    def clean_all(self):
        self.remove_label('drover.cluster=%s' % CLUSTER)
        self.remove_label('%s=%s' % DC_LABEL)
        self.remove_label('%s=%s' % SDK_LABEL)
        remove_store()

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


def run_unit(runner, unit, tag, samples, extra):
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
    else:  # pragma: no cover
        raise AssertionError(unit)


def run_rounds(runner):
    """Every round; a round cut short by the engine going away (other work on this host restarts it)
    is dropped whole and run again, at most RETRIES times in all."""
    samples = dict((name, []) for name in MEASURED)
    warm = dict((name, []) for name in MEASURED)
    extra = {'sdk_inner': [], 'orders': [], 'retried': []}
    warm_extra = {'sdk_inner': [], 'orders': []}
    retries = RETRIES
    r = 0
    while r < WARMUP + REPEAT:
        warmup = r < WARMUP
        k = r % len(UNITS)
        order = UNITS[k:] + UNITS[:k]
        names = [n for unit in order for n in unit]
        tag = 'warmup%d' % (r + 1) if warmup else 'round%d' % (r - WARMUP + 1)
        log('%s: %s' % (tag, ' '.join(names)))
        got = dict((name, []) for name in MEASURED)
        got_extra = {'sdk_inner': []}
        engine = engine_pid()
        try:
            for unit in order:
                runner.wait_engine()
                run_unit(runner, unit, tag, got, got_extra)
        except (BenchError, docker.errors.DockerException, OSError) as exc:
            gone = (not runner.engine_answers() or engine_pid() != engine
                    or ENGINE_GONE.search(str(exc)) is not None)
            if retries <= 0 or not gone:
                raise
            retries -= 1
            log('%s: the engine went away or restarted (%s); dropping the round and running it again'
                % (tag, str(exc).strip().splitlines()[0][:200]))
            extra['retried'].append(tag)
            runner.wait_engine(120)
            runner.clean_all()
            continue
        into, into_extra = (warm, warm_extra) if warmup else (samples, extra)
        for name in got:
            into[name].extend(got[name])
        into_extra['sdk_inner'].extend(got_extra['sdk_inner'])
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
    try:
        def counted(name, fn):
            proxy.reset()
            fn()
            time.sleep(0.2)          # the last bytes of a closing connection
            snap = proxy.snapshot()
            out[name] = _summary(snap)
            if name == 'ecs_noop':
                out[name]['calls'] = ['%s %s' % (m, t) for dummy, m, t in snap['calls']]
            log('calls %s: %d (%s)' % (name, out[name]['total'], ', '.join(
                '%s x%d' % kv for kv in out[name]['by_endpoint'].items())))

        counted('ecs_cold', lambda: runner.playbook('calls-ecs-cold', 'project', 'ecs_converge_counted.yml',
                                                    changed=True))
        runner.expect_running('calls ecs_cold', 'drover.cluster=%s' % CLUSTER, ECS_TASK_PREFIX)
        counted('ecs_noop', lambda: runner.playbook('calls-ecs-noop', 'project', 'ecs_converge_counted.yml',
                                                    changed=False))
        runner.ecs_clean()
        counted('dc_loop', lambda: runner.playbook('calls-dc-loop', 'anchor', 'dc_loop_counted.yml', changed=True))
        runner.expect_running('calls dc_loop', '%s=%s' % DC_LABEL, DC_PREFIX)
        runner.remove_label('%s=%s' % DC_LABEL)
        counted('sdk', lambda: runner.sdk('calls-sdk', address))
        runner.expect_running('calls sdk', '%s=%s' % SDK_LABEL, SDK_PREFIX)
        runner.remove_label('%s=%s' % SDK_LABEL)
    finally:
        proxy.stop()
    return out


# --- the report ------------------------------------------------------------------------------------------

def _stats(values):
    if not values:
        return {'samples': [], 'median': None, 'min': None, 'max': None}
    return {'samples': [round(v, 3) for v in values], 'median': round(statistics.median(values), 3),
            'min': round(min(values), 3), 'max': round(max(values), 3)}


def _ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def _paired(samples, fn):
    """The median of a ratio taken round by round (a check on the ratio of medians under drift)."""
    n = min(len(v) for v in samples.values())
    values = [fn(dict((k, v[i]) for k, v in samples.items())) for i in range(n)]
    return round(statistics.median(values), 3) if values else None


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


def report(samples, warm, extra, calls, info, notes, started, finished, runner):
    stats = dict((name, _stats(samples[name])) for name in MEASURED)
    for name in MEASURED:
        stats[name]['warmup'] = [round(v, 3) for v in warm[name]]
    med = dict((name, stats[name]['median']) for name in stats)
    floor = med['sdk'] + med['ping'] if med['sdk'] is not None and med['ping'] is not None else None
    ratios = {
        'noop_over_ping': {
            'value': _ratio(med['ecs_noop'], med['ping']), 'target': 2.0,
            'paired_median': _paired(samples, lambda s: s['ecs_noop'] / s['ping']),
            'what': 'ecs_task no-op converge / ping run'},
        'cold_over_floor': {
            'value': _ratio(med['ecs_cold'], floor), 'target': 1.3,
            'paired_median': _paired(samples, lambda s: s['ecs_cold'] / (s['sdk'] + s['ping'])),
            'what': 'ecs_task cold converge / (SDK floor + ping run)'},
        'dc_loop_over_cold': {
            'value': _ratio(med['dc_loop'], med['ecs_cold']), 'target': None,
            'paired_median': _paired(samples, lambda s: s['dc_loop'] / s['ecs_cold']),
            'what': 'docker_container loop / ecs_task cold converge (context)'},
    }
    for r in ratios.values():
        r['holds'] = None if r['target'] is None or r['value'] is None else r['value'] <= r['target']
    inner = extra['sdk_inner']
    derived = {
        'ecs_noop_minus_ping_s': _r(med['ecs_noop'] - med['ping']),
        'ecs_cold_minus_noop_per_task_s': _r((med['ecs_cold'] - med['ecs_noop']) / COUNT),
        'dc_loop_minus_ping_anchor_per_container_s': _r((med['dc_loop'] - med['ping_anchor']) / COUNT),
        'sdk_create_start_per_container_s': round(statistics.median([i['per_container_s'] for i in inner]), 4)
        if inner and all('per_container_s' in i for i in inner) else None,
        'sdk_import_docker_s': round(statistics.median([i['import_s'] for i in inner]), 4)
        if inner and all('import_s' in i for i in inner) else None,
    }
    return {
        'bench': 'drover.fleet ecs_task',
        'date': started.strftime('%Y-%m-%d'),
        'started': started.isoformat(timespec='seconds'),
        'finished': finished.isoformat(timespec='seconds'),
        'config': {'repeat': REPEAT, 'warmup': WARMUP, 'count': COUNT, 'image': IMAGE, 'cluster': CLUSTER,
                   'store_path': STORE, 'settle_s': SETTLE, 'orders': extra['orders'],
                   'rounds_dropped_and_rerun': extra['retried']},
        'host': info,
        'measurements': dict((name, dict(stats[name], what=what % COUNT if '%d' in what else what))
                             for name, what in MEASUREMENTS),
        'ratios': ratios,
        'derived': derived,
        'api_calls': calls,
        'forced_cleanups': runner.forced_cleanups,
        'notes': notes,
    }


def markdown(res):
    m = res['measurements']
    lines = [
        '# drover.fleet bench, %s' % res['date'],
        '',
        'N = %d containers, %d rounds (+%d warm-up), medians of wall time in seconds; host: %s CPUs (%s), '
        'kernel %s, Docker %s, Python %s, ansible-core %s, community.docker %s, docker SDK %s; drover.fleet at %s%s '
        '(plugins %s). Load average %s at the start, %s at the end; other containers on the engine: %s running '
        'at the start, %s at the end.' % (
            res['config']['count'], res['config']['repeat'], res['config']['warmup'], res['host']['cpus'],
            res['host']['cpu_model'], res['host']['kernel'], res['host'].get('engine'), res['host']['python'],
            res['host']['ansible_core_project'], res['host']['community_docker'], res['host']['docker_sdk'],
            res['host']['git_head'], ' with uncommitted changes' if res['host']['git_dirty_paths'] else '',
            res['host']['plugins_sha256'], res['host']['loadavg_start'][0], res['host']['loadavg_end'][0],
            res['host']['other_containers_start']['running'], res['host']['other_containers_end']['running']),
        '',
        '| measurement | median s | min s | max s | samples |',
        '| --- | ---: | ---: | ---: | --- |',
    ]
    for name in ('ping', 'ping_anchor', 'sdk', 'ecs_cold', 'ecs_noop', 'dc_loop', 'ecs_purge'):
        s = m[name]
        lines.append('| `%s`: %s | %.2f | %.2f | %.2f | %s |' % (
            name, s['what'], s['median'], s['min'], s['max'], ' '.join('%.2f' % v for v in s['samples'])))
    lines += ['', '| ratio (of medians) | value | target | holds | median of per-round ratios |',
              '| --- | ---: | ---: | --- | ---: |']
    for r in res['ratios'].values():
        lines.append('| %s | %.2f | %s | %s | %.2f |' % (
            r['what'], r['value'], '<= %.1f' % r['target'] if r['target'] is not None else '-',
            {True: 'yes', False: '**no**', None: '-'}[r['holds']], r['paired_median']))
    d = res['derived']
    lines += ['', 'Derived: no-op minus ping %.2f s; ecs_task cold minus no-op, per task %.3f s; docker_container '
              'loop minus its ping, per container %.3f s; SDK create+start per container %.3f s; '
              '`import docker` %.3f s.' % (
                  d['ecs_noop_minus_ping_s'], d['ecs_cold_minus_noop_per_task_s'],
                  d['dc_loop_minus_ping_anchor_per_container_s'], d['sdk_create_start_per_container_s'] or 0,
                  d['sdk_import_docker_s'] or 0)]
    if res['api_calls']:
        lines += ['', '| engine API calls (counting proxy, one untimed run each) | total | by endpoint |',
                  '| --- | ---: | --- |']
        for name, c in res['api_calls'].items():
            lines.append('| `%s` | %d | %s |' % (name, c['total'], ', '.join(
                '`%s` x%d' % kv for kv in c['by_endpoint'].items())))
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
    for path in (PROJECT_PY, ANCHOR_PY, os.path.join(ANCHOR_VENV, 'bin', 'ansible-playbook')):
        if not os.path.exists(path):
            raise BenchError('%s is missing: run bench/run.sh (or make bench), which makes it' % path)
    link = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'drover', 'fleet')
    if not os.path.isdir(os.path.join(link, 'plugins')):
        raise BenchError('drover.fleet is not found at %s: run `make collection`' % link)
    try:
        runner.api.inspect_image(IMAGE)
    except docker.errors.ImageNotFound:
        raise BenchError('image %s is missing: run hack/images.sh' % IMAGE)
    taken = [c['Names'][0].lstrip('/') for c in runner.api.containers(all=True)
             if any(c['Names'][0].lstrip('/').startswith(p) for p in (ECS_TASK_PREFIX, DC_PREFIX, SDK_PREFIX))]
    runner.clean_all()
    still = [c['Names'][0].lstrip('/') for c in runner.api.containers(all=True)
             if any(c['Names'][0].lstrip('/').startswith(p) for p in (ECS_TASK_PREFIX, DC_PREFIX, SDK_PREFIX))]
    if still:
        raise BenchError('containers not made by the bench hold its names: %s' % ', '.join(still))
    if taken:
        log('removed %d bench containers left from an earlier run' % len(taken))


def main():
    if REPEAT < 1:
        raise BenchError('BENCH_REPEAT must be at least 1')
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
    log('N=%d, %d rounds + %d warm-up, work dir %s' % (COUNT, REPEAT, WARMUP, WORK))
    try:
        samples, warm, extra = run_rounds(runner)
        calls = count_calls(runner) if CALLS else {}
    finally:
        try:
            runner.clean_all()
        except Exception as exc:  # noqa: BLE001 - the original error matters more
            log('final clean-up failed: %s' % exc)
    finished = datetime.datetime.now(datetime.timezone.utc)
    info['loadavg_end'] = [round(x, 2) for x in os.getloadavg()]
    info['other_containers_end'] = runner.others()
    notes = []
    if not SNAPSHOT and plugins_digest() != info['plugins_sha256']:
        notes.append('plugins/ changed while the bench ran: the samples may mix two versions of the modules')
    if runner.forced_cleanups:
        notes.append('ecs_task purge left containers or records %d times; the bench removed them itself'
                     % runner.forced_cleanups)
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
