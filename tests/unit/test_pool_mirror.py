# -*- coding: utf-8 -*-
"""gh_runner_slot's `mirror`: the checks of the option (each message names the field), the registry's configuration,
and what a pass does when the mirror cannot be had (told, never holding a runner back)."""

from __future__ import absolute_import, division, print_function

import os
import stat

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.pools import mirror as m
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError


@pytest.mark.parametrize('raw,error', [
    ({'enabled': True, 'upstream': 'ftp://hub'}, 'mirror.upstream must be an http:// or https:// registry address'),
    ({'enabled': True, 'upstream': 'registry-1.docker.io'}, 'mirror.upstream must be an http:// or https://'),
    ({'enabled': True, 'upstream': 'https://u:secret@hub.example'}, 'mirror.upstream must not carry credentials'),
    ({'enabled': True, 'upstream': 'https://hub.example/v2/'}, "mirror.upstream must be a registry's address alone"),
    ({'enabled': True, 'upstream': 'https://hub.example:99999'}, "mirror.upstream 'https://hub.example:99999' is not a URL"),
    ({'enabled': True, 'username': 'u'}, 'mirror.username and mirror.password go together'),
    ({'enabled': True, 'password': 'p'}, 'mirror.username and mirror.password go together'),
    ({'enabled': True, 'max_size': 0}, 'mirror.max_size must be a whole number of MiB, at least 1, got 0'),
    ({'enabled': True, 'max_size': True}, 'mirror.max_size must be a whole number of MiB'),
])
def test_bad_mirror_named(raw, error):
    with pytest.raises(SpecError) as exc:
        m.mirror_spec(raw)
    assert str(exc.value).startswith(error), str(exc.value)
    assert 'secret' not in str(exc.value)


def test_mirror_taken():
    assert m.mirror_spec(None) is None and m.mirror_spec({'enabled': False, 'upstream': 'nonsense'}) is None
    spec = m.mirror_spec({'enabled': True})
    assert spec == m.Mirror('https://registry-1.docker.io', None, None, None, 'drover.local/registry:1')
    spec = m.mirror_spec({'enabled': True, 'upstream': 'http://198.18.0.2:5000/', 'username': 'u', 'password': 'p"w',
                          'max_size': 2048})
    assert spec.upstream == 'http://198.18.0.2:5000' and spec.max_size == 2048
    text = m.config_text(spec)
    # strings as JSON strings: a quote in the password cannot end it
    assert '  remoteurl: "http://198.18.0.2:5000"\n' in text and '  password: "p\\"w"\n' in text
    assert 'username' not in m.config_text(m.mirror_spec({'enabled': True}))


class FakeEngine:
    """What HostMirror asks of the engine, with a registry image that may be missing."""

    def __init__(self, image_present=True, address='198.18.0.9'):
        self.present, self.address = image_present, address
        self.containers, self.volumes, self.calls, self.networks = {}, {}, [], {}

    def image_present(self, ref):
        return self.present

    def list_role(self, role):
        return [dict(c, id=cid) for cid, c in self.containers.items()]

    def inspect(self, cid):
        c = self.containers.get(cid)
        address = self.address if c is not None and c['state'] == 'running' else None
        return None if c is None else {'status': c['state'], 'exit_code': c.get('exit_code', 0), 'address': None,
                                       'networks': {c['network']: address} if c.get('network') else {}}

    def network(self, name):
        return self.networks.get(name)

    def network_create(self, name, labels):
        self.networks[name] = {'name': name, 'driver': 'bridge', 'labels': labels, 'containers': []}

    def network_remove(self, name):
        if any(c.get('network') == name for c in self.containers.values()):
            return False
        return self.networks.pop(name, None) is not None

    def create(self, name, image, labels, **kw):
        self.calls.append(('create', name, kw))
        self.containers['c%d' % len(self.calls)] = {'name': name, 'image': image, 'state': 'created',
                                                    'labels': labels, 'network': kw.get('network_mode')}
        return 'c%d' % len(self.calls)

    def start(self, cid):
        self.containers[cid]['state'] = 'running'

    def remove(self, cid):
        self.calls.append(('remove', cid))
        self.containers.pop(cid, None)

    def volume(self, name):
        return self.volumes.get(name)

    def volume_create(self, name, driver, options, labels):
        self.volumes[name] = {'name': name, 'labels': labels, 'mountpoint': None}

    def volume_remove(self, name):
        self.volumes.pop(name, None)


def mirror(tmp_path, engine, answers=lambda url: True):
    events, warnings = [], []
    return m.HostMirror(engine, 'abcdef0123456789', str(tmp_path), 1_800_000_000.0, events, warnings,
                        answers=answers), events, warnings


def test_made_answering_then_left_alone(tmp_path):
    engine = FakeEngine()
    work, events, warnings = mirror(tmp_path, engine)
    spec = m.mirror_spec({'enabled': True, 'username': 'u', 'password': 'pw-1'})
    assert work.ensure(spec) == 'http://198.18.0.9:5000'
    assert [e['event'] for e in events] == ['mirror.started'] and not warnings
    [(dummy, name, kw)] = [c for c in engine.calls if c[0] == 'create']
    assert name == 'drover-mirror-abcdef01' and 'pw-1' not in repr(engine.calls) + repr(engine.containers)
    assert kw['binds'][0] == '%s:/etc/docker/registry/config.yml:ro' % work.config_path and kw['cap_drop'] == ['ALL']
    # on the pools' own network (made for it), never the host's bridge: only slot holders are there
    assert kw['network_mode'] == 'drover-pools-abcdef01' and engine.networks['drover-pools-abcdef01']['labels'] == {
        'drover.role': 'pools-network', 'drover.store': 'abcdef0123456789'}
    assert stat.S_IMODE(os.stat(work.config_path).st_mode) == 0o600 and 'pw-1' in open(work.config_path).read()
    # the same again: nothing made or removed
    assert work.ensure(spec) == 'http://198.18.0.9:5000' and len(engine.calls) == 1 and len(events) == 1
    # a new password: the configuration is written again and the mirror made again with it
    assert work.ensure(spec._replace(password='pw-2')) and [c[0] for c in engine.calls] == ['create', 'remove', 'create']
    assert 'pw-2' in open(work.config_path).read()


def test_what_cannot_be_had_is_told_and_holds_nothing(tmp_path):
    spec = m.mirror_spec({'enabled': True})
    engine = FakeEngine(image_present=False)
    work, events, warnings = mirror(tmp_path, engine)
    assert work.ensure(spec) is None and engine.calls == [] and not os.path.exists(work.config_path)
    assert events[0]['event'] == 'mirror.down' and 'drover.local/registry:1 is not on the host' in events[0]['reason']
    assert 'runners start without it' in warnings[0]

    # made, but it does not answer: removed, so that the next pass makes it again
    engine = FakeEngine()
    work, events, warnings = mirror(tmp_path, engine, answers=lambda url: False)
    m.ANSWER_WAIT, wait = 0.3, m.ANSWER_WAIT
    try:
        assert work.ensure(spec) is None
    finally:
        m.ANSWER_WAIT = wait
    assert [e['event'] for e in events] == ['mirror.started', 'mirror.down'] and engine.containers == {}
    assert 'did not answer at http://198.18.0.9:5000' in events[1]['reason']

    # found exited: told, and made again in the same pass
    engine = FakeEngine()
    work, events, warnings = mirror(tmp_path, engine)
    work.ensure(spec)
    cid = next(iter(engine.containers))
    engine.containers[cid].update(state='exited', exit_code=2)
    assert work.ensure(spec) == 'http://198.18.0.9:5000'
    assert [e['event'] for e in events] == ['mirror.started', 'mirror.down', 'mirror.started']
    assert events[1]['reason'] == 'its container was exited (exit code 2)'


def test_removed_with_its_blobs_and_configuration(tmp_path):
    engine = FakeEngine()
    work, events, warnings = mirror(tmp_path, engine)
    work.ensure(m.mirror_spec({'enabled': True}))
    work.remove(purge=True)
    assert engine.containers == {} and engine.volumes == {} and not os.path.exists(work.config_path)
    assert events[-1]['event'] == 'mirror.removed'


def test_a_slot_engine_configuration_follows_the_mirror(tmp_path):
    """The slot engine's daemon.json names the mirror; none: no mirror; the mirror down this pass (None): as it was."""
    import json
    from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import SlotEngine

    def slot(mirrors):
        engine = SlotEngine(None, 'scope', 'ci', 0, 'img', {}, root=str(tmp_path), mirrors=mirrors)
        os.makedirs(engine.dir, exist_ok=True)
        return engine

    assert slot(None)._write_config() and json.load(open(slot(None).config_file)) == {}
    assert slot(['http://198.18.0.9:5000'])._write_config()
    assert json.load(open(slot(None).config_file)) == {
        'registry-mirrors': ['http://198.18.0.9:5000'], 'insecure-registries': ['http://198.18.0.9:5000']}
    assert not slot(['http://198.18.0.9:5000'])._write_config() and not slot(None)._write_config()
    assert stat.S_IMODE(os.stat(slot(None).config_file).st_mode) == 0o644
    assert slot([])._write_config() and json.load(open(slot(None).config_file)) == {}
