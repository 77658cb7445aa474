# -*- coding: utf-8 -*-
"""A stand-in for Docker Hub on this machine: a registry (distribution v2, in the collection's registry image, in the
host's network namespace, listening on the bridge's gateway address: reached from every network of the engine as the
Hub is, and the pools' mirror is on a network of its own) that asks for a bearer token as Docker Hub does, and a token service (here, in the test's
process, on the bridge's gateway address) that hands one out for a user and password over Basic auth, as
auth.docker.io does. The registry counts what it serves: `blob_fetches()` reads its access log."""

from __future__ import absolute_import, division, print_function

import base64
import datetime
import http.server
import json
import os
import re
import socketserver
import subprocess
import tempfile
import threading
import time
import uuid

REGISTRY_IMAGE = 'drover.local/registry:1'
SERVICE = 'upstream.stand-in'
ISSUER = 'drover-test-token-service'


def _free_port():
    import socket
    probe = socket.socket()
    try:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]
    finally:
        probe.close()


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


class TokenService:
    """Issues RS256 tokens (the certificate in the header's x5c, as the registry's rootcertbundle trusts it) to the one
    user it knows, for whatever scope is asked: what Docker Hub's token service does for a user with access."""

    def __init__(self, address, username, password):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
        self.username, self.password = username, password
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
        now = datetime.datetime.utcnow()
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=2)).sign(self.key, hashes.SHA256()))
        self.cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        self.cert_der = cert.public_bytes(serialization.Encoding.DER)
        self.issued, self.refused = 0, 0
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                given = self.headers.get('Authorization') or ''
                expected = 'Basic ' + base64.b64encode(('%s:%s' % (service.username, service.password)).encode()).decode()
                if given != expected:
                    service.refused += 1
                    self.send_response(401)
                    self.send_header('WWW-Authenticate', 'Basic realm="token"')
                    self.end_headers()
                    return
                service.issued += 1
                from urllib.parse import parse_qs, urlparse
                query = parse_qs(urlparse(self.path).query)
                body = json.dumps({'token': service.token(query.get('scope') or [])}).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server((address, 0), Handler)
        self.realm = 'http://%s:%d/token' % (address, self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, scopes):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        access = []
        for scope in scopes:
            parts = scope.split(':')
            if len(parts) >= 3:
                access.append({'type': parts[0], 'name': ':'.join(parts[1:-1]), 'actions': parts[-1].split(',')})
        now = int(time.time())
        header = {'typ': 'JWT', 'alg': 'RS256', 'x5c': [base64.b64encode(self.cert_der).decode()]}
        claims = {'iss': ISSUER, 'sub': self.username, 'aud': SERVICE, 'exp': now + 300, 'nbf': now - 10,
                  'iat': now, 'jti': uuid.uuid4().hex, 'access': access}
        signed = '%s.%s' % (_b64(json.dumps(header).encode()), _b64(json.dumps(claims).encode()))
        signature = self.key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return '%s.%s' % (signed, _b64(signature))

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Upstream:
    """The registry: `populate(image, repository)` pushes a local image to it (the registry answers without auth
    on 127.0.0.1 while it is filled), then `serve()` starts it again with token auth, on the same storage."""

    def __init__(self, engine, gateway, username, password):
        self.engine = engine
        self.dir = tempfile.mkdtemp(prefix='drover-upstream-')
        os.chmod(self.dir, 0o755)
        os.mkdir(os.path.join(self.dir, 'data'))
        self.name = 'drover-test-upstream-%s' % uuid.uuid4().hex[:8]
        self.tokens = TokenService(gateway, username, password)
        self.gateway = gateway
        self.port = _free_port()
        self.box = None

    def _config(self, auth, address):
        # filled on loopback (an engine pushes there without TLS), served on the gateway's address
        lines = ['version: 0.1', 'log:', '  level: info', 'storage:', '  filesystem:',
                 '    rootdirectory: /var/lib/registry', 'http:', '  addr: %s:%d' % (address, self.port)]
        if auth:
            lines += ['auth:', '  token:', '    realm: %s' % self.tokens.realm, '    service: %s' % SERVICE,
                      '    issuer: %s' % ISSUER, '    rootcertbundle: /etc/docker/registry/token.crt']
        with open(os.path.join(self.dir, 'config.yml'), 'w') as handle:
            handle.write('\n'.join(lines) + '\n')
        with open(os.path.join(self.dir, 'token.crt'), 'wb') as handle:
            handle.write(self.tokens.cert_pem)

    def _run(self, auth, address='127.0.0.1'):
        if self.box is not None:
            self.box.remove(force=True)
        self._config(auth, address)
        self.box = self.engine.containers.run(
            REGISTRY_IMAGE, name=self.name, detach=True, labels={'drover.test': 'upstream'}, network_mode='host',
            volumes=['%s/config.yml:/etc/docker/registry/config.yml:ro' % self.dir,
                     '%s/token.crt:/etc/docker/registry/token.crt:ro' % self.dir,
                     '%s/data:/var/lib/registry' % self.dir])
        for dummy in range(100):
            done = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}',
                                   'http://%s:%d/v2/' % (address, self.port)], capture_output=True, text=True,
                                  check=False)
            if done.stdout in ('200', '401'):
                return
            time.sleep(0.1)
        raise AssertionError('the upstream registry did not answer: %s' % self.box.logs().decode()[-2000:])

    def populate(self, image, repository):
        self._run(auth=False)
        ref = '127.0.0.1:%d/%s' % (self.port, repository)
        self.engine.images.get(image).tag(ref)
        try:
            for dummy in self.engine.images.push(ref, stream=True, decode=True):
                pass
        finally:
            self.engine.images.remove(ref)

    def serve(self, auth=True, loopback=False):
        """The registry answering on the gateway's address (with token auth, unless `auth` is false), or on loopback
        (where the host's engine pulls without TLS): its URL."""
        address = '127.0.0.1' if loopback else self.gateway
        self._run(auth=auth, address=address)
        return 'http://%s:%d' % (address, self.port)

    def blob_fetches(self):
        """GETs of blobs the registry answered 200 (what a pull through a mirror costs upstream)."""
        log = self.box.logs().decode('utf-8', 'replace')
        return len(re.findall(r'"GET /v2/[^ ]+/blobs/sha256:[0-9a-f]+ HTTP/1\.1" 200', log))

    def close(self):
        if self.box is not None:
            self.box.remove(force=True)
        self.tokens.close()
        subprocess.run(['rm', '-rf', self.dir], check=False)
