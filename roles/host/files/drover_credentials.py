# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover-credentials: the task IAM credentials endpoint of a drover.fleet host.

Containers of a task with a task role find `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/<credID>`
in their environment (set by drover.fleet.ecs_task, which registers the credential ID in the host store)
and fetch `http://169.254.170.2/v2/credentials/<credID>`. This service answers there:

- `GET /v2/credentials/<credID>`: `{RoleArn, AccessKeyId, SecretAccessKey, Token, Expiration}` for the role
  registered with the ID, assumed through STS with the host's own credentials (boto3's default chain);
  404 for an ID the store does not hold (a stopped task's ID is gone at once), 405 for any other method,
  502 when the role cannot be assumed. Credentials are cached per ID and assumed again within
  REFRESH_BEFORE seconds of their expiry.
- Only the task that owns the ID gets an answer: the request must come from the task's credential-link
  address (awsvpc tasks; recorded in the store) or from the address of one of the task's running
  containers on a Docker network (bridge tasks; asked of the engine). Anyone else gets 403.

It listens on LISTEN_IP:PORT and is reached at 169.254.170.2:80 through a dummy interface that holds
169.254.170.2 (on a kernel without dummy interfaces, the address goes on lo with a label of its own) and a DNAT
rule from port 80 to PORT in the nat table's OUTPUT and PREROUTING chains, each
added only when missing and removed when the service stops. Nothing it logs or prints carries a credential.
Owns: the endpoint, its cache, its network plumbing. Must not: write the store (it only reads it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import datetime
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ENDPOINT_IP = '169.254.170.2'
LISTEN_IP = ENDPOINT_IP
PORT = 51679
DUMMY_LINK = 'drover-creds'
LO_LABEL = 'lo:drover-creds'  # the address's label when it has to live on lo
REFRESH_BEFORE = 300          # assume again when the cached credentials expire within this many seconds
DURATION = 3600               # seconds each assumed session lasts
SESSION_NAME_MAX = 64         # STS's limit on RoleSessionName
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
    """The Docker-network addresses of the running containers that carry a credential ID (bridge tasks)."""

    def __init__(self, docker_host=None):
        self.docker_host = docker_host
        self._client = None
        self._lock = threading.Lock()

    def _engine(self):
        with self._lock:
            if self._client is None:
                import docker  # the Docker SDK, as the modules use it
                self._client = docker.DockerClient(base_url=self.docker_host) if self.docker_host else docker.from_env()
            return self._client

    def addresses(self, cred_id):
        try:
            found = self._engine().containers.list(filters={'label': 'drover.cred-id=%s' % cred_id,
                                                            'status': 'running'})
        except Exception as exc:  # pylint: disable=broad-except
            log.warning('cannot ask the engine for the owners of a credential ID: %s', exc.__class__.__name__)
            return set()
        out = set()
        for box in found:
            for net in ((box.attrs.get('NetworkSettings') or {}).get('Networks') or {}).values():
                if net.get('IPAddress'):
                    out.add(net['IPAddress'])
        return out


class Assumer:
    """STS AssumeRole with the host's own credentials (boto3's default chain)."""

    def __init__(self, endpoint_url=None, region=None, duration=DURATION, timeout=10):
        self.endpoint_url = endpoint_url
        self.region = region
        self.duration = duration
        self.timeout = timeout
        self._client = None
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

    def assume(self, role_arn, cred_id):
        """{AccessKeyId, SecretAccessKey, Token, Expiration (epoch)}; raises AssumeError."""
        try:
            answer = self._sts().assume_role(RoleArn=role_arn, RoleSessionName=session_name(cred_id),
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


class Endpoint:
    """What answers a request: (status, body dict); pure but for the store, the engine and STS."""

    def __init__(self, registry, owners, cache):
        self.registry = registry
        self.owners = owners
        self.cache = cache

    def answer(self, method, path, source):
        if method != 'GET':
            return 405, {'code': 'MethodNotAllowed', 'message': 'only GET is served'}
        match = PATH_RE.match(path.split('?', 1)[0])
        if not match:
            return 404, {'code': 'NotFound', 'message': 'no such path'}
        cred_id = match.group(1)
        found = self.registry.lookup(cred_id)
        if found is None:
            return 404, {'code': 'NotFound', 'message': 'no credentials registered under this ID'}
        role_arn, source_ip, dummy, dummy = found
        allowed = {source_ip} if source_ip else self.owners.addresses(cred_id)
        if source not in allowed:
            return 403, {'code': 'AccessDenied', 'message': 'these credentials belong to another task'}
        try:
            creds = self.cache.get(cred_id, role_arn)
        except AssumeError as exc:
            return 502, {'code': 'AssumeRoleFailed', 'message': str(exc)}
        return 200, {'RoleArn': role_arn, 'AccessKeyId': creds['AccessKeyId'],
                     'SecretAccessKey': creds['SecretAccessKey'], 'Token': creds['Token'],
                     'Expiration': iso(creds['Expiration'])}


class Handler(BaseHTTPRequestHandler):
    server_version = 'drover-credentials'
    sys_version = ''
    protocol_version = 'HTTP/1.1'
    wbufsize = 1 << 16          # the status line, the headers and the body leave in one write

    def _serve(self):
        try:
            status, body = self.server.endpoint.answer(self.command, self.path, self.client_address[0])
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
        # The request line only names the credential ID (no secret); never a body.
        log.info('%s %s', self.client_address[0], format % args)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, endpoint):
        self.endpoint = endpoint
        ThreadingHTTPServer.__init__(self, address, Handler)

    def handle_error(self, request, client_address):
        # A client that goes away mid-answer (or sends nothing) is its own business: one line, no traceback.
        log.warning('%s: the connection ended early (%s)', client_address[0], sys.exc_info()[0].__name__)


def _run(argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def _rules(port):
    match = ['-d', '%s/32' % ENDPOINT_IP, '-p', 'tcp', '--dport', '80', '-j', 'DNAT',
             '--to-destination', '%s:%d' % (LISTEN_IP, port)]
    return [('OUTPUT', match), ('PREROUTING', match)]


def _holder():
    """Where 169.254.170.2 lives: the dummy interface, or (on a kernel built without dummy interfaces) the
    loopback interface, under a label of its own so that only ours is ever removed."""
    if _run(['ip', 'link', 'show', DUMMY_LINK], check=False).returncode == 0:
        return 'dummy'
    made = _run(['ip', 'link', 'add', DUMMY_LINK, 'type', 'dummy'], check=False)
    if made.returncode == 0:
        return 'dummy'
    log.warning('no dummy interface (%s): %s/32 goes on lo, labelled %s', made.stderr.strip(), ENDPOINT_IP, LO_LABEL)
    return 'lo'


def network_up(port):
    """The address 169.254.170.2 and the DNAT rules, each added only when missing."""
    dev = DUMMY_LINK if _holder() == 'dummy' else 'lo'
    if ('%s/32' % ENDPOINT_IP) not in _run(['ip', '-o', '-4', 'addr', 'show', 'dev', dev]).stdout:
        extra = [] if dev == DUMMY_LINK else ['label', LO_LABEL]
        _run(['ip', 'addr', 'add', '%s/32' % ENDPOINT_IP, 'dev', dev] + extra)
    _run(['ip', 'link', 'set', dev, 'up'])
    for chain, rule in _rules(port):
        if _run(['iptables', '-t', 'nat', '-C', chain] + rule, check=False).returncode != 0:
            _run(['iptables', '-t', 'nat', '-I', chain, '1'] + rule)


def network_down(port):
    for chain, rule in _rules(port):
        while _run(['iptables', '-t', 'nat', '-C', chain] + rule, check=False).returncode == 0:
            _run(['iptables', '-t', 'nat', '-D', chain] + rule)
    _run(['ip', 'link', 'del', DUMMY_LINK], check=False)
    if LO_LABEL in _run(['ip', '-o', '-4', 'addr', 'show', 'dev', 'lo'], check=False).stdout:
        _run(['ip', 'addr', 'del', '%s/32' % ENDPOINT_IP, 'dev', 'lo', 'label', LO_LABEL], check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='drover-credentials', description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--store', default='/var/lib/drover/store.db', help='the host store')
    parser.add_argument('--port', type=int, default=PORT, help='the port it listens on (DNAT from 80)')
    parser.add_argument('--listen', default=LISTEN_IP, help='the address it listens on')
    parser.add_argument('--no-network', action='store_true',
                        help='add no dummy interface and no DNAT rule (listen on --listen:--port only)')
    parser.add_argument('--sts-endpoint', default=os.environ.get('DROVER_STS_ENDPOINT') or None)
    parser.add_argument('--region', default=os.environ.get('AWS_REGION') or os.environ.get('AWS_DEFAULT_REGION')
                        or 'us-east-1')
    parser.add_argument('--duration', type=int, default=DURATION, help='seconds an assumed session lasts')
    parser.add_argument('--refresh-before', type=int, default=REFRESH_BEFORE,
                        help='assume again when the cached credentials expire within this many seconds')
    parser.add_argument('--docker-host', default=None, help="the Docker engine's address (bridge tasks)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s', stream=sys.stderr)

    if not args.no_network:
        network_up(args.port)
    endpoint = Endpoint(Registry(args.store), Owners(args.docker_host),
                        Cache(Assumer(args.sts_endpoint, args.region, args.duration),
                              refresh_before=args.refresh_before))
    try:
        server = Server((args.listen, args.port), endpoint)
    except OSError as exc:
        if not args.no_network:
            network_down(args.port)
        log.error('cannot listen on %s:%d: %s', args.listen, args.port, exc)
        return 1

    def stop(signum, frame):  # pylint: disable=unused-argument
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info('serving %s:%d for the host store %s%s', args.listen, args.port, args.store,
             '' if args.no_network else ' (and %s:80)' % ENDPOINT_IP)
    print('ready', flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        if not args.no_network:
            network_down(args.port)
        log.info('stopped')
    return 0


if __name__ == '__main__':
    sys.exit(main())
