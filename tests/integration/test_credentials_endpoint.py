# -*- coding: utf-8 -*-
"""The credentials endpoint (roles/host/files/drover_credentials.py) run as the host runs it: a process of
its own with the dummy interface holding 169.254.170.2 and the DNAT rules from port 80, STS played by moto's
server on 127.0.0.1, and tasks converged by ecs_task. Containers fetch their credentials with busybox's wget
through AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, from an awsvpc task (over its credential link) and from a
bridge task; another task's container gets 403, a stopped task's ID 404, a role that cannot be assumed 502;
a restart of the service loses nothing, and it leaves no interface or rule behind."""

from __future__ import absolute_import, division, print_function

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import container

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
        with open(self.log, 'a') as log:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log, env=self.env, text=True)
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


def fetch(engine, runtime_id, cred_id=None):
    """(HTTP status, body) of the credentials fetch from inside a container, with busybox wget."""
    uri = '/v2/credentials/%s' % cred_id if cred_id else '$AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'
    script = 'wget -S -q -O - "http://169.254.170.2%s" 2>&1' % uri
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
        assert creds['SecretAccessKey'] not in svc.text() and cred_id in svc.text()
    # Another task knows the IDs, and gets nothing; neither does one task the other's.
    assert fetch(engine, other_box, 'web-' + cluster)[0] == 403
    assert fetch(engine, other_box, 'vpc-' + cluster)[0] == 403
    assert fetch(engine, web_box, 'vpc-' + cluster)[0] == 403
    assert fetch(engine, web_box, 'nobody')[0] == 404

    # A restart of the service loses nothing: the registrations are the store's.
    assert svc.stop() == 0 and nat_rules() == [] and not dummy_present()
    svc = service()
    assert fetch(engine, web_box)[0] == 200

    # Stopped: the ID is gone at once.
    converge(name='web', state='stopped')
    converge(name='vpc' + cluster, state='absent')
    status, body = fetch(engine, other_box, 'web-' + cluster)
    assert status == 404, body


def test_a_role_that_cannot_be_assumed_is_502(cluster, store_path, tmp_path):
    # STS that is not there: the service answers 502 and goes on serving.
    loopback_only = ['--no-network', '--listen', '127.0.0.1', '--port', '51680']
    svc = Service(store_path, 'http://127.0.0.1:9', tmp_path, loopback_only).start()
    try:
        from ansible_collections.drover.fleet.plugins.module_utils._store import Store
        db = Store(store_path)
        db.put_credential('loop-' + cluster, cluster, 'loop', ROLE, '127.0.0.1', time.time())
        db.close()
        import http.client
        conn = http.client.HTTPConnection('127.0.0.1', 51680, timeout=30)
        conn.request('GET', '/v2/credentials/loop-' + cluster)
        answer = conn.getresponse()
        body = json.loads(answer.read())
        conn.close()
        assert answer.status == 502 and body['code'] == 'AssumeRoleFailed' and ROLE in body['message']
        conn = http.client.HTTPConnection('127.0.0.1', 51680, timeout=30)
        conn.request('GET', '/v2/credentials/unknown')
        assert conn.getresponse().status == 404
        conn.close()
    finally:
        assert svc.stop() == 0
    assert 'Traceback' not in svc.text()


def test_credentials_are_renewed_before_they_expire(cluster, store_path, sts, tmp_path):
    # Sessions of 900 s, renewed when they expire within 897 s: 3.5 s apart, a fetch gets new credentials;
    # at once, the cached ones.
    from ansible_collections.drover.fleet.plugins.module_utils._store import Store
    import http.client
    db = Store(store_path)
    db.put_credential('renew-' + cluster, cluster, 'renew', ROLE, '127.0.0.1', time.time())
    db.close()
    short = ['--no-network', '--listen', '127.0.0.1', '--port', '51681', '--duration', '900', '--refresh-before', '897']
    svc = Service(store_path, sts, tmp_path, short).start()

    def get():
        conn = http.client.HTTPConnection('127.0.0.1', 51681, timeout=30)
        conn.request('GET', '/v2/credentials/renew-' + cluster)
        answer = conn.getresponse()
        body = json.loads(answer.read())
        conn.close()
        assert answer.status == 200, body
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
