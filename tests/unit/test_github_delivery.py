# -*- coding: utf-8 -*-
"""The webhook's event filter (drover.fleet.github_delivery): a delivery seen before is dropped (by its ID, or by
its body under a new ID), what is not a queued job of an owner/name repository is dropped, and what is kept holds
the repository and the delivery's ID alone."""

from __future__ import absolute_import, division, print_function

import copy
import os
import runpy
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, 'extensions', 'eda', 'plugins', 'event_filter', 'github_delivery.py')


@pytest.fixture
def flt():
    """The filter as ansible-rulebook loads it (runpy, once per source): state of its own."""
    return runpy.run_path(PATH)['main']


def iso(when):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(when))


def event(delivery='d-1', repository='octo/app', action='queued', **job):
    """A delivery of a job queued just now (its created_at and started_at, as GitHub sends them), unless `job` says."""
    now = iso(time.time())
    return {'payload': {'action': action, 'workflow_job': dict({'id': 1, 'name': 'build', 'head_branch': 'main',
                                                                'created_at': now, 'started_at': now}, **job),
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


T = 1_800_000_000.0             # 2027-01-15T08:00:00Z


def test_a_replayed_delivery_is_dropped_after_the_filter_forgot_it(flt):
    # A signed delivery captured when its job was queued, two hours ago, replayed to a filter that never saw it (the
    # rulebook restarted since, or its window passed): its job's time is older than the window.
    queued = iso(time.time() - 7200)
    assert flt(event('d-1', created_at=queued, started_at=queued), window='3600') == []
    # the same delivery, its job queued just now, passes
    assert flt(event('d-2', job_id=2))


def test_the_window_forgets_a_delivery_but_not_its_job_s_time(flt):
    now = [1000.0]
    sent = event('d-1', created_at=iso(T - 5), started_at=iso(T - 4))
    assert flt(copy.deepcopy(sent), window='60', clock=lambda: now[0], wall=lambda: T)
    now[0] += 30
    assert flt(copy.deepcopy(sent), window='60', clock=lambda: now[0], wall=lambda: T + 30) == []   # remembered
    now[0] += 31
    assert flt(copy.deepcopy(sent), window='60', clock=lambda: now[0], wall=lambda: T + 61) == []   # too old
    # a restart, hours later: the filter loaded anew remembers nothing
    restarted = runpy.run_path(PATH)['main']
    assert restarted(copy.deepcopy(sent), window='3600', wall=lambda: T + 7200) == []
    # a fresh one passes; so does one whose time is a little ahead of the host's clock
    assert restarted(event('d-3', job_id=3, created_at=iso(T + 7190), started_at=iso(T + 7190)), window='3600',
                     wall=lambda: T + 7200)
    assert restarted(event('d-4', job_id=4, created_at=iso(T + 7230), started_at=iso(T + 7230)), window='3600',
                     wall=lambda: T + 7200)


def test_the_later_of_created_at_and_started_at_is_the_job_s_time(flt):
    # a job created long ago, queued again just now (started_at is when it was queued)
    assert flt(event('d-1', created_at=iso(T - 86400), started_at=iso(T - 10)), wall=lambda: T)
    assert flt(event('d-2', job_id=2, created_at=iso(T - 10), started_at=None), wall=lambda: T)
    # T is 2027-01-15T08:00:00Z: the same instant at -02:00 is 06:00, read with its offset
    assert iso(T) == '2027-01-15T08:00:00Z'
    assert flt(event('d-3', job_id=3, created_at='2027-01-15T06:00:00-02:00', started_at=None), wall=lambda: T + 3000)
    assert flt(event('d-4', job_id=4, created_at='2027-01-15T06:00:00-02:00', started_at=None),
               wall=lambda: T + 3700) == []
    assert flt(event('d-5', job_id=5, created_at=iso(T - 10)[:-1] + '+00:00', started_at=None), wall=lambda: T)
    assert flt(event('d-6', job_id=6, created_at=iso(T - 10)[:-1] + '.123Z', started_at=None), wall=lambda: T)


@pytest.mark.parametrize('times', [
    {'created_at': None, 'started_at': None},
    {'created_at': 'yesterday', 'started_at': None},
    {'created_at': 1800000000, 'started_at': None},
    {'created_at': '2027-01-15T08:00:00', 'started_at': None},              # no zone
    {'created_at': '2027-13-45T08:00:00Z', 'started_at': None},
    {'created_at': '2027-01-15T08:00:00Z\n', 'started_at': None},
])
def test_a_queued_job_without_a_time_of_its_own_is_dropped(flt, times):
    assert flt(event(**times)) == []
