# -*- coding: utf-8 -*-
"""Stand-ins for a hot-plugged ENI: a veth pair whose host end carries the declared MAC, with its
peer in a namespace of its own (the 'VPC' side: a gateway address, optionally a DHCP server)."""

from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import threading
import time
import uuid


def ip(*args, **kw):
    return subprocess.run(('ip',) + args, capture_output=True, text=True, check=kw.get('check', True))


class FakeEni:
    """A veth pair: `ifname` (the ENI, MAC `mac`) on the host, `peer_if` in netns `peer_ns` with
    `gateway`/24 on subnet 198.18.<n>.0/24."""

    def __init__(self, n):
        tag = uuid.uuid4().hex[:6]
        self.n = n
        self.ifname = 'teni%s' % tag
        self.peer_if = 'tpeer%s' % tag
        self.peer_ns = 'drvtest-peer-%s' % tag
        self.mac = '02:00:c6:12:%02x:%02x' % (int(tag[:2], 16), int(tag[2:4], 16))
        self.subnet = '198.18.%d.0/24' % n
        self.gateway = '198.18.%d.1' % n
        self.dnsmasq = None

    def address(self, host=2):
        return '198.18.%d.%d/24' % (self.n, host)

    def plug(self, delay=0.0):
        """Make the ENI appear on the host, now or after `delay` seconds (in a thread)."""
        ip('netns', 'add', self.peer_ns)
        ip('netns', 'exec', self.peer_ns, 'ip', 'link', 'set', 'lo', 'up')

        def appear():
            ip('link', 'add', self.ifname, 'address', self.mac, 'type', 'veth', 'peer', 'name', self.peer_if,
               'netns', self.peer_ns)
            ip('netns', 'exec', self.peer_ns, 'ip', 'addr', 'add', '%s/24' % self.gateway, 'dev', self.peer_if)
            ip('netns', 'exec', self.peer_ns, 'ip', 'link', 'set', self.peer_if, 'up')
        if delay:
            timer = threading.Timer(delay, appear)
            timer.start()
            return timer
        appear()
        return None

    def serve_dhcp(self, first=50, last=60):
        """A real DHCP server (dnsmasq) on the peer side."""
        self.dnsmasq = subprocess.Popen(
            ['ip', 'netns', 'exec', self.peer_ns, 'dnsmasq', '--no-daemon', '--port=0', '--no-resolv',
             '--no-hosts', '--interface=%s' % self.peer_if, '--bind-interfaces',
             '--dhcp-range=198.18.%d.%d,198.18.%d.%d,255.255.255.0,1h' % (self.n, first, self.n, last),
             '--dhcp-option=option:router,%s' % self.gateway, '--dhcp-option=option:dns-server,%s' % self.gateway,
             '--dhcp-leasefile=/tmp/%s.leases' % self.peer_ns, '--pid-file='],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(0.3)
        assert self.dnsmasq.poll() is None, self.dnsmasq.stderr.read()

    def unplug(self):
        if self.dnsmasq is not None:
            os.killpg(self.dnsmasq.pid, signal.SIGTERM)
            self.dnsmasq.wait(timeout=10)
            try:
                os.unlink('/tmp/%s.leases' % self.peer_ns)
            except OSError:
                pass
        ip('link', 'del', self.ifname, check=False)
        ip('netns', 'del', self.peer_ns, check=False)
