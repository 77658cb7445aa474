# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover-credentials: the task IAM credentials endpoint of a drover.fleet host.

Containers of a task with a task role find `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/<credID>`,
`AWS_CONTAINER_CREDENTIALS_FULL_URI` and `AWS_CONTAINER_AUTHORIZATION_TOKEN` in their environment (set by
drover.fleet.ecs_task, which registers the credential ID in the host store) and fetch
`http://169.254.170.2/v2/credentials/<credID>` with the token as `Authorization`. This service answers there:

- `GET /v2/credentials/<credID>`: `{RoleArn, AccessKeyId, SecretAccessKey, Token, Expiration}` for the role
  registered with the ID, assumed through STS with the host's own credentials (boto3's default chain);
  405 for any other method, 404 for any other path, 502 when the role cannot be assumed. Credentials are
  cached per ID and assumed again within REFRESH_BEFORE seconds of their expiry.
- Only the task that owns the ID gets an answer: the request must come from the task's credential-link
  address (awsvpc tasks; recorded in the store) or from the address of one of the task's running
  containers on a Docker network (bridge tasks; one engine listing a second), and carry the task's token
  (HMAC-SHA256 of the registration under the host key, KEY_FILE next to the store). Anyone else gets 403,
  the same 403 as for an ID the store does not hold (a stopped task's ID is gone at once).
- A task's execution role registered for the engine's `awslogs` driver (source HOST_SOURCE in the store) is
  fetched by the engine itself, which sends no token: it is answered to root on the host alone (a request from
  169.254.170.2 or loopback, host_caller, on a TCP socket that a process of uid 0 holds, peer_uid), and 403 to
  every container and task namespace, and to every other user of the host.
- One thread reads every connection's request head without blocking (HEAD_TIMEOUT, HEAD_MAX); a fixed pool
  of WORKERS threads answers complete heads; at most MAX_CONNECTIONS are open at once.

It listens on LISTEN_IP:PORT and is reached at 169.254.170.2:80 through a dummy interface that holds
169.254.170.2 (on a kernel without dummy interfaces, the address goes on lo with a label of its own) and a DNAT
rule from port 80 to PORT in the nat table's OUTPUT and PREROUTING chains, each added only when missing,
checked again every REASSERT_EVERY seconds, and removed when the service stops; while it runs, STATE_FILE
next to the store tells the modules its pid and port (they re-assert the rules too). Nothing it logs or
prints carries a credential, a token or a credential ID (a request line names an ID by a short digest of it,
id_digest).
Owns: the endpoint, its cache, its network plumbing, its state file. Must not: write the store or the host
key (it only reads them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import collections
import datetime
import errno
import hashlib
import hmac
import io
import json
import logging
import os
import queue
import re
import resource
import selectors
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time

from http.server import BaseHTTPRequestHandler

ENDPOINT_IP = '169.254.170.2'
LISTEN_IP = ENDPOINT_IP
PORT = 51679
DUMMY_LINK = 'drover-creds'
LO_LABEL = 'lo:drover-creds'  # the address's label when it has to live on lo
REFRESH_BEFORE = 300          # assume again when the cached credentials expire within this many seconds
DURATION = 3600               # seconds each assumed session lasts
SESSION_NAME_MAX = 64         # STS's limit on RoleSessionName
KEY_FILE = 'credentials.key'  # the host key, next to the store (made by ecs_task)
KEY_BYTES = 32
STATE_FILE = 'credentials.endpoint'  # next to the store while the service runs: its pid and port, for the modules
WORKERS = 32                  # threads that answer requests (the store, the engine, STS)
HEAD_TIMEOUT = 5.0            # seconds from accept to a complete request head
HEAD_MAX = 16384              # bytes of request line and headers
WRITE_TIMEOUT = 5.0           # seconds to send an answer
READ_CHUNK = 4096
BACKLOG = 1024
MAX_CONNECTIONS = 4096        # open at once, at most; past that the oldest still sending its head is closed
MAX_FILES = 8192              # the file limit the service raises itself to (within the hard limit)
FILES_SPARE = 64              # descriptors kept for the store, the engine, STS, subprocesses
OWNER_TTL = 1.0               # seconds one engine listing of the bridge tasks' addresses answers for
OWNER_MISS_TTL = 0.25         # ... for a caller the listing does not show (a container that just started)
REASSERT_EVERY = 10.0         # seconds between checks of the address and the DNAT rules
HOST_SOURCE = 'host'          # the source of a registration served to the host itself, without a token (awslogs)
PATH_RE = re.compile(r'^/v2/credentials/([A-Za-z0-9._:-]{1,128})$')

log = logging.getLogger('drover-credentials')


class AssumeError(Exception):
    """The role could not be assumed; the message says why (never a credential)."""


def iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def session_name(cred_id):
    return ('drover-%s' % re.sub(r'[^\w+=,.@-]', '-', cred_id))[:SESSION_NAME_MAX]


class Registry:
    """The store's credential registrations, read (read-only) at each request: a stopped task's ID goes at
    once, and a restart of the service loses nothing. One connection, opened on first use and shared under a
    lock; each query is a read transaction of its own, so it sees every registration committed before it."""

    def __init__(self, path):
        self.path = path
        self._db = None
        self._inode = None
        self._lock = threading.Lock()

    def _connect(self):
        try:
            inode = os.stat(self.path).st_ino
        except OSError:
            inode = None
        if self._db is not None and inode != self._inode:
            # The store was deleted or replaced: read the new one.
            self._db.close()
            self._db = None
        if self._db is None and inode is not None:
            self._db = sqlite3.connect('file:%s?mode=ro' % self.path, uri=True, timeout=5, check_same_thread=False)
            self._inode = inode
        return self._db

    def lookup(self, cred_id):
        """(role_arn, source_ip, cluster, task) of the ID, or None."""
        with self._lock:
            try:
                db = self._connect()
                row = db.execute('SELECT role_arn, source_ip, cluster, task FROM credentials WHERE cred_id = ?',
                                 (cred_id,)).fetchone() if db is not None else None
            except sqlite3.Error:
                # The store replaced or damaged under us: open it again at the next request.
                if self._db is not None:
                    self._db.close()
                self._db = None
                row = None
        return tuple(row) if row else None


class Owners:
    """The Docker-network addresses of the running containers that carry each credential ID (bridge tasks).

    One listing of every running container labelled with a credential ID answers every request for
    OWNER_TTL seconds: however many requests arrive, the engine is asked at most once a second (and, for a
    caller that is not in the listing, once per OWNER_MISS_TTL seconds, so that a task's first fetch right
    after its start finds it)."""

    def __init__(self, docker_host=None, ttl=None, miss_ttl=None, clock=time.monotonic):
        self.docker_host = docker_host
        self.ttl = OWNER_TTL if ttl is None else ttl
        self.miss_ttl = OWNER_MISS_TTL if miss_ttl is None else miss_ttl
        self.clock = clock
        self.listings = 0               # how many times the engine was asked (tests, logs)
        self._client = None
        self._by_id = None
        self._at = None
        self._lock = threading.Lock()

    def _engine(self):
        if self._client is None:
            import docker  # the Docker SDK, as the modules use it
            self._client = docker.APIClient(base_url=self.docker_host) if self.docker_host else docker.from_env().api
        return self._client

    def _list(self):
        """{credID: {address, ...}} of the running containers; one engine call (the listing)."""
        self.listings += 1
        found = self._engine().containers(filters={'label': 'drover.cred-id', 'status': 'running'})
        out = {}
        for box in found:
            cred_id = (box.get('Labels') or {}).get('drover.cred-id')
            for net in ((box.get('NetworkSettings') or {}).get('Networks') or {}).values():
                if cred_id and net.get('IPAddress'):
                    out.setdefault(cred_id, set()).add(net['IPAddress'])
        return out

    def owns(self, cred_id, source):
        """Whether `source` is the address of a running container carrying `cred_id`."""
        with self._lock:
            now = self.clock()
            age = None if self._at is None else now - self._at
            fresh = age is not None and age < self.ttl
            if fresh and source in self._by_id.get(cred_id, ()):
                return True
            if fresh and age < self.miss_ttl:
                return False
            try:
                self._by_id = self._list()
            except Exception as exc:  # pylint: disable=broad-except
                log.warning('cannot ask the engine for the owners of credential IDs: %s', exc.__class__.__name__)
                self._by_id = {}
            self._at = now
            return source in self._by_id.get(cred_id, ())


class Keys:
    """The host key (the file next to the store that ecs_task makes once): read again when the file changes;
    None while it is missing or not a root-only regular file of KEY_BYTES bytes (then no token matches)."""

    def __init__(self, path):
        self.path = path
        self._seen = None
        self._key = None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            try:
                info = os.lstat(self.path)
                seen = (info.st_ino, info.st_mtime_ns, info.st_size)
            except OSError:
                self._seen, self._key = None, None
                return None
            if seen != self._seen:
                self._seen, self._key = seen, self._read()
            return self._key

    def _read(self):
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.geteuid():
                log.warning('the host key %s is not a regular file of this user, mode 0600: no token matches', self.path)
                return None
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        return data if len(data) == KEY_BYTES else None


def token(key, cred_id, cluster, task, role_arn):
    """A task's token: hex HMAC-SHA256 of its registration under the host key (ecs_task's formula, in
    plugins/module_utils/network/credtoken.py)."""
    message = '\0'.join(('drover-credentials-token-v1', cred_id, cluster, task, role_arn)).encode('utf-8')
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class Assumer:
    """STS AssumeRole with the host's own credentials (boto3's default chain)."""

    def __init__(self, endpoint_url=None, region=None, duration=DURATION, timeout=10):
        self.endpoint_url = endpoint_url
        self.region = region
        self.duration = duration
        self.timeout = timeout
        self._client = None
        self._caller = None       # the host identity's ARN, split at ':'
        self._lock = threading.Lock()

    def _sts(self):
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config
                self._client = boto3.client('sts', endpoint_url=self.endpoint_url, region_name=self.region,
                                            config=Config(connect_timeout=self.timeout, read_timeout=self.timeout,
                                                          retries={'max_attempts': 2}))
            return self._client

    def role_arn(self, role):
        """A role's ARN: a role name (as ECS takes one) is a role of the account of the host's credentials."""
        if role.startswith('arn:'):
            return role
        if self._caller is None:
            self._caller = self._sts().get_caller_identity()['Arn'].split(':')
        return 'arn:%s:iam::%s:role/%s' % (self._caller[1], self._caller[4], role)

    def assume(self, role_arn, cred_id):
        """{AccessKeyId, SecretAccessKey, Token, Expiration (epoch)}; raises AssumeError."""
        try:
            answer = self._sts().assume_role(RoleArn=self.role_arn(role_arn), RoleSessionName=session_name(cred_id),
                                             DurationSeconds=self.duration)
            creds = answer['Credentials']
            expiration = creds['Expiration']
            if isinstance(expiration, datetime.datetime):
                expiration = expiration.timestamp()
            return {'AccessKeyId': creds['AccessKeyId'], 'SecretAccessKey': creds['SecretAccessKey'],
                    'Token': creds['SessionToken'], 'Expiration': float(expiration)}
        except Exception as exc:  # pylint: disable=broad-except
            code = getattr(exc, 'response', {}).get('Error', {}).get('Code') if hasattr(exc, 'response') else None
            raise AssumeError('cannot assume %s: %s' % (role_arn, code or exc.__class__.__name__))


class Cache:
    """Credentials per (credential ID, role), assumed again within `refresh_before` seconds of expiry."""

    def __init__(self, assumer, clock=time.time, refresh_before=REFRESH_BEFORE):
        self.assumer = assumer
        self.clock = clock
        self.refresh_before = refresh_before
        self._held = {}
        self._locks = {}
        self._lock = threading.Lock()

    def get(self, cred_id, role_arn):
        with self._lock:
            lock = self._locks.setdefault(cred_id, threading.Lock())
        with lock:
            held = self._held.get(cred_id)
            if held is None or held[0] != role_arn or held[1]['Expiration'] - self.clock() <= self.refresh_before:
                held = (role_arn, self.assumer.assume(role_arn, cred_id))
                self._held[cred_id] = held
            return held[1]


def id_digest(cred_id):
    """How the log names a credential ID: 8 hex digits of its SHA-256 (an ID is a bearer secret to a caller the
    endpoint answers without a token, the engine)."""
    return 'id:' + hashlib.sha256(cred_id.encode('utf-8', 'replace')).hexdigest()[:8]


_LOGGED_ID = re.compile(r'(/v2/credentials/)([^\s?#]+)')


def redact_ids(text):
    """A request line (or any logged text) with every credential ID in a path replaced by its digest."""
    return _LOGGED_ID.sub(lambda m: m.group(1) + id_digest(m.group(2)), text)


def _address(hex_address):
    """(ip, port) of an address of /proc/net/tcp or tcp6 (the kernel's words, in host byte order)."""
    ip_hex, port_hex = hex_address.split(':')
    raw = bytes.fromhex(ip_hex)
    # The kernel prints each 32-bit word as the host's integer: its bytes in the network's order on a big-endian
    # host, reversed on a little-endian one.
    turn = (lambda word: word[::-1]) if sys.byteorder == 'little' else (lambda word: word)
    if len(raw) == 4:
        ip = socket.inet_ntop(socket.AF_INET, turn(raw))
    else:
        words = b''.join(turn(raw[i:i + 4]) for i in range(0, 16, 4))
        ip = socket.inet_ntop(socket.AF_INET6, words)
        if ip.startswith('::ffff:') and '.' in ip:
            ip = ip[len('::ffff:'):]
    return ip, int(port_hex, 16)


def peer_uid(peer, tables=('/proc/net/tcp', '/proc/net/tcp6')):
    """The uid of the process of this host (this network namespace) that holds the TCP socket `peer` (ip, port):
    the owner the kernel keeps for the socket whose local address is the peer's; None when there is none (a
    connection from a container or a task's namespace, or one already gone)."""
    if not peer or peer[1] is None:
        return None
    uids = set()
    for table in tables:
        try:
            with open(table, encoding='ascii') as handle:
                next(handle)
                for line in handle:
                    fields = line.split()
                    # Not a listening socket (0A), nor one in TIME_WAIT (06: the kernel shows uid 0 for it).
                    if len(fields) > 7 and fields[3] not in ('0A', '06') and _address(fields[1]) == (peer[0], peer[1]):
                        uids.add(int(fields[7]))
        except (OSError, ValueError, StopIteration):
            continue
    # Two owners of one address (sockets bound with SO_REUSEADDR): nobody's.
    return uids.pop() if len(uids) == 1 else None


def host_caller(source):
    """Whether a request comes from the host itself: a connection the host makes to 169.254.170.2 leaves from
    that address (it is local), or from loopback when the service listens there. The kernel drops a packet
    that arrives from a container or a task's netns with a source address of the host's own (a martian), so
    neither can pass for the host."""
    return source == ENDPOINT_IP or source.startswith('127.')


DENIED = {'code': 'AccessDenied', 'message': 'no credentials for this caller under this ID'}


class Endpoint:
    """What answers a request: (status, body dict); pure but for the store, the engine, the key and STS.

    A caller gets a task's credentials only from the task's own address (its credential link, or one of its
    containers on a Docker network) and with the task's token in `Authorization`. Any other request for
    `/v2/credentials/<ID>` gets the same 403, whether the ID is registered or not: a caller learns nothing
    about IDs that are not its own."""

    def __init__(self, registry, owners, cache, keys, uid_of=peer_uid):
        self.registry = registry
        self.owners = owners
        self.cache = cache
        self.keys = keys
        self.uid_of = uid_of

    def _token_matches(self, given, cred_id, cluster, task, role_arn):
        key = self.keys.get()
        if key is None or not given:
            return False
        return hmac.compare_digest(given.strip().encode('utf-8', 'replace'),
                                   token(key, cred_id, cluster, task, role_arn).encode())

    def answer(self, method, path, source, authorization=None, port=None):
        if method != 'GET':
            return 405, {'code': 'MethodNotAllowed', 'message': 'only GET is served'}
        match = PATH_RE.match(path.split('?', 1)[0])
        if not match:
            return 404, {'code': 'NotFound', 'message': 'no such path'}
        cred_id = match.group(1)
        found = self.registry.lookup(cred_id)
        if found is None:
            return 403, DENIED
        role_arn, source_ip, cluster, task = found
        if source_ip == HOST_SOURCE:
            # The engine's own fetch (a task's execution role for its awslogs driver): it sends no token, so
            # the registration is served to root on the host alone, never to a container or a task's netns, nor
            # to another user of the host (every local connection has the host's source address).
            if not host_caller(source) or self.uid_of((source, port)) != 0:
                return 403, DENIED
        else:
            owner = source == source_ip if source_ip else self.owners.owns(cred_id, source)
            if not owner or not self._token_matches(authorization, cred_id, cluster, task, role_arn):
                return 403, DENIED
        try:
            creds = self.cache.get(cred_id, role_arn)
        except AssumeError as exc:
            return 502, {'code': 'AssumeRoleFailed', 'message': str(exc)}
        return 200, {'RoleArn': role_arn, 'AccessKeyId': creds['AccessKeyId'],
                     'SecretAccessKey': creds['SecretAccessKey'], 'Token': creds['Token'],
                     'Expiration': iso(creds['Expiration'])}


class Handler(BaseHTTPRequestHandler):
    """One request, parsed from its complete head (read by the server's loop) and answered into a buffer
    that the worker sends: the handler never reads from or waits on the client."""
    server_version = 'drover-credentials'
    sys_version = ''
    protocol_version = 'HTTP/1.1'

    def __init__(self, head, client_address, server):  # pylint: disable=super-init-not-called
        self.head = head
        BaseHTTPRequestHandler.__init__(self, None, client_address, server)

    def setup(self):
        self.rfile = io.BytesIO(self.head)
        self.wfile = io.BytesIO()

    def finish(self):
        pass

    def end_headers(self):
        # One request per connection: the answer says so, and the worker closes the connection after it.
        self.send_header('Connection', 'close')
        BaseHTTPRequestHandler.end_headers(self)

    def _serve(self):
        try:
            status, body = self.server.endpoint.answer(self.command, self.path, self.client_address[0],
                                                       self.headers.get('Authorization'), self.client_address[1])
        except Exception as exc:  # pylint: disable=broad-except
            log.error('request failed: %s', exc.__class__.__name__)
            status, body = 500, {'code': 'InternalError', 'message': 'the endpoint failed'}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        if status == 405:
            self.send_header('Allow', 'GET')
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    def __getattr__(self, name):
        # Every method is answered: GET by the endpoint, anything else with 405.
        if name.startswith('do_'):
            return self._serve
        raise AttributeError(name)

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        # The request line, its credential ID by digest alone; never a header or a body.
        log.info('%s %s', self.client_address[0], redact_ids(format % args))


def _canned(status, reason):
    return ('HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' % (status, reason)).encode()


HEAD_END = re.compile(rb'\n\r?\n')


class Server:
    """The listener: one thread (serve_forever) accepts connections and reads their request heads without
    blocking, all of them at once; a connection whose head is not complete within `head_timeout` seconds of
    its accept is closed, one whose head grows past `head_max` bytes is answered 431 (414 for the request
    line alone) and closed. Complete heads go to a fixed pool of `workers` threads, which answer (the store,
    the engine, STS) and close. At most `max_connections` are open: past that, the oldest connection still
    sending its head is closed. Nothing of a connection is kept once it is closed."""

    def __init__(self, address, endpoint, workers=WORKERS, head_timeout=HEAD_TIMEOUT, head_max=HEAD_MAX,
                 max_connections=MAX_CONNECTIONS):
        self.endpoint = endpoint
        self.head_timeout = head_timeout
        self.head_max = head_max
        self.max_connections = max_connections
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(BACKLOG)
            self.socket.setblocking(False)
        except OSError:
            self.socket.close()
            raise
        self.server_address = self.socket.getsockname()
        self.counts = {'timed out': 0, 'too large': 0, 'evicted': 0}
        self._pending = collections.OrderedDict()      # fd -> [socket, address, deadline, bytearray]
        self._open = 0                                  # connections accepted and not closed yet
        self._open_lock = threading.Lock()
        self._jobs = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._closed = False
        self._sel = None
        self._accept_paused_until = None
        self._workers = [threading.Thread(target=self._work, name='worker-%d' % n, daemon=True)
                         for n in range(workers)]
        for thread in self._workers:
            thread.start()

    # --- the loop: accept, read heads, expire ---------------------------------------------------------

    def serve_forever(self, poll_interval=0.5):
        self._stopped.clear()
        sel = selectors.DefaultSelector()
        sel.register(self.socket, selectors.EVENT_READ, 'listen')
        sel.register(self._wake_r, selectors.EVENT_READ, 'wake')
        self._sel = sel
        try:
            while not self._stop.is_set():
                timeout = poll_interval
                if self._pending:
                    first = next(iter(self._pending.values()))
                    timeout = max(0.0, min(timeout, first[2] - time.monotonic()))
                for key, dummy in sel.select(timeout):
                    if key.data == 'listen':
                        self._accept()
                    elif key.data == 'wake':
                        try:
                            os.read(self._wake_r, 4096)
                        except OSError:
                            pass
                    else:
                        self._read(key.fd)
                self._expire()
                if self._accept_paused_until is not None and time.monotonic() >= self._accept_paused_until:
                    self._accept_paused_until = None
                    sel.register(self.socket, selectors.EVENT_READ, 'listen')
        finally:
            for fd in list(self._pending):
                self._drop(fd)
            sel.close()
            self._sel = None
            self._stopped.set()

    def _accept(self):
        for dummy in range(64):
            try:
                conn, addr = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if self._pending:
                        self._drop(next(iter(self._pending)), 'evicted')
                        continue
                    # Nothing of ours to close: stop accepting for a moment rather than spin.
                    self._sel.unregister(self.socket)
                    self._accept_paused_until = time.monotonic() + 0.1
                return
            with self._open_lock:
                self._open += 1
                full = self._open > self.max_connections
            if full:
                if self._pending:
                    self._drop(next(iter(self._pending)), 'evicted')
                else:
                    self._close(conn, 'evicted')
                    continue
            conn.setblocking(False)
            self._pending[conn.fileno()] = [conn, addr, time.monotonic() + self.head_timeout, bytearray()]
            self._sel.register(conn, selectors.EVENT_READ, 'conn')

    def _read(self, fd):
        entry = self._pending.get(fd)
        if entry is None:
            return
        conn, addr, dummy, buf = entry
        if buf is None:
            self._drain(fd, conn)
            return
        try:
            chunk = conn.recv(min(READ_CHUNK, self.head_max + 1 - len(buf)))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(fd)
            return
        if not chunk:
            # The client sent all it will: answer what arrived (a bad request gets its 400), or just close.
            if buf:
                self._dispatch(fd, bytes(buf))
            else:
                self._drop(fd)
            return
        searched = max(0, len(buf) - 2)
        buf += chunk
        end = HEAD_END.search(buf, searched)
        if end is not None:
            self._dispatch(fd, bytes(buf[:end.end()]))
        elif len(buf) > self.head_max:
            self.counts['too large'] += 1
            answer = _canned(414, 'URI Too Long') if b'\n' not in buf else \
                _canned(431, 'Request Header Fields Too Large')
            try:
                conn.send(answer)
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                self._drop(fd)
                return
            # Read and drop what the client still sends until it closes (or its time is up): a close with
            # unread data would reset the connection under the answer.
            entry[3] = None

    def _drain(self, fd, conn):
        try:
            chunk = conn.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b''
        if not chunk:
            self._drop(fd)

    def _expire(self):
        now = time.monotonic()
        while self._pending:
            fd, entry = next(iter(self._pending.items()))
            if entry[2] > now:
                return
            self._drop(fd, 'timed out')

    def _dispatch(self, fd, head):
        conn, addr = self._pending.pop(fd)[:2]
        self._sel.unregister(conn)
        self._jobs.put((conn, addr, head))

    def _drop(self, fd, why=None):
        entry = self._pending.pop(fd)
        if self._sel is not None:
            try:
                self._sel.unregister(entry[0])
            except (KeyError, ValueError):
                pass
        self._close(entry[0], why)

    def _close(self, conn, why=None):
        if why:
            self.counts[why] += 1
        try:
            conn.close()
        finally:
            with self._open_lock:
                self._open -= 1

    # --- the workers --------------------------------------------------------------------------------

    def _work(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            conn, addr, head = job
            try:
                conn.settimeout(WRITE_TIMEOUT)
                handler = Handler(head, addr, self)
                conn.sendall(handler.wfile.getvalue())
                conn.shutdown(socket.SHUT_WR)
                # What the client sent after its head is read and dropped (a close with unread data would
                # reset the connection under the answer), as much as has arrived.
                conn.setblocking(False)
                for dummy in range(16):
                    if not conn.recv(READ_CHUNK):
                        break
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                log.warning('%s: the connection ended early (%s)', addr[0],
                            errno.errorcode.get(exc.errno, exc.__class__.__name__))
            except Exception as exc:  # pylint: disable=broad-except
                log.error('%s: request failed: %s', addr[0], exc.__class__.__name__)
            finally:
                self._close(conn)

    # --- stop ----------------------------------------------------------------------------------------

    def shutdown(self):
        self._stop.set()
        try:
            os.write(self._wake_w, b'x')
        except OSError:
            pass
        self._stopped.wait()

    def server_close(self):
        if self._closed:
            return
        self._closed = True
        self.socket.close()
        for dummy in self._workers:
            self._jobs.put(None)
        for thread in self._workers:
            thread.join(WRITE_TIMEOUT + 1)
        os.close(self._wake_r)
        os.close(self._wake_w)


def _run(argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def _rules(port):
    match = ['-d', '%s/32' % ENDPOINT_IP, '-p', 'tcp', '--dport', '80', '-j', 'DNAT',
             '--to-destination', '%s:%d' % (LISTEN_IP, port)]
    return [('OUTPUT', match), ('PREROUTING', match)]


_NO_DUMMY = []                # set once a kernel refused a dummy interface: the address lives on lo from then on


def _holder():
    """Where 169.254.170.2 lives: the dummy interface, or (on a kernel built without dummy interfaces) the
    loopback interface, under a label of its own so that only ours is ever removed."""
    if _NO_DUMMY:
        return 'lo'
    if _run(['ip', 'link', 'show', DUMMY_LINK], check=False).returncode == 0:
        return 'dummy'
    made = _run(['ip', 'link', 'add', DUMMY_LINK, 'type', 'dummy'], check=False)
    if made.returncode == 0:
        return 'dummy'
    log.warning('no dummy interface (%s): %s/32 goes on lo, labelled %s', made.stderr.strip(), ENDPOINT_IP, LO_LABEL)
    _NO_DUMMY.append(True)
    return 'lo'


def network_up(port):
    """The address 169.254.170.2 and the DNAT rules, each added only when missing. Returns what was added."""
    added = []
    dev = DUMMY_LINK if _holder() == 'dummy' else 'lo'
    if ('%s/32' % ENDPOINT_IP) not in _run(['ip', '-o', '-4', 'addr', 'show', 'dev', dev]).stdout:
        extra = [] if dev == DUMMY_LINK else ['label', LO_LABEL]
        _run(['ip', 'addr', 'add', '%s/32' % ENDPOINT_IP, 'dev', dev] + extra)
        added.append('address %s/32 on %s' % (ENDPOINT_IP, dev))
    if 'UP' not in _run(['ip', '-o', 'link', 'show', dev]).stdout.split('>', 1)[0]:
        _run(['ip', 'link', 'set', dev, 'up'])
        added.append('%s up' % dev)
    for chain, rule in _rules(port):
        if _run(['iptables', '-t', 'nat', '-C', chain] + rule, check=False).returncode != 0:
            _run(['iptables', '-t', 'nat', '-I', chain, '1'] + rule)
            added.append('the DNAT rule in %s' % chain)
    return added


def network_down(port):
    for chain, rule in _rules(port):
        while _run(['iptables', '-t', 'nat', '-C', chain] + rule, check=False).returncode == 0:
            _run(['iptables', '-t', 'nat', '-D', chain] + rule)
    _run(['ip', 'link', 'del', DUMMY_LINK], check=False)
    if LO_LABEL in _run(['ip', '-o', '-4', 'addr', 'show', 'dev', 'lo'], check=False).stdout:
        _run(['ip', 'addr', 'del', '%s/32' % ENDPOINT_IP, 'dev', 'lo', 'label', LO_LABEL], check=False)


class Keeper:
    """Checks the address and the DNAT rules every `every` seconds and puts back what is missing (a flush
    of the nat table, a deleted interface), until stopped."""

    def __init__(self, port, every):
        self.port = port
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='keeper', daemon=True)

    def start(self):
        if self.every > 0:
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.every):
            try:
                added = network_up(self.port)
            except (OSError, subprocess.CalledProcessError) as exc:
                log.warning('cannot check the redirect to %s: %s', ENDPOINT_IP, exc.__class__.__name__)
                continue
            for what in added:
                log.warning('%s was missing: added again', what)

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)


def state_path(store):
    return os.path.join(os.path.dirname(store), STATE_FILE)


def write_state(store, port):
    """Tell the modules that this endpoint serves the store's tasks on `port` (they re-assert its rules)."""
    path = state_path(store)
    tmp = '%s.%d.tmp' % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)    # as the store makes its directory
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, 'w') as handle:
            json.dump({'pid': os.getpid(), 'port': port}, handle)
        os.rename(tmp, path)
    except OSError as exc:
        log.warning('cannot write %s (%s): converges will not re-assert the redirect', path, exc.strerror)


def remove_state(store):
    try:
        with open(state_path(store)) as handle:
            mine = json.load(handle).get('pid') == os.getpid()
    except (OSError, ValueError, AttributeError):
        return
    if mine:
        os.unlink(state_path(store))


def raise_file_limit():
    """Up to the hard limit (at most MAX_FILES): room for MAX_CONNECTIONS open connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = MAX_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_FILES)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    return soft


def main(argv=None):
    parser = argparse.ArgumentParser(prog='drover-credentials', description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--store', default='/var/lib/drover/store.db', help='the host store')
    parser.add_argument('--key', default=None,
                        help="the host key the task tokens are made with (default: credentials.key next to the store)")
    parser.add_argument('--port', type=int, default=PORT, help='the port it listens on (DNAT from 80)')
    parser.add_argument('--listen', default=LISTEN_IP, help='the address it listens on')
    parser.add_argument('--no-network', action='store_true',
                        help='add no dummy interface and no DNAT rule (listen on --listen:--port only)')
    parser.add_argument('--reassert', type=float, default=REASSERT_EVERY,
                        help='seconds between checks of the address and the DNAT rules (0: never)')
    parser.add_argument('--workers', type=int, default=WORKERS, help='threads that answer requests')
    parser.add_argument('--head-timeout', type=float, default=HEAD_TIMEOUT,
                        help='seconds a client has to send its whole request head')
    parser.add_argument('--sts-endpoint', default=os.environ.get('DROVER_STS_ENDPOINT') or None)
    parser.add_argument('--region', default=os.environ.get('AWS_REGION') or os.environ.get('AWS_DEFAULT_REGION')
                        or 'us-east-1')
    parser.add_argument('--duration', type=int, default=DURATION, help='seconds an assumed session lasts')
    parser.add_argument('--refresh-before', type=int, default=REFRESH_BEFORE,
                        help='assume again when the cached credentials expire within this many seconds')
    parser.add_argument('--docker-host', default=None, help="the Docker engine's address (bridge tasks)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s', stream=sys.stderr)

    files = raise_file_limit()
    if not args.no_network:
        network_up(args.port)
    endpoint = Endpoint(Registry(args.store), Owners(args.docker_host),
                        Cache(Assumer(args.sts_endpoint, args.region, args.duration),
                              refresh_before=args.refresh_before),
                        Keys(args.key or os.path.join(os.path.dirname(args.store), KEY_FILE)))
    try:
        server = Server((args.listen, args.port), endpoint, workers=args.workers, head_timeout=args.head_timeout,
                        max_connections=max(16, min(MAX_CONNECTIONS, files - FILES_SPARE)))
    except OSError as exc:
        if not args.no_network:
            network_down(args.port)
        log.error('cannot listen on %s:%d: %s', args.listen, args.port, exc)
        return 1
    keeper = Keeper(args.port, 0 if args.no_network else args.reassert).start()
    if not args.no_network:
        write_state(args.store, args.port)

    def stop(signum, frame):  # pylint: disable=unused-argument
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info('serving %s:%d for the host store %s%s (%d workers, at most %d connections)', args.listen, args.port,
             args.store, '' if args.no_network else ' (and %s:80)' % ENDPOINT_IP, args.workers, server.max_connections)
    print('ready', flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        keeper.stop()
        server.server_close()
        if not args.no_network:
            remove_state(args.store)
            network_down(args.port)
        log.info('stopped')
    return 0


if __name__ == '__main__':
    sys.exit(main())
