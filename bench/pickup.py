# -*- coding: utf-8 -*-
"""bench: pickup - how long a queued job waits for its runner, timer-driven against webhook-triggered passes.

A GitHub stand-in (tests/fixtures/github_standin) serves one repository; one pool of --jobs slots (scale
queued, warm 0, the test runner image) waits for work. Each pass is what the reconcile timer's service runs:
`ansible-playbook drover.fleet.reconcile` on this host (its own store, cluster and holds file).

- timer: passes start every --interval seconds after the previous one started (OnUnitActiveSec), plus a random
  delay of up to --delay (RandomizedDelaySec) and up to --accuracy late (AccuracySec), and right after the
  previous one when it ran longer than that: what drover.fleet.reconcile_timer's units make systemd do.
- webhook: no timer; a real `ansible-rulebook -r drover.fleet.pools_webhook` (docs/pools_webhook.md) on a
  loopback port gets one signed workflow_job delivery per queued job, as GitHub sends them, and runs
  `drover.fleet.pools` for the burst (its 1 s throttle folds a burst into one pass).

--bursts times, at a random moment of the timer's cycle, --jobs jobs are queued at once. A job's pickup
latency is the start of the runner container that took it (docker's State.StartedAt; the stand-in records
which runner took which job) less the moment it was queued. Reported: median and p95 per mode, their ratio,
passes, GitHub requests per pass.

    python bench/pickup.py [--jobs 20] [--bursts 5] [--interval 15] [--delay 2] [--accuracy 1]
                           [--modes timer,webhook] [--seed N] [--json out.json]
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))

from webhook_rulebook import RulebookProcess, signature  # noqa: E402

RUNNER_IMAGE = 'drover.local/runner:1'
REPO = 'pickup/app'
POOL = 'pickup-bench'
TOKEN = 'ghp_pickupbench_%d' % os.getpid()
LABELS = ['self-hosted', 'linux']


def pct(values, q):
    """The q-th percentile (nearest rank) of values."""
    ordered = sorted(values)
    rank = max(1, int(round(q / 100.0 * len(ordered) + 0.4999)))
    return ordered[min(rank, len(ordered)) - 1]


class Passes:
    """Runs reconcile passes one at a time (as systemd runs a oneshot unit), and counts them."""

    def __init__(self, work, variables):
        self.work = work
        self.lock = threading.Lock()
        self.count = 0
        self.seconds = []
        path = os.path.join(work, 'vars.json')
        with open(path, 'w') as handle:
            json.dump(variables, handle)
        playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
        self.command = [playbook, '-i', 'localhost,', '-c', 'local', '-e', '@' + path, 'drover.fleet.reconcile']
        self.env = dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable,
                        DROVER_EVENTS_FLEET_STATE_PATH=os.path.join(work, 'fleet-holds.json'),
                        ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')

    def run(self):
        with self.lock:
            start = time.time()
            done = subprocess.run(self.command, cwd=self.work, env=self.env, capture_output=True, text=True,
                                  timeout=600, check=False)
            self.seconds.append(time.time() - start)
            self.count += 1
        if done.returncode != 0:
            raise RuntimeError('reconcile pass failed (rc %d): %s' % (done.returncode, done.stdout[-3000:]))
        return start


class Timer(threading.Thread):
    """systemd's timer as drover.fleet.reconcile_timer sets it up."""

    def __init__(self, passes, interval, delay, accuracy, rng):
        threading.Thread.__init__(self, daemon=True)
        self.passes, self.interval, self.delay, self.accuracy, self.rng = passes, interval, delay, accuracy, rng
        self.halt = threading.Event()
        self.error = None

    def run(self):
        due = time.time()
        try:
            while not self.halt.wait(max(0.0, due - time.time())):
                started = self.passes.run()
                due = started + self.interval + self.rng.uniform(0, self.delay) + self.rng.uniform(0, self.accuracy)
        except Exception as exc:  # pylint: disable=broad-except
            self.error = exc


class Rulebook(RulebookProcess):
    """ansible-rulebook running drover.fleet.pools_webhook for this host, on a free loopback port."""

    def __init__(self, work, host_vars, env):
        inventory = os.path.join(work, 'inventory.json')
        with open(inventory, 'w') as handle:
            host = dict(host_vars, ansible_connection='local', ansible_python_interpreter=sys.executable)
            json.dump({'all': {'hosts': {'localhost': host}}}, handle)
        super(Rulebook, self).__init__(os.path.dirname(sys.executable), inventory, os.path.join(work, 'webhook-vars.json'),
                                       hashlib.sha256(os.urandom(32)).hexdigest(), work, dict(env, TMPDIR=work),
                                       os.path.join(work, 'rulebook.log'))
        deadline = time.time() + 180
        while not self.listening():
            if time.time() > deadline:
                raise RuntimeError('ansible-rulebook did not start: see %s' % self.log_path)
            time.sleep(0.5)

    def deliver(self, job):
        """One workflow_job `queued` delivery, signed as GitHub signs it."""
        body = json.dumps({'action': 'queued', 'workflow_job': {'id': job['id'], 'run_id': job['run_id'],
                                                                'name': job['name'], 'labels': job['labels'],
                                                                'status': 'queued'},
                           'repository': {'full_name': REPO, 'name': REPO.split('/')[1]}}).encode()
        request = urllib.request.Request(self.url, data=body, method='POST', headers={
            'Content-Type': 'application/json', 'X-GitHub-Event': 'workflow_job',
            'X-Hub-Signature-256': signature(self.secret, body)})
        with urllib.request.urlopen(request, timeout=10) as answer:
            if answer.status != 200:
                raise RuntimeError('the rulebook answered %d' % answer.status)

    def stop(self):
        self.stop_process()


def started_at(client, name):
    """Epoch seconds a container started (docker's nanosecond RFC 3339 State.StartedAt)."""
    raw = client.api.inspect_container(name)['State']['StartedAt']
    whole, frac = raw.rstrip('Z').split('.') if '.' in raw else (raw.rstrip('Z'), '0')
    base = datetime.datetime.strptime(whole, '%Y-%m-%dT%H:%M:%S').replace(tzinfo=datetime.timezone.utc)
    return base.timestamp() + float('0.' + frac[:9])


def burst(standin, client, jobs, deliver, timeout=180):
    """Queue `jobs` jobs at once (and `deliver` each one's webhook, in webhook mode), wait until each was
    taken; the latencies."""
    queued = time.time()
    queued_jobs = [standin.queue_job(REPO, LABELS, name='pickup-%d' % n) for n in range(jobs)]
    ids = [job['id'] for job in queued_jobs]
    if deliver is not None:
        for job in queued_jobs:
            deliver(job)
    deadline = queued + timeout
    while time.time() < deadline:
        with standin._lock:  # pylint: disable=protected-access
            taken = [standin.jobs[i].get('runner_name') for i in ids]
        if all(taken):
            break
        time.sleep(0.1)
    else:
        raise RuntimeError('%d of %d jobs not taken within %d s' % (sum(1 for t in taken if not t), jobs, timeout))
    return [started_at(client, name) - queued for name in taken]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--jobs', type=int, default=20)
    parser.add_argument('--bursts', type=int, default=5)
    parser.add_argument('--interval', type=float, default=15.0)
    parser.add_argument('--delay', type=float, default=2.0)
    parser.add_argument('--accuracy', type=float, default=1.0)
    parser.add_argument('--modes', default='timer,webhook')
    parser.add_argument('--seed', type=int, default=20261203)
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.replace(',', ' ').split() if m]
    rng = random.Random(args.seed)

    import docker
    from github_standin.server import StandIn

    client = docker.from_env()
    work = tempfile.mkdtemp(prefix='drover-bench-pickup.')
    standin = StandIn(token=TOKEN).start()
    standin.add_repo(REPO)
    pool = {'pool': POOL, 'repository': REPO, 'labels': LABELS, 'warm': 0, 'scale': 'queued',
            'profile': {'name': 'pickup', 'image': RUNNER_IMAGE, 'slots': args.jobs, 'network_mode': 'host',
                        'memory': 64, 'environment': {'DROVER_JOB_SECONDS': '1', 'DROVER_POLL_SECONDS': '0.2'}}}
    common = {'drover_store_path': os.path.join(work, 'state', 'store.db'), 'drover_tasks_cluster': 'pickup-bench',
              'drover_tasks': [], 'drover_pools_report': False, 'drover_allow_host_network': True,
              'drover_pools_defaults': {'api_url': standin.url, 'token': TOKEN, 'machine_id': 'pickupbench'}}
    out = {'jobs': args.jobs, 'bursts': args.bursts, 'interval_s': args.interval, 'randomized_delay_s': args.delay,
           'accuracy_s': args.accuracy, 'seed': args.seed, 'modes': {}}
    passes = Passes(work, dict(common, drover_pools=[pool]))
    try:
        passes.run()                                    # the pool exists, nothing queued: an idle first pass
        for mode in modes:
            latencies, timer, rulebook, deliver = [], None, None, None
            before = (passes.count, len(standin.calls()))
            if mode == 'timer':
                timer = Timer(passes, args.interval, args.delay, args.accuracy, rng)
                timer.start()
            elif mode == 'webhook':
                rulebook = Rulebook(work, dict(common, drover_pools=[pool]), passes.env)
                deliver = rulebook.deliver
            else:
                raise SystemExit('unknown mode %s (timer, webhook)' % mode)
            try:
                for n in range(args.bursts):
                    time.sleep(rng.uniform(0, args.interval))     # a random moment of the timer's cycle
                    got = burst(standin, client, args.jobs, deliver)
                    latencies.extend(got)
                    print('%-8s burst %d: p50 %.2f s, max %.2f s' % (mode, n + 1, statistics.median(got), max(got)),
                          flush=True)
                    if timer is not None and timer.error:
                        raise timer.error
            finally:
                if timer is not None:
                    timer.halt.set()
                    timer.join(timeout=600)
                if rulebook is not None:
                    time.sleep(5)                      # the last pass's end
                    rulebook.stop()
            with passes.lock:
                count = passes.count - before[0] + (rulebook.plays() if rulebook is not None else 0)
            requests = len(standin.calls()) - before[1]
            out['modes'][mode] = {'p50_s': round(statistics.median(latencies), 2), 'p95_s': round(pct(latencies, 95), 2),
                                  'max_s': round(max(latencies), 2), 'jobs': len(latencies), 'passes': count,
                                  'github_requests_per_pass': round(requests / float(count), 1) if count else None}
            print('%-8s p50 %.2f s  p95 %.2f s  (%d jobs, %d passes)' % (
                mode, out['modes'][mode]['p50_s'], out['modes'][mode]['p95_s'], len(latencies), count), flush=True)
        if 'timer' in out['modes'] and 'webhook' in out['modes']:
            out['ratio_p50_webhook_to_timer'] = round(out['modes']['webhook']['p50_s'] / out['modes']['timer']['p50_s'], 2)
            out['ratio_p95_webhook_to_timer'] = round(out['modes']['webhook']['p95_s'] / out['modes']['timer']['p95_s'], 2)
        out['pass_seconds_median'] = round(statistics.median(passes.seconds), 2)
    finally:
        try:
            Passes(work, dict(common, drover_pools=[], drover_pools_drain_kill_busy=True)).run()   # drain
        finally:
            for c in client.containers.list(all=True, filters={'label': 'drover.pool=%s' % POOL}):
                c.remove(force=True)
            standin.stop()
            client.close()
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(out, handle, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
