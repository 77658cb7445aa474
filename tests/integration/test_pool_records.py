# -*- coding: utf-8 -*-
"""Records of failed jobs (profile.records) on the real engine, against the GitHub stand-in: a failed job's runner
container is kept as an image and its output beside the store; a passing job leaves none; the newest `keep` stay;
a runner's credentials in its filesystem keep a record from being kept; the secret sweep reads every record."""

from __future__ import absolute_import, division, print_function

import os
import stat
import uuid

from helpers import wait_for
from sweep import SWEEP, register

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'
LABELS = ['self-hosted', 'linux']


def records_of(engine, pool_name):
    """{tag: image} of the pool's records."""
    out = {}
    for image in engine.images.list(filters={'label': ['drover.record=true', 'drover.pool=%s' % pool_name]}):
        for tag in image.tags:
            out[tag] = image
    return out


def run_job(engine, standin, run, pool_name, job_name, env, profile):
    """Queue one job, start its runner, wait for it to end; the runner's name."""
    standin.queue_job(REPO, LABELS, name=job_name)
    started = run(env=env, profile=profile)['started']
    assert len(started) == 1, started
    name = started[0]
    wait_for(lambda: engine.containers.get(name).status == 'exited', timeout=30)
    return name


def read_back(engine, image, path):
    return engine.containers.run(image, entrypoint=['cat', path], remove=True, network_mode='none')


def test_failed_jobs_are_recorded_the_newest_kept_and_passing_ones_leave_none(
        engine, standin, module_runner, store_path, pool_name):
    def run(env, profile, **kw):
        params = dict(pool=pool_name, labels=LABELS, token=TOKEN, api_url=standin.url, store_path=store_path,
                      machine_id='mid' + pool_name, warm=0, allow_host_network=True, repository=REPO,
                      profile=dict(dict(name='small', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64,
                                        environment=dict({'DROVER_JOB_SECONDS': '0.2'}, **env)), **profile))
        params.update(kw)
        return module_runner('gh_runner_slot', params)
    failing = {'DROVER_RUNNER_MODE': 'fail-job', 'DROVER_JOB_FILE': '/runner/_work/app/out.txt'}
    profile = {'records': {'keep': 3}}
    names = [run_job(engine, standin, run, pool_name, 'job-%d' % n, failing, profile) for n in range(2)]
    # the pass that collects a failed job keeps its record
    r = run(failing, profile)
    assert r['released'] == [names[1]]
    [recorded] = [e for e in r['events'] if e['event'] == 'runner.recorded']
    assert recorded['kept'] is True and recorded['job'] == 'job-1' and recorded['result'] == 'Failed'
    tag = recorded['image']
    assert tag.startswith('drover-record/%s:%s-' % (pool_name, names[1])) and len(tag.split('-')[-1]) == 12
    assert read_back(engine, tag, '/runner/_work/app/out.txt') == b'job job-1 ran here\n'
    # its JIT config (a bind mount) never entered it: at most the empty mount point
    assert engine.containers.run(tag, entrypoint=['sh', '-c', 'cat /runner/.jitconfig 2>/dev/null | wc -c'],
                                 remove=True, network_mode='none').strip() == b'0'
    image = records_of(engine, pool_name)[tag]
    assert image.labels['drover.role'] == 'record' and image.labels['drover.repository'] == REPO
    assert image.labels['drover.job'] == 'job-1' and image.labels['drover.result'] == 'Failed'
    # the output beside the store, root only
    output = recorded['output']
    assert output == os.path.join(os.path.dirname(store_path), 'records', pool_name, tag.split(':')[1] + '.log')
    assert stat.S_IMODE(os.stat(output).st_mode) == 0o600
    with open(output) as handle:
        assert 'Job job-1 completed with result: Failed' in handle.read()

    # a passing job leaves no record
    passing = run_job(engine, standin, run, pool_name, 'green', {}, profile)
    r = run({}, profile)
    assert r['released'] == [passing] and [e for e in r['events'] if e['event'] == 'runner.recorded'] == []
    assert sorted(i.labels['drover.runner'] for i in records_of(engine, pool_name).values()) == sorted(names)

    # five failures in all: the newest three stay, with their output
    names += [run_job(engine, standin, run, pool_name, 'job-%d' % n, failing, profile) for n in range(2, 5)]
    run(failing, profile)
    kept = records_of(engine, pool_name)
    assert sorted(i.labels['drover.runner'] for i in kept.values()) == sorted(names[2:]), sorted(kept)
    assert sorted(os.listdir(os.path.dirname(output))) == sorted(t.split(':')[1] + '.log' for t in kept)
    info = module_runner('gh_runner_info', dict(store_path=store_path, pool=pool_name))
    [shown] = info['pools']
    assert [(r['runner_name'], r['job'], r['result']) for r in shown['records']] == [
        (n, 'job-%d' % i, 'Failed') for i, n in enumerate(names) if i >= 2], shown['records']
    assert all(r['output'] and r['image'].startswith('drover-record/') for r in shown['records'])

    # the secret sweep reads every record whole and every stored output
    for tag in kept:
        SWEEP.look(b''.join(engine.api.get_image(tag)), 'record %s' % tag, count='records')
    for name in os.listdir(os.path.dirname(output)):
        with open(os.path.join(os.path.dirname(output), name), 'rb') as handle:
            SWEEP.look(handle.read(), 'stored output %s' % name, count='files')

    # the pool removed: its records go with it
    run(failing, profile, state='absent')
    assert records_of(engine, pool_name) == {}


def test_a_record_holding_a_runner_s_credentials_is_not_kept(engine, standin, module_runner, store_path, pool_name):
    def run(env, profile):
        return module_runner('gh_runner_slot', dict(
            pool=pool_name, labels=LABELS, token=TOKEN, api_url=standin.url, store_path=store_path,
            machine_id='mid' + pool_name, warm=0, allow_host_network=True, repository=REPO,
            profile=dict(name='small', image=RUNNER_IMAGE, slots=1, network_mode='host', memory=64,
                         environment=dict({'DROVER_JOB_SECONDS': '0.2'}, **env), **profile)))
    env = {'DROVER_RUNNER_MODE': 'fail-job', 'DROVER_JOB_FILE': '/runner/.credentials'}
    name = run_job(engine, standin, run, pool_name, 'leaky', env, {'records': {'keep': 2}})
    r = run(env, {'records': {'keep': 2}})
    assert r['released'] == [name]
    [recorded] = [e for e in r['events'] if e['event'] == 'runner.recorded']
    assert recorded['kept'] is False and '/runner/.credentials' in recorded['reason'], recorded
    assert records_of(engine, pool_name) == {}
    assert not os.path.exists(os.path.join(os.path.dirname(store_path), 'records', pool_name))
