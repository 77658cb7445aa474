# -*- coding: utf-8 -*-
"""The webhook's event filter (drover.fleet.github_delivery): a delivery seen before is dropped (by its ID, or by
its body under a new ID), what is not a queued job of an owner/name repository is dropped, and what is kept holds
the repository and the delivery's ID alone."""

from __future__ import absolute_import, division, print_function

import copy
import os
import runpy

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, 'extensions', 'eda', 'plugins', 'event_filter', 'github_delivery.py')


@pytest.fixture
def flt():
    """The filter as ansible-rulebook loads it (runpy, once per source): state of its own."""
    return runpy.run_path(PATH)['main']


def event(delivery='d-1', repository='octo/app', action='queued', **job):
    return {'payload': {'action': action, 'workflow_job': dict({'id': 1, 'name': 'build',
                                                                'head_branch': 'main'}, **job),
                        'repository': {'full_name': repository}, 'sender': {'login': 'someone'}},
            'meta': {'endpoint': '', 'headers': {'X-GitHub-Delivery': delivery, 'X-Hub-Signature-256': 'sha256=00'}}}


def test_a_queued_job_becomes_its_repository_alone(flt):
    kept = flt(event(head_branch="{{ lookup('pipe', 'id') }}", name='{{ 7*7 }}'))
    assert kept == [{'drover': {'repository': 'octo/app', 'delivery': 'd-1'}, 'meta': {'endpoint': ''}}]


def test_a_delivery_seen_before_is_dropped(flt):
    assert flt(event('d-1', job_id=1))
    assert flt(event('d-1', job_id=2)) == []                    # the same ID
    assert flt(event('d-2', job_id=1)) == []                    # the same signed body under a new ID
    assert flt(event('d-3', job_id=3))                          # another job


def test_the_window_forgets(flt):
    now = [1000.0]
    assert flt(event('d-1'), window='60', clock=lambda: now[0])
    now[0] += 30
    assert flt(event('d-1'), window='60', clock=lambda: now[0]) == []
    now[0] += 61
    assert flt(event('d-1'), window='60', clock=lambda: now[0])


def test_the_memory_is_bounded(flt):
    for n in range(10):
        assert flt(event('d-%d' % n, job_id=n), max_seen=4)
    assert flt(event('d-0', job_id=0), max_seen=4)              # forgotten: the oldest went first


@pytest.mark.parametrize('change', [
    {'repository': "{{ lookup('pipe', 'touch /tmp/x') }}/app"},
    {'repository': 'octo/app\nx'},
    {'repository': 'octo'},
    {'action': 'completed'},
    {'delivery': 'a b'},
])
def test_what_is_no_queued_job_of_a_repository_is_dropped(flt, change):
    assert flt(event(**change)) == []


def test_no_delivery_id_or_no_payload_is_dropped(flt):
    bare = event()
    bare['meta']['headers'].pop('X-GitHub-Delivery')
    assert flt(bare) == []
    assert flt({'meta': copy.deepcopy(event()['meta'])}) == []
