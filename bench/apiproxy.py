# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A counting proxy for the Docker engine API, on a unix socket.

It listens on a unix socket, forwards every byte both ways to the engine's socket unchanged, and
records the request line (method and path) of every HTTP request a client sends, so the bench can
say how many engine calls a run made, and which. Requests on a kept-alive connection are told apart
by their headers and Content-Length (or chunked framing); the forwarding never depends on that
parsing, so a request it cannot frame only stops the counting on that one connection.

Used in a thread of the bench (`CountingProxy(listen, upstream).start()`), or alone for a look by
hand: `python bench/apiproxy.py /tmp/p.sock` then `DOCKER_HOST=unix:///tmp/p.sock docker ps`.
"""

import asyncio
import os
import re
import sys
import threading
import time

UPSTREAM = '/var/run/docker.sock'
_HEX_ID = re.compile(r'\b[0-9a-f]{64}\b|\b[0-9a-f]{12}\b')
_VERSION = re.compile(r'^/v[0-9]+\.[0-9]+(?=/)')


def endpoint(method, target):
    """'GET /containers/json' from 'GET /v1.47/containers/json?all=1&filters=...': no version, no query,
    container IDs as {id}."""
    path = target.split('?', 1)[0]
    path = _VERSION.sub('', path)
    path = _HEX_ID.sub('{id}', path)
    return '%s %s' % (method, path)


class _RequestCounter:
    """Frames the client-to-engine byte stream of one connection into requests."""

    def __init__(self, record):
        self.record = record
        self.buf = b''
        self.body_left = 0        # bytes of a Content-Length body still to skip
        self.chunked = False      # inside a chunked body
        self.lost = False         # framing lost: stop counting this connection

    def feed(self, data):
        if self.lost:
            return
        self.buf += data
        while self.buf and not self.lost:
            if self.body_left:
                n = min(self.body_left, len(self.buf))
                self.buf = self.buf[n:]
                self.body_left -= n
                continue
            if self.chunked:
                if not self._skip_chunk():
                    return
                continue
            end = self.buf.find(b'\r\n\r\n')
            if end < 0:
                if len(self.buf) > 1 << 20:
                    self.lost = True
                return
            head, self.buf = self.buf[:end].decode('latin-1'), self.buf[end + 4:]
            lines = head.split('\r\n')
            parts = lines[0].split(' ')
            if len(parts) != 3 or not parts[2].startswith('HTTP/'):
                self.lost = True
                return
            headers = {}
            for line in lines[1:]:
                key, dummy, value = line.partition(':')
                headers[key.strip().lower()] = value.strip()
            self.record(parts[0], parts[1])
            if 'chunked' in headers.get('transfer-encoding', '').lower():
                self.chunked = True
            else:
                self.body_left = int(headers.get('content-length') or 0)

    def _skip_chunk(self):
        """Skip one chunk of a chunked body; False when more bytes are needed."""
        end = self.buf.find(b'\r\n')
        if end < 0:
            return False
        try:
            size = int(self.buf[:end].split(b';')[0], 16)
        except ValueError:
            self.lost = True
            return False
        if size == 0:
            trailer_end = self.buf.find(b'\r\n\r\n', end)   # last chunk, optional trailers, blank line
            if trailer_end < 0:
                return False
            self.buf = self.buf[trailer_end + 4:]
            self.chunked = False
            return True
        need = end + 2 + size + 2
        if len(self.buf) < need:
            return False
        self.buf = self.buf[need:]
        return True


class CountingProxy:
    """The proxy, served by an asyncio loop in a daemon thread."""

    def __init__(self, listen, upstream=UPSTREAM):
        self.listen = listen
        self.upstream = upstream
        self.calls = []           # (monotonic time, method, target)
        self.connections = 0
        self.unframed = 0         # connections whose requests could not all be counted
        self._lock = threading.Lock()
        self._loop = None
        self._server = None
        self._thread = None

    # --- what the bench reads ------------------------------------------------------------------

    def reset(self):
        with self._lock:
            self.calls = []
            self.connections = 0
            self.unframed = 0

    def snapshot(self):
        with self._lock:
            return {'calls': list(self.calls), 'connections': self.connections, 'unframed': self.unframed}

    # --- serving -------------------------------------------------------------------------------

    def _record(self, method, target):
        with self._lock:
            self.calls.append((time.monotonic(), method, target))

    async def _pump(self, reader, writer, counter=None):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if counter is not None:
                    counter.feed(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            try:
                if writer.can_write_eof():
                    writer.write_eof()
            except (OSError, RuntimeError):
                pass

    async def _serve(self, client_reader, client_writer):
        with self._lock:
            self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)
        except OSError:
            client_writer.close()
            return
        counter = _RequestCounter(self._record)
        await asyncio.gather(self._pump(client_reader, up_writer, counter), self._pump(up_reader, client_writer))
        if counter.lost:
            with self._lock:
                self.unframed += 1
        for w in (up_writer, client_writer):
            w.close()

    async def _open(self, ready):
        if os.path.exists(self.listen):
            os.unlink(self.listen)
        self._server = await asyncio.start_unix_server(self._serve, path=self.listen)
        os.chmod(self.listen, 0o600)
        ready.set()

    def start(self):
        ready = threading.Event()

        def run():
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._open(ready))
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name='apiproxy', daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError('the counting proxy did not start on %s' % self.listen)
        return self

    def stop(self):
        if self._loop is None:
            return

        async def close():
            self._server.close()
            await self._server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if os.path.exists(self.listen):
            os.unlink(self.listen)


def main(argv):
    listen = argv[1] if len(argv) > 1 else '/tmp/drover-apiproxy.sock'
    proxy = CountingProxy(listen, argv[2] if len(argv) > 2 else UPSTREAM).start()
    print('counting proxy on unix://%s; Ctrl-C prints the calls' % listen)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    proxy.stop()
    for dummy, method, target in proxy.snapshot()['calls']:
        print(method, target)


if __name__ == '__main__':
    main(sys.argv)
