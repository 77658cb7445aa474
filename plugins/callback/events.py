# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file owns the controller side of drover.fleet's events: it reads the `events`, `task`/`tasks`
# and `pool`/`pools` that the collection's modules return, writes the events to a JSON-lines log and a
# webhook, prints the fleet recap and records fleet-wide holds in a controller-side state file.
# It must not: copy anything else from a task result (module arguments, invocation, messages), read a
# result that no_log hid, fail or slow a playbook without bound because a log or a webhook is broken,
# or talk to a managed host.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: events
type: notification
short_description: Write drover.fleet events to a log and a webhook, print a fleet recap, record fleet-wide holds
version_added: 0.1.0
description:
  - Collects the C(events) list of every task result that has one (M(drover.fleet.ecs_task),
    M(drover.fleet.gh_runner_slot), the report of M(drover.fleet.service_placement)), adds the inventory host,
    the play and the Ansible task, and writes each event as one JSON line to O(log_path) and as one JSON POST to
    O(webhook_url).
  - Only the C(events) entries and the task, pool and service views (C(task), C(tasks), C(pool), C(pools),
    C(services)) of a result are read. Module arguments, C(invocation) and every other field are never read, and a result hidden by
    C(no_log) (the task's C(no_log), or a censored result) is only counted.
  - The webhook is fed through a bounded queue (O(webhook_queue_size)) drained by a background thread. Each
    event is tried O(webhook_retries) more times after a failed POST, each try limited to
    O(webhook_timeout) seconds. After O(webhook_max_failures) events in a row could not be sent, one warning
    is printed and no further event is sent in this run. A broken log or webhook never fails the playbook.
  - At the end of the run it prints a recap with one line per host of the play, with the tasks running,
    stopped and held (from the C(task) and C(tasks) results), the runner slots busy, idle, free and starting
    and the pools held (from the C(pool) and C(pools) results), and one line per service that
    M(drover.fleet.service_placement) placed (C(service web - 9/9 healthy, revision 7) as the line begins, with its
    deployment when one is under way, rolled back or failed, as the run's last placement found it); C(unhealthy=N) counts the tasks whose last
    view has C(health_status) C(UNHEALTHY), when there are any. Under a host, only what changed in this run
    (outside check mode) is printed, one line each - a task run that stopped (C(task.stopped)), with its reason
    and what became of the task (running again, held back, stays stopped), a runner that ended
    (C(runner.ended)), a pool held in this run (C(pool.held)), with the time its hold ends. A host
    where nothing changed takes one line. Pools held by a fleet-wide hold passed back to the hosts (cause
    C(fleet)) are told in one line for the fleet, with the number of hosts.
  - Every recap line and every warning of the plugin is printed on one line as it is, but for control, format
    and line-separator characters and the backslash, which are written escaped as in a Python string literal
    (a newline as C(\n)). A stop reason, a runner name or an error from a container, a task or GitHub cannot
    print a line of its own.
  - A repository (the pool's C(owner)) whose pools are held on at least O(fleet_hold_threshold) hosts at the
    end of one run is held fleet-wide. The controller-side state file O(fleet_state_path) records it until the
    latest of those holds ends, and one C(fleet.held) event (and one C(fleet hold:) line of the recap) tells
    it when it changes the file (the repository held anew, until later or on more hosts); a hold already in
    force is told in the recap's C(held fleet-wide:) line. The file is there for the reconcile
    playbook to hold the repository on every host (C(drover.fleet.gh_runner_slot)'s O(drover.fleet.gh_runner_slot#module:hold_until)).
    A pool held only by that fleet-wide hold (cause C(fleet)) counts as held in the recap but makes no new
    fleet-wide hold.
author:
  - drover.fleet contributors (@drover)
requirements:
  - Enable the plugin in C(callbacks_enabled) (for example C(ANSIBLE_CALLBACKS_ENABLED=drover.fleet.events)).
options:
  log_path:
    description:
      - Append each event as one JSON line to this file. Its directory is created (mode 0700) when missing
        and the file has mode 0600.
      - The file is never opened through a symbolic link, and no event is logged when its directory, or a
        directory above it that is not sticky, can be written by another user (a warning says so).
      - No log is written when unset.
    type: path
    ini:
      - section: callback_drover_events
        key: log_path
    env:
      - name: DROVER_EVENTS_LOG_PATH
  webhook_url:
    description:
      - POST each event as a JSON object to this URL (C(Content-Type) C(application/json)).
      - No event is sent when unset. The URL is never printed beyond its scheme and host, since it may
        hold a secret.
    type: str
    ini:
      - section: callback_drover_events
        key: webhook_url
    env:
      - name: DROVER_EVENTS_WEBHOOK_URL
  webhook_timeout:
    description: Seconds one POST may take.
    type: float
    default: 5
    ini:
      - section: callback_drover_events
        key: webhook_timeout
    env:
      - name: DROVER_EVENTS_WEBHOOK_TIMEOUT
  webhook_retries:
    description: How many more times a failed POST of one event is tried, with a short pause before each.
    type: int
    default: 3
    ini:
      - section: callback_drover_events
        key: webhook_retries
    env:
      - name: DROVER_EVENTS_WEBHOOK_RETRIES
  webhook_queue_size:
    description:
      - How many events may wait for the webhook. An event that finds the queue full is not sent (it is still
        logged), and one warning at the end of the run says how many were dropped.
    type: int
    default: 1000
    ini:
      - section: callback_drover_events
        key: webhook_queue_size
    env:
      - name: DROVER_EVENTS_WEBHOOK_QUEUE_SIZE
  webhook_max_failures:
    description:
      - After this many events in a row could not be sent (each after its retries), print one warning and
        send nothing more to the webhook in this run.
    type: int
    default: 3
    ini:
      - section: callback_drover_events
        key: webhook_max_failures
    env:
      - name: DROVER_EVENTS_WEBHOOK_MAX_FAILURES
  webhook_drain_timeout:
    description:
      - At the end of the run, wait at most this many seconds for the events still queued to be sent; what is
        left then is not sent, and one warning says how many.
    type: float
    default: 30
    ini:
      - section: callback_drover_events
        key: webhook_drain_timeout
    env:
      - name: DROVER_EVENTS_WEBHOOK_DRAIN_TIMEOUT
  fleet_hold_threshold:
    description:
      - A repository whose pools are held on at least this many hosts at the end of a run is held fleet-wide.
      - V(0) turns fleet-wide holds off.
    type: int
    default: 2
    ini:
      - section: callback_drover_events
        key: fleet_hold_threshold
    env:
      - name: DROVER_EVENTS_FLEET_HOLD_THRESHOLD
  fleet_state_path:
    description:
      - The controller-side state file of fleet-wide holds, a JSON object that maps each repository held
        fleet-wide to its C(until), C(hosts) and C(since). A run merges its holds into it and drops the
        entries that have expired. Its directory is created (mode 0700) when missing and the file has mode
        0600; C(<fleet_state_path>.lock) serialises runs that write it. Neither is opened through a symbolic
        link, and neither is written when another user can write their directory (as for O(log_path)).
    type: path
    default: ~/.ansible/drover/fleet-holds.json
    ini:
      - section: callback_drover_events
        key: fleet_state_path
    env:
      - name: DROVER_EVENTS_FLEET_STATE_PATH
notes:
  - Results of check mode runs are logged and sent with C(check_mode=true) but never make a fleet-wide hold.
  - A loop's results are read item by item; an item hidden by C(no_log) is only counted.
'''

import calendar
import datetime
import json
import os
import queue
import tempfile
import threading
import time
import unicodedata
import uuid
from urllib.parse import urlsplit

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.module_utils.urls import open_url
from ansible.plugins.callback import CallbackBase
from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils.services.deploy import service_line

try:
    import fcntl
    HAS_FCNTL = True
except ImportError:  # pragma: no cover - not a POSIX controller
    HAS_FCNTL = False

PLUGIN = 'drover.fleet.events'
RETRY_PAUSE = 0.2       # seconds before the first retry of a POST, doubled for each further retry ...
RETRY_PAUSE_CAP = 2.0   # ... up to this
POLL = 0.1              # how often the webhook thread looks for the end of the run while the queue is empty
MAX_DEPTH = 16          # nesting kept when an event is copied
SLOT_STATES = ('busy', 'idle', 'free', 'starting')
ISO_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
# Unicode categories never printed as they are in a recap line or a warning: control (newline, escape...),
# format (bidirectional overrides...), surrogates, line and paragraph separators.
UNPRINTED = frozenset(('Cc', 'Cf', 'Cs', 'Zl', 'Zp'))
SHORT_ESCAPES = {'\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t'}


# --- pure helpers ---------------------------------------------------------------------------------

def iso(ts):
    """Epoch seconds as the modules write times: ISO 8601, UTC, whole seconds."""
    return datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc).strftime(ISO_FORMAT)


def parse_iso(text):
    """Epoch seconds of a time the modules wrote, or None when it is missing or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return calendar.timegm(time.strptime(text, ISO_FORMAT))
    except ValueError:
        pass
    try:
        parsed = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def escaped(text):
    """Pure: `text` with every control, format and line-separator character (and the backslash) written as
    Python writes it in a string literal (a newline as the two characters \\n): a name, reason or error
    that came from a container, a task or GitHub prints on one line and cannot forge another."""
    out = []
    for char in to_text(text):
        if char in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[char])
        elif unicodedata.category(char) in UNPRINTED:
            code = ord(char)
            out.append('\\x%02x' % code if code < 0x100 else '\\u%04x' % code if code < 0x10000 else '\\U%08x' % code)
        else:
            out.append(char)
    return ''.join(out)


def plain(value, depth=0):
    """A copy of `value` made of JSON's own types only (dict with str keys, list, str, int, float, bool, None)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth >= MAX_DEPTH:
        return to_text(value)
    if isinstance(value, dict):
        return dict((to_text(k), plain(v, depth + 1)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    return to_text(value)


def hidden(data):
    """Whether no_log hid this result (or loop item)."""
    return 'censored' in data or data.get('_ansible_no_log') is True


def parts(data):
    """The result itself and, for a loop, each item: the places events and views are read from."""
    out = [data]
    items = data.get('results')
    if isinstance(items, list):
        out.extend(item for item in items if isinstance(item, dict))
    return out


def is_drover(task):
    """Whether a task runs one of this collection's modules (a hidden result of it is counted)."""
    action = getattr(task, 'resolved_action', None) or getattr(task, 'action', None)
    return isinstance(action, str) and action.startswith('drover.fleet.')


def _views(data, one, many):
    """The mappings of one result (or loop item) under `one` (a mapping) and `many` (a list of them)."""
    found = [data[one]] if isinstance(data.get(one), dict) else []
    if isinstance(data.get(many), list):
        found.extend(data[many])
    return [v for v in found if isinstance(v, dict)]


def task_views(data):
    """The ecs_task / ecs_task_info task views of one result (or loop item)."""
    return [v for v in _views(data, 'task', 'tasks') if isinstance(v.get('name'), str)
            and isinstance(v.get('cluster'), str) and isinstance(v.get('last_status'), str)]


def pool_views(data):
    """The gh_runner_slot / gh_runner_info pool views of one result (or loop item)."""
    return [v for v in _views(data, 'pool', 'pools') if isinstance(v.get('name'), str)
            and isinstance(v.get('slots'), list)]


def service_views(data):
    """The services' views of a drover.fleet.service_placement report (each service's deployment)."""
    return [v for v in _views(data, 'service', 'services') if isinstance(v.get('name'), str)
            and isinstance(v.get('desired_count'), int) and isinstance(v.get('healthy'), int)]


def task_summary(view):
    status = view.get('last_status')
    if status == 'STOPPED' and view.get('held_until'):
        return 'held'
    return {'RUNNING': 'running', 'STOPPED': 'stopped', 'PENDING': 'pending'}.get(status, 'other')


def pool_summary(view, check_mode):
    hold = view.get('hold') if isinstance(view.get('hold'), dict) else {}
    slots = dict((state, 0) for state in SLOT_STATES)
    for slot in view['slots']:
        state = slot.get('state') if isinstance(slot, dict) else None
        if state in slots:
            slots[state] += 1
    return {'owner': view.get('owner') if isinstance(view.get('owner'), str) else None,
            'slots': slots, 'until': hold.get('until') if isinstance(hold.get('until'), str) else None,
            'cause': to_text(hold['cause']) if hold.get('cause') is not None else None,
            'check_mode': check_mode}


def ended_line(event):
    """Pure: what the recap says of an event that ends something (a task's run, a runner), as
    (kind, key, text); None for other events. The recap adds what became of a task after its stop."""
    kind = event.get('event')
    if kind == 'task.stopped':
        key = (to_text(event.get('cluster')), to_text(event.get('task')))
        return ('task', key, 'task %s/%s stopped: %s' % (key[0], key[1], to_text(event.get('reason') or '?')))
    if kind == 'runner.ended':
        took, job = event.get('took_job'), event.get('job')
        if took and job:
            how = 'job %s: %s' % (to_text(job), to_text(event.get('result') or 'no result'))
        else:
            how = 'took a job' if took else ('without a job' if took is False else 'no log')
        if event.get('runner_fault') == 'deprecated':
            how += ', runner fault: version %s deprecated' % to_text(event.get('runner_version'))
        elif event.get('runner_fault'):
            how += ', runner fault: %s' % {'error': 'an error before any job'}.get(
                event['runner_fault'], to_text(event['runner_fault']))
        if event.get('oom_killed'):
            how += ', OOM-killed'
        return ('runner', None, 'runner %s of pool %s ended (%s)' % (
            to_text(event.get('runner_name')), to_text(event.get('pool')), how))
    return None


def job_counts(events):
    """Pure: {pool: {'ended': jobs that ended with a result, 'failed': ..., 'canceled': ...}} of the
    runner.ended events given; a result other than Succeeded, Failed or Canceled counts as ended only."""
    out = {}
    for event in events:
        if event.get('event') != 'runner.ended' or not event.get('result') or not isinstance(event.get('pool'), str):
            continue
        counts = out.setdefault(event['pool'], {'ended': 0, 'failed': 0, 'canceled': 0})
        counts['ended'] += 1
        result = to_text(event['result']).lower()
        if result in ('failed', 'canceled'):
            counts[result] += 1
    return out


def jobs_line(pool, counts):
    """Pure: the recap's line of a pool whose jobs did not all succeed in this run; None when they did."""
    if not counts['failed'] and not counts['canceled']:
        return None
    return 'pool %s: jobs ended=%d failed=%d canceled=%d' % (
        pool, counts['ended'], counts['failed'], counts['canceled'])


def fleet_holds(pools_by_host, threshold, now):
    """Pure: {repository: {'hosts', 'pools', 'until'}} for each repository whose pools are held (a hold
    that ends after `now`, outside check mode) on at least `threshold` hosts; `until` is the latest end. A
    hold whose cause is `fleet` is the fleet-wide hold passed back to the host: it makes no new one."""
    if threshold is None or threshold < 1:
        return {}
    by_repo = {}
    for host, pools in pools_by_host.items():
        for name, pool in pools.items():
            until = parse_iso(pool.get('until'))
            if pool.get('check_mode') or not pool.get('owner') or until is None or until <= now \
                    or pool.get('cause') == 'fleet':
                continue
            entry = by_repo.setdefault(pool['owner'], {'hosts': set(), 'pools': set(), 'until': until})
            entry['hosts'].add(host)
            entry['pools'].add(name)
            entry['until'] = max(entry['until'], until)
    return dict((repo, {'hosts': sorted(e['hosts']), 'pools': sorted(e['pools']), 'until': iso(e['until'])})
                for repo, e in by_repo.items() if len(e['hosts']) >= threshold)


def new_holds(before, held, now):
    """Pure: the fleet holds of this run (`held`, from fleet_holds) that change those in force before it
    (`before`, the state file's): a repository held anew, until later, or on more hosts."""
    was = merge_holds(before, {}, now)
    return dict((repo, entry) for repo, entry in held.items()
                if merge_holds(was, {repo: entry}, now).get(repo) != was.get(repo))


def fleet_holds_kept(pools_by_host, before, now):
    """Pure: {repository: {'hosts': N, 'until'}} for each repository held fleet-wide before this run (in
    `before`, the state file's holds, or passed back to a host: a pool held with cause `fleet`) whose pools
    this run found held (outside check mode, not yet ended) on N hosts: the recap tells it once for the
    fleet, not once per host."""
    repos = dict((repo, parse_iso(entry['until'])) for repo, entry in merge_holds(before, {}, now).items())
    held_on = {}
    for host, pools in pools_by_host.items():
        for pool in pools.values():
            until = parse_iso(pool.get('until'))
            if pool.get('check_mode') or not pool.get('owner') or until is None or until <= now:
                continue
            held_on.setdefault(pool['owner'], set()).add(host)
            if pool.get('cause') == 'fleet':
                repos[pool['owner']] = max(repos.get(pool['owner']) or until, until)
    return dict((repo, {'hosts': len(held_on[repo]), 'until': iso(until)}) for repo, until in repos.items()
                if held_on.get(repo))


def blank_host():
    """What the recap keeps of one host: the last view of each task and pool, the events, what no_log hid,
    what ended and the pools held in this run."""
    return {'tasks': {}, 'pools': {}, 'events': 0, 'hidden': 0, 'ended': [], 'unhealthy': set(), 'held_now': set(),
            'runners_ended': []}


def host_line(name, rec):
    """Pure: the one recap line of a host: its events, its tasks, its slots and held pools, what no_log hid."""
    words = ['events=%d' % rec['events']]
    if rec['tasks']:
        counts = dict((k, 0) for k in ('running', 'stopped', 'held', 'pending', 'other'))
        for summary in rec['tasks'].values():
            counts[summary] += 1
        text = 'tasks running=%(running)d stopped=%(stopped)d held=%(held)d' % counts
        text += ''.join(' %s=%d' % (k, counts[k]) for k in ('pending', 'other') if counts[k])
        if rec['unhealthy']:
            text += ' unhealthy=%d' % len(rec['unhealthy'])
        words.append(text)
    if rec['pools']:
        slots = dict((state, 0) for state in SLOT_STATES)
        for pool in rec['pools'].values():
            for state in SLOT_STATES:
                slots[state] += pool['slots'][state]
        text = 'slots busy=%(busy)d idle=%(idle)d free=%(free)d starting=%(starting)d' % slots
        held = sum(1 for pool in rec['pools'].values() if pool['until'])
        if held:
            text += ' pools held=%d' % held
        words.append(text)
    if rec['hidden']:
        words.append('hidden by no_log=%d' % rec['hidden'])
    return '%-26s : %s' % (name, '  '.join(words))


def merge_holds(existing, held, now):
    """Pure: the state file's content after a run. Entries that have expired are dropped; a repository held
    again keeps its `since`, takes the later `until` and the union of the hosts."""
    out = {}
    for repo, entry in (existing or {}).items():
        if not isinstance(entry, dict):
            continue
        until = parse_iso(entry.get('until'))
        if until is None or until <= now:
            continue
        hosts = entry.get('hosts') if isinstance(entry.get('hosts'), list) else []
        out[to_text(repo)] = {'until': iso(until), 'hosts': sorted(set(to_text(h) for h in hosts)),
                              'since': entry.get('since') if isinstance(entry.get('since'), str) else iso(now)}
    for repo, entry in held.items():
        old = out.get(repo)
        if old is None:
            out[repo] = {'until': entry['until'], 'hosts': list(entry['hosts']), 'since': iso(now)}
            continue
        out[repo] = {'until': iso(max(parse_iso(old['until']), parse_iso(entry['until']))),
                     'hosts': sorted(set(old['hosts']) | set(entry['hosts'])), 'since': old['since']}
    return out


def where(url):
    """What may be printed of a webhook URL: scheme and host, never a path, query or user."""
    try:
        split = urlsplit(url)
        host = split.hostname or '?'
        port = ':%s' % split.port if split.port else ''
    except ValueError:
        return 'the webhook'
    return '%s://%s%s' % (split.scheme or '?', host, port)


def describe(exc):
    text = to_text(getattr(exc, 'reason', None) or exc)
    return ('%s: %s' % (exc.__class__.__name__, text))[:200]


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def ensure_dir(path):
    """The directory of `path`, made 0700 when missing; refused when another user can write it (host.files)."""
    _files.ensure_dir(os.path.dirname(os.path.abspath(path)), 0o700)


# --- the webhook --------------------------------------------------------------------------------

class Webhook:
    """Sends events to one URL, one POST each, from a background thread fed through a bounded queue.
    Counters are written by the thread and read by the main thread; nothing here prints."""

    def __init__(self, url, timeout=5.0, retries=3, queue_size=1000, max_failures=3):
        self.url = url
        self.timeout = timeout
        self.retries = max(0, retries)
        self.max_failures = max(1, max_failures)
        self.queue = queue.Queue(maxsize=max(1, queue_size))
        self.sent = 0            # events delivered
        self.failed = 0          # events not delivered after their retries
        self.dropped = 0         # events that found the queue full
        self.discarded = 0       # events not tried because the webhook was given up
        self.streak = 0          # failed events in a row
        self.last_error = None
        self.gave_up = threading.Event()
        self._closing = threading.Event()
        self._abort = threading.Event()
        self._thread = threading.Thread(target=self._work, name='drover-events-webhook')
        self._thread.daemon = True
        self._thread.start()

    def put(self, event):
        if self.gave_up.is_set() or self._closing.is_set():
            self.discarded += 1
            return
        try:
            self.queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def close(self, wait):
        """Let the thread send what is queued, for at most `wait` seconds; then give up on the rest.
        Returns how many events were left unsent."""
        self._closing.set()
        self._thread.join(max(0.0, wait))
        if self._thread.is_alive():
            self._abort.set()
            left = self.queue.qsize() + 1
            self._thread.join(POLL * 2)
            return left
        return 0

    def _work(self):
        while True:
            try:
                event = self.queue.get(timeout=POLL)
            except queue.Empty:
                if self._closing.is_set():
                    return
                continue
            if self.gave_up.is_set() or self._abort.is_set():
                self.discarded += 1
                continue
            if self._send(event):
                self.sent += 1
                self.streak = 0
                continue
            self.failed += 1
            self.streak += 1
            if self.streak >= self.max_failures:
                self.gave_up.set()

    def _send(self, event):
        body = to_bytes(json.dumps(event, sort_keys=True))
        pause = RETRY_PAUSE
        for attempt in range(self.retries + 1):
            if attempt:
                if self._abort.wait(pause):
                    return False
                pause = min(pause * 2, RETRY_PAUSE_CAP)
            try:
                response = open_url(self.url, data=body, method='POST', timeout=self.timeout,
                                    headers={'Content-Type': 'application/json'}, follow_redirects='safe')
                try:
                    response.read()
                finally:
                    response.close()
                return True
            except Exception as exc:  # pylint: disable=broad-except
                self.last_error = describe(exc)
        return False


# --- the callback -------------------------------------------------------------------------------

class CallbackModule(CallbackBase):
    """drover.fleet events: a JSON-lines log, a webhook, a fleet recap and fleet-wide holds."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'notification'
    CALLBACK_NAME = PLUGIN
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, options=None):
        self.run_id = uuid.uuid4().hex
        self.clock = time.time
        self.play = None
        self.hosts = {}              # inventory host -> blank_host()'s record
        self.services = {}           # (cluster, service) -> its last view (a placement's report)
        self.events_written = 0
        self.fleet = {}              # repository -> fleet hold of this run
        self.fleet_before = None     # the fleet holds in force before this run (the state file's), when known
        self.fleet_new = {}          # the fleet holds of this run that change them (held anew, later, on more hosts)
        self.webhook = None
        self._log_broken = False
        self._webhook_warned = False
        self._webhook_closed = False
        super(CallbackModule, self).__init__(display=display, options=options)

    # -- ansible's hooks --

    def v2_playbook_on_play_start(self, play):
        self.play = to_text(play.get_name()).strip() or None

    def v2_runner_on_ok(self, result):
        self._guarded(self._collect, result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._guarded(self._collect, result)

    def v2_playbook_on_stats(self, stats):
        self._guarded(self._finish, stats)

    # -- collecting --

    def _guarded(self, func, *args):
        """Nothing this plugin does may fail the playbook: report what went wrong as a warning. Returns what
        `func` returned, None when it failed."""
        out = None
        try:
            out = func(*args)
        except Exception as exc:  # pylint: disable=broad-except
            self._warn('%s: %s' % (PLUGIN, describe(exc)))
        self._warn_webhook()
        return out

    def _warn(self, text):
        """A warning, on one line whatever an error or a path in it holds."""
        self._display.warning(escaped(text))

    def _host(self, name):
        return self.hosts.setdefault(name, blank_host())

    def _collect(self, result):
        data = getattr(result, 'result', None)
        if data is None:  # ansible-core before 2.19
            data = result._result
        host_name = to_text((getattr(result, 'host', None) or result._host).get_name())
        task = getattr(result, 'task', None) or result._task
        if not isinstance(data, dict):
            return
        ours = is_drover(task)
        if getattr(task, 'no_log', None) is True or hidden(data):
            if ours:
                self._host(host_name)['hidden'] += 1
            return
        check_mode = getattr(task, 'check_mode', None) is True
        task_name = to_text(getattr(result, 'task_name', None) or task.get_name()).strip() or None
        events = []
        for part in parts(data):
            if part is not data and hidden(part):
                if ours:
                    self._host(host_name)['hidden'] += 1
                continue
            raw = part.get('events')
            tasks, pools = task_views(part), pool_views(part)
            for view in service_views(part):
                self.services[(to_text(view.get('cluster')), view['name'])] = view
            if not isinstance(raw, list) and not tasks and not pools:
                continue
            host = self._host(host_name)
            for view in tasks:
                key = (view['cluster'], view['name'])
                host['tasks'][key] = task_summary(view)
                if view.get('health_status') == 'UNHEALTHY':
                    host['unhealthy'].add(key)
                else:
                    host['unhealthy'].discard(key)
            for view in pools:
                host['pools'][view['name']] = pool_summary(view, check_mode)
            for entry in raw if isinstance(raw, list) else []:
                if not isinstance(entry, dict) or not isinstance(entry.get('event'), str):
                    continue
                event = plain(entry)
                event.update(host=host_name, play=self.play, ansible_task=task_name, run=self.run_id)
                if check_mode:
                    event['check_mode'] = True
                events.append(event)
                host['events'] += 1
                if not check_mode:
                    ended = ended_line(event)
                    if ended:
                        host['ended'].append(ended)
                    if event['event'] == 'runner.ended':
                        host['runners_ended'].append(event)
                    if event['event'] == 'pool.held' and isinstance(event.get('pool'), str):
                        host['held_now'].add(event['pool'])
        self._emit(events)

    # -- where events go --

    def _emit(self, events):
        if not events:
            return
        self._write_log(events)
        url = self.get_option('webhook_url')
        if not url or self._webhook_closed:
            return
        if self.webhook is None:
            self.webhook = Webhook(url, timeout=float(self.get_option('webhook_timeout')),
                                   retries=int(self.get_option('webhook_retries')),
                                   queue_size=int(self.get_option('webhook_queue_size')),
                                   max_failures=int(self.get_option('webhook_max_failures')))
        for event in events:
            self.webhook.put(event)

    def _write_log(self, events):
        path = self.get_option('log_path')
        if not path or self._log_broken:
            return
        data = to_bytes(''.join(json.dumps(e, sort_keys=True, default=to_text) + '\n' for e in events))
        try:
            ensure_dir(path)
            fd = _files.open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                try:
                    os.fchmod(fd, 0o600)
                except OSError:
                    pass  # a file someone else owns keeps its mode
                write_all(fd, data)
            finally:
                os.close(fd)
            self.events_written += len(events)
        except (OSError, IOError) as exc:
            self._log_broken = True
            self._warn('%s: cannot write the event log %s (%s); no further event is logged in this run'
                       % (PLUGIN, path, describe(exc)))

    def _warn_webhook(self):
        hook = self.webhook
        if hook is None or self._webhook_warned or not hook.gave_up.is_set():
            return
        self._webhook_warned = True
        self._warn('%s: %d events in a row could not be sent to the webhook at %s (last error: %s); '
                   'no further event is sent to it in this run'
                   % (PLUGIN, hook.streak, where(hook.url), hook.last_error))

    # -- the end of the run --

    def _finish(self, stats=None):
        now = self.clock()
        pools_by_host = dict((name, rec['pools']) for name, rec in self.hosts.items())
        self.fleet = fleet_holds(pools_by_host, int(self.get_option('fleet_hold_threshold') or 0), now)
        self.fleet_before = self._guarded(self._save_fleet_state, now)
        # Announced only when it changes what the fleet holds: a repository held anew, later or on more hosts.
        self.fleet_new = new_holds(self.fleet_before, self.fleet, now) if self.fleet_before is not None else self.fleet
        self._emit([self._fleet_event(repo, entry, now) for repo, entry in sorted(self.fleet_new.items())])
        self._close_webhook()
        self._recap(now, sorted(getattr(stats, 'processed', None) or ()))

    def _fleet_event(self, repo, entry, now):
        return {'event': 'fleet.held', 'at': iso(now), 'subject': 'repository/%s' % repo, 'repository': repo,
                'hosts': entry['hosts'], 'pools': entry['pools'], 'until': entry['until'],
                'threshold': int(self.get_option('fleet_hold_threshold')), 'run': self.run_id}

    def _save_fleet_state(self, now):
        """Merge this run's fleet holds into the state file; returns the holds it had before (its entries that
        have not ended), or None when it is unknown."""
        path = self.get_option('fleet_state_path')
        if not path:
            return None
        if not self.fleet and not os.path.exists(path):
            return {}
        ensure_dir(path)
        lock_fd = _files.open_file(path + '.lock', os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            if HAS_FCNTL:
                fcntl.flock(lock_fd, fcntl.LOCK_EX)
            existing = {}
            if os.path.exists(path):
                try:
                    with os.fdopen(_files.open_file(path, os.O_RDONLY), 'rb') as handle:
                        existing = json.loads(to_text(handle.read()))
                except (OSError, IOError, ValueError) as exc:
                    self._warn('%s: the fleet hold file %s cannot be read (%s); it is written anew'
                               % (PLUGIN, path, describe(exc)))
                    existing = None
                if not isinstance(existing, dict):
                    existing = None
            before = merge_holds(existing, {}, now) if existing is not None else None
            merged = merge_holds(existing, self.fleet, now)
            if merged == existing:
                return before
            fd, tmp = tempfile.mkstemp(prefix='.fleet-holds.', dir=os.path.dirname(path) or '.')
            try:
                os.fchmod(fd, 0o600)
                write_all(fd, to_bytes(json.dumps(merged, sort_keys=True, indent=2) + '\n'))
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.replace(tmp, path)
            except OSError:
                os.unlink(tmp)
                raise
            return before
        finally:
            os.close(lock_fd)

    def _close_webhook(self):
        self._webhook_closed = True
        hook = self.webhook
        if hook is None:
            return
        left = hook.close(float(self.get_option('webhook_drain_timeout')))
        self._warn_webhook()
        if hook.gave_up.is_set():
            return
        problems = []
        if hook.failed:
            problems.append('%d could not be sent (last error: %s)' % (hook.failed, hook.last_error))
        if hook.dropped:
            problems.append('%d found the queue full (%d events)' % (hook.dropped, hook.queue.maxsize))
        if left:
            problems.append('%d were still queued after %ss' % (left, self.get_option('webhook_drain_timeout')))
        if problems:
            self._warn('%s: of the events for the webhook at %s, %s; they were not sent'
                       % (PLUGIN, where(hook.url), '; '.join(problems)))

    def _recap(self, now=None, processed=()):
        """One line per host, and under it only what changed in this run: a task run that stopped, a runner
        that ended, a pool held in this run. A host of the play without any drover.fleet result still takes
        its one line (when there are any results at all)."""
        lines = []
        names = sorted(set(self.hosts) | set(to_text(h) for h in processed)) if self.hosts else []
        for name in names:
            rec = self.hosts.get(name) or blank_host()
            lines.append(host_line(name, rec))
            for kind, key, text in rec['ended']:
                if kind == 'task':
                    state = rec['tasks'].get(key)
                    text += {'running': ', running again', 'held': ', held back', 'stopped': ', stays stopped'}.get(
                        state, '')
                lines.append('    %s' % text)
            for pool_name, counts in sorted(job_counts(rec['runners_ended']).items()):
                line = jobs_line(pool_name, counts)
                if line:
                    lines.append('    %s' % line)
            for pool_name in sorted(rec['held_now']):
                pool = rec['pools'].get(pool_name)
                if pool and pool['until']:
                    lines.append('    pool %s (%s) held until %s%s' % (
                        pool_name, pool['owner'] or '?', pool['until'],
                        ', cause %s' % pool['cause'] if pool['cause'] else ''))
        for key in sorted(self.services):
            lines.append('service ' + service_line(self.services[key]))
        for repo in sorted(self.fleet_new):
            entry = self.fleet_new[repo]
            lines.append('fleet hold: %s on %d hosts (%s) until %s' % (
                repo, len(entry['hosts']), ', '.join(entry['hosts']), entry['until']))
        kept = fleet_holds_kept(dict((n, r['pools']) for n, r in self.hosts.items()), self.fleet_before,
                                self.clock() if now is None else now)
        for repo in sorted(set(kept) - set(self.fleet_new)):
            lines.append('held fleet-wide: %s on %d hosts until %s' % (repo, kept[repo]['hosts'], kept[repo]['until']))
        if not self.hosts:
            lines.append('no drover.fleet results in this run')
        outputs = []
        if self.get_option('log_path'):
            outputs.append('%d logged to %s' % (self.events_written, self.get_option('log_path')))
        if self.webhook is not None:
            outputs.append('%d sent to the webhook' % self.webhook.sent)
        if outputs:
            lines.append('events: %s' % ', '.join(outputs))
        self._display.banner('DROVER FLEET RECAP')
        for line in lines:
            # Names, reasons and owners come from containers, tasks and GitHub: one line each, whatever they hold.
            self._display.display(escaped(line))
