# -*- coding: utf-8 -*-
"""The fault trials print their seed first: FAULT_SEED=<it> replays the same kill moments."""

from __future__ import absolute_import, division, print_function


def pytest_report_header(config):  # pylint: disable=unused-argument
    from test_kill_and_race import RACES, SEED, TRIALS
    return 'faults: FAULT_SEED=%d, %d kill trials, %d races' % (SEED, TRIALS, RACES)
