# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pools' registry pull-through mirror (gh_runner_slot's `mirror`): one per host and store, made before the
first runner of a pass, which the slot engines (profile.docker rootless) use as their `registry-mirrors`.

It is Debian's docker-registry (distribution v2) in proxy mode, in a container of the collection's registry image
on the pools' own bridge network (pools.slot_engine.pools_network: the slot holders are there, and no other container
of the host: it has no client authentication, so no other tenant may reach it), without a published host port: a
slot engine reaches it at the container's address there, a job can pull through it but never push to it (a proxy refuses pushes). Its configuration,
with the upstream's password, is a file only root reads (beside the store), mounted read-only into the mirror's
container alone: never an environment variable, a label or a command line. Its blobs are in an engine volume of
its own, removed whole when they pass `max_size` (the next pulls fill it again).

A mirror that does not answer never holds a runner back: the pass tells it (event `mirror.down`) and goes on
without it; the next pass makes it again.

Owns: checking `mirror`, the mirror's configuration file, container and volume, telling whether it answers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import json
import os
import time

from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import STORE_LABEL
from ansible_collections.drover.fleet.plugins.module_utils.tasks.plan import iso
from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import (
    SlotEngineError, ensure_network, remove_network)
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

ROLE = 'mirror'
DEFAULT_IMAGE = 'drover.local/registry:1'
DEFAULT_UPSTREAM = 'https://registry-1.docker.io'
PORT = 5000
CONFIG_IN_CONTAINER = '/etc/docker/registry/config.yml'
DATA_IN_CONTAINER = '/var/lib/registry'
ANSWER_WAIT = 10                # seconds a pass waits for a mirror it (re)started to answer
MIB = 1024 * 1024

Mirror = collections.namedtuple('Mirror', ('upstream', 'username', 'password', 'max_size', 'image'))


def mirror_spec(raw):
    """`mirror`, checked: a Mirror, or None when it is not enabled. Raises SpecError naming the field."""
    if not raw or not raw.get('enabled'):
        return None
    upstream = raw.get('upstream') or DEFAULT_UPSTREAM
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(upstream)
        port = parts.port
    except ValueError as exc:
        raise SpecError('mirror.upstream %r is not a URL: %s' % (upstream, exc))
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        raise SpecError('mirror.upstream must be an http:// or https:// registry address, got %r' % upstream)
    if parts.username is not None or parts.password is not None:
        raise SpecError('mirror.upstream must not carry credentials (they would reach the mirror\'s log): give '
                        'mirror.username and mirror.password')
    if parts.path not in ('', '/') or parts.query or parts.fragment:
        raise SpecError('mirror.upstream must be a registry\'s address alone (scheme, host, port), got %r' % upstream)
    username, password = raw.get('username'), raw.get('password')
    if bool(username) != bool(password):
        raise SpecError('mirror.username and mirror.password go together: give both, or neither')
    max_size = raw.get('max_size')
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
        raise SpecError('mirror.max_size must be a whole number of MiB, at least 1, got %r' % (max_size,))
    image = raw.get('image') or DEFAULT_IMAGE
    base = '%s://%s%s' % (parts.scheme, parts.hostname if ':' not in parts.hostname else '[%s]' % parts.hostname,
                          '' if port is None else ':%d' % port)
    return Mirror(base, username or None, password or None, max_size, image)


def config_text(spec):
    """The registry's configuration (YAML, its strings written as JSON strings, which YAML reads as they are)."""
    lines = ['version: 0.1', 'log:', '  level: info', '  fields:', '    service: drover-mirror',
             'storage:', '  filesystem:', '    rootdirectory: %s' % DATA_IN_CONTAINER, '  delete:', '    enabled: true',
             'http:', '  addr: ":%d"' % PORT, 'proxy:', '  remoteurl: %s' % json.dumps(spec.upstream)]
    if spec.username:
        lines += ['  username: %s' % json.dumps(spec.username), '  password: %s' % json.dumps(spec.password)]
    return '\n'.join(lines) + '\n'


def mirror_name(scope):
    return 'drover-mirror-%s' % (scope[:8] if scope else 'host')


class HostMirror:
    """The mirror of one store on one engine. `state_dir`: the store's directory (the configuration goes in its
    `mirror` directory, 0700)."""

    def __init__(self, engine, scope, state_dir, now, events, warnings, answers=None):
        self.engine = engine
        self.scope = scope
        self.name = mirror_name(scope)
        self.volume = self.name
        self.config_path = os.path.join(state_dir, 'mirror', '%s.yml' % self.name)
        self.labels = {'drover.role': ROLE}
        if scope:
            self.labels[STORE_LABEL] = scope
        self.now = now
        self.events = events
        self.warnings = warnings
        self._answers = answers or _answers

    def _event(self, kind, **data):
        self.events.append(dict({'event': kind, 'at': iso(self.now), 'subject': 'mirror/%s' % self.name,
                                 'mirror': self.name}, **data))

    def _down(self, reason):
        self._event('mirror.down', reason=reason)
        self.warnings.append('registry mirror %s: %s; runners start without it, the next pass makes it again'
                             % (self.name, reason))
        return None

    def found(self):
        """The mirror's container (id, state), or None."""
        for row in self.engine.list_role(ROLE):
            if row['name'] == self.name:
                return row
        return None

    def _write_config(self, spec):
        """The configuration file as `spec` says; whether it changed."""
        text = config_text(spec)
        _files.ensure_dir(os.path.dirname(self.config_path), 0o700)
        try:
            with open(self.config_path) as handle:
                if handle.read() == text:
                    return False
        except OSError:
            pass
        _files.write_whole(self.config_path, text, 0o600)
        return True

    def _size(self):
        found = self.engine.volume(self.volume)
        if not found or not found.get('mountpoint') or not os.path.isdir(found['mountpoint']):
            return 0
        size, left_out = _files.tree_size(found['mountpoint'])
        if left_out:
            self.warnings.append('registry mirror %s: its size counts only what a walk reached: %s'
                                 % (self.name, _files.left_out_said(left_out)))
        return size

    def ensure(self, spec):
        """The mirror running and answering: its URL as a slot engine names it, or None (told as mirror.down)."""
        try:
            return self._ensure(spec)
        except (EngineError, OSError) as exc:
            return self._down(str(exc))

    def _ensure(self, spec):
        if not self.engine.image_present(spec.image):
            return self._down('its image %s is not on the host (the host role builds it with '
                              'drover_host_slot_engines; or set mirror.image)' % spec.image)
        try:
            network = ensure_network(self.engine, self.scope)
        except SlotEngineError as exc:
            return self._down(str(exc))
        changed = self._write_config(spec)
        row = self.found()
        state = self.engine.inspect(row['id']) if row else None
        if row and (changed or state is None or row.get('image') not in ('', spec.image)
                    or network not in (state or {}).get('networks', {})):
            self.engine.remove(row['id'])
            row = state = None
        elif row and state['status'] != 'running':
            self._down('its container was %s (exit code %s)' % (state['status'], state['exit_code']))
            self.engine.remove(row['id'])
            row = state = None
        size = self._size() if spec.max_size else 0
        if spec.max_size and size > spec.max_size * MIB:
            if row:
                self.engine.remove(row['id'])
                row = state = None
            self.engine.volume_remove(self.volume)
            self._event('mirror.trimmed', bytes=size, max_size=spec.max_size)
        if row is None:
            if self.engine.volume(self.volume) is None:
                self.engine.volume_create(self.volume, 'local', None, self.labels)
            cid = self.engine.create(self.name, spec.image, dict(self.labels, **{'drover.upstream': spec.upstream}),
                                     binds=['%s:%s:ro' % (self.config_path, CONFIG_IN_CONTAINER),
                                            '%s:%s' % (self.volume, DATA_IN_CONTAINER)],
                                     cap_drop=['ALL'], network_mode=network,
                                     host={'restart_policy': {'Name': 'on-failure', 'MaximumRetryCount': 3},
                                           'security_opt': ['no-new-privileges']})
            self.engine.start(cid)
            state = self.engine.inspect(cid)
            row = {'id': cid}
            self._event('mirror.started', upstream=spec.upstream)
        address = ((state or {}).get('networks') or {}).get(network)
        if not address:
            self.engine.remove(row['id'])
            return self._down('its container has no address on the pools\' network %s' % network)
        url = 'http://%s:%d' % (address, PORT)
        deadline = time.monotonic() + ANSWER_WAIT
        while not self._answers(url):
            if time.monotonic() >= deadline:
                # Made again by the next pass.
                self.engine.remove(row['id'])
                return self._down('it did not answer at %s within %d s' % (url, ANSWER_WAIT))
            time.sleep(0.2)
        return url

    def remove(self, purge=False):
        """No pool of the call wants a mirror: its container goes; with `purge` its blobs and configuration too."""
        row = self.found()
        if row is not None:
            self.engine.remove(row['id'])
            self._event('mirror.removed')
        remove_network(self.engine, self.scope)         # (it stays while a slot's holder is on it)
        if purge:
            if self.engine.volume(self.volume) is not None:
                self.engine.volume_remove(self.volume)
            try:
                os.unlink(self.config_path)
            except OSError:
                pass


def _answers(url):
    """Whether a registry answers GET /v2/ at `url` (any HTTP answer: a proxy answers 200)."""
    from urllib.error import HTTPError, URLError
    from urllib.request import ProxyHandler, build_opener
    try:
        # Straight to the bridge address: never through a proxy the environment names.
        with build_opener(ProxyHandler({})).open('%s/v2/' % url, timeout=2) as response:
            return response.status < 500
    except HTTPError as exc:
        return exc.code < 500
    except (URLError, OSError, ValueError):
        return False
