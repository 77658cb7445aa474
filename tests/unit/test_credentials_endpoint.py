# -*- coding: utf-8 -*-
"""The credentials endpoint (roles/host/files/drover_credentials.py) with a real store, a real HTTP server on
loopback and stand-ins for STS and the engine: the answers, the owner check, the cache and its renewal, and a
fuzz of methods and paths."""

from __future__ import absolute_import, division, print_function

import http.client
import json
import logging
import os
import socket
import sys
import threading
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                'roles', 'host', 'files'))
import drover_credentials as dc  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.drover.fleet.plugins.module_utils._store import Store  # noqa: E402
from sweep import register  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

T0 = 1_800_000_000.0
ROLE = 'arn:aws:iam::123456789012:role/app'
SECRET = register('sentinel-secret-%s' % os.getpid())


class FakeSTS:
    def __init__(self, clock, lifetime=900, fail=False):
        self.clock = clock
        self.lifetime = lifetime
        self.fail = fail
        self.calls = []

    def assume(self, role_arn, cred_id):
        self.calls.append((role_arn, cred_id))
        if self.fail:
            raise dc.AssumeError('cannot assume %s: AccessDenied' % role_arn)
        n = len(self.calls)
        return {'AccessKeyId': 'ASIA%04d' % n, 'SecretAccessKey': '%s-%d' % (SECRET, n), 'Token': 'tok-%d' % n,
                'Expiration': self.clock() + self.lifetime}


class FakeOwners:
    def __init__(self, by_id=None):
        self.by_id = by_id or {}

    def addresses(self, cred_id):
        return set(self.by_id.get(cred_id, ()))


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / 'store.db')
    db = Store(path)
    db.put_credential('vpc-task', 'prod', 'vpc', ROLE, '169.254.1.2', T0)
    db.put_credential('bridge-task', 'prod', 'web', ROLE, None, T0)
    db.close()
    return path


@pytest.fixture
def clock():
    now = [T0]
    return now


def endpoint(store, clock, sts=None, owners=None):
    sts = sts or FakeSTS(lambda: clock[0])
    return dc.Endpoint(dc.Registry(store), owners or FakeOwners({'bridge-task': ['198.18.0.7']}),
                       dc.Cache(sts, clock=lambda: clock[0])), sts


def test_answers_the_owner_only(store, clock):
    ep, sts = endpoint(store, clock)
    status, body = ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')
    assert status == 200
    assert sorted(body) == ['AccessKeyId', 'Expiration', 'RoleArn', 'SecretAccessKey', 'Token']
    assert body['RoleArn'] == ROLE and body['AccessKeyId'] == 'ASIA0001'
    assert body['Expiration'] == '2027-01-15T08:15:00Z'
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.5.2')[0] == 403
    assert ep.answer('GET', '/v2/credentials/bridge-task', '198.18.0.7')[0] == 200
    status, body = ep.answer('GET', '/v2/credentials/bridge-task', '198.18.0.8')
    assert status == 403 and SECRET not in json.dumps(body)
    assert sts.calls == [(ROLE, 'vpc-task'), (ROLE, 'bridge-task')]


@pytest.mark.parametrize('method,path,status', [
    ('POST', '/v2/credentials/vpc-task', 405), ('PUT', '/v2/credentials/vpc-task', 405),
    ('DELETE', '/v2/credentials/vpc-task', 405), ('GET', '/v2/credentials/unknown', 404),
    ('GET', '/v2/credentials/', 404), ('GET', '/v1/credentials/vpc-task', 404), ('GET', '/', 404),
    ('GET', '/v2/credentials/vpc-task/../x', 404),
])
def test_other_methods_and_paths(store, clock, method, path, status):
    ep, sts = endpoint(store, clock)
    assert ep.answer(method, path, '169.254.1.2')[0] == status
    assert sts.calls == []


def test_a_deregistered_id_is_gone_at_once(store, clock):
    ep, sts = endpoint(store, clock)
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[0] == 200
    db = Store(store)
    db.delete_credentials('prod', 'vpc')
    db.close()
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[0] == 404


def test_a_replaced_store_is_read_again(store, clock, tmp_path):
    ep, sts = endpoint(store, clock)
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[0] == 200
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store + suffix):
            os.unlink(store + suffix)
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[0] == 404     # no store: nothing known
    db = Store(store)
    db.put_credential('new-task', 'prod', 'new', ROLE, '169.254.9.2', T0)
    db.close()
    assert ep.answer('GET', '/v2/credentials/new-task', '169.254.9.2')[0] == 200


def test_assume_failure_is_502(store, clock):
    ep, sts = endpoint(store, clock, sts=FakeSTS(lambda: clock[0], fail=True))
    status, body = ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')
    assert status == 502 and body['code'] == 'AssumeRoleFailed' and ROLE in body['message']


def test_cached_then_assumed_again_within_five_minutes_of_expiry(store, clock):
    ep, sts = endpoint(store, clock)
    first = ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[1]
    clock[0] = T0 + 900 - 301                      # 301 s before expiry: still cached
    assert ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[1] == first
    assert len(sts.calls) == 1
    clock[0] = T0 + 900 - 300                      # within 5 minutes of expiry: assumed again
    renewed = ep.answer('GET', '/v2/credentials/vpc-task', '169.254.1.2')[1]
    assert len(sts.calls) == 2 and renewed['AccessKeyId'] != first['AccessKeyId']


def test_session_name_is_cut_to_sts_limit():
    assert dc.session_name('abc') == 'drover-abc'
    long_name = dc.session_name('x' * 200)
    assert len(long_name) == 64 and long_name.startswith('drover-xxx')
    assert dc.session_name('a/b c') == 'drover-a-b-c'


# --- over HTTP ------------------------------------------------------------------------------------------

@pytest.fixture
def served(store, clock, caplog):
    ep, sts = endpoint(store, clock, owners=FakeOwners({'bridge-task': ['127.0.0.1']}))
    server = dc.Server(('127.0.0.1', 0), ep)
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    caplog.set_level(logging.INFO, logger='drover-credentials')
    yield server
    server.shutdown()
    server.server_close()
    assert 'Traceback' not in caplog.text and SECRET not in caplog.text


def request(server, method, path):
    conn = http.client.HTTPConnection('127.0.0.1', server.server_address[1], timeout=5)
    try:
        conn.request(method, path)
        answer = conn.getresponse()
        return answer.status, answer.read(), dict(answer.getheaders())
    finally:
        conn.close()


def test_over_http(served):
    status, body, headers = request(served, 'GET', '/v2/credentials/bridge-task')
    assert status == 200 and json.loads(body)['RoleArn'] == ROLE
    assert headers['Content-Type'] == 'application/json'
    status, body, headers = request(served, 'POST', '/v2/credentials/bridge-task')
    assert status == 405 and headers['Allow'] == 'GET'
    assert request(served, 'GET', '/v2/credentials/vpc-task')[0] == 403     # not from its link address
    assert request(served, 'GET', '/v2/credentials/nope')[0] == 404


def send_raw(server, raw):
    with socket.create_connection(('127.0.0.1', server.server_address[1]), timeout=5) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk


METHODS = st.one_of(st.sampled_from(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'FOO']),
                    st.text(alphabet='ABCDEFGHIJKLMNOPQRSTUVWXYZ_-', min_size=1, max_size=12))
PATHS = st.one_of(
    st.builds(lambda tail: '/v2/credentials/' + tail, st.text(min_size=0, max_size=80)),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=120)
    .map(lambda t: t if t.startswith('/') else '/' + t),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=METHODS, path=PATHS)
def test_fuzz_of_methods_and_paths(served, method, path):
    target = quote(path, safe="/%?=&:;@!$'()*+,~.-_")
    data = send_raw(served, ('%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' % (method, target)).encode())
    status = int(data.split(b' ', 2)[1])
    assert status in (200, 400, 403, 404, 405), data[:200]
    if status == 200:
        assert method == 'GET'
    assert SECRET.encode() not in data or status == 200


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=300))
def test_fuzz_of_raw_bytes(served, raw):
    # Whatever arrives, the service answers (or closes) and keeps serving; never a 500.
    data = send_raw(served, raw)
    assert b' 500 ' not in data.split(b'\r\n', 1)[0]
    assert request(served, 'GET', '/v2/credentials/nope')[0] == 404
