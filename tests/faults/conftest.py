# -*- coding: utf-8 -*-
"""Fixtures of the fault tests: the Docker engine, and the seed printed first (FAULT_SEED=<it> replays the
same kill moments)."""

from __future__ import absolute_import, division, print_function

import pytest


@pytest.fixture
def engine():
    """The Docker engine (the SDK's client from the environment)."""
    import docker
    client = docker.from_env()
    yield client
    client.close()


def pytest_report_header(config):  # pylint: disable=unused-argument
    from test_kill_and_race import RACES, SEED, TRIALS
    from test_engine_restart import RESTARTS
    return 'faults: FAULT_SEED=%d, %d kill trials and fault bursts, %d races, %d engine restarts' % (
        SEED, TRIALS, RACES, RESTARTS)
