# -*- coding: utf-8 -*-
"""bench: credential fetches per second from the credentials endpoint (roles/host/files/drover_credentials.py)
with a warm cache, against the same fetch served as a static file by Python's http.server, on loopback.

Each side runs as a process of its own (the endpoint exactly as the host runs it, with --no-network on
127.0.0.1; `python -m http.server` on a directory holding a JSON body of the same size). One client process
makes FETCHES sequential GETs, a new connection each (as the AWS SDKs' credential providers do), for at most
SECONDS; the rate is fetches / wall time. STS is moto's server on 127.0.0.1; the endpoint's cache is warmed by
one fetch before the timed ones, so the timed fetches never reach STS. Rounds alternate the order of the sides.

    python bench/credentials.py [--rounds 5] [--fetches 2000] [--seconds 20] [--json out.json]
"""

from __future__ import absolute_import, division, print_function

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVICE = os.path.join(ROOT, 'roles', 'host', 'files', 'drover_credentials.py')
ROLE = 'arn:aws:iam::123456789012:role/bench'
CRED_ID = 'bench-cred'


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError('nothing answers on 127.0.0.1:%d' % port)


def fetch_rate(port, path, fetches, seconds, headers=None):
    """(fetches per second, fetches made, statuses seen): sequential GETs, a new connection each."""
    done, statuses = 0, set()
    start = time.perf_counter()
    deadline = start + seconds
    while done < fetches and time.perf_counter() < deadline:
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
        conn.request('GET', path, headers=headers or {})
        answer = conn.getresponse()
        answer.read()
        statuses.add(answer.status)
        conn.close()
        done += 1
    return done / (time.perf_counter() - start), done, sorted(statuses)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--rounds', type=int, default=int(os.environ.get('BENCH_REPEAT', '5')))
    parser.add_argument('--fetches', type=int, default=2000)
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)

    sys.path.insert(0, os.path.join(ROOT, 'collection', 'dev'))
    from ansible_collections.drover.fleet.plugins.module_utils.network import credtoken
    from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store
    from moto.server import ThreadedMotoServer

    work = tempfile.mkdtemp(prefix='drover-bench-creds.')
    moto = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)
    moto.start()
    procs = []
    try:
        host, moto_port = moto.get_host_and_port()
        store = os.path.join(work, 'store.db')
        db = Store(store)
        db.put_credential(CRED_ID, 'bench', 'bench', ROLE, '127.0.0.1', time.time())
        db.close()
        auth = {'Authorization': credtoken.token(credtoken.host_key(store, create=True), CRED_ID, 'bench', 'bench', ROLE)}
        env = dict(os.environ, AWS_ACCESS_KEY_ID='testing', AWS_SECRET_ACCESS_KEY='testing', AWS_SESSION_TOKEN='testing')

        ep_port = free_port()
        endpoint = subprocess.Popen([sys.executable, SERVICE, '--store', store, '--no-network', '--listen', '127.0.0.1',
                                     '--port', str(ep_port), '--sts-endpoint', 'http://%s:%d' % (host, moto_port)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        procs.append(endpoint)
        if endpoint.stdout.readline().strip() != 'ready':
            raise RuntimeError('the endpoint did not start')
        path = '/v2/credentials/%s' % CRED_ID
        conn = http.client.HTTPConnection('127.0.0.1', ep_port, timeout=30)
        conn.request('GET', path, headers=auth)
        answer = conn.getresponse()
        body = answer.read()
        conn.close()
        if answer.status != 200:
            raise RuntimeError('warm-up fetch: HTTP %d' % answer.status)

        static_dir = os.path.join(work, 'static')
        os.makedirs(os.path.join(static_dir, 'v2', 'credentials'))
        with open(os.path.join(static_dir, 'v2', 'credentials', CRED_ID), 'wb') as handle:
            handle.write(body)                     # the same body, byte for byte
        st_port = free_port()
        static = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory',
                                   static_dir, str(st_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(static)
        wait_port(st_port)

        samples = {'endpoint': [], 'static': []}
        counts = {'endpoint': [], 'static': []}
        for rnd in range(args.rounds):
            order = [('endpoint', ep_port), ('static', st_port)]
            if rnd % 2:
                order.reverse()
            for name, port in order:
                rate, made, statuses = fetch_rate(port, path, args.fetches, args.seconds,
                                                  auth if name == 'endpoint' else None)
                if statuses != [200]:
                    raise RuntimeError('%s answered %s' % (name, statuses))
                samples[name].append(round(rate, 1))
                counts[name].append(made)
            print('round %d: endpoint %.0f/s, static %.0f/s' % (rnd + 1, samples['endpoint'][-1], samples['static'][-1]),
                  flush=True)
        med = dict((k, statistics.median(v)) for k, v in samples.items())
        ratios = [e / s for e, s in zip(samples['endpoint'], samples['static'])]
        result = {'fetches_per_second': samples, 'fetches_made': counts, 'median': med,
                  'ratio_of_medians': round(med['endpoint'] / med['static'], 3),
                  'median_of_ratios': round(statistics.median(ratios), 3), 'target': '>= 0.5',
                  'body_bytes': len(body), 'rounds': args.rounds, 'fetches': args.fetches, 'seconds': args.seconds}
        print(json.dumps(result, indent=2))
        if args.json:
            with open(args.json, 'w') as handle:
                json.dump(result, handle, indent=2)
        return 0
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
        moto.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
