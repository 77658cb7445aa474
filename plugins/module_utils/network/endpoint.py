# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The credentials endpoint's redirect, seen from the modules: re-asserted by every converge of a task with a
role, when the endpoint (roles/host/files/drover_credentials.py, the drover-credentials service) runs for
this store.

The service writes `credentials.endpoint` next to the store while it runs (its pid and port) and checks its
address and rules itself every few seconds; a converge puts back what is missing at once, the same way the
service does: 169.254.170.2/32 on the interface `drover-creds`, and the DNAT rule from 169.254.170.2:80 to
the service's port in the nat table's OUTPUT and PREROUTING chains, each added only when missing (`iptables
-C` first), inserted first in its chain.

Owns: reading the service's state file, and the `ip`/`iptables` calls of the re-assertion (argument lists, no
shell; nothing in them comes from a user).
Must not: start, stop or configure the service, or remove anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

ENDPOINT_IP = '169.254.170.2'
DUMMY_LINK = 'drover-creds'
STATE_FILE = 'credentials.endpoint'
TIMEOUT = 10


def rules(port):
    """The service's DNAT rules (its _rules): (chain, rule arguments)."""
    match = ['-d', '%s/32' % ENDPOINT_IP, '-p', 'tcp', '--dport', '80', '-j', 'DNAT',
             '--to-destination', '%s:%d' % (ENDPOINT_IP, port)]
    return [('OUTPUT', match), ('PREROUTING', match)]


def running_port(store_path):
    """The port of the endpoint serving this store, or None when none runs."""
    try:
        fd = os.open(os.path.join(os.path.dirname(store_path), STATE_FILE), os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
        with os.fdopen(fd) as handle:
            state = json.load(handle)
        pid, port = int(state['pid']), int(state['port'])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None            # a file left by a service that is gone
    return port if 0 < port < 65536 else None


def _run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)


def reassert(store_path):
    """(what was added again, a warning or None); nothing when no endpoint runs for the store."""
    port = running_port(store_path)
    if port is None:
        return [], None
    added = []
    try:
        shown = _run(['ip', '-o', '-4', 'addr', 'show', 'dev', DUMMY_LINK])
        if shown.returncode == 0 and ('%s/32' % ENDPOINT_IP) not in shown.stdout:
            if _run(['ip', 'addr', 'add', '%s/32' % ENDPOINT_IP, 'dev', DUMMY_LINK]).returncode == 0:
                added.append('the address %s/32' % ENDPOINT_IP)
        for chain, rule in rules(port):
            if _run(['iptables', '-t', 'nat', '-C', chain] + rule).returncode != 0:
                made = _run(['iptables', '-t', 'nat', '-I', chain, '1'] + rule)
                if made.returncode != 0:
                    return added, 'cannot add the credentials endpoint\'s DNAT rule in %s: %s' % (
                        chain, (made.stderr.strip().splitlines() or ['iptables failed'])[-1])
                added.append('the DNAT rule in %s' % chain)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return added, 'cannot check the credentials endpoint\'s redirect: %s' % exc
    return added, None
