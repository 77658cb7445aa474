# -*- coding: utf-8 -*-
"""profile.docker rootless on the real engine, against the GitHub stand-in, with jobs that run scripts: each slot
has a Docker engine of its own, run by an unprivileged user of its own; a job builds an image, runs it with its
workspace mounted, reaches a service it started at localhost; another slot sees none of it; after a job the slot
engine holds no container, volume, network or image the job made, and the work folder is empty; a job cannot reach
the host through it."""

from __future__ import absolute_import, division, print_function

import os
import pwd
import re
import subprocess
import uuid

import pytest

from helpers import wait_for, warnings_of
from sweep import register

RUNNER_IMAGE = 'drover.local/runner:1'
TOKEN = register('ghp_sentinel%s' % uuid.uuid4().hex)
REPO = 'octo/app'


def STANDIN_HOST():  # noqa: N802 (read by the standin fixture)
    """The engine's bridge gateway (198.18.0.1 here): a runner in its slot's network reaches the stand-in there."""
    import docker
    client = docker.from_env()
    try:
        return client.networks.get('bridge').attrs['IPAM']['Config'][0]['Gateway']
    finally:
        client.close()


# A FROM scratch image of the job's own (BuildKit), with busybox in it: there is no registry to pull one from.
BUILD = ('mkdir -p ctx && cp /bin/busybox ctx/busybox && printf "FROM scratch\\nCOPY busybox /bin/busybox\\n" '
         '> ctx/Dockerfile && DOCKER_BUILDKIT=1 docker build -q -t mine:1 ctx >/dev/null && echo "built: mine:1"; ')
JOB_ONE = (
    'docker info --format "{{.SecurityOptions}}" | grep -q rootless && echo "engine: rootless"; ' + BUILD +
    'echo "from the job" > in.txt; '
    'echo "read back: $(docker run --rm -v "$PWD:/w" mine:1 /bin/busybox cat /w/in.txt)"; '
    'docker network create svcnet >/dev/null; '
    'docker run -d --name svc --network svcnet -p 5432:80 -v "$PWD:/w" mine:1 '
    '/bin/busybox httpd -f -p 80 -h /w >/dev/null; '
    'for i in $(seq 1 50); do wget -q -O /tmp/got http://localhost:5432/in.txt 2>/dev/null && break; sleep 0.2; done; '
    'echo "service: $(cat /tmp/got)"; '
    'docker volume create leftover >/dev/null; '
    'echo "host root: $(docker run --rm -v /:/h mine:1 /bin/busybox ls /h/%(store_dir)s 2>&1 | head -1)"; '
    'echo "uid map: $(docker run --rm --privileged mine:1 /bin/busybox cat /proc/1/uid_map | head -1)"; '
    'docker run -d --name long mine:1 /bin/busybox sleep 600 >/dev/null; sleep 8')
JOB_OTHER = ('sleep 2; echo "other slot sees: [$(docker ps -aq | tr "\\n" " ")]"; '
             'docker image inspect mine:1 >/dev/null 2>&1 && echo "other slot: has mine" || echo "other slot: no mine"; '
             # slot 1's workspace, by its host path, through this slot's engine
             + BUILD + 'echo "other slot mounts: $(docker run --rm -v %(work1)s:/x mine:1 /bin/busybox ls /x 2>&1 | '
             'head -1)"')
JOB_AGAIN = ('echo "containers: $(docker ps -aq | wc -l)"; echo "volumes: $(docker volume ls -q | wc -l)"; '
             'echo "networks: $(docker network ls --format "{{.Name}}" | sort | tr "\\n" " ")"; '
             'docker image inspect mine:1 >/dev/null 2>&1 && echo "image: kept" || echo "image: gone"; '
             'echo "work: [$(ls -A "$PWD" | tr "\\n" " ")]"')


def pool_runner(module_runner, standin, store_path, pool, slots=1, memory=1024):
    """One pass of a `docker: rootless` pool of the test's own; keyword arguments override the pool's options."""
    def run(**kw):
        # (the stand-in checks every request and answer against GitHub's OpenAPI description: on a loaded machine, with
        # make test's sessions at once, an answer may take longer than the 15 s a pass waits by default)
        params = dict(pool=pool, labels=['self-hosted', pool], token=TOKEN, api_url=standin.url, github_timeout=60,
                      store_path=store_path, machine_id='mid' + pool, warm=0, repository=REPO,
                      profile=dict(name='dind', image=RUNNER_IMAGE, slots=slots, memory=memory, docker='rootless',
                                   environment={'DROVER_JOB_SECONDS': '0.1'}))
        params.update(kw)
        return module_runner('gh_runner_slot', params)
    return run


def test_a_rootless_engine_per_slot(engine, standin, module_runner, store_path, pool_name):
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=2, memory=1024)

    def finish(started, timeout=120):
        """Wait for the runners to end, collect them: {slot: output}."""
        outputs = {}
        for name in started:
            box = engine.containers.get(name)
            wait_for(lambda b=box: b.reload() or b.status == 'exited', timeout=timeout)
            outputs[int(name.split('-')[-2])] = box.logs().decode('utf-8', 'replace')
        collected = run()
        assert sorted(collected['released']) == sorted(started), collected
        return outputs

    store_dir = os.path.dirname(store_path).lstrip('/')
    try:
        standin.queue_job(REPO, ['self-hosted', pool_name], name='one', script=JOB_ONE % {'store_dir': store_dir})
        first = run()
        assert len(first['started']) == 1 and not first.get('failed'), first
        assert [e['slot'] for e in first['events'] if e['event'] == 'slot.engine_started'] == [1]
        box = engine.containers.get(first['started'][0])
        wait_for(lambda: box.reload() or 'Running job: one' in box.logs().decode(), timeout=60)
        work1 = '/var/lib/drover-slots/%s/work' % one_slot_dir(engine, pool_name)
        standin.queue_job(REPO, ['self-hosted', pool_name], name='other', script=JOB_OTHER % {'work1': work1})
        second = run()
        assert len(second['started']) == 1, second
        outputs = finish(first['started'] + second['started'])
        one, other = outputs[1], outputs[2]
        assert 'engine: rootless' in one and 'built: mine:1' in one, one
        assert 'read back: from the job' in one and 'service: from the job' in one, one
        # the host through the slot engine: the store directory cannot be read, a privileged job container's
        # root is the slot's own unprivileged user
        assert re.search(r'host root: .*(Permission denied|cannot open)', one), one
        slot_user = pwd.getpwnam([u.pw_name for u in pwd.getpwall()
                                  if u.pw_name.startswith('drv') and u.pw_dir.endswith(one_slot_dir(engine, pool_name))][0])
        assert re.search(r'uid map:\s+0\s+%d\s+1\b' % slot_user.pw_uid, one), (one, slot_user)
        assert slot_user.pw_uid != 0
        assert 'other slot sees: []' in other and 'other slot: no mine' in other, other
        assert re.search(r'other slot mounts: .*(Permission denied|permission denied)', other), other
        assert 'in.txt' not in other, other
        assert 'completed with result: Succeeded' in one and 'completed with result: Succeeded' in other

        # no container on the host's engine is privileged or has the host's socket
        for c in engine.containers.list(all=True):
            host = c.attrs['HostConfig']
            assert not host.get('Privileged'), c.name
            assert not any(b.split(':')[0] in ('/var/run/docker.sock', '/run/docker.sock') for b in host.get('Binds') or []), c.name

        # the next job of slot 1: its engine is empty, the image the job built gone with the rest, and the work
        # folder (where the first job left in.txt and ctx/) empty
        standin.queue_job(REPO, ['self-hosted', pool_name], name='again', script=JOB_AGAIN)
        third = run()
        again = finish(third['started'])[1]
        assert 'containers: 0' in again and 'volumes: 0' in again and 'image: gone' in again, again
        assert 'work: []' in again, again
        assert 'networks: bridge host none' in again, again
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
    assert engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}) == []


def one_slot_dir(engine, pool):
    [holder] = engine.containers.list(all=True, filters={'label': ['drover.role=slot-holder', 'drover.pool=%s' % pool,
                                                                   'drover.slot=1']})
    return holder.name.split('-')[-1]


@pytest.fixture
def metadata_service(tmp_path):
    """A stand-in instance metadata service at 169.254.169.254, in a network namespace of its own routed from the
    host (198.18.7.0/30 between them): what a cloud host would answer there."""
    tag = uuid.uuid4().hex[:6]
    ns, host_if, ns_if = 'drvtest-md%s' % tag, 'tenimh%s' % tag, 'tenimn%s' % tag
    root = tmp_path / 'md'
    (root / 'latest' / 'meta-data').mkdir(parents=True)
    (root / 'latest' / 'meta-data' / 'iam').write_text('role-credentials\n')
    steps = [['ip', 'netns', 'add', ns], ['ip', 'link', 'add', host_if, 'type', 'veth', 'peer', 'name', ns_if],
             ['ip', 'link', 'set', ns_if, 'netns', ns], ['ip', 'addr', 'add', '198.18.7.1/30', 'dev', host_if],
             ['ip', 'link', 'set', host_if, 'up'],
             ['ip', '-n', ns, 'addr', 'add', '198.18.7.2/30', 'dev', ns_if],
             ['ip', '-n', ns, 'addr', 'add', '169.254.169.254/32', 'dev', ns_if],
             ['ip', '-n', ns, 'link', 'set', ns_if, 'up'], ['ip', '-n', ns, 'link', 'set', 'lo', 'up'],
             ['ip', '-n', ns, 'route', 'add', 'default', 'via', '198.18.7.1'],
             ['ip', 'route', 'add', '169.254.169.254/32', 'via', '198.18.7.2']]
    server = None
    try:
        for argv in steps:
            subprocess.run(argv, check=True, capture_output=True)
        server = subprocess.Popen(['ip', 'netns', 'exec', ns, 'busybox', 'httpd', '-f', '-p', '80', '-h', str(root)])
        yield 'http://169.254.169.254/latest/meta-data/iam'
    finally:
        if server is not None:
            server.kill()
            server.wait()
        subprocess.run(['ip', 'route', 'del', '169.254.169.254/32'], capture_output=True, check=False)
        subprocess.run(['ip', 'link', 'del', host_if], capture_output=True, check=False)
        subprocess.run(['ip', 'netns', 'del', ns], capture_output=True, check=False)


def test_a_job_container_cannot_reach_the_instance_metadata(
        engine, standin, module_runner, store_path, pool_name, metadata_service):
    # the stand-in answers a container on the host's engine: the block below is the slot's, not the route's
    # (busybox's wget -T crashes in this build: `timeout` bounds it instead)
    plain = engine.containers.run('drover.local/busybox:1', ['timeout', '5', 'wget', '-q', '-O', '-', metadata_service],
                                  remove=True)
    assert plain.decode().strip() == 'role-credentials'
    script = (BUILD + 'echo "step: $(timeout 5 wget -q -O - %(url)s 2>&1 || echo unreachable)"; '
              # a job container's wget: given 6 s (a connection that is dropped would wait minutes), then removed
              'cid=$(docker run -d mine:1 /bin/busybox wget -q -O - %(url)s); sleep 6; got=$(docker logs $cid 2>&1); '
              'docker rm -f $cid >/dev/null; echo "container: [$got]"; '
              'echo "$got" | grep -q role-credentials || echo "container: unreachable"' % {'url': metadata_service})
    standin.queue_job(REPO, ['self-hosted', pool_name], name='md', script=script)

    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)
    try:
        started = run()['started']
        assert len(started) == 1, started
        box = engine.containers.get(started[0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=120)
        output = box.logs().decode('utf-8', 'replace')
        assert 'built: mine:1' in output, output
        assert 'role-credentials' not in output, output
        assert re.search(r'step: .*(Connection refused|unreachable)', output), output
        assert 'container: unreachable' in output, output
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)


def test_a_job_container_past_the_profile_s_memory_is_killed_and_the_pass_tells_it(
        engine, standin, module_runner, store_path, pool_name):
    """The whole slot (runner, engine, job containers) runs in one cgroup with profile.memory: a job container that
    allocates past it is killed by the kernel, the pass that collects the runner tells it, and the slot goes on."""
    hog = ('docker run --rm mine:1 /bin/busybox sh -c '
           '\'a=$(/bin/busybox head -c 700000000 /dev/zero | /bin/busybox tr "\\0" x); echo survived\'; '
           'echo "hog exit: $?"')
    standin.queue_job(REPO, ['self-hosted', pool_name], name='hog', script=BUILD + hog)

    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=512)
    try:
        started = run()['started']
        box = engine.containers.get(started[0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=180)
        output = box.logs().decode('utf-8', 'replace')
        assert 'hog exit: 137' in output and 'survived' not in output, output
        collected = run()
        [ended] = [e for e in collected['events'] if e['event'] == 'runner.ended']
        # the job's container was killed, not the runner: its job went on to its end
        assert ended['slot_oom_kills'] >= 1 and ended['result'] == 'Succeeded', ended
        assert any('killed' in w and 'for memory' in w for w in warnings_of(collected)), collected
        # the slot goes on: its next job runs on the same engine
        standin.queue_job(REPO, ['self-hosted', pool_name], name='after', script='docker info >/dev/null && echo ok')
        again = run()['started']
        box = engine.containers.get(again[0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=120)
        assert 'completed with result: Succeeded' in box.logs().decode(), box.logs().decode()
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)


def test_a_slot_cache_is_the_job_s_own_to_write(engine, standin, module_runner, store_path, pool_name):
    """A job of a slot with an engine of its own runs as the slot's user, not root: the slot cache's root is that
    user's, so a job writes there and the slot's next job reads what it wrote."""
    caches = [{'name': 'deps', 'path': '/cache', 'scope': 'slot'}]
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)

    def job(name, script):
        standin.queue_job(REPO, ['self-hosted', pool_name], name=name, script=script)
        started = run(profile=dict(name='dind', image=RUNNER_IMAGE, slots=1, memory=1024, docker='rootless',
                                   caches=caches, environment={'DROVER_JOB_SECONDS': '0.1'}))['started']
        assert len(started) == 1, started
        box = engine.containers.get(started[0])
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=120)
        return box.logs().decode('utf-8', 'replace')

    try:
        wrote = job('write', 'echo "user: $(id -u)"; echo "from the first job" > /cache/kept && echo "cache: written"')
        assert 'cache: written' in wrote and 'user: 0' not in wrote, wrote
        read = job('read', 'echo "cache: $(cat /cache/kept)"')
        assert 'cache: from the first job' in read, read
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
