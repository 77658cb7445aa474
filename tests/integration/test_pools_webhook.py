# -*- coding: utf-8 -*-
"""The rulebook drover.fleet.pools_webhook in a real `ansible-rulebook` on loopback, against the GitHub stand-in:
GitHub's workflow_job deliveries, signed with the webhook's secret, run the pools-only playbook
drover.fleet.pools at once (no timer runs here); unsigned and wrongly signed ones are refused and run nothing;
a delivery for a repository no pool of the host serves ends the host before any GitHub request; a burst of
deliveries makes one pass; without a secret of 16 characters or more the rulebook does not start."""

from __future__ import absolute_import, division, print_function

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from helpers import ansible_env, wait_for
from sweep import given, look, register
from webhook_rulebook import RulebookProcess, free_port, signature as signed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ANSIBLE_RULEBOOK = os.path.join(BIN, 'ansible-rulebook')
RUNNER_IMAGE = 'drover.local/runner:1'
REPO = 'octo/hooked'
ELSEWHERE = 'octo/elsewhere'
LABELS = ['self-hosted', 'linux', 'drover']
PLAY = 'PLAY [Converge the runner pools of drover.fleet hosts]'
WINDOW = 1                    # the rulebook's throttle: once_after 1 second


class Rulebook(RulebookProcess):
    """The rulebook for one test: its output and its private run directories under tmp_path (swept)."""

    def __init__(self, tmp_path, inventory, secret):
        # Each run_playbook works in a private directory (a copy of the inventory, the run's artifacts) that
        # ansible-rulebook removes after the run: under tmp_path, so that one left behind is swept too.
        self.runs = tmp_path / 'rulebook-tmp'
        self.runs.mkdir()
        env = ansible_env(tmp_path, {'TMPDIR': str(self.runs)})
        super(Rulebook, self).__init__(BIN, inventory, given(tmp_path / 'webhook-vars.yml'), secret, tmp_path, env,
                                       tmp_path / 'rulebook.log')
        wait_for(self.listening, timeout=120, step=0.5)

    def post(self, payload, event='workflow_job', secret=None, sign=True, signature=None, delivery_id=None):
        """POST `payload` as GitHub does (JSON, X-GitHub-Event, X-GitHub-Delivery, X-Hub-Signature-256);
        (status, body)."""
        body = json.dumps(payload).encode()
        headers = {'Content-Type': 'application/json', 'X-GitHub-Event': event,
                   'X-GitHub-Delivery': delivery_id or str(uuid.uuid4()), 'User-Agent': 'GitHub-Hookshot/test'}
        if signature is not None:
            headers['X-Hub-Signature-256'] = signature
        elif sign:
            headers['X-Hub-Signature-256'] = signed(self.secret if secret is None else secret, body)
        request = urllib.request.Request(self.url, data=body, headers=headers, method='POST')
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def plays(self, title=PLAY):
        return super(Rulebook, self).plays(title)

    def stop(self):
        try:
            # the last run's directory is removed just after its output: wait for it before stopping
            wait_for(lambda: not list(self.runs.glob('eda*')), timeout=60, step=0.2)
        finally:
            self.stop_process()
            look(self.output(), 'ansible-rulebook output')


def delivery(job, repository, action='queued'):
    """A workflow_job delivery's body, as GitHub sends it (the fields the rulebook and a reader use)."""
    owner, name = repository.split('/')
    return {
        'action': action,
        'workflow_job': {'id': job['id'], 'run_id': job['run_id'], 'name': job['name'], 'labels': job['labels'],
                         'status': 'queued' if action == 'queued' else 'in_progress', 'head_sha': job['head_sha'],
                         'created_at': job['created_at'], 'started_at': job['started_at'], 'completed_at': None,
                         'runner_id': None, 'runner_name': None},
        'repository': {'id': 1, 'name': name, 'full_name': repository, 'private': True,
                       'owner': {'login': owner, 'type': 'Organization'}},
        'sender': {'login': 'octocat', 'type': 'User'},
    }


def runners(engine, pool_name):
    return dict((c.name, c.status) for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}))


def github_calls(standin):
    return [(r['method'], r['path']) for r in standin.requests if '/_standin/' not in r['path']]


@pytest.fixture
def rulebook(engine, tmp_path, standin, pool_name):
    """ansible-rulebook with drover.fleet.pools_webhook, over an inventory of localhost with one pool of REPO
    (no warm runner: only queued jobs start one, up to 4); stopped afterwards."""
    engine.images.get(RUNNER_IMAGE)
    inventory = given(tmp_path / 'inventory.yml')
    host = {
        'ansible_connection': 'local',
        'ansible_python_interpreter': sys.executable,
        'drover_store_path': str(tmp_path / 'state' / 'store.db'),
        'drover_allow_host_network': True,          # the runners reach the stand-in on the host's loopback
        'drover_pools_defaults': {'api_url': standin.url, 'token': standin.test_token, 'machine_id': 'mid' + pool_name},
        'drover_pools': [{'pool': pool_name, 'repository': REPO, 'labels': LABELS, 'warm': 0,
                          'profile': {'name': 'small', 'image': RUNNER_IMAGE, 'slots': 4, 'network_mode': 'host',
                                      'memory': 64, 'environment': {'DROVER_JOB_SECONDS': '30'}}}],
    }
    inventory.write_text(json.dumps({'all': {'hosts': {'localhost': host}}}))
    standin.add_repo(REPO)
    standin.add_repo(ELSEWHERE)
    book = Rulebook(tmp_path, inventory, register('whsec-%s' % uuid.uuid4().hex))
    yield book
    book.stop()
    assert standin.test_token not in book.output()
    assert list(book.runs.iterdir()) == []          # every run's directory, with its copy of the inventory, removed


def test_signed_delivery_starts_a_runner_at_once_unsigned_and_wrongly_signed_refused(
        engine, standin, pool_name, rulebook):
    job = standin.queue_job(REPO, LABELS)
    payload = delivery(job, REPO)

    # refused: no signature, a signature made with another secret, the right secret over another body, a
    # malformed signature; none makes an event, so nothing runs
    assert rulebook.post(payload, sign=False)[0] == 400
    assert rulebook.post(payload, secret='not-the-webhook-secret')[0] == 401
    other = hmac.new(rulebook.secret.encode(), b'{"action": "queued"}', hashlib.sha256).hexdigest()
    assert rulebook.post(payload, signature='sha256=' + other)[0] == 401
    assert rulebook.post(payload, signature='sha256=')[0] == 401
    time.sleep(WINDOW + 4)
    assert rulebook.plays() == 0, rulebook.output()[-4000:]
    assert runners(engine, pool_name) == {}
    assert github_calls(standin) == []

    # signed, for a repository no pool of the host serves: the pass ends the host before any GitHub request
    other_job = standin.queue_job(ELSEWHERE, LABELS)
    assert rulebook.post(delivery(other_job, ELSEWHERE))[0] == 200
    wait_for(lambda: 'PLAY RECAP' in rulebook.output(), timeout=90, step=0.5)
    assert rulebook.plays() == 1
    assert 'Converge the pools in one pass' not in rulebook.output()
    assert runners(engine, pool_name) == {} and github_calls(standin) == []

    # signed, the job's repository: its runner starts at once, in one pass
    started = time.time()
    assert rulebook.post(payload)[0] == 200
    found = wait_for(lambda: runners(engine, pool_name), timeout=90, step=0.5)
    assert list(found.values()) == ['running'], found
    elapsed = time.time() - started
    wait_for(lambda: rulebook.output().count('PLAY RECAP') == 2, timeout=60, step=0.5)
    assert rulebook.plays() == 2
    name = list(found)[0]
    wait_for(lambda: standin.jobs[job['id']]['runner_name'] == name, timeout=30)
    print('webhook to running runner: %.1f s' % elapsed)


def test_a_burst_of_deliveries_makes_one_pass(engine, standin, pool_name, rulebook):
    jobs = [standin.queue_job(REPO, LABELS, name='build-%d' % n) for n in range(4)]
    # GitHub's deliveries for four queued jobs, each twice (redelivered), and one in_progress that is no demand
    statuses = [rulebook.post(delivery(job, REPO))[0] for job in jobs + jobs]
    statuses.append(rulebook.post(delivery(jobs[0], REPO, action='in_progress'))[0])
    assert statuses == [200] * 9
    wait_for(lambda: 'PLAY RECAP' in rulebook.output(), timeout=90, step=0.5)
    time.sleep(WINDOW + 4)
    assert rulebook.plays() == 1, rulebook.output()[-4000:]
    found = runners(engine, pool_name)
    assert len(found) == 4 and set(found.values()) == {'running'}, found
    wait_for(lambda: all(standin.jobs[job['id']]['runner_name'] in found for job in jobs), timeout=30)
    # the pass listed the repository's runners once: one pass, not one per delivery
    lists = [c for c in github_calls(standin) if c == ('GET', '/repos/%s/actions/runners' % REPO)]
    assert len(lists) == 1, github_calls(standin)


def test_a_replay_runs_nothing_and_what_a_delivery_says_is_never_templated(
        engine, standin, pool_name, rulebook, tmp_path):
    """A signed delivery replayed (the same ID, or the same body under a new ID) runs nothing; a repository name that
    is no owner/name (a template in it) runs nothing; a queued job whose branch, workflow and job names are
    templates runs its pass, and none of them is ever templated (they never reach the play)."""
    marks = dict((n, tmp_path / ('templated-%s' % n)) for n in ('repository', 'branch', 'name', 'workflow'))
    job = standin.queue_job(REPO, LABELS)
    payload = delivery(job, REPO)
    first = str(uuid.uuid4())
    assert rulebook.post(payload, delivery_id=first)[0] == 200
    wait_for(lambda: 'PLAY RECAP' in rulebook.output(), timeout=90, step=0.5)
    time.sleep(WINDOW + 1)
    assert rulebook.post(payload, delivery_id=first)[0] == 200           # replayed as it was
    assert rulebook.post(payload)[0] == 200                              # the signed body under a new ID
    injected = delivery(standin.queue_job(REPO, LABELS), REPO)
    injected['repository']['full_name'] = "octo/{{ lookup('pipe', 'touch %s') }}" % marks['repository']
    assert rulebook.post(injected)[0] == 200
    # a delivery captured two hours ago, which this rulebook never saw (it restarted since): its job is too old
    old = delivery(standin.queue_job(REPO, LABELS), REPO)
    old['workflow_job']['created_at'] = old['workflow_job']['started_at'] = time.strftime(
        '%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() - 7200))
    assert rulebook.post(old)[0] == 200
    time.sleep(WINDOW + 4)
    assert rulebook.plays() == 1, rulebook.output()[-4000:]
    assert 'seen before' in rulebook.output() and 'names no repository' in rulebook.output()
    assert 'more than the window: dropped as a replay' in rulebook.output()
    # A pull request's author writes these: the pass runs for the repository, and nothing they say is run.
    named = delivery(standin.queue_job(REPO, LABELS), REPO)
    named['workflow_job'].update(head_branch="{{ lookup('pipe', 'touch %s') }}" % marks['branch'],
                                 name="{{ lookup('pipe', 'touch %s') }}" % marks['name'],
                                 workflow_name="{{ lookup('pipe', 'touch %s') }}" % marks['workflow'])
    assert rulebook.post(named)[0] == 200
    wait_for(lambda: rulebook.output().count('PLAY RECAP') == 2, timeout=90, step=0.5)
    assert [str(m) for m in marks.values() if m.exists()] == []
    assert 'lookup(' not in rulebook.output()


@pytest.mark.parametrize('variables', [{}, {'drover_webhook_secret': 'short-secret'}], ids=['no-secret', 'short-secret'])
def test_no_start_without_a_good_secret(tmp_path, variables):
    port = free_port()
    path = given(tmp_path / 'webhook-vars.yml')
    path.write_text(json.dumps(dict(variables, drover_webhook_port=port)))
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'all': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}))
    env = ansible_env(tmp_path, {'PATH': BIN + os.pathsep + os.environ.get('PATH', '/usr/bin:/bin')})
    log = tmp_path / 'rulebook.log'
    with open(str(log), 'wb') as handle:
        proc = subprocess.Popen([ANSIBLE_RULEBOOK, '-i', str(inventory), '-r', 'drover.fleet.pools_webhook', '--vars', str(path)],
                                cwd=str(tmp_path), env=env, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def listening():
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=1):
                return True
        except OSError:
            return False
    try:
        # it exits; it must never listen (a webhook with a weak secret or none)
        wait_for(lambda: proc.poll() is not None or listening(), timeout=180, step=0.5)
        heard = listening()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    out = log.read_text(errors='replace')
    look(out, 'ansible-rulebook output')
    assert not heard and proc.returncode != 0, out[-4000:]
    name = 'drover_webhook_secret_shorter_than_16_characters' if variables else 'drover_webhook_secret'
    assert "'%s' is undefined" % name in out, out[-4000:]
