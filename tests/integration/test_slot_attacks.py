# -*- coding: utf-8 -*-
"""Hostile jobs in a rootless slot (profile.docker: rootless) on the real engine, against the GitHub stand-in: a job
commands its slot's Docker engine, so it can write whatever the slot's user can, through a container that binds any
path the engine reaches. Each test is an attack a job made, and what the next pass of the pool must not do."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import uuid

import pytest

import test_pool_docker
import test_pool_mirror
from helpers import wait_for
from test_pool_docker import BUILD, REPO, one_slot_dir, pool_runner
from test_pool_mirror import HUB_PASSWORD, HUB_USER, PULL

# What the standin fixture reads of this module (the runners reach the stand-in at the bridge's gateway, with the
# token pool_runner passes), and the upstream registry fixture (a stand-in for Docker Hub)
STANDIN_HOST = test_pool_docker.STANDIN_HOST
TOKEN = test_pool_docker.TOKEN
upstream = test_pool_mirror.upstream

# The attack on root's files of the slot: a job container binds the slot's top directory (its work folder's parent)
# and names a root process group as the engine's pid, links the engine's log into a root-only directory, puts a FIFO
# where the engine's configuration is (a pass that reads it would wait for ever under the host lock), names the
# process again as the engine's own pid file, rewrites the engine's start script (its slot's bin/dockerd, which the
# slot's user runs as the engine's view of the filesystem is made), and takes its engine's socket away (the next
# pass must start it again: what it stops and what it opens are then the job's choice).
ATTACK_FILES = BUILD + r'''
cat > attack.sh <<'EOF'
B=/bin/busybox
cd /s
$B rm -f engine.pid 2>/dev/null; $B sh -c 'echo %(victim)d > engine.pid' 2>/dev/null && echo "wrote: engine.pid" || echo "refused: engine.pid"
$B rm -f engine.log 2>/dev/null; $B ln -s %(rootonly)s/pwned engine.log 2>/dev/null && echo "linked: engine.log" || echo "refused: engine.log"
$B rm -f daemon.json 2>/dev/null; $B mkfifo daemon.json 2>/dev/null && echo "fifo: daemon.json" || echo "refused: daemon.json"
$B sh -c 'echo %(victim)d > run/docker.pid' 2>/dev/null && echo "wrote: run/docker.pid" || echo "refused: run/docker.pid"
$B sh -c 'echo "kill -9 %(victim)d" > bin/dockerd' 2>/dev/null && echo "wrote: bin/dockerd" || echo "refused: bin/dockerd"
$B rm -rf bin 2>/dev/null; $B mkdir -p bin/x 2>/dev/null && echo "made: bin" || echo "refused: bin"
$B rm -f run/docker.sock && echo "removed: run/docker.sock"
EOF
docker run --rm -v "${PWD%%/work}:/s" -v "$PWD:/w" mine:1 /bin/busybox sh /w/attack.sh
'''
# The attack on the slot's socket: what the engine's runtime directory holds becomes a link to another engine's
# socket (a decoy here; the host's own would give the next job root on the host, and the pass that empties the slot
# would remove the host's containers).
ATTACK_SOCKET = BUILD + r'''
docker run --rm -v "${PWD%%/work}:/s" mine:1 /bin/busybox sh -c \
  '/bin/busybox rm -f /s/run/docker.sock && /bin/busybox ln -s %(decoy)s /s/run/docker.sock && echo "linked: run/docker.sock"'
'''
AFTER = ('docker info --format "{{.SecurityOptions}}" | grep -q rootless && echo "engine: rootless"; '
         'echo "containers: $(docker ps -aq | wc -l)"; '
         'echo "ipv6 off: $(cat /proc/sys/net/ipv6/conf/all/disable_ipv6)"')


class Decoy:
    """A Docker API of the test's own on a Unix socket: answers like an engine, and records every request."""

    def __init__(self, path):
        self.path = path
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, dummy = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    head = conn.recv(65536).decode('latin-1')
                except OSError:
                    continue
                line = head.split('\r\n', 1)[0]
                self.requests.append(line)
                body = b'OK' if '/_ping' in line else json.dumps(
                    {'ApiVersion': '1.41', 'Version': '20.10.24'} if '/version' in line else []).encode()
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n'
                             b'Connection: close\r\n\r\n%s' % (len(body), body))

    def close(self):
        self.sock.close()


def _pass_within(run, seconds, fifo):
    """One pass of the pool; if it has not ended after `seconds` (blocked on a FIFO the job made), the FIFO gets a
    writer so that it ends. Returns (result, whether it was blocked)."""
    done, out = threading.Event(), {}

    def watch():
        if done.wait(seconds):
            return
        out['blocked'] = True
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out['result'] = run()
    finally:
        done.set()
        watcher.join()
    return out['result'], out.get('blocked', False)


def _ended(engine, name, timeout=120):
    box = engine.containers.get(name)
    wait_for(lambda: box.reload() or box.status == 'exited', timeout=timeout)
    return box, box.logs().decode('utf-8', 'replace')


def test_a_job_cannot_turn_the_pass_s_root_against_the_host_through_its_slot(
        engine, standin, module_runner, store_path, pool_name, tmp_path):
    victim = subprocess.Popen(['sleep', '600'], start_new_session=True)      # a root process group of the host's
    rootonly = tempfile.mkdtemp(prefix='drover-rootonly-', dir='/root')        # a directory only root can write
    decoy = Decoy(str(tmp_path / 'decoy.sock'))
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)
    try:
        standin.queue_job(REPO, ['self-hosted', pool_name], name='files', script=ATTACK_FILES % {
            'victim': victim.pid, 'rootonly': rootonly})
        first = run()
        assert len(first['started']) == 1, first
        slot_dir = '/var/lib/drover-slots/%s' % one_slot_dir(engine, pool_name)
        dummy, files = _ended(engine, first['started'][0])
        assert 'built: mine:1' in files and 'removed: run/docker.sock' in files, files

        # the next pass collects that job and starts the next runner in the slot (its engine must start again)
        standin.queue_job(REPO, ['self-hosted', pool_name], name='socket', script=ATTACK_SOCKET % {
            'decoy': decoy.path})
        second, blocked = _pass_within(run, 45, os.path.join(slot_dir, 'daemon.json'))
        assert not blocked, 'the pass waited on the FIFO the job put at daemon.json'
        assert victim.poll() is None, 'the pass killed the process group the job named (exit %s)' % victim.returncode
        assert os.listdir(rootonly) == [], 'the pass made a file where the job linked the log: %s' % os.listdir(rootonly)
        assert len(second['started']) == 1, second
        # the job could write none of root's files of the slot: the slot's top directory is root's
        for name in ('engine.pid', 'engine.log', 'daemon.json', 'bin/dockerd'):
            assert 'refused: %s' % name in files, files
            info = os.lstat(os.path.join(slot_dir, name))
            assert stat.S_ISREG(info.st_mode) and info.st_uid == 0, (name, info)
        assert 'refused: bin' in files and os.lstat(os.path.join(slot_dir, 'bin')).st_uid == 0, files
        top = os.lstat(slot_dir)
        assert top.st_uid == 0 and stat.S_IMODE(top.st_mode) == 0o711, top

        dummy, sock = _ended(engine, second['started'][0])
        assert 'linked: run/docker.sock' in sock, sock
        standin.queue_job(REPO, ['self-hosted', pool_name], name='after', script=AFTER)
        third = run()
        assert len(third['started']) == 1, third
        box, after = _ended(engine, third['started'][0])
        # the link to another socket was never used: not by the pass, not by the next job
        assert decoy.requests == [], decoy.requests
        assert 'engine: rootless' in after and 'containers: 0' in after and 'ipv6 off: 1' in after, after
        assert 'completed with result: Succeeded' in after, after
        # the runner's socket is root's proven link, in the slot's top directory
        binds = box.attrs['HostConfig']['Binds']
        assert '%s/engine.sock:/var/run/docker.sock' % slot_dir in binds, binds
        assert stat.S_ISSOCK(os.lstat('%s/engine.sock' % slot_dir).st_mode)
        collected = run()
        assert collected['released'] == third['started'], collected
        assert decoy.requests == [], decoy.requests
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
        decoy.close()
        victim.kill()
        victim.wait()
        shutil.rmtree(rootonly, ignore_errors=True)


# What one job leaves for the next in its slot: an image of its own under the name of one the next job pulls from
# Docker Hub (busybox:1, through the pools' mirror), files and an action marked downloaded in the work folder (the
# runner reuses `_actions/<owner>/<name>/<ref>` when `<ref>.completed` is there), a file in the slot's home.
LEAVE = PULL + r'''
mkdir -p poison && cp /bin/busybox poison/busybox && echo poisoned > poison/poisoned && \
  printf "FROM scratch\nCOPY busybox /bin/busybox\nCOPY poisoned /poisoned\n" > poison/Dockerfile && \
  DOCKER_BUILDKIT=1 docker build -q -t busybox:1 poison >/dev/null && echo "tagged: busybox:1"
echo "from the first job" > left.txt
mkdir -p _actions/actions/checkout/v4 && touch _actions/actions/checkout/v4.completed
docker run --rm -v "${PWD%/work}/home:/h" busybox:1 /bin/busybox sh -c 'echo left > /h/left' && echo "home: written"
'''
FIND = r'''
echo "images: $(docker images -q | wc -l) [$(docker images --format '{{.Repository}}' | sort -u | tr '\n' ' ')]"
echo "work: [$(ls -A "$PWD" | tr '\n' ' ')]"
docker run --rm busybox:1 /bin/busybox ls /poisoned >/dev/null 2>&1 && echo "ran: the first job's" || echo "ran: the hub's"
docker pull -q busybox:1 >/dev/null 2>&1 && echo "pulled again"
echo "home: [$(docker run --rm -v "${PWD%/work}/home:/h" busybox:1 /bin/busybox ls -A /h | tr '\n' ' ')]"
'''


@pytest.mark.parametrize('forks', [False, True], ids=['trusted', 'forks'])
def test_the_next_job_of_a_slot_finds_nothing_the_last_one_left(
        engine, standin, module_runner, store_path, pool_name, upstream, forks):
    hub, url = upstream
    mirror = dict(enabled=True, upstream=url, username=HUB_USER, password=HUB_PASSWORD)
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)
    labels = ['self-hosted', pool_name]
    try:
        standin.queue_job(REPO, labels, name='leave', script=LEAVE)
        first = run(mirror=mirror, pull_requests_from_forks=forks)
        assert len(first['started']) == 1, first
        dummy, left = _ended(engine, first['started'][0])
        assert 'pulled: from-the-hub' in left and 'tagged: busybox:1' in left and 'home: written' in left, left
        fetched = hub.blob_fetches()

        standin.queue_job(REPO, labels, name='find', script=FIND)
        second = run(mirror=mirror, pull_requests_from_forks=forks)
        assert len(second['started']) == 1, second
        dummy, found = _ended(engine, second['started'][0])
        assert 'ran: the hub\'s' in found and 'pulled again' in found, found
        assert 'work: []' in found, found
        assert 'left' not in found.split('home: ', 1)[1].split('\n', 1)[0], found
        # a pool of trusted jobs keeps the image it pulled from the Hub (under root's name alone): the next pull
        # finds its layers; a pool of forks' jobs keeps nothing
        if forks:
            assert 'images: 0 []' in found, found
        else:
            assert 'images: 1 [drover-kept ]' in found, found
        assert hub.blob_fetches() == fetched
        run(mirror=mirror, pull_requests_from_forks=forks)
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True, mirror=dict(enabled=False))


def _reach(engine, url):
    """What a container on the host's default bridge (another tenant's task) gets from `url` in 5 s."""
    out = engine.containers.run('drover.local/busybox:1', ['sh', '-c', 'timeout 5 wget -q -O - %s 2>&1; echo "exit $?"'
                                                           % url], remove=True)
    return out.decode('utf-8', 'replace')


def test_another_tenant_reaches_neither_the_mirror_nor_what_a_slot_publishes(
        engine, standin, module_runner, store_path, pool_name, upstream):
    """The pools' mirror has no client authentication (its upstream account's password is the host's): only the slot
    engines may reach it. A task container on the host's bridge reaches neither it nor a port a job publishes."""
    hub, url = upstream
    mirror = dict(enabled=True, upstream=url, username=HUB_USER, password=HUB_PASSWORD)
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)
    script = PULL + ('mkdir -p www && echo "the job\'s service" > www/index.html && '
                     'docker run -d -p 8080:80 -v "$PWD/www:/w" busybox:1 httpd -f -p 80 -h /w >/dev/null && '
                     'echo "serving"; sleep 25')
    try:
        standin.queue_job(REPO, ['self-hosted', pool_name], name='serve', script=script)
        first = run(mirror=mirror)
        assert len(first['started']) == 1, first
        box = engine.containers.get(first['started'][0])
        try:
            wait_for(lambda: box.reload() or 'serving' in box.logs().decode('utf-8', 'replace'), timeout=90)
        except AssertionError:
            raise AssertionError(box.logs().decode('utf-8', 'replace'))
        assert 'pulled: from-the-hub' in box.logs().decode('utf-8', 'replace')
        [mirror_box] = engine.containers.list(filters={'label': 'drover.role=mirror'})
        [holder] = engine.containers.list(filters={'label': ['drover.role=slot-holder', 'drover.pool=%s' % pool_name]})
        mirror_ip = list(mirror_box.attrs['NetworkSettings']['Networks'].values())[0]['IPAddress']
        holder_ip = list(holder.attrs['NetworkSettings']['Networks'].values())[0]['IPAddress']
        # both on the pools' network alone, not on the host's bridge
        assert list(mirror_box.attrs['NetworkSettings']['Networks']) == \
            list(holder.attrs['NetworkSettings']['Networks']) != ['bridge']
        # the manifest of the upstream account's image through the mirror, and the job's service
        got = _reach(engine, 'http://%s:5000/v2/library/busybox/manifests/1' % mirror_ip)
        assert 'exit 0' not in got and 'schemaVersion' not in got, got
        got = _reach(engine, 'http://%s:8080/' % holder_ip)
        assert 'exit 0' not in got and "the job's service" not in got, got
        wait_for(lambda: box.reload() or box.status == 'exited', timeout=90)
        assert 'completed with result: Succeeded' in box.logs().decode('utf-8', 'replace')
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True, mirror=dict(enabled=False))
    assert engine.networks.list(filters={'label': 'drover.role=pools-network'}) == []


def test_a_job_container_s_user_is_no_account_of_the_host(engine, standin, module_runner, store_path, pool_name):
    """A directory service maps its users from 200000 (SSSD's default): an account has ID 201000 and a file only it
    reads. The slot user's subordinate range (here asked to start at 200000) leaves that ID out, so a job container
    run as user 1001 (the range's start + 1000) is not that account, and cannot read the file."""
    account = 'dvt%s' % uuid.uuid4().hex[:8]
    folder = tempfile.mkdtemp(prefix='drover-account-', dir='/var/tmp')
    os.chmod(folder, 0o755)
    subprocess.run(['useradd', '--no-create-home', '--uid', '201000', '--user-group', account], check=True,
                   capture_output=True)
    secret = os.path.join(folder, 'secret')
    with open(secret, 'w') as handle:
        handle.write('the account\'s own\n')
    os.chmod(secret, 0o600)
    os.chown(secret, 201000, 201000)
    script = BUILD + ('echo "read: $(docker run --rm --user 1001 -v %s:/x mine:1 /bin/busybox cat /x/secret 2>&1)"'
                      % folder)
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)
    try:
        standin.queue_job(REPO, ['self-hosted', pool_name], name='account', script=script)
        first = run(slot_subid_floor=200000)
        assert len(first['started']) == 1, first
        dummy, out = _ended(engine, first['started'][0])
        assert 'built: mine:1' in out and 'read: ' in out, out
        assert "the account's own" not in out and re.search(r'read: .*(Permission denied|permission denied)', out), out
        user = 'drv%s' % one_slot_dir(engine, pool_name)
        for path in ('/etc/subuid', '/etc/subgid'):
            [(start, count)] = [(int(f[1]), int(f[2])) for f in (line.strip().split(':') for line in open(path))
                                if f[0] == user]
            assert start >= 200000 and not start <= 201000 < start + count, (path, start, count)
        run(slot_subid_floor=200000)
    finally:
        run(state='absent', kill_busy=True)
        run(state='absent', purge_caches=True)
        subprocess.run(['userdel', account], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_bad_subordinate_floor_is_refused_and_nothing_changes(engine, standin, module_runner, store_path, pool_name):
    run = pool_runner(module_runner, standin, store_path, pool_name, slots=1, memory=1024)

    def host():
        return (sorted(c.name for c in engine.containers.list(all=True, filters={'label': 'drover.pool=%s' % pool_name})),
                open('/etc/subuid').read(), open('/etc/subgid').read(),
                sorted(os.listdir('/var/lib/drover-slots')) if os.path.isdir('/var/lib/drover-slots') else [])
    before = host()
    for floor in (0, 1000, 2 ** 32, -5):
        standin.queue_job(REPO, ['self-hosted', pool_name], name='never', script='echo never')
        out = run(slot_subid_floor=floor)
        assert out.get('failed') and 'slot_subid_floor must be a whole number from 65536' in out['msg'], out
        assert host() == before
        assert not os.path.exists(store_path)
