# -*- coding: utf-8 -*-
"""The drover.fleet.events callback, driven directly with task results built the way ansible-core 2.19
builds them (a real Host and Task, `_RawTaskResult.as_callback_task_result()`, which censors no_log
results), a local HTTP server for the webhook, and a private log and fleet hold file."""

from __future__ import absolute_import, division, print_function

import http.server
import json
import os
import socket
import stat
import threading
import time
import unicodedata

import pytest
import yaml

from ansible import constants as C
from ansible.executor.task_result import CallbackTaskResult, _RawTaskResult
from ansible.inventory.host import Host
from ansible.playbook.play import Play
from ansible.playbook.task import Task

from ansible_collections.drover.fleet.plugins.callback import events as plugin_mod
from sweep import look, register  # pylint: disable=wrong-import-order

SECRET = register('ghp_S3CR3T-token-never-in-output')
NOW = 1900000000          # 2030-03-17T17:46:40Z: the clock of the fleet hold tests
LOAD_NAME = 'drover.fleet.events'


class RecordingDisplay:
    """Stands in for ansible's Display: keeps what the plugin prints."""

    verbosity = 0

    def __init__(self):
        self.lines = []
        self.warnings = []

    def display(self, msg, *args, **kwargs):
        self.lines.append(msg)

    def banner(self, msg, *args, **kwargs):
        self.lines.append('BANNER ' + msg)

    def warning(self, msg, *args, **kwargs):
        self.warnings.append(msg)

    def vvvv(self, msg, *args, **kwargs):
        pass

    def text(self):
        return '\n'.join(self.lines + self.warnings)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith('DROVER_EVENTS_'):
            monkeypatch.delenv(key)
    monkeypatch.setenv('no_proxy', '127.0.0.1,localhost')
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,localhost')


@pytest.fixture
def make_plugin(tmp_path):
    """A configured plugin, as the callback loader and the TQM would make it, with a recording display."""
    if not C.config.has_configuration_definition('callback', LOAD_NAME):
        options = yaml.safe_load(plugin_mod.DOCUMENTATION)['options']
        C.config.initialize_plugin_configuration_definitions('callback', LOAD_NAME, options)
    made = []

    def make(**options):
        options.setdefault('fleet_state_path', str(tmp_path / 'controller' / 'fleet-holds.json'))
        display = RecordingDisplay()
        plugin = plugin_mod.CallbackModule(display=display)
        plugin._load_name = LOAD_NAME
        plugin.set_options(direct=options)
        plugin.v2_playbook_on_play_start(Play.load({'name': 'converge fleet', 'hosts': 'all', 'tasks': []}))
        made.append(plugin)
        return plugin, display
    yield make
    for plugin in made:  # never leave a webhook thread behind
        if plugin.webhook is not None:
            plugin.webhook.close(0)


def task_obj(name, action='drover.fleet.ecs_task', no_log=False, check_mode=False):
    task = Task()
    task.name = name
    task.action = action
    task.args = {'token': SECRET, 'store_path': '/tmp/secret-store.db'}
    if no_log:
        task.no_log = True
    if check_mode:
        task.check_mode = True
    return task


def task_result(host, data, name='converge', **kw):
    """A CallbackTaskResult as ansible-core 2.19 hands it to callbacks (no_log results censored)."""
    task = task_obj(name, **kw)
    raw = dict(data)
    raw.setdefault('invocation', {'module_args': {'token': SECRET, 'store_path': '/tmp/secret-store.db'}})
    raw.setdefault('_ansible_no_log', bool(kw.get('no_log')))
    made = _RawTaskResult(Host(host), task, raw, task.dump_attrs()).as_callback_task_result()
    assert isinstance(made, CallbackTaskResult)
    return made


def task_event(kind, task='web', cluster='prod', **extra):
    out = {'event': kind, 'at': '2030-03-17T17:40:00Z', 'cluster': cluster, 'task': task,
           'subject': 'task/%s/%s' % (cluster, task)}
    out.update(extra)
    return out


def task_view(name, status, held_until=None, cluster='prod'):
    return {'name': name, 'cluster': cluster, 'last_status': status, 'desired_status': 'RUNNING',
            'stopped_reason': None, 'started_at': None, 'stopped_at': None, 'restart': 'always', 'streak': 0,
            'held_until': held_until, 'containers': []}


def pool_result(pool, owner, states, until=None, cause=None, events=None):
    slots = [{'index': i + 1, 'state': s, 'runner_name': None, 'runner_id': None, 'container_id': None,
              'started_at': None} for i, s in enumerate(states)]
    return {'changed': bool(events), 'events': events or [], 'started': [], 'stopped': [], 'released': [],
            'orphans_deleted': [], 'queued': 0,
            'pool': {'name': pool, 'owner': owner, 'slots': slots,
                     'hold': {'until': until, 'cause': cause, 'failures': 1 if until else 0, 'idle_exits': 0}}}


def pool_held(pool, until, cause='start'):
    """The event gh_runner_slot writes when it holds a pool in this run."""
    return {'event': 'pool.held', 'at': '2030-03-17T17:40:00Z', 'pool': pool, 'subject': 'pool/%s' % pool,
            'cause': cause, 'until': until, 'failures': 1}


def read_log(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle.read().splitlines()]


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Receiver:
    """A local webhook: an HTTP server on 127.0.0.1 that keeps each JSON body it is POSTed."""

    def __init__(self, gate=None):
        self.bodies = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                if gate is not None:
                    gate.wait(30)
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length)
                look(raw, 'webhook body')
                receiver.bodies.append((self.headers.get('Content-Type'), json.loads(raw)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = 'http://127.0.0.1:%d/hooks/drover?key=%s' % (self.server.server_address[1], 'hook-secret')

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(gate=None):
        rec = Receiver(gate)
        made.append(rec)
        return rec
    yield make
    for rec in made:
        rec.close()


# --- the event log ----------------------------------------------------------------------------------

def test_events_appended_as_json_lines_with_host_play_and_task(make_plugin, tmp_path):
    log = tmp_path / 'logs' / 'sub' / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log))
    plugin.v2_runner_on_ok(task_result('web1', {
        'changed': True, 'task': task_view('web', 'RUNNING'), 'events': [task_event('task.running')]},
        name='start web'))
    plugin.v2_runner_on_ok(task_result('web2', pool_result('ci', 'acme/app', ['idle', 'free'], events=[
        {'event': 'runner.started', 'at': '2030-03-17T17:41:00Z', 'pool': 'ci', 'subject': 'pool/ci',
         'runner': 'drover-m1-small-1-1900000000'}]), name='runner pool', action='drover.fleet.gh_runner_slot'))
    plugin.v2_runner_on_ok(task_result('web1', {'changed': False, 'msg': 'not ours'}, action='ansible.builtin.ping'))

    lines = read_log(str(log))
    assert [(e['event'], e['host']) for e in lines] == [('task.running', 'web1'), ('runner.started', 'web2')]
    first = lines[0]
    assert first['play'] == 'converge fleet' and first['ansible_task'] == 'start web'
    assert first['task'] == 'web' and first['cluster'] == 'prod' and first['subject'] == 'task/prod/web'
    assert first['run'] == lines[1]['run'] == plugin.run_id
    assert lines[1]['runner'] == 'drover-m1-small-1-1900000000' and lines[1]['ansible_task'] == 'runner pool'
    assert stat.S_IMODE(os.stat(str(log)).st_mode) == 0o600
    text = log.read_text()
    assert SECRET not in text and 'module_args' not in text and 'invocation' not in text
    assert 'secret-store' not in text
    plugin.v2_playbook_on_stats(None)
    assert display.warnings == []
    assert SECRET not in display.text()
    # a second run appends
    again, _display = make_plugin(log_path=str(log))
    again.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.stopped', reason='Task stopped')]}))
    assert [e['event'] for e in read_log(str(log))] == ['task.running', 'runner.started', 'task.stopped']


def test_failed_results_give_their_events(make_plugin, tmp_path):
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log))
    plugin.v2_runner_on_failed(task_result('web1', {
        'failed': True, 'msg': 'image pull failed: %s' % SECRET, 'tasks': [task_view('web', 'STOPPED')],
        'events': [task_event('task.stopped', reason='image pull failed: not found')]}), ignore_errors=True)
    lines = read_log(str(log))
    assert [(e['event'], e['reason']) for e in lines] == [('task.stopped', 'image pull failed: not found')]
    assert SECRET not in log.read_text()


def test_no_log_results_are_counted_never_read(make_plugin, tmp_path):
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log))
    leaky = {'events': [task_event('task.running', reason=SECRET)], 'task': task_view('web', 'RUNNING')}
    censored = task_result('web1', leaky, no_log=True)
    assert 'censored' in censored.result and 'events' not in censored.result   # as ansible-core hands it over
    plugin.v2_runner_on_ok(censored)
    # a task whose no_log is set but whose result reached us uncensored is skipped all the same
    task = task_obj('converge', no_log=True)
    plugin.v2_runner_on_ok(CallbackTaskResult(Host('web1'), task, dict(leaky), task.dump_attrs()))
    # a loop: the item hidden by no_log is skipped, the other is read
    plugin.v2_runner_on_ok(task_result('web1', {'results': [
        dict(leaky, _ansible_no_log=True, invocation={'module_args': {'token': SECRET}}),
        {'events': [task_event('task.running', task='api')], 'task': task_view('api', 'RUNNING'),
         '_ansible_no_log': False, 'invocation': {'module_args': {'token': SECRET}}},
    ]}))
    lines = read_log(str(log))
    assert [(e['event'], e['task']) for e in lines] == [('task.running', 'api')]
    assert SECRET not in log.read_text()
    plugin.v2_playbook_on_stats(None)
    recap = display.text()
    assert SECRET not in recap
    assert 'hidden by no_log=3' in recap
    assert 'tasks running=1 stopped=0 held=0' in recap   # only the visible task


# --- the webhook --------------------------------------------------------------------------------------

def test_webhook_receives_each_event_as_json(make_plugin, receiver, tmp_path):
    hook = receiver()
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log), webhook_url=hook.url, webhook_timeout=5)
    for n in range(5):
        plugin.v2_runner_on_ok(task_result('web%d' % n, {'events': [task_event('task.running', task='t%d' % n)]}))
    plugin.v2_playbook_on_stats(None)
    assert display.warnings == []
    assert [ctype for ctype, body in hook.bodies] == ['application/json'] * 5
    received = sorted((b['host'], b['task']) for ctype, b in hook.bodies)
    assert received == [('web%d' % n, 't%d' % n) for n in range(5)]
    assert sorted(json.dumps(b, sort_keys=True) for ctype, b in hook.bodies) == \
        sorted(json.dumps(e, sort_keys=True) for e in read_log(str(log)))
    assert all(SECRET not in json.dumps(b) for ctype, b in hook.bodies)
    assert plugin.webhook.sent == 5
    assert '5 sent to the webhook' in display.text()


def test_refusing_webhook_warns_once_and_the_run_goes_on(make_plugin, tmp_path):
    url = 'http://127.0.0.1:%d/hook?key=hook-secret' % free_port()   # nothing listens: connection refused
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log), webhook_url=url, webhook_retries=1, webhook_timeout=2,
                                  webhook_max_failures=3)
    start = time.time()
    for n in range(12):
        plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='t%d' % n)]}))
        time.sleep(0.05)
    plugin.v2_playbook_on_stats(None)
    assert time.time() - start < 20
    assert len(display.warnings) == 1, display.warnings
    warning = display.warnings[0]
    assert 'could not be sent' in warning and 'http://127.0.0.1:' in warning
    assert 'hook-secret' not in warning and '/hook' not in warning
    assert plugin.webhook.gave_up.is_set() and plugin.webhook.sent == 0
    assert plugin.webhook.failed == 3          # it stopped trying after three failed sends
    assert len(read_log(str(log))) == 12       # the log has every event all the same
    assert any(line == 'BANNER DROVER FLEET RECAP' for line in display.lines)


def test_failures_below_the_limit_are_told_once_at_the_end(make_plugin):
    url = 'http://127.0.0.1:%d/hook' % free_port()
    plugin, display = make_plugin(webhook_url=url, webhook_retries=0, webhook_max_failures=3)
    for n in range(2):
        plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='t%d' % n)]}))
    plugin.v2_playbook_on_stats(None)
    assert not plugin.webhook.gave_up.is_set()
    assert len(display.warnings) == 1 and '2 could not be sent' in display.warnings[0], display.warnings


def test_webhook_queue_is_bounded(make_plugin, receiver, tmp_path):
    gate = threading.Event()
    hook = receiver(gate)                      # holds every POST until the gate opens
    plugin, display = make_plugin(webhook_url=hook.url, webhook_queue_size=2, webhook_drain_timeout=20)
    for n in range(10):
        plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='t%d' % n)]}))
        time.sleep(0.02)
    webhook = plugin.webhook
    assert webhook.queue.qsize() <= 2
    assert webhook.dropped >= 7                # at most one in flight and two waiting
    gate.set()
    plugin.v2_playbook_on_stats(None)
    assert webhook.sent == 10 - webhook.dropped == len(hook.bodies)
    assert len(display.warnings) == 1
    assert '%d found the queue full (2 events)' % webhook.dropped in display.warnings[0]


def test_drain_at_the_end_is_bounded(make_plugin, receiver):
    gate = threading.Event()
    hook = receiver(gate)
    plugin, display = make_plugin(webhook_url=hook.url, webhook_drain_timeout=0.5, webhook_timeout=10)
    for n in range(3):
        plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='t%d' % n)]}))
    start = time.time()
    plugin.v2_playbook_on_stats(None)
    assert time.time() - start < 3
    gate.set()
    assert len(display.warnings) == 1 and 'still queued' in display.warnings[0]


# --- the recap ------------------------------------------------------------------------------------

def test_recap_counts_tasks_slots_and_held_pools(make_plugin):
    plugin, display = make_plugin()
    plugin.clock = lambda: NOW
    plugin.v2_runner_on_ok(task_result('web1', {'tasks': [
        task_view('a', 'RUNNING'), task_view('b', 'RUNNING'), task_view('c', 'STOPPED'),
        task_view('d', 'STOPPED', held_until='2030-03-17T17:50:00Z')], 'events': []}))
    # a later result for the same task replaces the earlier one
    plugin.v2_runner_on_ok(task_result('web1', {'task': task_view('b', 'STOPPED'), 'events': []}))
    plugin.v2_runner_on_ok(task_result('web2', pool_result('ci', 'acme/app', ['busy', 'idle', 'free', 'starting']),
                                       action='drover.fleet.gh_runner_slot'))
    plugin.v2_runner_on_ok(task_result('web2', pool_result('gpu', 'acme/ml', ['free', 'free'],
                                                           until='2030-03-17T17:56:40Z', cause='start',
                                                           events=[pool_held('gpu', '2030-03-17T17:56:40Z')]),
                                       action='drover.fleet.gh_runner_slot'))
    # held since an earlier run: counted on the host's line, no line of its own (nothing changed)
    plugin.v2_runner_on_ok(task_result('web2', pool_result('old', 'acme/old', ['free'],
                                                           until='2030-03-17T17:58:00Z', cause='no job'),
                                       action='drover.fleet.gh_runner_slot'))
    plugin.v2_playbook_on_stats(None)
    lines = display.lines
    assert lines[0] == 'BANNER DROVER FLEET RECAP'
    web1 = [line for line in lines if line.startswith('web1 ')]
    web2 = [line for line in lines if line.startswith('web2 ')]
    assert len(web1) == 1 and 'tasks running=1 stopped=2 held=1' in web1[0]
    assert 'slots' not in web1[0]
    assert len(web2) == 1 and 'tasks' not in web2[0]
    assert web2[0].endswith(': events=1  slots busy=1 idle=1 free=4 starting=1 pools held=2'), web2
    assert lines[lines.index(web2[0]) + 1:] == ['    pool gpu (acme/ml) held until 2030-03-17T17:56:40Z, cause start']
    assert not any('pool ci' in line or 'pool old' in line for line in lines)
    assert not any(line.startswith('fleet hold') for line in lines)   # one host is not a fleet
    assert display.warnings == []


def test_recap_counts_unhealthy_tasks(make_plugin):
    plugin, display = make_plugin()
    plugin.clock = lambda: NOW
    sick = dict(task_view('db', 'STOPPED', '2030-03-17T17:50:00Z'), health_status='UNHEALTHY')
    plugin.v2_runner_on_ok(task_result('web1', {'tasks': [
        dict(task_view('web', 'RUNNING'), health_status='HEALTHY'), sick, dict(task_view('x', 'RUNNING'),
                                                                               health_status='UNHEALTHY')],
        'events': [task_event('task.unhealthy', task='db', containers=['pg']),
                   task_event('task.stopped', task='db', reason='Task failed container health checks')]}))
    # a later view of x that is no longer unhealthy replaces the earlier one
    plugin.v2_runner_on_ok(task_result('web1', {'task': dict(task_view('x', 'RUNNING'), health_status='UNKNOWN'),
                                                'events': []}))
    plugin.v2_runner_on_ok(task_result('web2', {'tasks': [dict(task_view('a', 'RUNNING'), health_status='HEALTHY')],
                                                'events': []}))
    plugin.v2_playbook_on_stats(None)
    lines = display.lines
    web1 = [line for line in lines if line.startswith('web1 ')]
    web2 = [line for line in lines if line.startswith('web2 ')]
    assert 'tasks running=2 stopped=0 held=1 unhealthy=1' in web1[0]
    assert 'unhealthy' not in web2[0]
    assert '    task prod/db stopped: Task failed container health checks, held back' in lines


def test_recap_says_what_ended_and_what_became_of_it(make_plugin):
    plugin, display = make_plugin()
    plugin.clock = lambda: NOW
    plugin.v2_runner_on_ok(task_result('web1', {'tasks': [
        task_view('web', 'RUNNING'), task_view('batch', 'STOPPED'), task_view('svc', 'STOPPED', '2030-03-17T17:50:00Z')],
        'events': [task_event('task.stopped', task='web', reason='container httpd exited (137)'),
                   task_event('task.running', task='web'),
                   task_event('task.stopped', task='batch', reason='container main exited (0)'),
                   task_event('task.stopped', task='svc', reason='container main exited (1)')]}))
    plugin.v2_runner_on_ok(task_result('web1', pool_result('ci', 'acme/app', ['idle'], events=[
        {'event': 'runner.ended', 'at': '2030-03-17T17:40:00Z', 'pool': 'ci', 'subject': 'pool/ci',
         'runner_name': 'drover-abc-small-1-1', 'took_job': True, 'oom_killed': False},
        {'event': 'runner.ended', 'at': '2030-03-17T17:40:00Z', 'pool': 'ci', 'subject': 'pool/ci',
         'runner_name': 'drover-abc-small-2-1', 'took_job': False, 'oom_killed': True}]),
        action='drover.fleet.gh_runner_slot'))
    # check mode reports what would happen: it ends nothing
    plugin.v2_runner_on_ok(task_result('web2', {'tasks': [task_view('x', 'STOPPED')], 'events': [
        task_event('task.stopped', task='x', reason='Task stopped')]}, check_mode=True))
    plugin.v2_playbook_on_stats(None)
    lines = display.lines
    at = lines.index([line for line in lines if line.startswith('web1 ')][0])
    assert lines[at + 1:at + 6] == [
        '    task prod/web stopped: container httpd exited (137), running again',
        '    task prod/batch stopped: container main exited (0), stays stopped',
        '    task prod/svc stopped: container main exited (1), held back',
        '    runner drover-abc-small-1-1 of pool ci ended (took a job)',
        '    runner drover-abc-small-2-1 of pool ci ended (without a job, OOM-killed)',
    ]
    assert not any('prod/x stopped' in line for line in lines)


def test_recap_and_warnings_escape_what_containers_tasks_and_github_wrote(make_plugin, tmp_path):
    # A stop reason, a runner name, an owner and a hold cause come from outside (a container's exit, GitHub):
    # a newline in one must not print a line of its own (here, a forged fleet hold), nor an escape sequence
    # reach the terminal.
    forged = 'fleet hold: acme/app on 9 hosts (a, b) until 2099-01-01T00:00:00Z'
    blocker = tmp_path / 'file'
    blocker.write_text('')
    plugin, display = make_plugin(log_path=str(blocker / ('bad\n%s' % forged) / 'events.jsonl'))
    plugin.clock = lambda: NOW
    plugin.v2_runner_on_ok(task_result('web1', {'tasks': [task_view('web', 'STOPPED')], 'events': [
        task_event('task.stopped', task='web', reason='exited (0)\n%s\r\x1b[2K\u2028\u202e' % forged)]}))
    plugin.v2_runner_on_ok(task_result('web1', pool_result(
        'ci', 'acme/app\n' + forged, ['idle'], until='2030-03-17T17:50:00Z', cause='start\nx', events=[
            {'event': 'runner.ended', 'at': '2030-03-17T17:40:00Z', 'pool': 'ci', 'subject': 'pool/ci',
             'runner_name': 'drover-1\r' + forged, 'took_job': True, 'oom_killed': False},
            pool_held('ci', '2030-03-17T17:50:00Z', cause='start\nx')]),
        action='drover.fleet.gh_runner_slot'))
    plugin.v2_playbook_on_stats(None)
    printed = display.lines + display.warnings
    assert not [line for line in printed if any(unicodedata.category(c) in ('Cc', 'Cf', 'Zl', 'Zp') for c in line)]
    assert not [line for line in printed if line.startswith('fleet hold')], printed
    assert ('    task prod/web stopped: exited (0)\\n%s\\r\\x1b[2K\\u2028\\u202e, stays stopped' % forged
            in display.lines), display.lines
    assert '    runner drover-1\\r%s of pool ci ended (took a job)' % forged in display.lines
    assert '    pool ci (acme/app\\n%s) held until 2030-03-17T17:50:00Z, cause start\\nx' % forged in display.lines
    assert len(display.warnings) == 1 and 'bad\\nfleet hold' in display.warnings[0], display.warnings
    assert plugin_mod.escaped('a\\b\tc') == 'a\\\\b\\tc'


def test_recap_at_scale_one_line_per_host_plus_what_changed(make_plugin):
    # 20 hosts (and one of the play with no drover.fleet result): each takes exactly one line; under a host
    # come only what changed in this run (a stopped task, an ended runner, a pool held now); the pools held
    # from before, or by a fleet-wide hold passed back to them, are counted on the host's line.
    from ansible.executor.stats import AggregateStats
    plugin, display = make_plugin()
    plugin.clock = lambda: NOW
    hosts = ['h%02d' % i for i in range(1, 21)]
    stats = AggregateStats()
    for host in hosts + ['h21']:
        stats.increment('ok', host)
    for host in hosts:
        events = [task_event('task.stopped', reason='container main exited (137)')] if host == 'h03' else []
        plugin.v2_runner_on_ok(task_result(host, {'tasks': [task_view('web', 'RUNNING')], 'events': events}))
        held_now, ended = host in ('h05', 'h06'), host == 'h10'
        if host < 'h05':       # not held
            pool = pool_result('ci', 'acme/other', ['idle'])
        else:                  # held in this run (h05, h06), or by the fleet-wide hold of acme/other
            pool = pool_result('ci', 'acme/app' if held_now else 'acme/other', ['free'],
                               until='2030-03-17T17:5%d:00Z' % (7 if host == 'h06' else 8),
                               cause='no job' if held_now else 'fleet')
        pool['events'] = ([pool_held('ci', pool['pool']['hold']['until'], 'no job')] if held_now else []) + (
            [{'event': 'runner.ended', 'at': '2030-03-17T17:40:00Z', 'pool': 'ci', 'subject': 'pool/ci',
              'runner_name': 'drover-h10-small-1-1', 'took_job': True, 'oom_killed': False}] if ended else [])
        plugin.v2_runner_on_ok(task_result(host, pool, action='drover.fleet.gh_runner_slot'))
    plugin.v2_playbook_on_stats(stats)
    lines = display.lines
    assert lines[0] == 'BANNER DROVER FLEET RECAP'
    under = {}
    for line in lines[1:]:
        if not line.startswith(' '):
            under.setdefault(line.split(' ')[0], [])
            last = line.split(' ')[0]
        else:
            under[last].append(line.strip())
    assert sorted(h for h in under if h.startswith('h') and h != 'held') == hosts + ['h21']
    assert dict((h, v) for h, v in under.items() if v) == {
        'h03': ['task prod/web stopped: container main exited (137), running again'],
        'h05': ['pool ci (acme/app) held until 2030-03-17T17:58:00Z, cause no job'],
        'h06': ['pool ci (acme/app) held until 2030-03-17T17:57:00Z, cause no job'],
        'h10': ['runner drover-h10-small-1-1 of pool ci ended (took a job)'],
    }
    by_host = dict((line.split(' ')[0], line) for line in lines if line.startswith('h') and not line.startswith('held'))
    assert by_host['h01'] == '%-26s : events=0  tasks running=1 stopped=0 held=0  slots busy=0 idle=1 free=0 starting=0' % 'h01'
    assert by_host['h12'].endswith(': events=0  tasks running=1 stopped=0 held=0  slots busy=0 idle=0 free=1 starting=0 '
                                   'pools held=1')
    assert by_host['h21'] == '%-26s : events=0' % 'h21'
    assert lines[-2:] == ['fleet hold: acme/app on 2 hosts (h05, h06) until 2030-03-17T17:58:00Z',
                          'held fleet-wide: acme/other on 14 hosts until 2030-03-17T17:58:00Z']
    assert len(lines) == 1 + 21 + 4 + 2


def test_recap_without_results(make_plugin):
    plugin, display = make_plugin()
    plugin.v2_playbook_on_stats(None)
    assert display.lines == ['BANNER DROVER FLEET RECAP', 'no drover.fleet results in this run']


# --- fleet-wide holds ------------------------------------------------------------------------------

def held_on(plugin, host, until, owner='acme/app', pool='ci', check_mode=False, cause='start'):
    plugin.v2_runner_on_ok(task_result(host, pool_result(pool, owner, ['free', 'free'], until=until,
                                                         cause=cause if until else None),
                                       action='drover.fleet.gh_runner_slot', check_mode=check_mode))


def test_fleet_hold_on_two_of_three_hosts(make_plugin, tmp_path, receiver):
    hook = receiver()
    log = tmp_path / 'events.jsonl'
    state = tmp_path / 'controller' / 'drover' / 'fleet-holds.json'
    plugin, display = make_plugin(log_path=str(log), fleet_state_path=str(state), webhook_url=hook.url)
    plugin.clock = lambda: NOW
    held_on(plugin, 'web1', '2030-03-17T17:47:10Z')
    held_on(plugin, 'web2', '2030-03-17T17:56:40Z')
    held_on(plugin, 'web3', None)
    held_on(plugin, 'web3', '2030-03-17T17:50:00Z', owner='acme/other', pool='other')   # one host only
    plugin.v2_playbook_on_stats(None)

    fleet = [e for e in read_log(str(log)) if e['event'] == 'fleet.held']
    assert len(fleet) == 1
    event = fleet[0]
    assert event['repository'] == 'acme/app' and event['hosts'] == ['web1', 'web2']
    assert event['until'] == '2030-03-17T17:56:40Z' and event['subject'] == 'repository/acme/app'
    assert event['at'] == '2030-03-17T17:46:40Z' and event['threshold'] == 2 and event['pools'] == ['ci']
    assert [b['event'] for ctype, b in hook.bodies] == ['fleet.held']
    saved = json.loads(state.read_text())
    assert saved == {'acme/app': {'until': '2030-03-17T17:56:40Z', 'hosts': ['web1', 'web2'],
                                  'since': '2030-03-17T17:46:40Z'}}
    assert stat.S_IMODE(os.stat(str(state)).st_mode) == 0o600
    assert 'fleet hold: acme/app on 2 hosts (web1, web2) until 2030-03-17T17:56:40Z' in display.lines
    assert display.warnings == []


def test_fleet_hold_file_merges_and_drops_expired(make_plugin, tmp_path):
    state = tmp_path / 'fleet-holds.json'
    state.write_text(json.dumps({
        'acme/app': {'until': '2030-03-17T17:50:00Z', 'hosts': ['web9'], 'since': '2030-03-17T17:30:00Z'},
        'acme/gone': {'until': '2030-03-17T17:00:00Z', 'hosts': ['web1'], 'since': '2030-03-17T16:00:00Z'},
        'acme/kept': {'until': '2030-03-17T18:00:00Z', 'hosts': ['web4'], 'since': '2030-03-17T17:00:00Z'},
    }))
    plugin, display = make_plugin(fleet_state_path=str(state), fleet_hold_threshold=2)
    plugin.clock = lambda: NOW
    held_on(plugin, 'web1', '2030-03-17T17:48:00Z')
    held_on(plugin, 'web2', '2030-03-17T17:49:00Z')
    plugin.v2_playbook_on_stats(None)
    assert json.loads(state.read_text()) == {
        'acme/app': {'until': '2030-03-17T17:50:00Z', 'hosts': ['web1', 'web2', 'web9'],
                     'since': '2030-03-17T17:30:00Z'},
        'acme/kept': {'until': '2030-03-17T18:00:00Z', 'hosts': ['web4'], 'since': '2030-03-17T17:00:00Z'},
    }


def test_no_fleet_hold_below_threshold_in_check_mode_or_expired(make_plugin, tmp_path):
    state = tmp_path / 'fleet-holds.json'
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(fleet_state_path=str(state), log_path=str(log), fleet_hold_threshold=3)
    plugin.clock = lambda: NOW
    held_on(plugin, 'web1', '2030-03-17T17:48:00Z')
    held_on(plugin, 'web2', '2030-03-17T17:48:00Z')
    held_on(plugin, 'web3', '2030-03-17T17:48:00Z', check_mode=True)   # check mode never makes a fleet hold
    held_on(plugin, 'web4', '2030-03-17T17:40:00Z')                     # ended before the run's end
    plugin.v2_playbook_on_stats(None)
    assert not state.exists()
    assert not log.exists() or [e for e in read_log(str(log)) if e['event'] == 'fleet.held'] == []
    assert plugin.fleet == {}


def test_the_fleet_hold_passed_back_to_hosts_makes_no_new_one(make_plugin, tmp_path):
    # The reconcile playbook passes a fleet-wide hold on as hold_until: the pools report it with cause
    # `fleet`. It shows in the recap, but must not announce (or prolong) a fleet-wide hold by itself.
    state = tmp_path / 'fleet-holds.json'
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(fleet_state_path=str(state), log_path=str(log), fleet_hold_threshold=2)
    plugin.clock = lambda: NOW
    for host in ('web1', 'web2', 'web3'):
        held_on(plugin, host, '2030-03-17T17:58:00Z', cause='fleet')
    plugin.v2_playbook_on_stats(None)
    assert not state.exists() and plugin.fleet == {}
    assert not log.exists() or [e for e in read_log(str(log)) if e['event'] == 'fleet.held'] == []
    # told once for the fleet, counted on each host's one line
    assert 'held fleet-wide: acme/app on 3 hosts until 2030-03-17T17:58:00Z' in display.lines
    assert not any(line.startswith(('    ', 'fleet hold')) for line in display.lines), display.lines
    assert [line for line in display.lines if line.startswith('web')] == [
        '%-26s : events=0  slots busy=0 idle=0 free=2 starting=0 pools held=1' % h for h in ('web1', 'web2', 'web3')]


def test_a_fleet_hold_in_force_is_announced_only_when_it_changes(make_plugin, tmp_path, receiver):
    # The pass after a fleet hold: the two hosts that made it are still held by their own holds, the others by
    # the fleet's. Nothing changed: no fleet.held event, no `fleet hold:` line, one line for the fleet.
    state = tmp_path / 'fleet-holds.json'
    log = tmp_path / 'events.jsonl'
    state.write_text(json.dumps({'acme/app': {'until': '2030-03-17T17:58:00Z', 'hosts': ['web1', 'web2'],
                                              'since': '2030-03-17T17:40:00Z'}}))
    written = state.read_text()
    for until, hosts, announced in (('2030-03-17T17:58:00Z', ['web1', 'web2'], False),
                                    ('2030-03-17T17:59:00Z', ['web1', 'web2'], True),     # later
                                    ('2030-03-17T17:59:00Z', ['web1', 'web3'], True)):    # on one more host
        hook = receiver()
        plugin, display = make_plugin(fleet_state_path=str(state), log_path=str(log), webhook_url=hook.url)
        plugin.clock = lambda: NOW
        for host in ('web1', 'web2', 'web3', 'web4', 'web5'):
            own = host in hosts
            held_on(plugin, host, until if own else '2030-03-17T17:58:00Z', cause='no job' if own else 'fleet')
        plugin.v2_playbook_on_stats(None)
        fleet = [e for e in (read_log(str(log)) if log.exists() else []) if e['event'] == 'fleet.held'
                 and e['run'] == plugin.run_id]
        assert [b['event'] for ctype, b in hook.bodies] == ['fleet.held'] * len(fleet)
        if not announced:
            assert fleet == [] and state.read_text() == written
            assert not any(line.startswith('fleet hold') for line in display.lines), display.lines
            assert 'held fleet-wide: acme/app on 5 hosts until 2030-03-17T17:58:00Z' in display.lines
            continue
        assert [(e['hosts'], e['until']) for e in fleet] == [(hosts, until)]
        assert 'fleet hold: acme/app on 2 hosts (%s) until %s' % (', '.join(hosts), until) in display.lines
        assert not any(line.startswith('held fleet-wide') for line in display.lines), display.lines
    assert json.loads(state.read_text()) == {'acme/app': {
        'until': '2030-03-17T17:59:00Z', 'hosts': ['web1', 'web2', 'web3'], 'since': '2030-03-17T17:40:00Z'}}


def test_threshold_zero_turns_fleet_holds_off(make_plugin, tmp_path):
    state = tmp_path / 'fleet-holds.json'
    plugin, display = make_plugin(fleet_state_path=str(state), fleet_hold_threshold=0)
    plugin.clock = lambda: NOW
    for host in ('web1', 'web2', 'web3'):
        held_on(plugin, host, '2030-03-17T17:48:00Z')
    plugin.v2_playbook_on_stats(None)
    assert not state.exists() and plugin.fleet == {}


def test_new_holds_is_pure():
    before = {'r': {'until': '2030-03-17T17:50:00Z', 'hosts': ['a', 'b'], 'since': '2030-03-17T17:40:00Z'},
              'gone': {'until': '2030-03-17T17:00:00Z', 'hosts': ['a', 'b'], 'since': '2030-03-17T16:40:00Z'}}
    same = {'until': '2030-03-17T17:50:00Z', 'hosts': ['a'], 'pools': ['ci']}
    held = {'r': same, 'gone': same, 'new': same}
    assert plugin_mod.new_holds(before, held, NOW) == {'gone': same, 'new': same}
    assert plugin_mod.new_holds(None, held, NOW) == held


def test_merge_holds_is_pure():
    held = {'r': {'until': '2030-03-17T17:50:00Z', 'hosts': ['a', 'b'], 'pools': ['ci']}}
    assert plugin_mod.merge_holds({}, held, NOW) == {
        'r': {'until': '2030-03-17T17:50:00Z', 'hosts': ['a', 'b'], 'since': '2030-03-17T17:46:40Z'}}
    assert plugin_mod.merge_holds({'x': 'junk', 'y': {'until': 'never'}}, {}, NOW) == {}


# --- robustness ----------------------------------------------------------------------------------

def test_unwritable_log_warns_once_and_never_fails(make_plugin, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    plugin, display = make_plugin(log_path=str(blocker / 'events.jsonl'))   # a file where a directory must be
    for n in range(3):
        plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='t%d' % n)]}))
    plugin.v2_playbook_on_stats(None)
    assert len(display.warnings) == 1 and 'cannot write the event log' in display.warnings[0]
    assert 'BANNER DROVER FLEET RECAP' in display.lines


def test_a_link_at_the_log_or_the_fleet_state_is_refused(make_plugin, tmp_path):
    """The event log, the fleet hold file and its lock are never opened through a symbolic link: a file of
    another's keeps its mode and text."""
    victim = tmp_path / 'theirs'
    victim.write_text('not yours\n')
    os.chmod(str(victim), 0o644)
    logs = tmp_path / 'logs'
    logs.mkdir(mode=0o700)
    os.symlink(str(victim), str(logs / 'events.jsonl'))
    os.symlink(str(victim), str(logs / 'fleet-holds.json.lock'))
    plugin, display = make_plugin(log_path=str(logs / 'events.jsonl'), fleet_state_path=str(logs / 'fleet-holds.json'),
                                  fleet_hold_threshold=2)
    plugin.clock = lambda: NOW
    plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running')]}))
    held_on(plugin, 'web1', '2030-03-17T17:48:00Z')
    held_on(plugin, 'web2', '2030-03-17T17:49:00Z')
    plugin.v2_playbook_on_stats(None)
    assert stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o644 and victim.read_text() == 'not yours\n'
    assert any('cannot write the event log' in w and 'symbolic link' in w for w in display.warnings), display.warnings
    assert any('fleet-holds.json.lock is a symbolic link' in w for w in display.warnings), display.warnings
    assert not (logs / 'fleet-holds.json').exists()


def test_a_log_directory_others_can_write_is_refused(make_plugin, tmp_path):
    logs = tmp_path / 'logs'
    logs.mkdir()
    os.chmod(str(logs), 0o777)
    plugin, display = make_plugin(log_path=str(logs / 'events.jsonl'))
    plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running')]}))
    plugin.v2_playbook_on_stats(None)
    assert len(display.warnings) == 1 and 'writable by another user' in display.warnings[0], display.warnings
    assert os.listdir(str(logs)) == []


def test_options_come_from_the_environment(make_plugin, monkeypatch, tmp_path):
    monkeypatch.setenv('DROVER_EVENTS_LOG_PATH', str(tmp_path / 'env.jsonl'))
    monkeypatch.setenv('DROVER_EVENTS_FLEET_HOLD_THRESHOLD', '5')
    plugin, display = make_plugin()
    assert plugin.get_option('log_path') == str(tmp_path / 'env.jsonl')
    assert plugin.get_option('fleet_hold_threshold') == 5
    assert plugin.get_option('webhook_timeout') == 5
    assert plugin.get_option('webhook_retries') == 3
    assert plugin.get_option('webhook_queue_size') == 1000
    assert plugin.get_option('webhook_max_failures') == 3
    assert plugin.get_option('webhook_url') is None


def test_plugin_declares_itself_a_notification_callback():
    doc = yaml.safe_load(plugin_mod.DOCUMENTATION)
    assert doc['name'] == 'events' and doc['type'] == 'notification'
    cls = plugin_mod.CallbackModule
    assert cls.CALLBACK_TYPE == 'notification' and cls.CALLBACK_NEEDS_ENABLED is True
    assert cls.CALLBACK_VERSION == 2.0
    for name, option in doc['options'].items():
        assert option['ini'] == [{'section': 'callback_drover_events', 'key': name}]
        assert option['env'] == [{'name': 'DROVER_EVENTS_%s' % name.upper()}]


def test_check_mode_events_are_marked(make_plugin, tmp_path):
    log = tmp_path / 'events.jsonl'
    plugin, display = make_plugin(log_path=str(log))
    plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running')]}, check_mode=True))
    plugin.v2_runner_on_ok(task_result('web1', {'events': [task_event('task.running', task='api')]}))
    assert [(e['task'], e.get('check_mode')) for e in read_log(str(log))] == [('web', True), ('api', None)]


def test_recap_names_each_job_s_result_runner_faults_and_counts_failed_jobs_per_pool(make_plugin):
    def ended(name, **kw):
        out = {'event': 'runner.ended', 'at': '2030-03-17T17:40:00Z', 'pool': kw.pop('pool', 'ci'),
               'subject': 'pool/ci', 'runner_name': name, 'took_job': True, 'oom_killed': False}
        out.update(kw)
        return out
    plugin, display = make_plugin()
    plugin.clock = lambda: NOW
    plugin.v2_runner_on_ok(task_result('web1', pool_result('ci', 'acme/app', ['free'], events=[
        ended('r1', job='build', result='Succeeded'),
        ended('r2', job='test (3.11)', result='Failed'),
        ended('r3', job='lint', result='Canceled', runner_fault='deprecated', runner_version='2.316.1'),
        ended('r4', took_job=False, runner_fault='error'),
        ended('r5', pool='gpu', job='train', result='Succeeded')]), action='drover.fleet.gh_runner_slot'))
    plugin.v2_playbook_on_stats(None)
    lines = display.lines
    at = lines.index([line for line in lines if line.startswith('web1 ')][0])
    assert lines[at + 1:at + 7] == [
        '    runner r1 of pool ci ended (job build: Succeeded)',
        '    runner r2 of pool ci ended (job test (3.11): Failed)',
        '    runner r3 of pool ci ended (job lint: Canceled, runner fault: version 2.316.1 deprecated)',
        '    runner r4 of pool ci ended (without a job, runner fault: an error before any job)',
        '    runner r5 of pool gpu ended (job train: Succeeded)',
        '    pool ci: jobs ended=3 failed=1 canceled=1',     # pool gpu: every job succeeded, no line
    ], lines


def test_job_counts_only_count_runners_that_reported_a_result():
    events = [{'event': 'runner.ended', 'pool': 'ci', 'result': r} for r in ('Succeeded', 'Failed', 'Failed', None)]
    events.append({'event': 'runner.started', 'pool': 'ci', 'result': 'Failed'})
    assert plugin_mod.job_counts(events) == {'ci': {'ended': 3, 'failed': 2, 'canceled': 0}}
    assert plugin_mod.jobs_line('ci', {'ended': 2, 'failed': 0, 'canceled': 0}) is None


def test_recap_tells_each_service_as_the_last_placement_found_it(make_plugin, tmp_path):
    plugin, display = make_plugin(log_path=str(tmp_path / 'events.jsonl'))
    plugin.clock = lambda: NOW
    view = {'name': 'web', 'cluster': 'prod', 'desired_count': 9, 'healthy': 5, 'revision': 7,
            'declared_revision': 7, 'deployment': 'in_progress'}
    started = {'event': 'service.deployment.started', 'at': '2030-03-17T17:00:00Z', 'cluster': 'prod',
               'service': 'web', 'subject': 'service/prod/web', 'revision': 7, 'desired_count': 9}
    plugin.v2_runner_on_ok(task_result('web1', {'services': [view], 'events': [started]}))
    plugin.v2_runner_on_ok(task_result('web1', {'services': [dict(view, healthy=9, deployment='completed')],
                                                'events': []}))
    plugin.v2_runner_on_ok(task_result('web1', {'services': [dict(view, name='api', healthy=2, desired_count=2,
                                                                  revision=3, declared_revision=4,
                                                                  deployment='rolled_back')]}))
    plugin.v2_playbook_on_stats(None)
    assert 'service web: 9/9 healthy, revision 7' in display.lines
    assert 'service api: 2/2 healthy, revision 3, rolled back: revision 4 failed' in display.lines
    logged = [json.loads(line) for line in (tmp_path / 'events.jsonl').read_text().splitlines()]
    assert [(e['event'], e['subject'], e['host']) for e in logged] == [
        ('service.deployment.started', 'service/prod/web', 'web1')]
