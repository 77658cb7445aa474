# -*- coding: utf-8 -*-
"""gh_runner_slot on the real engine against the GitHub stand-in (tests/fixtures/github_standin), with the
test runner image (drover.local/runner:1): every rule of behaviour.md part B."""

from __future__ import absolute_import, division, print_function

import json
import os
import sqlite3
import sys
import time
import uuid

import pytest

from helpers import host_snapshot, store_rows, wait_for, warnings_of
from sweep import register

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures'))
from github_standin.server import StandIn  # noqa: E402  pylint: disable=wrong-import-position

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'


@pytest.fixture
def pool(module_runner, store_path, standin, pool_name):
    def run(check=False, env=None, profile=None, **args):
        params = dict(pool=pool_name, labels=['self-hosted', 'linux', 'drover'], token=TOKEN,
                      api_url=standin.url, store_path=store_path, machine_id='mid' + pool_name, warm=1,
                      allow_host_network=True,
                      profile=dict(name='small', image=RUNNER_IMAGE, slots=2, network_mode='host', memory=64,
                                   environment=dict({'DROVER_JOB_SECONDS': '1'}, **(env or {}))))
        params['profile'].update(profile or {})
        if 'repository' not in args and 'organization' not in args:
            params['repository'] = REPO
        params.update(args)
        params = dict((k, v) for k, v in params.items() if v is not None)
        return module_runner('gh_runner_slot', params, check=check)
    return run


def containers(engine, pool_name):
    return dict((c.name, c) for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}))


def posts_and_deletes(standin):
    return [r for r in standin.requests if r['method'] in ('POST', 'DELETE') and '/_standin/' not in r['path']]


def runner_online(standin, name):
    runner = standin.runner_by_name(name)
    return runner is not None and runner['status'] == 'online'


def set_hold(store_path, pool_name, until):
    db = sqlite3.connect(store_path)
    db.execute('UPDATE pools SET hold_until = ? WHERE pool = ?', (until, pool_name))
    db.commit()
    db.close()


def test_warm_runner_in_four_steps(engine, standin, pool, pool_name, store_path):
    check = pool(check=True)
    assert check['changed'] and len(check['started']) == 1
    assert posts_and_deletes(standin) == [] and containers(engine, pool_name) == {}
    assert store_rows(store_path) is None
    apply = pool()
    assert apply['changed'] and len(apply['started']) == 1, warnings_of(apply)
    name = apply['started'][0]
    assert name.startswith('drover-mid%s-small-1-' % pool_name)
    assert [e['event'] for e in apply['events']] == ['runner.started']
    box = containers(engine, pool_name)[name]
    assert box.status == 'running'
    labels = box.labels
    assert labels['drover.role'] == 'runner' and labels['drover.pool'] == pool_name
    assert labels['drover.slot'] == '1' and labels['drover.repository'] == REPO
    assert int(labels['drover.runner-id']) == standin.runner_by_name(name)['id']
    mounts = box.attrs['Mounts']
    assert [(m['Destination'], m['RW']) for m in mounts] == [('/runner/.jitconfig', False)]
    assert oct(os.stat(mounts[0]['Source']).st_mode & 0o777) == '0o400'
    wait_for(lambda: runner_online(standin, name))
    again = pool()
    assert not again['changed'], (again['started'], again['stopped'], again['released'])
    assert again['pool']['slots'][0]['state'] == 'idle' and again['pool']['slots'][1]['state'] == 'free'
    assert not pool(check=True)['changed']


def test_queued_job_is_taken_and_its_runner_reaped(engine, standin, pool, pool_name):
    first = pool()
    name = first['started'][0]
    wait_for(lambda: runner_online(standin, name))
    job = standin.queue_job(REPO, ['self-hosted', 'linux'], name='build')
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    r = pool()
    assert r['released'] == [name]
    ended = [e for e in r['events'] if e['event'] == 'runner.ended'][0]
    assert ended['took_job'] is True and ended['oom_killed'] is False
    assert standin.jobs[job['id']]['status'] == 'completed'
    assert name not in containers(engine, pool_name)
    assert len(r['started']) == 1 and r['pool']['hold']['until'] is None


@pytest.mark.parametrize('mode,conclusion,result', [
    ('normal', 'success', 'Succeeded'), ('fail-job', 'failure', 'Failed')])
def test_a_job_s_result_is_read_into_runner_ended(engine, standin, pool, pool_name, mode, conclusion, result):
    env = {'DROVER_RUNNER_MODE': mode}
    job = standin.queue_job(REPO, ['self-hosted', 'linux'], name='unit tests (3.11)')
    name = pool(warm=0, env=env, profile={'slots': 1})['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    r = pool(warm=0, env=env, profile={'slots': 1})
    assert r['released'] == [name]
    ended = [e for e in r['events'] if e['event'] == 'runner.ended'][0]
    assert (ended['took_job'], ended['job'], ended['result'], ended['runner_fault']) == (
        True, 'unit tests (3.11)', result, None), ended
    assert standin.jobs[job['id']]['conclusion'] == conclusion
    assert r['pool']['hold']['until'] is None          # a failed job is the job's fault: the pool is not held


def test_a_deprecated_runner_holds_its_pool_after_the_first_one(engine, standin, pool, pool_name, store_path):
    # GitHub cancels the job such a runner took, then refuses the runner: without the fault read from its log
    # the pool looks healthy (it took a job) while every queued job is cancelled.
    env = {'DROVER_RUNNER_MODE': 'deprecated'}
    job = standin.queue_job(REPO, ['self-hosted', 'linux'], name='build')
    name = pool(warm=0, env=env, profile={'slots': 1})['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    standin.queue_job(REPO, ['self-hosted', 'linux'], name='build')
    r = pool(warm=0, env=env, profile={'slots': 1})
    assert r['released'] == [name] and r['started'] == [], r['started']    # the second job waits
    ended = [e for e in r['events'] if e['event'] == 'runner.ended'][0]
    assert (ended['took_job'], ended['job'], ended['result'], ended['runner_fault'], ended['runner_version']) == (
        True, 'build', 'Canceled', 'deprecated', '2.999.0-drover'), ended
    assert standin.jobs[job['id']]['conclusion'] == 'cancelled'
    cause = 'runner fault: version 2.999.0-drover deprecated'
    assert [(e['event'], e.get('cause')) for e in r['events'] if e['event'] != 'runner.ended'] == [
        ('runner.failed', cause), ('pool.held', cause)], r['events']
    assert r['pool']['hold']['cause'] == cause and r['pool']['hold']['until'] is not None
    db = sqlite3.connect(str(store_path))
    assert db.execute('SELECT hold_cause, failures FROM pools WHERE pool = ?', (pool_name,)).fetchone() == (cause, 1)
    db.close()
    still = pool(warm=0, env=env, profile={'slots': 1})
    assert still['started'] == [] and containers(engine, pool_name) == {}


# A job that writes the deprecated runner's lines to the runner's own output (PID 1's stdout, as a step of a real
# runner could: the runner's log is that output), then ends well.
FORGED_DEPRECATED = ("echo 'An error occured: Error: Forbidden Runner version v2.1.0 is deprecated and cannot receive "
                     "messages.' > /proc/1/fd/1")
FORGED_CANCEL = "echo \"$(date -u '+%Y-%m-%d %H:%M:%SZ'): Job build completed with result: Canceled\" > /proc/1/fd/1; "


@pytest.mark.parametrize('script', [FORGED_DEPRECATED, FORGED_CANCEL + FORGED_DEPRECATED],
                         ids=['deprecated line', 'completed line too'])
def test_a_job_that_prints_the_deprecated_line_does_not_hold_its_pool(engine, standin, pool, pool_name, store_path,
                                                                      script):
    job = standin.queue_job(REPO, ['self-hosted', 'linux'], name='build', script=script)
    name = pool(warm=0, profile={'slots': 1})['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    logs = containers(engine, pool_name)[name].logs().decode('utf-8', 'replace')
    assert 'Runner version v2.1.0 is deprecated' in logs, logs              # the forged line is in the runner's log
    assert standin.jobs[job['id']]['conclusion'] == 'success'
    after = standin.queue_job(REPO, ['self-hosted', 'linux'], name='next')
    r = pool(warm=0, profile={'slots': 1})
    assert r['released'] == [name], r['released']
    ended = [e for e in r['events'] if e['event'] == 'runner.ended'][0]
    assert (ended['took_job'], ended['job'], ended['result'], ended['runner_fault'], ended['runner_version']) == (
        True, 'build', 'Succeeded', None, None), ended
    assert [e['event'] for e in r['events'] if e['event'] in ('runner.failed', 'pool.held')] == [], r['events']
    assert r['pool']['hold']['until'] is None and r['pool']['hold']['failures'] == 0
    db = sqlite3.connect(str(store_path))
    assert db.execute('SELECT hold_until, hold_cause, failures FROM pools WHERE pool = ?',
                      (pool_name,)).fetchone() == (None, None, 0)
    db.close()
    assert len(r['started']) == 1, warnings_of(r)                           # the next job starts
    wait_for(lambda: standin.jobs[after['id']]['conclusion'] == 'success', timeout=30)


def test_a_burst_is_started_before_the_ended_runners_are_deregistered(engine, standin, pool, pool_name):
    """Reaping ended runners (a DELETE each) waits until the pass has started runners for the queued jobs; the
    result counts the pass's GitHub requests, as the stand-in saw them."""
    for n in range(2):
        standin.queue_job(REPO, ['self-hosted', 'linux'], name='first-%d' % n)
    first = pool(warm=0)
    assert len(first['started']) == 2, warnings_of(first)
    for name in first['started']:
        wait_for(lambda n=name: containers(engine, pool_name)[n].status == 'exited', timeout=30)
    for n in range(2):
        standin.queue_job(REPO, ['self-hosted', 'linux'], name='burst-%d' % n)
    before = len(standin.calls())
    r = pool(warm=0)
    assert sorted(r['released']) == sorted(first['started']) and len(r['started']) == 2, (r, warnings_of(r))
    made = standin.calls()[before:]
    assert r['github_requests'] == len(made), [(c['method'], c['path']) for c in made]
    order = [(c['method'], c['path']) for c in made if c['method'] in ('POST', 'DELETE')]
    kinds = [m for m, dummy in order]
    assert kinds == ['POST', 'POST', 'DELETE', 'DELETE'], order


def test_jobs_for_other_labels_start_nothing(engine, standin, pool, pool_name):
    standin.queue_job(REPO, ['self-hosted', 'gpu'], name='other')
    r = pool(warm=0)
    assert r['queued'] == 0 and r['started'] == []
    standin.queue_job(REPO, ['linux'], name='ours')
    assert pool(warm=0)['queued'] == 1


def test_failures_hold_with_backoff_once_announced(engine, standin, pool, pool_name, store_path):
    env = {'DROVER_RUNNER_MODE': 'no-job', 'DROVER_IDLE_SECONDS': '0'}
    held_for = []
    announced = []
    for attempt in range(3):
        started = pool(env=env, profile={'slots': 1})
        assert len(started['started']) == 1, (attempt, warnings_of(started))
        name = started['started'][0]
        wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
        r = pool(env=env, profile={'slots': 1})
        assert r['released'] == [name] and r['started'] == []
        kinds = [e['event'] for e in r['events']]
        announced.append('runner.failed' in kinds)
        held = [e for e in r['events'] if e['event'] == 'pool.held'][0]
        assert held['cause'] == 'no job'
        held_for.append(r['pool']['hold']['failures'])
        still = pool(env=env, profile={'slots': 1})
        assert not still['changed'] and still['pool']['hold']['until'] is not None
        set_hold(store_path, pool_name, time.time() - 1)
    assert announced == [True, False, False]
    assert held_for == [1, 2, 3]
    failed = [e for e in r['events'] if e['event'] == 'pool.held'][0]
    assert failed['failures'] == 3


def test_idle_exits(engine, standin, pool, pool_name):
    env = {'DROVER_RUNNER_MODE': 'no-job', 'DROVER_IDLE_SECONDS': '2'}
    name = pool(env=env, idle_timeout=1, profile={'slots': 1})['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    first = pool(env=env, idle_timeout=1, profile={'slots': 1})
    assert first['released'] == [name]
    assert first['pool']['hold'] == {'until': None, 'cause': None, 'failures': 0, 'idle_exits': 1}
    assert [e['event'] for e in first['events']] == ['runner.ended', 'runner.started']
    name = first['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    second = pool(env=env, idle_timeout=1, profile={'slots': 1})
    assert second['released'] == [name] and second['started'] == []
    assert second['pool']['hold']['cause'] == 'idle exits' and second['pool']['hold']['idle_exits'] == 2
    assert [e['event'] for e in second['events']] == ['runner.ended', 'runner.failed', 'pool.held']


def test_surplus_idle_stop_and_busy_delete(engine, standin, pool, pool_name):
    name = pool()['started'][0]
    wait_for(lambda: runner_online(standin, name))
    time.sleep(1.1)
    standin.fail('busy_delete')
    busy = pool(warm=0, idle_timeout=1)
    assert busy['stopped'] == [] and name in containers(engine, pool_name)
    stop = pool(warm=0, idle_timeout=1)
    assert stop['stopped'] == [name] and name not in containers(engine, pool_name)
    assert standin.runner_by_name(name) is None


def test_rate_limited_listing_decides_nothing(engine, standin, pool, pool_name):
    standin.fail('rate_limit', count=1, reset_in=120)
    r = pool()
    assert r['started'] == [] and containers(engine, pool_name) == {}
    assert any('rate limited' in w for w in warnings_of(r))
    seen = len(standin.requests)
    again = pool()
    assert again['started'] == [] and len(standin.requests) == seen


def test_server_errors_decide_nothing(engine, standin, pool, pool_name):
    standin.fail('server_error', count=1)
    r = pool()
    assert not r.failed and r['started'] == [] and containers(engine, pool_name) == {}
    assert [(e['event'], e['call'], e['status']) for e in r['events']] == [('github.error', 'list runners', 502)]
    assert any(w.startswith('pool %s: list runners of repos/octo/app: 502' % pool_name) for w in warnings_of(r)), \
        warnings_of(r)
    assert len(pool()['started']) == 1


def test_orphans_of_this_host_are_deleted(engine, standin, pool, pool_name):
    mine = standin.add_runner(REPO, 'drover-mid%s-small-7-1700000000' % pool_name, ['self-hosted'])
    other = standin.add_runner(REPO, 'someone-else-1', ['self-hosted'])
    r = pool(warm=0)
    assert r['orphans_deleted'] == [mine['name']]
    assert standin.runner_by_name(mine['name']) is None and standin.runner_by_name(other['name']) is not None


def test_absent_drains_idle_and_kill_busy(engine, standin, pool, pool_name, store_path):
    name = pool()['started'][0]
    wait_for(lambda: runner_online(standin, name))
    drained = pool(state='absent')
    assert drained['stopped'] == [name] and containers(engine, pool_name) == {}
    assert store_rows(store_path)['pools'] == []
    busy = pool(env={'DROVER_JOB_SECONDS': '60'})['started'][0]
    wait_for(lambda: runner_online(standin, busy))
    standin.queue_job(REPO, ['linux'])
    wait_for(lambda: standin.runner_by_name(busy)['busy'])
    kept = pool(state='absent')
    assert kept['stopped'] == [] and busy in containers(engine, pool_name)
    killed = pool(state='absent', kill_busy=True)
    assert killed['stopped'] == [busy] and containers(engine, pool_name) == {}


def test_organization_pool(engine, standin, pool, pool_name):
    standin.add_org('octo-org', repos=['octo-org/svc'])
    r = pool(organization='octo-org', warm=0)
    assert r['started'] == []
    standin.queue_job('octo-org/svc', ['linux'])
    r = pool(organization='octo-org', warm=0)
    assert r['queued'] == 1 and len(r['started']) == 1
    assert standin.runner_by_name(r['started'][0]) is not None


def test_oom_killed_runner_is_reported(engine, standin, pool, pool_name):
    r = pool(env={'DROVER_RUNNER_MODE': 'oom'}, profile={'memory': 8, 'slots': 1})
    name = r['started'][0]
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=60)
    ended = [e for e in pool(profile={'memory': 8, 'slots': 1})['events'] if e['event'] == 'runner.ended'][0]
    assert ended['oom_killed'] is True


def test_store_lost_puts_runners_back_in_their_slots(engine, standin, pool, pool_name, store_path):
    name = pool()['started'][0]
    wait_for(lambda: runner_online(standin, name))
    for suffix in ('', '-wal', '-shm'):        # the store is lost: a new one is made at the same path
        if os.path.exists(store_path + suffix):
            os.unlink(store_path + suffix)
    r = pool()
    assert not r['changed'] and r['orphans_deleted'] == []
    assert r['pool']['slots'][0]['runner_name'] == name and r['pool']['slots'][0]['state'] == 'idle'


def test_secrets_never_leave(engine, standin, pool, pool_name, store_path):
    r = pool()
    name = r['started'][0]
    with open(containers(engine, pool_name)[name].attrs['Mounts'][0]['Source']) as handle:
        jit = handle.read()
    secret = json.loads(__import__('base64').b64decode(jit))['secret']
    wait_for(lambda: runner_online(standin, name))
    standin.queue_job(REPO, ['linux'])
    wait_for(lambda: containers(engine, pool_name)[name].status == 'exited', timeout=30)
    logs = containers(engine, pool_name)[name].logs().decode()
    assert 'Running job: ' in logs
    inspected = json.dumps([c.attrs for c in containers(engine, pool_name).values()])
    r2 = pool()
    exposed = json.dumps([r, r2]) + inspected + logs
    with open(store_path, 'rb') as handle:
        stored = handle.read().decode('latin-1')
    for value in (TOKEN, jit, secret):
        assert value not in exposed and value not in stored
    assert not os.path.exists(os.path.join(os.path.dirname(store_path), 'jit', name))


@pytest.mark.parametrize('args,words', [
    (dict(labels=[]), ('labels',)),
    (dict(profile={'slots': 0}), ('slots',)),
    (dict(repository='noowner'), ('owner/name',)),
    (dict(profile={'memory': 4}), ('memory', 'at least 6')),
    (dict(organization='octo-org', repository=REPO), ('mutually exclusive',)),
    (dict(app_id=1, app_private_key='-----BEGIN RSA PRIVATE KEY-----', installation_id=2),
     ('mutually exclusive',)),
    # this host's engine has no Sysbox runtime; and a privileged runner needs the host's allow_privileged
    (dict(profile={'docker': 'sysbox', 'network_mode': 'bridge'}), ('profile.docker is sysbox', 'sysbox-runc', 'its runtimes: ', 'runc')),
    (dict(profile={'docker': 'privileged', 'network_mode': 'bridge'}), ('profile.docker is privileged', 'allow_privileged is true')),
])
def test_bad_input_changes_nothing(engine, standin, pool, pool_name, store_path, args, words):
    before = (host_snapshot(engine, store_path, 'drover.pool=%s' % pool_name), json.dumps(standin.state(), sort_keys=True))
    profile = args.pop('profile', None)
    r = pool(profile=profile, **args)
    assert r.failed and all(w in r['msg'] for w in words), r.get('msg')
    assert (host_snapshot(engine, store_path, 'drover.pool=%s' % pool_name), json.dumps(standin.state(), sort_keys=True)) == before


def _rsa_pair():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption()).decode()
    for line in private.splitlines()[1:-1]:
        register(line)               # a line of the key's body: found in JSON too, where newlines are escaped
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def test_github_app_auth_on_enterprise_server(engine, module_runner, store_path, pool_name):
    private, public = _rsa_pair()
    server = StandIn(token=TOKEN, api_prefix='/api/v3',
                     app={'app_id': 4242, 'installation_id': 777, 'public_key_pem': public}).start()
    try:
        server.add_repo(REPO)
        params = dict(pool=pool_name, repository=REPO, labels=['linux'], api_url=server.url, app_id=4242,
                      installation_id=777, app_private_key=private, store_path=store_path, machine_id='app',
                      allow_host_network=True, profile=dict(name='small', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64))
        r = module_runner('gh_runner_slot', params)
        assert not r.failed and len(r['started']) == 1, (r.get('msg'), warnings_of(r))
        assert [c['path'] for c in server.calls(method='POST') if c['path'].endswith('/app/installations/777/access_tokens')]
        assert server.runner_by_name(r['started'][0]) is not None
        assert private not in json.dumps(r)
        wrong_private, _public = _rsa_pair()
        bad = module_runner('gh_runner_slot', dict(params, app_private_key=wrong_private))
        assert bad['started'] == [] and any('401' in w or 'auth' in w.lower() for w in warnings_of(bad)), \
            warnings_of(bad)
        assert wrong_private not in json.dumps(bad)
        assert server.violations == []
    finally:
        server.stop()


def test_slow_and_truncated_answers_decide_nothing(engine, standin, pool, pool_name):
    standin.fail('truncated', count=1)
    r = pool()
    assert not r.failed and r['started'] == [] and warnings_of(r)
    standin.fail('slow', count=1, delay=3)
    r = pool(github_timeout=1)
    assert not r.failed and r['started'] == [] and any('timed out' in w.lower() for w in warnings_of(r)), \
        warnings_of(r)
    time.sleep(2.5)
    assert len(pool()['started']) == 1


def test_two_pools_on_one_host_keep_each_others_runners(engine, standin, module_runner, store_path, pool_name):
    names = {}
    try:
        for profile in ('alpha', 'beta'):
            params = dict(pool=pool_name + profile, repository=REPO, labels=['linux'], token=TOKEN,
                          api_url=standin.url, store_path=store_path, machine_id='shared', allow_host_network=True,
                          profile=dict(name=profile, image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64))
            names[profile] = (params, module_runner('gh_runner_slot', params)['started'][0])
        for params, name in names.values():
            again = module_runner('gh_runner_slot', params)
            assert again['orphans_deleted'] == [] and again['released'] == [], again
        for params, name in names.values():
            assert standin.runner_by_name(name) is not None
    finally:
        for profile in ('alpha', 'beta'):
            for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % (pool_name + profile)}):
                c.remove(force=True)


@pytest.fixture
def remote_runner_image(engine):
    """The runner image on the local htpasswd registry only (pushed, then removed from the host)."""
    from helpers import REGISTRY, REGISTRY_PASSWORD, REGISTRY_USER
    remote = '%s/drover/runner' % REGISTRY
    auth = {'username': REGISTRY_USER, 'password': REGISTRY_PASSWORD}
    engine.images.get(RUNNER_IMAGE).tag(remote, '1')
    for line in engine.images.push(remote, '1', auth_config=auth, stream=True, decode=True):
        assert 'error' not in line, line
    engine.images.remove(remote + ':1')
    yield remote + ':1', {'registry': REGISTRY, 'username': REGISTRY_USER, 'password': REGISTRY_PASSWORD}
    try:
        engine.images.remove(remote + ':1')
    except Exception:  # pylint: disable=broad-except
        pass


def test_the_runner_image_is_pulled_with_its_registry_credentials(engine, standin, pool, pool_name, remote_runner_image):
    image, auth = remote_runner_image
    wrong = dict(auth, password=register('not-the-password-9d2c'))
    held = pool(profile={'image': image, 'registry_auth': wrong})
    assert held['started'] == [] and held['pool']['hold']['cause'] == 'start', held
    assert any('image pull failed' in w for w in warnings_of(held)), warnings_of(held)
    assert posts_and_deletes(standin) == []              # nothing registered for a runner that could not start
    assert 'not-the-password-9d2c' not in json.dumps(held)
    # the next pool (a new name) with the right credentials pulls the image and starts its runner
    try:
        r = pool(pool=pool_name + 'b', profile={'name': 'pulled', 'image': image, 'registry_auth': auth})
        assert len(r['started']) == 1, warnings_of(r)
        assert containers(engine, pool_name + 'b')[r['started'][0]].status == 'running'
        assert image in [t for i in engine.images.list() for t in i.tags]
        assert auth['password'] not in json.dumps(r)
        assert not pool(pool=pool_name + 'b', profile={'name': 'pulled', 'image': image, 'registry_auth': auth})['changed']
    finally:
        for c in containers(engine, pool_name + 'b').values():
            c.remove(force=True)


def test_unchanged_listings_are_asked_with_their_etags(engine, standin, pool, pool_name, store_path):
    """A pass asks again for a listing with If-None-Match; GitHub's 304 costs nothing against the rate limit."""
    first = pool()
    assert len(first['started']) == 1, warnings_of(first)
    wait_for(lambda: runner_online(standin, first['started'][0]))
    pool()                                                   # the runner's listing changed (online): a 200
    used = standin.state()['rate']['used']
    calls = len(standin.calls())
    idle = pool()
    assert not idle['changed'], idle
    made = standin.calls()[calls:]
    assert idle['github_requests'] == len(made) == 3, [(c['method'], c['path'], c['status']) for c in made]
    assert idle['github_not_modified'] == 3 and [c['status'] for c in made] == [304, 304, 304], made
    assert standin.state()['rate']['used'] == used            # nothing counted against the limit
    kept = os.path.join(os.path.dirname(store_path), 'github-etags.json')
    assert oct(os.stat(kept).st_mode & 0o777) == '0o600'
    # a change shows through: a queued job is seen at once, and taken
    job = standin.queue_job(REPO, ['linux'])
    r = pool()
    assert r['queued'] == 1 and r['github_not_modified'] < r['github_requests'], r
    wait_for(lambda: standin.jobs[job['id']]['status'] != 'queued', timeout=30)
    # check mode asks, but keeps nothing
    before = open(kept).read()
    pool(check=True)
    assert open(kept).read() == before
