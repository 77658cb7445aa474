# -*- coding: utf-8 -*-
"""profile.docker rootless on the real engine, against the GitHub stand-in, with jobs that run scripts: each slot
has a Docker engine of its own, run by an unprivileged user of its own; a job builds an image, runs it with its
workspace mounted, reaches a service it started at localhost; another slot sees none of it; after a job the slot
engine holds no container, volume or network but keeps its images; a job cannot reach the host through it."""

from __future__ import absolute_import, division, print_function

import os
import pwd
import re
import uuid

from helpers import wait_for
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
             'docker image inspect mine:1 >/dev/null 2>&1 && echo "other slot: has mine" || echo "other slot: no mine"')
JOB_AGAIN = ('echo "containers: $(docker ps -aq | wc -l)"; echo "volumes: $(docker volume ls -q | wc -l)"; '
             'echo "networks: $(docker network ls --format "{{.Name}}" | sort | tr "\\n" " ")"; '
             'docker image inspect mine:1 >/dev/null && echo "image: kept"')


def test_a_rootless_engine_per_slot(engine, standin, module_runner, store_path, pool_name):
    def run(**kw):
        params = dict(pool=pool_name, labels=['self-hosted', pool_name], token=TOKEN, api_url=standin.url,
                      store_path=store_path, machine_id='mid' + pool_name, warm=0, repository=REPO,
                      profile=dict(name='dind', image=RUNNER_IMAGE, slots=2, memory=1024, docker='rootless',
                                   environment={'DROVER_JOB_SECONDS': '0.1'}))
        params.update(kw)
        return module_runner('gh_runner_slot', params)

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
        standin.queue_job(REPO, ['self-hosted', pool_name], name='other', script=JOB_OTHER)
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
        assert 'completed with result: Succeeded' in one and 'completed with result: Succeeded' in other

        # no container on the host's engine is privileged or has the host's socket
        for c in engine.containers.list(all=True):
            host = c.attrs['HostConfig']
            assert not host.get('Privileged'), c.name
            assert not any(b.split(':')[0] in ('/var/run/docker.sock', '/run/docker.sock') for b in host.get('Binds') or []), c.name

        # the next job of slot 1: its engine is empty but for its images
        standin.queue_job(REPO, ['self-hosted', pool_name], name='again', script=JOB_AGAIN)
        third = run()
        again = finish(third['started'])[1]
        assert 'containers: 0' in again and 'volumes: 0' in again and 'image: kept' in again, again
        assert 'networks: bridge host none' in again, again
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
    assert engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name}) == []


def one_slot_dir(engine, pool):
    [holder] = engine.containers.list(all=True, filters={'label': ['drover.role=slot-holder', 'drover.pool=%s' % pool,
                                                                   'drover.slot=1']})
    return holder.name.split('-')[-1]
