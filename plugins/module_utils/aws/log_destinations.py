# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a container's log driver sends its output, and the host's allowlist of such destinations.

The engine's `syslog`, `gelf` and `fluentd` drivers (and `awslogs` with its own endpoint) send a container's
output from the host's network namespace, not the task's: to any address, or to a socket on the host (the
host's syslog at /dev/log, another task's log router). A declared destination is taken only when the host's
policy lists it (`log_addresses`, exactly as written there); a driver given no address sends to its default
destination, which must be listed too. Nothing is listed by default, so a task isolated on an awsvpc network
cannot use its logs to get around that network, nor forge the host's own log lines.

A destination is also read as the engine reads it (the scheme in any case, with or without `//`, the path
%-decoded, `//` and `.` resolved, /proc/<pid>/root and the like taken as the host's root), and one that reaches
the collection's own sockets (a task's log router under /run/drover), or that holds a `..` (the kernel resolves
it through links), is refused even when listed.

Owns: the table of drivers with a destination (DESTINATIONS) and the check of one container's destination.
Must not: touch the host, the engine or the store. Raises SpecError (naming the field) and nothing else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from urllib.parse import unquote, urlsplit

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

# driver -> (the option that names its destination, where it sends without one: the engine's default; None: the
# option is required). awslogs's default is AWS's own regional endpoint (or the module's aws_endpoint_url).
DESTINATIONS = {
    'syslog': ('syslog-address', 'unix:///dev/log'),
    'gelf': ('gelf-address', None),
    'fluentd': ('fluentd-address', 'tcp://127.0.0.1:24224'),
    'awslogs': ('awslogs-endpoint', None),
}
# The options that name a destination: checked here, so never taken as secret options (their value unseen).
OPTIONS = tuple(sorted(option for option, _default in DESTINATIONS.values()))
# Where the collection's own sockets are (a task's log router's): no declared log driver writes there.
OWN_SOCKETS = ('/run/drover', '/var/run/drover')
# The schemes of a socket on the host, as the engine's drivers take them (in any case).
SOCKET_SCHEMES = ('unix', 'unixgram')
# A process's view of the host's root or of its working directory, under /proc: the engine resolves a socket's
# path as root in the host's mount namespace, so /proc/1/root/run/drover/... is /run/drover/...
_PROC_VIEW = re.compile(r'^/proc/[^/]+/(?:root|cwd)(?=/|\Z)')


def _raw_socket_path(address):
    """The %-decoded path of a socket address as Go's URL parser gives it (unix:/p, unix:///p, unix://host/p), or
    None when the scheme (in any case) is no socket's."""
    scheme, sep, rest = address.partition(':')
    if not sep or scheme.lower() not in SOCKET_SCHEMES:
        return None
    return unquote(urlsplit('x:' + rest).path or '')


def socket_path(address):
    """The host path a socket address reaches, as the engine reads it (None when it is no socket address)."""
    path = _raw_socket_path(address)
    if path is None:
        return None
    path = posixpath.normpath('/' + path.lstrip('/'))
    while True:
        shorter = _PROC_VIEW.sub('', path, count=1)
        if shorter == path:
            return path
        path = posixpath.normpath('/' + shorter.lstrip('/'))


def reaches_own_socket(address):
    """Whether a log address reaches the collection's own sockets (or anything under /proc, which could)."""
    raw = _raw_socket_path(address)
    if raw is None:
        return False
    if '..' in raw.split('/'):
        return True             # resolved by the kernel through links (/var/lock is /run/lock): never read here
    path = socket_path(address)
    return path.startswith('/proc/') or any(path == own or path.startswith(own + '/') for own in OWN_SOCKETS)


def check(driver, options, allowed, field, aws_endpoint=None):
    """A container's destination under the host's allowlist `allowed` (log_addresses). `options`: the driver's
    declared options (a dict); `field(member)` names a member of the log configuration in a message;
    `aws_endpoint`: the module's aws_endpoint_url (awslogs's default, always allowed). Raises SpecError."""
    if driver not in DESTINATIONS:
        return
    option, default = DESTINATIONS[driver]
    address = options.get(option)
    if address is not None and not isinstance(address, str):
        raise SpecError('%s must be a string, got %r' % (field('options') + '.' + option, address))
    if address is not None and reaches_own_socket(address):
        raise SpecError('%s %s is a socket of the collection\'s own (a task\'s log router): a container logs to '
                        'its own task\'s router with awsfirelens' % (field('options') + '.' + option, address))
    allowed = list(allowed or ())
    if driver == 'awslogs':
        if address is None or address == aws_endpoint or address in allowed:
            return
    elif address is None and default is None:
        raise SpecError('%s is required: the address the %s driver sends to' % (field('options') + '.' + option, driver))
    elif (default if address is None else address) in allowed:
        return
    where = 'log_addresses: %s' % (', '.join(allowed) if allowed else 'none')
    if address is None:
        raise SpecError('%s %s sends the container\'s output to %s (no %s given), which this host does not allow '
                        '(%s; role variable drover_log_addresses)'
                        % (field('log_driver'), driver, default, option, where))
    raise SpecError('%s %s: this host sends no container\'s output there (%s; role variable drover_log_addresses)'
                    % (field('options') + '.' + option, address, where))
