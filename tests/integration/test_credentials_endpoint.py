# -*- coding: utf-8 -*-
"""The credentials endpoint (roles/host/files/drover_credentials.py) run as the host runs it: a process of
its own with the dummy interface holding 169.254.170.2 and the DNAT rules from port 80, STS played by moto's
server on 127.0.0.1, and tasks converged by ecs_task. Containers fetch their credentials with busybox's wget
through AWS_CONTAINER_CREDENTIALS_FULL_URI with their AWS_CONTAINER_AUTHORIZATION_TOKEN, from an awsvpc task
(over its credential link) and from a bridge task; without the token, with a wrong one, from another task, or
for a stopped task's ID: 403; a role that cannot be assumed 502; a restart of the service loses nothing, and
it leaves no interface or rule behind. It holds against 1,100 stalled connections and 200 large stalled
heads, and puts back its redirect when it goes (by itself, and at each converge of a task with a role)."""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import container, store_rows, warnings_of

from ansible_collections.drover.fleet.plugins.module_utils.network import credtoken

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVICE = os.path.join(ROOT, 'roles', 'host', 'files', 'drover_credentials.py')
ROLE = 'arn:aws:iam::123456789012:role/app-task'
PORT = 51679


def nat_rules():
    out = subprocess.run(['iptables', '-t', 'nat', '-S'], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if '169.254.170.2' in line]


def dummy_present():
    """Whether 169.254.170.2 is on the host: on the dummy interface, or on lo (kernels without dummy links)."""
    out = subprocess.run(['ip', '-o', '-4', 'addr', 'show'], capture_output=True, text=True, check=True).stdout
    return '169.254.170.2/32' in out


@pytest.fixture
def sts(moto_aws):
    return moto_aws


class Service:
    def __init__(self, store_path, sts_url, tmp_path, extra=()):
        self.argv = [sys.executable, SERVICE, '--store', store_path, '--sts-endpoint', sts_url,
                     '--region', 'us-east-1'] + list(extra)
        self.log = str(tmp_path / 'credentials.log')
        self.proc = None
        self.env = dict(os.environ, AWS_ACCESS_KEY_ID='testing', AWS_SECRET_ACCESS_KEY='testing',
                        AWS_SESSION_TOKEN='testing')

    def start(self):
        def default_file_limit():
            # As systemd starts a service: a soft limit of 1024 open files (the service raises its own).
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        with open(self.log, 'a') as log:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log, env=self.env, text=True,
                                         preexec_fn=default_file_limit)
        assert self.proc.stdout.readline().strip() == 'ready', open(self.log).read()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
        return self.proc.returncode if self.proc else None

    def text(self):
        with open(self.log) as handle:
            return handle.read()


@pytest.fixture
def service(store_path, sts, tmp_path):
    made = []

    def start(extra=()):
        svc = Service(store_path, sts, tmp_path, extra).start()
        made.append(svc)
        return svc
    yield start
    for svc in made:
        svc.stop()
        assert 'Traceback' not in svc.text(), svc.text()
    assert nat_rules() == [] and not dummy_present()


def fetch(engine, runtime_id, cred_id=None, token=None):
    """(HTTP status, body) of the credentials fetch from inside a container, with busybox wget, as the AWS
    SDKs make it: the container's own full URI and token, unless another ID or token ('' for none) is given."""
    uri = 'http://169.254.170.2/v2/credentials/%s' % cred_id if cred_id else '$AWS_CONTAINER_CREDENTIALS_FULL_URI'
    header = '$AWS_CONTAINER_AUTHORIZATION_TOKEN' if token is None else token
    script = 'wget -S -q -O - %s"%s" 2>&1' % (('--header "Authorization: %s" ' % header) if header else '', uri)
    code, out = engine.containers.get(runtime_id).exec_run(['sh', '-c', script])
    text = out.decode()
    statuses = [int(line.split()[1]) for line in text.splitlines() if line.strip().startswith('HTTP/1.')]
    body = text[text.find('{'):] if '{' in text else ''
    return (statuses[-1] if statuses else None), body


def test_tasks_fetch_their_own_credentials(engine, cluster, converge, store_path, service, fake_eni, netns_cleanup):
    svc = service()
    assert len(nat_rules()) == 2 and dummy_present()
    eni = fake_eni()
    eni.plug()
    vpc = converge(name='vpc' + cluster, task_role_arn=ROLE, cred_id='vpc-' + cluster, network_mode='awsvpc',
                   awsvpc={'eni_mac': eni.mac, 'address': eni.address()}, containers=[container('main')])
    web = converge(name='web', task_role_arn=ROLE, cred_id='web-' + cluster, containers=[container('main')])
    other = converge(name='other', containers=[container('main')])
    vpc_box = vpc['task']['containers'][0]['runtime_id']
    web_box = web['task']['containers'][0]['runtime_id']
    other_box = other['task']['containers'][0]['runtime_id']

    for box, cred_id in ((vpc_box, 'vpc-' + cluster), (web_box, 'web-' + cluster)):
        status, body = fetch(engine, box)
        assert status == 200, body
        creds = json.loads(body)
        assert creds['RoleArn'] == ROLE and creds['AccessKeyId'] and creds['SecretAccessKey'] and creds['Token']
        assert creds['Expiration'].endswith('Z')
        # The log names the row by a short digest, never by the ID a request would need.
        assert creds['SecretAccessKey'] not in svc.text() and cred_id not in svc.text()
        assert 'id:' + hashlib.sha256(cred_id.encode()).hexdigest()[:8] in svc.text()
    # Another task knows the IDs, and gets nothing; neither does one task the other's.
    assert fetch(engine, other_box, 'web-' + cluster)[0] == 403
    assert fetch(engine, other_box, 'vpc-' + cluster)[0] == 403
    assert fetch(engine, web_box, 'vpc-' + cluster)[0] == 403
    # ... nor whether an ID exists: the same 403.
    assert fetch(engine, web_box, 'nobody')[0] == 403
    # From the owner's own address, without its token or with a wrong one: 403.
    for box in (vpc_box, web_box):
        assert fetch(engine, box, token='')[0] == 403
        assert fetch(engine, box, token='0' * 64)[0] == 403
    # Even knowing another task's token and ID, a container is not that task.
    assert fetch(engine, other_box, 'web-' + cluster, token=env_of(engine, web_box)[credtoken.TOKEN_VAR])[0] == 403

    # The token is in the owner's containers' environment, and nowhere the sweep looks: not in the results,
    # the labels, the store or the service's log.
    for result, box, cred_id in ((vpc, vpc_box, 'vpc-' + cluster), (web, web_box, 'web-' + cluster)):
        env = env_of(engine, box)
        secret = env[credtoken.TOKEN_VAR]
        assert len(secret) == 64
        assert env[credtoken.FULL_URI_VAR] == 'http://169.254.170.2/v2/credentials/%s' % cred_id
        assert env['AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'] == '/v2/credentials/%s' % cred_id
        assert secret not in json.dumps(result.get('task')) and secret not in json.dumps(dict(result))
        assert secret not in json.dumps(engine.api.inspect_container(box)['Config']['Labels'])
        assert secret not in json.dumps(store_rows(store_path)) and secret not in svc.text()
    assert credtoken.TOKEN_VAR not in env_of(engine, other_box)
    for name in os.listdir(os.path.dirname(store_path)):
        with open(os.path.join(os.path.dirname(store_path), name), 'rb') as handle:
            assert all(env_of(engine, b)[credtoken.TOKEN_VAR].encode() not in handle.read() for b in (vpc_box, web_box))

    # A restart of the service loses nothing: the registrations are the store's.
    assert svc.stop() == 0 and nat_rules() == [] and not dummy_present()
    svc = service()
    assert fetch(engine, web_box)[0] == 200

    # Stopped: the ID is gone at once.
    web_token = env_of(engine, web_box)[credtoken.TOKEN_VAR]
    converge(name='web', state='stopped')
    converge(name='vpc' + cluster, state='absent')
    status, body = fetch(engine, other_box, 'web-' + cluster, token=web_token)
    assert status == 403, body


def env_of(engine, runtime_id):
    return dict(e.split('=', 1) for e in engine.api.inspect_container(runtime_id)['Config']['Env'])


def register_loopback(store_path, cred_id, cluster, task, role=ROLE):
    """A registration whose owner is 127.0.0.1 (as an awsvpc task's link address): the token it needs."""
    from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store
    db = Store(store_path)
    db.put_credential(cred_id, cluster, task, role, '127.0.0.1', time.time())
    db.close()
    return credtoken.token(credtoken.host_key(store_path, create=True), cred_id, cluster, task, role)


def loopback_get(port, path, token, timeout=30):
    import http.client
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request('GET', path, headers={'Authorization': token} if token else {})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b'{}')
    finally:
        conn.close()


def test_a_role_that_cannot_be_assumed_is_502(cluster, store_path, tmp_path):
    # STS that is not there: the service answers 502 and goes on serving.
    loopback_only = ['--no-network', '--listen', '127.0.0.1', '--port', '51680']
    svc = Service(store_path, 'http://127.0.0.1:9', tmp_path, loopback_only).start()
    try:
        secret = register_loopback(store_path, 'loop-' + cluster, cluster, 'loop')
        status, body = loopback_get(51680, '/v2/credentials/loop-' + cluster, secret)
        assert status == 502 and body['code'] == 'AssumeRoleFailed' and ROLE in body['message']
        assert loopback_get(51680, '/v2/credentials/unknown', secret)[0] == 403
        assert loopback_get(51680, '/v2/unknown', secret)[0] == 404
    finally:
        assert svc.stop() == 0
    assert 'Traceback' not in svc.text()


def test_credentials_are_renewed_before_they_expire(cluster, store_path, sts, tmp_path):
    # Sessions of 900 s, renewed when they expire within 897 s: 3.5 s apart, a fetch gets new credentials;
    # at once, the cached ones.
    secret = register_loopback(store_path, 'renew-' + cluster, cluster, 'renew')
    short = ['--no-network', '--listen', '127.0.0.1', '--port', '51681', '--duration', '900', '--refresh-before', '897']
    svc = Service(store_path, sts, tmp_path, short).start()

    def get():
        status, body = loopback_get(51681, '/v2/credentials/renew-' + cluster, secret)
        assert status == 200, body
        return body
    try:
        first, again = get(), get()
        assert again['AccessKeyId'] == first['AccessKeyId']
        time.sleep(3.5)
        renewed = get()
        assert renewed['AccessKeyId'] != first['AccessKeyId'] and renewed['Expiration'] >= first['Expiration']
    finally:
        assert svc.stop() == 0
    assert 'Traceback' not in svc.text()


def test_a_role_name_is_a_role_of_the_hosts_account(cluster, store_path, sts, tmp_path):
    # ECS takes a role's name for taskRoleArn (008 and 019 of the task definition corpus do): the endpoint
    # assumes arn:<partition>:iam::<the host's account>:role/<name> (the name alone, 11 characters, is refused by
    # STS's own model: a RoleArn has at least 20, so a 200 here means the name was made an ARN).
    secret = register_loopback(store_path, 'short-' + cluster, cluster, 'short', role='ecsTaskRole')
    svc = Service(store_path, sts, tmp_path, ['--no-network', '--listen', '127.0.0.1', '--port', '51682']).start()
    try:
        status, body = loopback_get(51682, '/v2/credentials/short-' + cluster, secret)
        assert status == 200 and body['AccessKeyId'], body
    finally:
        assert svc.stop() == 0
    assert 'Traceback' not in svc.text()


def proc_status(pid):
    """(threads, resident KiB) of a process, from /proc/<pid>/status."""
    with open('/proc/%d/status' % pid) as handle:
        fields = dict(line.split(':', 1) for line in handle if ':' in line)
    return int(fields['Threads']), int(fields['VmRSS'].split()[0])


def stalled(port, count, data):
    """`count` connections to 127.0.0.1:port that each send `data` and then wait."""
    socks = []
    for dummy in range(count):
        sock = socket.create_connection(('127.0.0.1', port), timeout=10)
        sock.setblocking(False)
        try:
            sock.send(data)
        except BlockingIOError:
            pass
        socks.append(sock)
    return socks


def still_open(sock):
    try:
        return sock.recv(1) != b''
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_stalled_connections_do_not_stop_it(cluster, store_path, sts, tmp_path):
    # 1,100 clients that send half a request line and wait, from a process with room for them: the owner is
    # answered within a second all the while; the service closes them on its own after its head timeout, it
    # has no more threads than its pool, and 200 large stalled heads do not swell it.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    port = 51683
    secret = register_loopback(store_path, 'stall-' + cluster, cluster, 'stall')
    svc = Service(store_path, sts, tmp_path, ['--no-network', '--listen', '127.0.0.1', '--port', str(port)]).start()
    path = '/v2/credentials/stall-' + cluster
    socks = []
    try:
        assert loopback_get(port, path, secret)[0] == 200              # the cache is warm
        threads0, rss0 = proc_status(svc.proc.pid)
        assert threads0 <= 40, threads0

        opened = time.monotonic()
        socks = stalled(port, 1100, b'GET /v2/cred')
        for dummy in range(3):
            started = time.monotonic()
            status, body = loopback_get(port, path, secret, timeout=5)
            assert status == 200 and time.monotonic() - started < 1.0, (status, time.monotonic() - started)
        assert time.monotonic() - opened < 5.0 and sum(still_open(s) for s in socks) >= 1000   # still stalling
        threads, rss = proc_status(svc.proc.pid)
        assert threads <= 40, threads
        # The service closes them when their 5 s are up.
        deadline = time.monotonic() + 15
        while any(still_open(s) for s in socks) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(still_open(s) for s in socks)
        for sock in socks:
            sock.close()
        socks = []
        assert loopback_get(port, path, secret, timeout=5)[0] == 200

        # 200 stalled requests with large headers (no blank line: never complete).
        big = b'GET /v2/credentials/x HTTP/1.1\r\n' + b''.join(b'X-Pad-%d: %s\r\n' % (n, b'a' * 1000) for n in range(60))
        socks = stalled(port, 200, big)
        time.sleep(1.0)
        threads, rss = proc_status(svc.proc.pid)
        assert threads <= 40 and rss - rss0 < 50 * 1024, (threads, rss0, rss)
        started = time.monotonic()
        assert loopback_get(port, path, secret, timeout=5)[0] == 200 and time.monotonic() - started < 1.0
        for sock in socks:
            sock.close()
        socks = []
        time.sleep(1.0)
        threads, rss = proc_status(svc.proc.pid)
        assert threads <= 40 and rss - rss0 < 50 * 1024, (threads, rss0, rss)
        assert loopback_get(port, path, secret, timeout=5)[0] == 200
    finally:
        for sock in socks:
            sock.close()
        assert svc.stop() == 0
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert 'Traceback' not in svc.text()


def test_the_redirect_is_put_back(engine, cluster, converge, store_path, service):
    # A flush of the DNAT rules (or a deleted rule) while the service runs: it puts them back itself within
    # its check interval; and a converge of a task with a role puts them back at once.
    svc = service(['--reassert', '1'])
    rules = nat_rules()
    assert len(rules) == 2
    for rule in rules:
        subprocess.run(['iptables', '-t', 'nat'] + rule.replace('-A', '-D', 1).split(), check=True)
    assert nat_rules() == []
    deadline = time.monotonic() + 10
    while sorted(nat_rules()) != sorted(rules) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sorted(nat_rules()) == sorted(rules)
    assert 'was missing: added again' in svc.text()
    assert svc.stop() == 0 and nat_rules() == []

    svc = service(['--reassert', '0'])                 # the service checks nothing: the converge does
    args = dict(name='web', task_role_arn=ROLE, cred_id='web-' + cluster, containers=[container('main')])
    box = converge(**args)['task']['containers'][0]['runtime_id']
    assert fetch(engine, box)[0] == 200
    bridge_rule = [r for r in rules if r.startswith('-A PREROUTING ')][0]
    subprocess.run(['iptables', '-t', 'nat', '-D', 'PREROUTING'] + bridge_rule.split()[2:], check=True)
    assert len(nat_rules()) == 1 and fetch(engine, box)[0] != 200
    again = converge(**args)
    assert again['changed'] and any('DNAT rule in PREROUTING added again' in w for w in warnings_of(again))
    assert sorted(nat_rules()) == sorted(rules) and fetch(engine, box)[0] == 200
    assert not converge(**args)['changed']
