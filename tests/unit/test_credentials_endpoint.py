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
import time
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                'roles', 'host', 'files'))
import drover_credentials as dc  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.drover.fleet.plugins.module_utils.aws import awslogs  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.network import credtoken  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store  # noqa: E402
from sweep import register  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

T0 = 1_800_000_000.0
ROLE = 'arn:aws:iam::123456789012:role/app'
SECRET = register('sentinel-secret-%s' % os.getpid())
KEY = b'k' * 32
VPC = 'vpc-task'


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

    def owns(self, cred_id, source):
        return source in self.by_id.get(cred_id, ())


class FakeKeys:
    def __init__(self, key=KEY):
        self.key = key

    def get(self):
        return self.key


def tok(cred_id, task, key=KEY):
    """The token ecs_task gives the task (module_utils/network/credtoken.py), as its containers send it."""
    return credtoken.token(key, cred_id, 'prod', task, ROLE)


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


# The uid of the local socket each test caller's port stands for (the kernel's table, /proc/net/tcp, stood in).
ROOT_PORT, USER_PORT = 40000, 40001


def uid_of(peer):
    return {ROOT_PORT: 0, USER_PORT: 65534}.get(peer[1])


def endpoint(store, clock, sts=None, owners=None, keys=None):
    sts = sts or FakeSTS(lambda: clock[0])
    return dc.Endpoint(dc.Registry(store), owners or FakeOwners({'bridge-task': ['198.18.0.7']}),
                       dc.Cache(sts, clock=lambda: clock[0]), keys or FakeKeys(), uid_of=uid_of), sts


def get(ep, cred_id, source, token=None, path=None, port=ROOT_PORT):
    """ep.answer for a GET of the ID, with the owner's token unless another is given ('' for none), from a socket
    root holds unless another port is given."""
    task = {'vpc-task': 'vpc', 'bridge-task': 'web'}.get(cred_id, 'x')
    return ep.answer('GET', path or '/v2/credentials/%s' % cred_id, source,
                     tok(cred_id, task) if token is None else token, port)


def test_answers_the_owner_only(store, clock):
    ep, sts = endpoint(store, clock)
    status, body = get(ep, 'vpc-task', '169.254.1.2')
    assert status == 200
    assert sorted(body) == ['AccessKeyId', 'Expiration', 'RoleArn', 'SecretAccessKey', 'Token']
    assert body['RoleArn'] == ROLE and body['AccessKeyId'] == 'ASIA0001'
    assert body['Expiration'] == '2027-01-15T08:15:00Z'
    assert get(ep, 'vpc-task', '169.254.5.2')[0] == 403
    assert get(ep, 'bridge-task', '198.18.0.7')[0] == 200
    status, body = get(ep, 'bridge-task', '198.18.0.8')
    assert status == 403 and SECRET not in json.dumps(body)
    assert sts.calls == [(ROLE, 'vpc-task'), (ROLE, 'bridge-task')]


def test_the_owner_needs_its_token(store, clock):
    # From the owner's own address: no token, a wrong one, another task's, one of another key: 403.
    ep, sts = endpoint(store, clock)
    for cred_id, task, source, other in (('vpc-task', 'vpc', '169.254.1.2', 'bridge-task'),
                                         ('bridge-task', 'web', '198.18.0.7', 'vpc-task')):
        right = tok(cred_id, task)
        for given in ('', 'x', right[:-1], right + 'x', right.upper(), tok(other, task), tok(cred_id, task, b'j' * 32)):
            assert get(ep, cred_id, source, token=given)[0] == 403, given
    assert sts.calls == []
    assert get(ep, 'vpc-task', '169.254.1.2', token=' %s ' % tok('vpc-task', 'vpc'))[0] == 200


def test_no_key_no_answer(store, clock):
    ep, sts = endpoint(store, clock, keys=FakeKeys(None))
    assert get(ep, 'vpc-task', '169.254.1.2')[0] == 403 and sts.calls == []


def test_an_unknown_id_and_another_owner_s_look_the_same(store, clock):
    # A caller that is not the owner cannot tell a registered ID from one that is not.
    ep, sts = endpoint(store, clock)
    other = get(ep, 'vpc-task', '169.254.5.2', token='')
    unknown = get(ep, 'nobody-knows', '169.254.5.2', token='')
    assert other == unknown and other[0] == 403


def test_an_execution_role_for_the_engine_is_the_host_s_alone(store, clock):
    # The engine's awslogs driver sends no token: a registration for the host (source 'host', as ecs_task makes
    # it) is answered to the host itself (169.254.170.2, loopback), without a token, and to nobody else: not a
    # bridge container, not a task's link address, not with a task's token, not another registration's owner.
    db = Store(store)
    db.put_credential('exec-web', 'prod', 'web', ROLE, awslogs.HOST_SOURCE, T0)
    db.close()
    assert dc.HOST_SOURCE == awslogs.HOST_SOURCE
    ep, sts = endpoint(store, clock, owners=FakeOwners({'bridge-task': ['198.18.0.7'], 'exec-web': ['198.18.0.7']}))
    for source in ('198.18.0.7', '169.254.1.2', '172.17.0.2', '10.0.0.1', '169.254.170.3', '0.0.0.0'):
        for given in ('', tok('exec-web', 'web'), tok('bridge-task', 'web')):
            assert get(ep, 'exec-web', source, token=given) == get(ep, 'nobody', source, token=given), (source, given)
            assert get(ep, 'exec-web', source, token=given)[0] == 403
    assert sts.calls == []
    for source in ('169.254.170.2', '127.0.0.1'):
        status, body = get(ep, 'exec-web', source, token='')
        assert status == 200 and body['RoleArn'] == ROLE, body
        # Any other user of the host connects from the same address: only root (the engine) is answered, and
        # a socket the kernel does not show (gone, or not this namespace's) is nobody's.
        for port in (USER_PORT, None, 40009):
            assert get(ep, 'exec-web', source, token='', port=port) == get(ep, 'nobody', source, token='', port=port)
    # The host is no task: it gets no task role without the task's token.
    assert get(ep, 'vpc-task', '169.254.170.2', token='')[0] == 403
    assert get(ep, 'bridge-task', '169.254.170.2', token='')[0] == 403


def test_the_token_formula_is_the_same_on_both_sides():
    args = ('id-1', 'prod', 'web', ROLE)
    assert dc.token(KEY, *args) == credtoken.token(KEY, *args)
    assert len(credtoken.token(KEY, *args)) == 64
    assert credtoken.token(KEY, *args) != credtoken.token(KEY, 'id-1', 'prod', 'web2', ROLE)
    assert dc.KEY_FILE == credtoken.KEY_FILE and dc.KEY_BYTES == credtoken.KEY_BYTES


def test_host_key_made_once_root_only(tmp_path):
    store = str(tmp_path / 'd' / 'store.db')
    os.makedirs(os.path.dirname(store), mode=0o700)
    assert credtoken.host_key(store) is None                     # not made unless asked
    key = credtoken.host_key(store, create=True)
    path = credtoken.key_path(store)
    assert len(key) == 32 and oct(os.stat(path).st_mode & 0o777) == '0o600'
    assert credtoken.host_key(store, create=True) == key         # made once
    assert dc.Keys(path).get() == key
    assert sorted(os.listdir(os.path.dirname(store))) == ['credentials.key']
    os.chmod(path, 0o644)
    with pytest.raises(credtoken.HostKeyError):
        credtoken.host_key(store)
    assert dc.Keys(path).get() is None                           # readable by others: not trusted
    os.chmod(path, 0o600)
    os.unlink(path)
    os.symlink(str(tmp_path / 'elsewhere'), path)
    with pytest.raises(credtoken.HostKeyError):
        credtoken.host_key(store, create=True)                    # a link is never followed
    assert dc.Keys(path).get() is None


class FakeEngine:
    def __init__(self):
        self.boxes = []
        self.calls = 0

    def containers(self, filters=None):
        self.calls += 1
        assert filters == {'label': 'drover.cred-id', 'status': 'running'}
        return [{'Labels': {'drover.cred-id': cred}, 'NetworkSettings': {'Networks': {'bridge': {'IPAddress': ip}}}}
                for cred, ip in self.boxes]


def test_owner_listing_is_cached():
    now = [100.0]
    owners = dc.Owners(ttl=1.0, miss_ttl=0.25, clock=lambda: now[0])
    engine = FakeEngine()
    owners._client = engine
    engine.boxes = [('a', '198.18.0.7')]
    for dummy in range(190):                      # a second of requests from the owner: one listing
        assert owners.owns('a', '198.18.0.7')
    assert engine.calls == 1
    for dummy in range(190):                      # ... and from a caller that is not the owner
        assert not owners.owns('a', '198.18.0.9')
    assert engine.calls == 1
    engine.boxes.append(('b', '198.18.0.8'))      # a task that just started is found after miss_ttl
    now[0] += 0.3
    assert owners.owns('b', '198.18.0.8') and engine.calls == 2
    now[0] += 0.3
    assert not owners.owns('b', '198.18.0.9') and engine.calls == 3
    assert not owners.owns('b', '198.18.0.9') and engine.calls == 3
    engine.boxes = []                             # gone: its address no longer owns it after the TTL
    now[0] += 1.0
    assert not owners.owns('a', '198.18.0.7') and engine.calls == 4


@pytest.mark.parametrize('method,path,status', [
    ('POST', '/v2/credentials/vpc-task', 405), ('PUT', '/v2/credentials/vpc-task', 405),
    ('DELETE', '/v2/credentials/vpc-task', 405), ('GET', '/v2/credentials/unknown', 403),
    ('GET', '/v2/credentials/', 404), ('GET', '/v1/credentials/vpc-task', 404), ('GET', '/', 404),
    ('GET', '/v2/credentials/vpc-task/../x', 404),
])
def test_other_methods_and_paths(store, clock, method, path, status):
    ep, sts = endpoint(store, clock)
    assert ep.answer(method, path, '169.254.1.2', tok('vpc-task', 'vpc'))[0] == status
    assert sts.calls == []


def test_a_deregistered_id_is_gone_at_once(store, clock):
    ep, sts = endpoint(store, clock)
    assert get(ep, 'vpc-task', '169.254.1.2')[0] == 200
    db = Store(store)
    db.delete_credentials('prod', 'vpc')
    db.close()
    assert get(ep, 'vpc-task', '169.254.1.2')[0] == 403


def test_a_replaced_store_is_read_again(store, clock, tmp_path):
    ep, sts = endpoint(store, clock)
    assert get(ep, 'vpc-task', '169.254.1.2')[0] == 200
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(store + suffix):
            os.unlink(store + suffix)
    assert get(ep, 'vpc-task', '169.254.1.2')[0] == 403     # no store: nothing known
    db = Store(store)
    db.put_credential('new-task', 'prod', 'new', ROLE, '169.254.9.2', T0)
    db.close()
    assert get(ep, 'new-task', '169.254.9.2', token=credtoken.token(KEY, 'new-task', 'prod', 'new', ROLE))[0] == 200


def test_assume_failure_is_502(store, clock):
    ep, sts = endpoint(store, clock, sts=FakeSTS(lambda: clock[0], fail=True))
    status, body = get(ep, 'vpc-task', '169.254.1.2')
    assert status == 502 and body['code'] == 'AssumeRoleFailed' and ROLE in body['message']


def test_cached_then_assumed_again_within_five_minutes_of_expiry(store, clock):
    ep, sts = endpoint(store, clock)
    first = get(ep, 'vpc-task', '169.254.1.2')[1]
    clock[0] = T0 + 900 - 301                      # 301 s before expiry: still cached
    assert get(ep, 'vpc-task', '169.254.1.2')[1] == first
    assert len(sts.calls) == 1
    clock[0] = T0 + 900 - 300                      # within 5 minutes of expiry: assumed again
    renewed = get(ep, 'vpc-task', '169.254.1.2')[1]
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


def request(server, method, path, token=None):
    conn = http.client.HTTPConnection('127.0.0.1', server.server_address[1], timeout=5)
    try:
        conn.request(method, path, headers={'Authorization': token} if token else {})
        answer = conn.getresponse()
        return answer.status, answer.read(), dict(answer.getheaders())
    finally:
        conn.close()


def test_over_http(served):
    web = tok('bridge-task', 'web')
    status, body, headers = request(served, 'GET', '/v2/credentials/bridge-task', web)
    assert status == 200 and json.loads(body)['RoleArn'] == ROLE
    assert headers['Content-Type'] == 'application/json' and headers['Connection'] == 'close'
    assert request(served, 'GET', '/v2/credentials/bridge-task')[0] == 403                 # no token
    assert request(served, 'GET', '/v2/credentials/bridge-task', web.upper())[0] == 403    # a wrong one
    status, body, headers = request(served, 'POST', '/v2/credentials/bridge-task', web)
    assert status == 405 and headers['Allow'] == 'GET'
    assert request(served, 'GET', '/v2/credentials/vpc-task', tok('vpc-task', 'vpc'))[0] == 403  # not its address
    assert request(served, 'GET', '/v2/credentials/nope')[0] == 403
    assert request(served, 'GET', '/v2/other')[0] == 404


def threads_now():
    return threading.active_count()


def test_stalled_connections_do_not_stop_it(store, clock):
    # Many clients that send half a request and wait: each is closed after the head timeout, none holds a
    # worker, and the owner is answered at once meanwhile; a head too large is refused, and the threads are
    # the pool's, whatever the load.
    ep, sts = endpoint(store, clock, owners=FakeOwners({'bridge-task': ['127.0.0.1']}))
    before = threads_now()
    server = dc.Server(('127.0.0.1', 0), ep, workers=4, head_timeout=1.0, head_max=2048, max_connections=150)
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    port = server.server_address[1]
    stalled = []
    try:
        for dummy in range(120):
            sock = socket.create_connection(('127.0.0.1', port), timeout=5)
            sock.sendall(b'GET /v2/cred')
            stalled.append(sock)
        assert threads_now() == before + 5                     # the loop and 4 workers, never one per connection
        started = time.monotonic()
        assert request(server, 'GET', '/v2/credentials/bridge-task', tok('bridge-task', 'web'))[0] == 200
        assert time.monotonic() - started < 0.5
        # Past max_connections, the oldest still sending its head goes.
        more = [socket.create_connection(('127.0.0.1', port), timeout=5) for dummy in range(60)]
        time.sleep(0.3)
        assert server.counts['evicted'] >= 30
        assert stalled[0].recv(10) == b''
        for sock in more:
            sock.close()
        # A head that grows past head_max: 431, closed.
        data = send_raw(server, b'GET /v2/credentials/x HTTP/1.1\r\n' + b'X-Big: ' + b'a' * 4000 + b'\r\n')
        assert data.startswith(b'HTTP/1.1 431 ')
        assert send_raw(server, b'GET /' + b'a' * 3000).startswith(b'HTTP/1.1 414 ')
        # Those still waiting are closed when their time is up.
        time.sleep(1.3)
        assert all(sock.recv(10) == b'' for sock in stalled[40:])
        assert server.counts['timed out'] >= 80
        assert request(server, 'GET', '/v2/credentials/bridge-task', tok('bridge-task', 'web'))[0] == 200
        assert threads_now() == before + 5
    finally:
        for sock in stalled:
            sock.close()
        server.shutdown()
        server.server_close()
    assert threads_now() == before


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
    data = send_raw(served, ('%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nConnection: close\r\n\r\n'
                             % (method, target, tok('bridge-task', 'web'))).encode())
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
    assert request(served, 'GET', '/v2/nope')[0] == 404


# --- the modules' side: re-asserting the redirect, the cred_id check --------------------------------------

def test_the_modules_assert_the_service_s_rules(tmp_path):
    from ansible_collections.drover.fleet.plugins.module_utils.network import endpoint as endpoint_mod
    assert endpoint_mod.rules(51679) == dc._rules(51679) and endpoint_mod.rules(6000) == dc._rules(6000)
    assert (endpoint_mod.ENDPOINT_IP, endpoint_mod.DUMMY_LINK, endpoint_mod.STATE_FILE) == (
        dc.ENDPOINT_IP, dc.DUMMY_LINK, dc.STATE_FILE)
    store = str(tmp_path / 'store.db')
    assert endpoint_mod.running_port(store) is None and endpoint_mod.reassert(store) == ([], None)
    dc.write_state(store, 6000)                  # this process stands for the running service
    assert oct(os.stat(dc.state_path(store)).st_mode & 0o777) == '0o600'
    assert endpoint_mod.running_port(store) == 6000
    with open(dc.state_path(store), 'w') as handle:
        json.dump({'pid': 2 ** 22 + 1, 'port': 6000}, handle)       # a service that is gone
    assert endpoint_mod.running_port(store) is None and endpoint_mod.reassert(store) == ([], None)
    dc.write_state(store, 6000)
    dc.remove_state(store)
    assert not os.path.exists(dc.state_path(store))


def test_a_declared_cred_id_names_one_task():
    from ansible_collections.drover.fleet.plugins.module_utils.tasks import apply as apply_task
    from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec as spec_mod
    from ansible_collections.drover.fleet.plugins.module_utils.host.opening import TaskFailure

    def decl(cluster, name, cred_id, state='running'):
        return spec_mod.task({'name': name, 'cluster': cluster, 'state': state, 'task_role_arn': ROLE,
                              'cred_id': cred_id, 'containers': [{'name': 'main', 'image': 'drover.local/busybox:1'}]})
    registered = [{'cred_id': 'shared', 'cluster': 'prod', 'task': 'web'}]
    apply_task._cred_id_clashes([decl('prod', 'web', 'shared')], [], registered)          # its own: fine
    apply_task._cred_id_clashes([decl('qa', 'web', 'shared', 'absent')], [], registered)  # not started: fine
    for tasks, observed, stored in (([decl('qa', 'web', 'shared')], [], registered),
                                    ([decl('prod', 'api', 'shared')], [], registered),
                                    ([decl('a', 'x', 'new'), decl('b', 'y', 'new')], [], []),
                                    ([decl('qa', 'web', 'shared')],
                                     [{'labels': {'drover.cred-id': 'shared', 'drover.cluster': 'prod',
                                                  'drover.task': 'web'}, 'state': 'running', 'status': 'running'}], [])):
        with pytest.raises(TaskFailure) as failed:
            apply_task._cred_id_clashes(tasks, observed, stored)
        assert 'cred_id' in failed.value.msg and 'already registered to task' in failed.value.msg


def test_the_peer_s_uid_is_read_from_the_kernel_s_table():
    """peer_uid finds the local socket whose own address is the caller's (IPv4 and IPv4 in IPv6), never a
    listening one; the real table: a socket this test opens is this process's uid's."""
    table = dc._address('02AAFEA9:9C40')       # pylint: disable=protected-access
    assert table == ('169.254.170.2', 40000)
    assert dc._address('0000000000000000FFFF00000100007F:0050') == ('127.0.0.1', 80)  # pylint: disable=protected-access
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    accepted, peer = server.accept()
    try:
        assert dc.peer_uid(peer) == os.geteuid()
        free = socket.socket()
        free.bind(('127.0.0.1', 0))
        nobody = free.getsockname()
        free.close()
        assert dc.peer_uid(nobody) is None                       # no socket holds that address
        assert dc.peer_uid(('127.0.0.1', None)) is None
    finally:
        for sock in (client, accepted, server):
            sock.close()


def test_a_logged_request_line_names_an_id_by_its_digest():
    line = dc.redact_ids('"GET /v2/credentials/0123456789abcdef0123456789abcdef?x=1 HTTP/1.1" 200 -')
    assert '0123456789abcdef0123456789abcdef' not in line
    assert line == '"GET /v2/credentials/%s?x=1 HTTP/1.1" 200 -' % dc.id_digest('0123456789abcdef0123456789abcdef')
    assert dc.id_digest('a') == 'id:ca978112'
