# -*- coding: utf-8 -*-
"""Integration fixtures: the real Docker engine, a real store, and listings to prove what changed."""

from __future__ import absolute_import, division, print_function

import pytest

# pylint: disable-next=unused-import
from shared_fixtures import cluster, engine, fake_eni, netns_cleanup, pool_name, standin, store_path  # noqa: F401


@pytest.fixture
def converge(module_runner, store_path, cluster):
    """Run ecs_task with this test's store and cluster."""
    def run(check=False, diff=False, **args):
        args.setdefault('store_path', store_path)
        args.setdefault('cluster', cluster)
        return module_runner('ecs_task', args, check=check, diff=diff)
    return run


@pytest.fixture(scope='session')
def moto_aws():
    """moto's server mode on 127.0.0.1 as STS and ECR (and any AWS API the tests call): its URL."""
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield 'http://%s:%d' % (host, port)
    server.stop()


@pytest.fixture
def host_aws_credentials(monkeypatch):
    """The host's own AWS credentials, as boto3's default chain finds them (moto accepts any)."""
    for key, value in (('AWS_ACCESS_KEY_ID', 'testing'), ('AWS_SECRET_ACCESS_KEY', 'testing'),
                       ('AWS_SESSION_TOKEN', 'testing')):
        monkeypatch.setenv(key, value)


@pytest.fixture
def three(engine):  # pylint: disable=unused-argument
    """Three simulated hosts (tests/fixtures/fleet_engines.py: one dockerd each), stopped after the test."""
    from fleet_engines import FleetEngines
    from helpers import IMAGE
    engines = FleetEngines(3, image=IMAGE)
    engines.start()
    try:
        yield engines
    finally:
        engines.stop()
