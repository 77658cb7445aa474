# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.github_delivery: an ansible-rulebook event filter for GitHub's workflow_job webhook, behind the
webhook source's signature check (rulebook drover.fleet.pools_webhook, docs/pools_webhook.md).

Of each signed delivery it keeps what a pools pass needs and nothing a pull request's author writes:

- a delivery seen before is dropped: the same X-GitHub-Delivery, or the same body (a replay of a signed body
  under a new delivery ID; the header is not signed) within `window` seconds;
- a queued job older than `window` seconds is dropped, by its own time in the signed body (the later of its
  `created_at` and `started_at`): a replay after the window, or after a restart that forgot what was seen, is
  that old; one without a time that can be read is dropped too;
- a delivery that is not a queued workflow_job, or whose repository is not an owner/name of GitHub's grammar
  (letters, digits, '.', '_', '-'), is dropped;
- what is left becomes the event {drover: {repository, delivery}} (with the source's meta, less the request's
  headers): branch names, job and workflow names, labels, commit messages never reach the rules, the playbook's
  variables or a template.

Owns: the seen deliveries of this rulebook process (in memory: a restart forgets them, the job's time does not
let a replay through), the age of a delivery's job, and the event's shape.
Must not: make any request, or keep anything of a delivery but its ID and its body's digest.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import collections
import hashlib
import json
import logging
import re
import time

DOCUMENTATION = r'''
---
short_description: Keep of a GitHub workflow_job delivery only its repository, once.
description:
  - Drops a delivery seen before (its X-GitHub-Delivery, or its body, within O(window) seconds), one that is not a
    queued C(workflow_job), and one whose repository is not an owner/name of GitHub's grammar.
  - Drops a queued job older than O(window) seconds by its own time (the later of the body's C(workflow_job.created_at)
    and C(workflow_job.started_at), against this host's clock), and one without such a time: a signed delivery
    replayed after the window, or after a restart, is that old.
  - Makes the rest the event C({drover: {repository, delivery}}), with the source's meta less the request's
    headers.
options:
  window:
    description: Seconds a delivery ID and a body's digest are remembered, and the most a queued job's time may lie
      behind this host's clock.
    type: int
    default: 3600
  max_seen:
    description: The most deliveries remembered; the oldest go first.
    type: int
    default: 100000
'''

REPOSITORY_RE = re.compile(r'^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}\Z')
DELIVERY_RE = re.compile(r'^[A-Za-z0-9-]{1,64}\Z')
# A time as GitHub writes it in a payload (ISO 8601, UTC `Z` or an offset; fractions of a second ignored).
TIME_RE = re.compile(r'^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:(Z)|([+-])(\d{2}):(\d{2}))\Z')
HEADER = 'x-github-delivery'

log = logging.getLogger('drover.fleet.github_delivery')
# key (the delivery ID, or the body's digest) -> when it was seen; oldest first. One per rulebook process.
_SEEN = collections.OrderedDict()


def _forget(now, window):
    while _SEEN and next(iter(_SEEN.values())) < now - window:
        _SEEN.popitem(last=False)


def _header(meta, name):
    for key, value in ((meta or {}).get('headers') or {}).items():
        if str(key).lower() == name:
            return str(value)
    return None


def _epoch(text):
    """Seconds since the epoch of a time as GitHub writes it; None for anything else."""
    found = TIME_RE.match(text) if isinstance(text, str) else None
    if not found:
        return None
    parts = [int(p) for p in found.group(1, 2, 3, 4, 5, 6)]
    if not (1 <= parts[1] <= 12 and 1 <= parts[2] <= 31 and parts[3] <= 23 and parts[4] <= 59 and parts[5] <= 60):
        return None
    try:
        when = calendar.timegm(time.struct_time(tuple(parts) + (0, 0, 0)))
    except (OverflowError, ValueError):
        return None
    if found.group(8):
        offset = int(found.group(9)) * 3600 + int(found.group(10)) * 60
        when -= offset if found.group(8) == '+' else -offset
    return when


def _job_time(job):
    """The time of a queued job: the later of its created_at and started_at; None when neither can be read."""
    times = [t for t in (_epoch(job.get('created_at')), _epoch(job.get('started_at'))) if t is not None]
    return max(times) if times else None


def main(event, window=3600, max_seen=100000, clock=time.monotonic, wall=time.time):
    """The filter: a list of no event (dropped) or of one (kept, reduced). `clock` measures the window of what was
    seen; `wall`, this host's clock, how old a job is."""
    window, max_seen = int(window), int(max_seen)     # the rulebook's templates give strings
    now = clock()
    _forget(now, window)
    meta = dict(event.get('meta') or {})
    payload = event.get('payload')
    delivery = _header(meta, HEADER)
    if not isinstance(payload, dict) or delivery is None or not DELIVERY_RE.match(delivery):
        log.warning('a delivery without a payload or a delivery ID: dropped')
        return []
    digest = 'sha256:' + hashlib.sha256(json.dumps(payload, sort_keys=True).encode('utf-8')).hexdigest()
    if delivery in _SEEN or digest in _SEEN:
        log.warning('delivery %s was seen before (its ID or its body): dropped as a replay', delivery)
        return []
    for key in (delivery, digest):
        _SEEN[key] = now
    while len(_SEEN) > max_seen:
        _SEEN.popitem(last=False)
    job = payload.get('workflow_job')
    repository = (payload.get('repository') or {}).get('full_name') if isinstance(payload.get('repository'), dict) \
        else None
    if payload.get('action') != 'queued' or not isinstance(job, dict):
        return []
    queued, today = _job_time(job), wall()
    if queued is None:
        log.warning('delivery %s gives no time of its job: dropped', delivery)
        return []
    if queued < today - window:
        log.warning('delivery %s is of a job queued %d s ago, more than the window: dropped as a replay', delivery,
                    today - queued)
        return []
    if not isinstance(repository, str) or not REPOSITORY_RE.match(repository):
        log.warning('delivery %s names no repository as owner/name: dropped', delivery)
        return []
    meta.pop('headers', None)
    return [{'drover': {'repository': repository, 'delivery': delivery}, 'meta': meta}]
