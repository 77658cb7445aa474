# -*- coding: utf-8 -*-
"""Fixtures the integration suite and the Salt suite (tests/salt) share: the real Docker engine, a cluster and a
store of the test's own, stand-in ENIs and the cleanup of task network namespaces, the GitHub stand-in and a
runner pool of the test's own. Each conftest imports them by name."""

from __future__ import absolute_import, division, print_function

import uuid

import docker
import pytest

from helpers import IMAGE
from sweep import register


@pytest.fixture(scope='session')
def engine():
    client = docker.from_env()
    client.ping()
    client.images.get(IMAGE)
    yield client
    client.close()


@pytest.fixture
def cluster(engine):
    """A cluster of this test's own, so tests never see each other's tasks; emptied afterwards."""
    name = 't%s' % uuid.uuid4().hex[:10]
    yield name
    remove_labelled(engine, 'drover.cluster', name)


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / 'state' / 'store.db')


_SUBNETS = iter(range(10, 250))


@pytest.fixture
def fake_eni():
    """A fresh stand-in ENI (not yet plugged) on its own 198.18.<n>.0/24; removed afterwards."""
    from netfix import FakeEni
    made = []

    def make():
        eni = FakeEni(next(_SUBNETS))
        made.append(eni)
        return eni
    yield make
    for eni in made:
        eni.unplug()


@pytest.fixture
def netns_cleanup(engine):
    """Remove, after the test, every task network namespace and holder the test made (the veths and
    stand-in ENIs inside a namespace go with it), and the filter rules of their credential links."""
    import shutil
    import subprocess
    from helpers import netns_list
    from ansible_collections.drover.fleet.plugins.module_utils.network import netlink as _netns
    from ansible_collections.drover.fleet.plugins.module_utils.network.plan import host_ifname
    before = set(netns_list())
    yield
    made = set(n for n in set(netns_list()) - before if n.startswith('drover-'))
    for holder in engine.containers.list(all=True, filters={'label': 'drover.role=netns-holder'}):
        if holder.labels.get('drover.netns') not in before:
            if holder.labels.get('drover.netns'):
                made.add(holder.labels['drover.netns'])
            holder.remove(force=True)
    for name in sorted(made):
        subprocess.run(['ip', 'netns', 'del', name], capture_output=True, check=False)
        shutil.rmtree('/etc/netns/%s' % name, ignore_errors=True)
    # The rules outlive the links (which go with their namespaces, a moment later).
    listing = _netns.filter_rules()
    for ifname in sorted(set(host_ifname(n) for n in made) | set(_netns.orphan_guards(listing))):
        _netns.remove_link_guard(ifname, listing)


@pytest.fixture
def standin(request):
    """A GitHub stand-in (tests/fixtures/github_standin) for one test, serving the test module's REPO with
    its TOKEN (else a fresh sentinel token, as `.test_token`); no OpenAPI violation may be left at the end."""
    import os
    import sys
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures')
    if fixtures not in sys.path:
        sys.path.insert(0, fixtures)
    from github_standin.server import StandIn
    token = getattr(request.module, 'TOKEN', None) or register('ghp_sentinel%s' % uuid.uuid4().hex)
    # A module may ask for it on another address of this host (STANDIN_HOST: the engine's bridge gateway, where a
    # runner on a bridge network reaches it).
    host = getattr(request.module, 'STANDIN_HOST', None)
    server = StandIn(token=token, host=host() if callable(host) else (host or '127.0.0.1')).start()
    server.add_repo(getattr(request.module, 'REPO', 'octo/app'))
    server.test_token = token
    yield server
    server.stop()
    assert server.violations == [], server.violations


@pytest.fixture
def pool_name(engine):
    """A runner pool of this test's own; its runner containers and records are removed afterwards."""
    name = 'p%s' % uuid.uuid4().hex[:8]
    yield name
    remove_labelled(engine, 'drover.pool', name)
    for image in engine.images.list(filters={'label': ['drover.record=true', 'drover.pool=%s' % name]}):
        engine.images.remove(image.id, force=True)


def remove_labelled(engine, label, value):
    """Remove, forced, every container whose `label` is `value`."""
    for c in engine.containers.list(all=True, filters={'label': '%s=%s' % (label, value)}):
        c.remove(force=True)
