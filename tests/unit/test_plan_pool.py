# -*- coding: utf-8 -*-
"""The runner-pool decider: holds and backoff exactly as behaviour.md says, and the plan of a pass."""

from __future__ import absolute_import, division, print_function

import calendar
import os
import re
import stat
import threading
import time

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.pools import plan as p
from ansible_collections.drover.fleet.plugins.module_utils.pools import spec as p_spec
from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import pool_spec, runner_name

T0 = 1_800_000_000.0


def spec(**kw):
    params = {'pool': 'ci', 'repository': 'o/r', 'labels': ['self-hosted', 'linux'], 'token': 't',
              'profile': {'name': 'small', 'image': 'drover.local/runner:1', 'slots': 4}}
    params.update(kw)
    return pool_spec(params, 'abc123')


def kinds(events):
    return [e['event'] for e in events]


def test_backoff_sequence_of_early_failures():
    state, now, holds = p.fresh_state(), T0, []
    while len(holds) < 8:
        state, events = p.ended(state, 'ci', False, 10, now)
        assert kinds(events)[-1] == 'pool.held'
        holds.append(state['hold_until'] - now)
        now = state['hold_until'] + 1
    assert holds == [30, 60, 120, 240, 480, 600, 600, 600]
    assert state['failures'] == 8


def test_runner_failed_once_per_streak_and_holds_not_lengthened():
    state, events = p.ended(p.fresh_state(), 'ci', False, 5, T0)
    assert kinds(events) == ['runner.failed', 'pool.held']
    assert events[0]['cause'] == 'no job' and events[0]['held_for'] == 30
    during, events = p.ended(state, 'ci', False, 5, T0 + 10)
    assert events == [] and during == state
    later, events = p.ended(state, 'ci', False, 5, T0 + 31)
    assert kinds(events) == ['pool.held'] and later['failures'] == 2 and later['hold_until'] == T0 + 31 + 60


def test_took_job_resets_everything():
    state = p.ended(p.fresh_state(), 'ci', False, 5, T0)[0]
    state['idle_exits'] = 1
    state, events = p.ended(state, 'ci', True, 5, T0 + 1)
    assert state == {'failures': 0, 'idle_exits': 0, 'hold_until': None, 'hold_cause': None}
    assert kinds(events) == ['pool.released']


def test_idle_exits():
    state = dict(p.fresh_state(), failures=3)
    state, events = p.ended(state, 'ci', False, 300, T0)
    assert (state['idle_exits'], state['failures'], state['hold_until'], events) == (1, 0, None, [])
    state, events = p.ended(state, 'ci', False, 400, T0 + 500)
    assert state['idle_exits'] == 2 and state['hold_cause'] == 'idle exits' and state['hold_until'] == T0 + 530
    assert kinds(events) == ['runner.failed', 'pool.held']


def test_unknown_counts_neither_way():
    state = dict(p.fresh_state(), failures=2, idle_exits=1)
    assert p.ended(state, 'ci', None, 5, T0) == (state, [])


@pytest.mark.parametrize('logs,took', [('', None), (None, None), ('Listening for Jobs\n', False),
                                       ('Listening for Jobs\nRunning job: build\n', True)])
def test_took_job(logs, took):
    assert p.took_job(logs) is took


@pytest.mark.parametrize('job,pool,ok', [(['self-hosted', 'linux'], ['linux'], True), (['gpu'], ['linux'], False),
                                         (['Linux'], ['linux', 'x64'], True), ([], ['linux'], True)])
def test_matching(job, pool, ok):
    assert p.matches(job, pool) is ok


def occ(idx_started):
    return dict((i, {'runner_id': 100 + i, 'started_at': started}) for i, started in idx_started.items())


def test_plan_queued_plus_warm_minus_idle():
    s = spec(warm=1)
    assert p.plan(s, {}, set(), 0, p.fresh_state(), T0).start == [0]
    assert p.plan(s, {}, set(), 2, p.fresh_state(), T0).start == [0, 1, 2]
    assert p.plan(s, {}, set(), 10, p.fresh_state(), T0).start == [0, 1, 2, 3]
    # one idle runner already covers the warm one
    assert p.plan(s, occ({0: T0}), set(), 0, p.fresh_state(), T0 + 5).start == []
    # a busy runner does not count as idle
    assert p.plan(s, occ({0: T0}), {100}, 1, p.fresh_state(), T0 + 5).start == [1, 2]


def test_surplus_idle_stops_only_after_idle_timeout():
    s = spec(warm=0)
    young = p.plan(s, occ({0: T0, 1: T0}), set(), 0, p.fresh_state(), T0 + 299)
    assert young.stop == [] and young.start == []
    old = p.plan(s, occ({0: T0, 1: T0 + 100}), set(), 1, p.fresh_state(), T0 + 450)
    assert old.stop == [0]


def test_held_pool_starts_nothing_but_stops_surplus():
    state = p.hold(p.fresh_state(), 'ci', 'no job', T0)[0]
    out = p.plan(spec(warm=0), occ({0: T0 - 1000}), set(), 3, state, T0 + 1)
    assert out.start == [] and 'held until' in out.reason
    out = p.plan(spec(warm=0), occ({0: T0 - 1000}), set(), 0, state, T0 + 1)
    assert out.stop == [0]


def test_fixed_scale_fills_every_slot_and_stops_none():
    out = p.plan(spec(scale='fixed'), occ({1: T0 - 1000}), set(), 0, p.fresh_state(), T0)
    assert out.start == [0, 2, 3] and out.stop == []


def test_unread_listing_decides_nothing():
    out = p.plan(spec(), occ({0: T0 - 1000}), set(), None, p.fresh_state(), T0)
    assert (out.start, out.stop) == ([], []) and 'could not be read' in out.reason


def test_absent_drains_or_kills():
    s = spec(state='absent')
    out = p.plan(s, occ({0: T0, 1: T0}), {101}, 0, p.fresh_state(), T0)
    assert out.stop == [0] and out.kill == [] and out.start == []
    out = p.plan(spec(state='absent', kill_busy=True), occ({0: T0, 1: T0}), {101}, 0, p.fresh_state(), T0)
    assert out.kill == [0, 1] and out.stop == []


def test_runner_name():
    assert runner_name(spec(), 1, T0 + 0.7) == 'drover-abc123-small-2-1800000000'


@pytest.mark.parametrize('kw,words', [
    ({'labels': []}, ('labels',)), ({'profile': {'name': 'x', 'image': 'i', 'slots': 0}}, ('slots',)),
    ({'repository': 'noowner'}, ('owner/name',)), ({'organization': 'org'}, ('mutually exclusive',)),
    ({'profile': {'name': 'x', 'image': 'i', 'slots': 1, 'memory': 2}}, ('memory', 'at least 6')),
    ({'app_id': 1, 'app_private_key': '-----BEGIN x', 'installation_id': 2}, ('token', 'App', 'mutually exclusive')),
    ({'token': None}, ('auth',)), ({'warm': -1}, ('warm',)), ({'name_prefix': 'a-b'}, ('name_prefix',)),
])
def test_bad_pools(kw, words):
    from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
    with pytest.raises(SpecError) as err:
        spec(**kw)
    assert all(w in str(err.value) for w in words), str(err.value)


# --- holds from outside the host (hold_until) and many pools in one call (pools) --------------------------

def test_hold_until_starts_nothing_until_it_ends():
    until = '2027-01-15T08:00:00Z'
    held = spec(hold_until=until, scale='fixed')
    assert held.hold_until == T0
    before = p.plan(held, {}, set(), 0, p.fresh_state(), held.hold_until - 1)
    assert before.start == [] and before.reason == 'held until %s (fleet)' % until
    after = p.plan(held, {}, set(), 0, p.fresh_state(), held.hold_until)
    assert after.start == [0, 1, 2, 3] and after.reason is None


def test_hold_view_reports_the_later_hold_and_keeps_the_streaks():
    own = dict(p.fresh_state(), failures=2, hold_until=T0 + 60, hold_cause=p.CAUSE_NO_JOB)
    later = spec(hold_until=p.iso(T0 + 600))
    assert p.hold_view(own, later, T0) == {'until': p.iso(T0 + 600), 'cause': 'fleet', 'failures': 2, 'idle_exits': 0}
    earlier = spec(hold_until=p.iso(T0 + 10))
    assert p.hold_view(own, earlier, T0) == {'until': p.iso(T0 + 60), 'cause': 'no job', 'failures': 2,
                                             'idle_exits': 0}
    assert p.hold_view(p.fresh_state(), spec(), T0)['until'] is None
    # A fleet hold that ended holds nothing; the pool's own streak is untouched by it.
    gone = p.plan(spec(hold_until=p.iso(T0 - 1)), {}, set(), 0, p.fresh_state(), T0)
    assert gone.start == [0] and gone.reason is None


@pytest.mark.parametrize('value', ['2027-01-15', '2027-01-15T08:00:00+01:00', 'tomorrow', 17])
def test_hold_until_must_be_a_utc_time(value):
    from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
    with pytest.raises(SpecError) as err:
        spec(hold_until=value)
    assert 'hold_until must be a UTC time written YYYY-MM-DDTHH:MM:SSZ' in str(err.value)


def test_declarations_merge_each_entry_over_the_call():
    from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import declarations
    call = {'pool': None, 'token': 't', 'labels': ['self-hosted'], 'warm': 1, 'state': 'present',
            'purge': True, 'pools': [{'pool': 'a', 'repository': 'o/a'},
                                     {'pool': 'b', 'organization': 'o', 'warm': 0, 'labels': None}]}
    (wa, a), (wb, b) = declarations(call)
    assert (wa, wb) == ('pools[0] (pool a)', 'pools[1] (pool b)')
    assert (a['pool'], a['repository'], a['warm'], a['token'], a['labels']) == ('a', 'o/a', 1, 't', ['self-hosted'])
    # None in an entry means "not given": the call's value stays.
    assert (b['pool'], b['organization'], b['warm'], b['labels']) == ('b', 'o', 0, ['self-hosted'])
    assert 'pools' not in a and 'purge' not in a
    assert declarations({'pool': 'x', 'pools': None}) == [('', {'pool': 'x', 'pools': None})]


@pytest.mark.parametrize('call,words', [
    ({'pool': 'x', 'pools': []}, ('pool and pools are mutually exclusive',)),
    ({'pools': [{'pool': 'a'}, {'pool': 'a'}]}, ('pools[1] (pool a): the pool is declared more than once',)),
    ({'pools': [{'pool': 'a', 'colour': 'red'}]}, ('pools[0]', 'unsupported keys: colour')),
    ({'pools': ['a']}, ('pools[0] must be a mapping',)),
])
def test_bad_declarations(call, words):
    from ansible_collections.drover.fleet.plugins.module_utils.pools.spec import declarations
    from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
    with pytest.raises(SpecError) as err:
        declarations(call)
    assert all(w in str(err.value) for w in words), str(err.value)


# --- GitHub names, machine IDs and this host's runners -------------------------------------------------------

@pytest.mark.parametrize('kw,words', [
    ({'repository': 'octo/..'}, ('repository', 'GitHub names', "'octo/..'")),
    ({'repository': 'octo/.'}, ('repository',)),
    ({'repository': '../r'}, ('repository',)),
    ({'repository': 'octo/app\n'}, ('repository',)),
    ({'repository': 'octo\n/app'}, ('repository',)),
    ({'repository': '-octo/app'}, ('repository',)),
    ({'repository': 'octo-/app'}, ('repository',)),
    ({'repository': 'oc--to/app'}, ('repository',)),
    ({'repository': '%s/app' % ('o' * 40)}, ('repository',)),
    ({'repository': 'octo/%s' % ('r' * 101)}, ('repository',)),
    ({'repository': 'octo/a b'}, ('repository',)),
    ({'repository': None, 'organization': 'octo\n'}, ('organization',)),
    ({'repository': None, 'organization': 'oc--to'}, ('organization',)),
    ({'repository': None, 'organization': 'octo-'}, ('organization',)),
    ({'repository': None, 'organization': 'o' * 40}, ('organization',)),
    ({'name_prefix': 'drover\n'}, ('name_prefix',)),
    ({'profile': {'name': 'small\n', 'image': 'drover.local/runner:1', 'slots': 1}}, ('profile.name',)),
    ({'profile': {'name': 'small', 'image': 'drover.local/runner:1\n', 'slots': 1}}, ('profile.image',)),
    ({'pool': 'ci\n'}, ('pool',)),
    ({'api_url': 'http://127.0.0.1:9\nX: y'}, ('api_url',)),
    ({'profile': {'name': 'small', 'image': 'drover.local/runner:1', 'slots': 1,
                  'environment': {'BIG': 'x' * 70000}}}, ('profile.environment', 'at most 65536')),
])
def test_bad_names_and_bounds(kw, words):
    from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
    with pytest.raises(SpecError) as err:
        spec(**kw)
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize('repository', ['octo/app', 'o/r', 'octo-org/my.app_2-x', 'a1-b2-c3/.github',
                                        '%s/%s' % ('o' * 39, 'r' * 100)])
def test_good_repository_names(repository):
    assert spec(repository=repository).repository == repository


@pytest.mark.parametrize('mid', ['web-2', '-web', 'web\n', '', 'a/b', 'w' * 65])
def test_bad_machine_id_refused(mid):
    from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError
    params = {'pool': 'ci', 'repository': 'o/r', 'labels': ['self-hosted'], 'token': 't',
              'profile': {'name': 'small', 'image': 'drover.local/runner:1', 'slots': 1}}
    with pytest.raises(SpecError) as err:
        pool_spec(params, mid)
    assert 'machine_id' in str(err.value), str(err.value)


def test_default_machine_id_from_a_host_name_has_no_dash(tmp_path, monkeypatch):
    from ansible_collections.drover.fleet.plugins.module_utils.pools import apply as ap
    (tmp_path / 'machine-id').write_text('0123456789abcdef0123456789abcdef\n')
    assert ap.machine_id(str(tmp_path / 'machine-id')) == '0123456789ab'
    monkeypatch.setattr(ap.os, 'uname', lambda: ('Linux', 'web-2.example', '', '', ''))
    assert ap.machine_id(str(tmp_path / 'none')) == 'web_2.exampl'


class _Store:
    def pool(self, name):
        return None

    def slots(self, name):
        return {}

    def all_slots(self):
        return []


class _GitHub:
    def __init__(self, runners):
        self.listed = runners
        self.deleted = []

    def runners(self):
        return self.listed

    def delete_runner(self, runner_id):
        self.deleted.append(runner_id)
        return True


def _pass(machine, runners, jit_dir='/nonexistent', profile='small'):
    from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import PoolPass
    params = {'pool': 'ci', 'repository': 'o/r', 'labels': ['self-hosted'], 'token': 't',
              'profile': {'name': profile, 'image': 'drover.local/runner:1', 'slots': 2}}
    gh = _GitHub(runners)
    work = PoolPass(pool_spec(params, machine), None, _Store(), gh, False, T0, jit_dir, [])
    work.occupants()
    return work, gh


def test_host_web_does_not_delete_the_runners_of_host_web_2(tmp_path, monkeypatch):
    """Two hosts without /etc/machine-id, named web and web-2, serve one repository: each one's orphan cleanup
    deletes its own orphans only."""
    from ansible_collections.drover.fleet.plugins.module_utils.pools import apply as ap
    ids = {}
    for host in ('web', 'web-2', 'web2'):
        monkeypatch.setattr(ap.os, 'uname', lambda host=host: ('Linux', host, '', '', ''))
        ids[host] = ap.machine_id(str(tmp_path / 'none'))
    params = {'pool': 'ci', 'repository': 'o/r', 'labels': ['self-hosted'], 'token': 't',
              'profile': {'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2}}
    names = [runner_name(pool_spec(params, ids[host]), 0, T0) for host in ('web', 'web-2', 'web2')]
    names += ['%s-%s-small-1' % ('drover', ids['web']),          # not a name drover makes
              'other-%s-small-1-1800000000' % ids['web']]        # another prefix
    runners = [{'id': i, 'name': name, 'busy': False, 'status': 'online'} for i, name in enumerate(names, start=1)]
    work, gh = _pass(ids['web'], runners)
    work.list_runners({})
    assert gh.deleted == [1] and work.orphans_deleted == [names[0]]
    work, gh = _pass(ids['web-2'], runners)
    work.list_runners({})
    assert gh.deleted == [2] and work.orphans_deleted == [names[1]]


def test_a_profile_sweeps_only_its_own_jit_files(tmp_path):
    names = ['drover-web-small-1-1800000000', 'drover-web-small-2-1800000000', 'drover-web-small-x-1-1800000000',
             'drover-web-2-small-1-1800000000', 'drover-webx-small-1-1800000000']
    for name in names:
        (tmp_path / name).write_text('jit')
    work, dummy = _pass('web', [], jit_dir=str(tmp_path))
    work.sweep_jit_files({0: {'runner_name': 'drover-web-small-1-1800000000'}})
    # only the second file: the first is held, the others are profile small-x's and other hosts'
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n for n in names if n != names[1])


class _Engine:
    def __init__(self):
        self.made = []

    def create(self, name, image, labels, **kw):
        self.made.append((name, kw['binds']))
        return 'cid-%s' % name

    def start(self, cid):
        pass

    def image_present(self, ref):
        return True

    def image_user(self, ref):
        return ''                       # root: the JIT config stays root's


def test_a_link_at_a_jit_config_path_is_not_followed(tmp_path):
    """The JIT config is written anew, never through a link left in its place: a file of another's keeps its
    mode and text; the config is a regular file of mode 0400."""
    victim = tmp_path / 'theirs'
    victim.write_text('not yours\n')
    os.chmod(str(victim), 0o644)
    jit = tmp_path / 'jit'
    jit.mkdir(mode=0o700)
    work, gh = _pass('web', [], jit_dir=str(jit))
    gh.register = lambda name, group, labels, folder: (7, 'JITCONFIG')
    work.engine = _Engine()
    name = runner_name(work.spec, 0, T0)
    os.symlink(str(victim), str(jit / name))
    occupants = {}
    assert work.start(occupants, 0) and occupants[0]['runner_name'] == name
    assert stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o644 and victim.read_text() == 'not yours\n'
    made = os.lstat(str(jit / name))
    assert stat.S_ISREG(made.st_mode) and stat.S_IMODE(made.st_mode) == 0o400
    assert (jit / name).read_text() == 'JITCONFIG'


def test_a_jit_directory_others_can_write_starts_no_runner(tmp_path):
    jit = tmp_path / 'jit'
    jit.mkdir()
    os.chmod(str(jit), 0o777)
    work, gh = _pass('web', [], jit_dir=str(jit))
    gh.register = lambda name, group, labels, folder: (7, 'JITCONFIG')
    work.engine = _Engine()
    assert not work.start({}, 0)
    assert work.engine.made == [] and os.listdir(str(jit)) == [] and gh.deleted == [7]
    assert any('writable by another user' in w for w in work.warnings), work.warnings


class _Rendezvous(_Engine):
    """An engine whose starts wait for each other: a pass that started its runners one by one never gets past
    the first (the barrier breaks); `fail` names runners whose start fails."""

    def __init__(self, parties, fail=()):
        _Engine.__init__(self)
        self.barrier = threading.Barrier(parties, timeout=10)
        self.fail = fail
        self.removed = []

    def start(self, cid):
        self.barrier.wait()
        if any(cid.endswith(name) for name in self.fail):
            from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
            raise EngineError('no room')

    def remove(self, cid):
        self.removed.append(cid)


def _burst(tmp_path, engine):
    jit = tmp_path / 'jit'
    jit.mkdir(mode=0o700)
    work, gh = _pass('web', [], jit_dir=str(jit))
    ids = iter(range(7, 100))
    gh.register = lambda name, group, labels, folder: (next(ids), 'JIT-%s' % name)
    work.engine = engine
    return work, gh, jit


def test_a_burst_of_runners_is_started_together(tmp_path):
    """Registrations one by one, then the containers of a pass's runners created and started at once."""
    work, gh, jit = _burst(tmp_path, _Rendezvous(2))
    occupants = {}
    assert work.start_many(occupants, [0, 1])
    assert sorted(occupants) == [0, 1] and [o['runner_id'] for o in (occupants[0], occupants[1])] == [7, 8]
    assert work.started == [occupants[0]['runner_name'], occupants[1]['runner_name']]
    assert sorted(os.listdir(str(jit))) == sorted(work.started) and gh.deleted == []


def test_a_runner_that_cannot_start_in_a_burst_leaves_the_others(tmp_path):
    name = runner_name(_pass('web', [])[0].spec, 1, T0)
    work, gh, jit = _burst(tmp_path, _Rendezvous(2, fail=(name,)))
    occupants = {}
    assert not work.start_many(occupants, [0, 1])
    assert sorted(occupants) == [0] and work.started == [occupants[0]['runner_name']]
    assert gh.deleted == [8] and os.listdir(str(jit)) == [occupants[0]['runner_name']]
    assert work.engine.removed == ['cid-%s' % name]
    assert work.state['hold_cause'] == 'start' and any('no room' in w for w in work.warnings), work.warnings


# Real runners' logs (actions/runner issues 3366 and 3658, and the runner's own lines).
DEPRECATED_AFTER_JOB = """\u221a Connected to GitHub
Current runner version: '2.316.1'
2024-06-27 15:51:23Z: Listening for Jobs
2024-06-27 15:51:26Z: Running job: test
2024-06-27 15:51:32Z: Job test completed with result: Canceled
An error occured: Error: Forbidden Runner version v2.316.1 is deprecated and cannot receive messages.
Runner listener exit with terminated error, stop the service, no retry needed.
Exiting runner...
"""
DEPRECATED_BEFORE_JOB = """\u221a Connected to GitHub
Current runner version: '2.310.0'
Listening for Jobs
An error occured: Runner version v2.310.0 is deprecated and cannot receive messages.
Runner listener exit with terminated error, stop the service, no retry needed.
"""
SUCCEEDED = """Current runner version: '2.999.0-drover'
2026-12-02 14:56:28Z: Listening for Jobs
2026-12-02 14:56:29Z: Running job: build (3.11)
2026-12-02 14:56:30Z: Job build (3.11) completed with result: Succeeded
"""
FAILED = SUCCEEDED.replace('Succeeded', 'Failed')
ERROR_FIRST = 'An error occurred: the runner exited before connecting (DROVER_RUNNER_MODE=exit-now)\n'
ERROR_IN_JOB = SUCCEEDED + 'An error occurred: Not configured. Run config.(sh/cmd) to configure the runner.\n'
ERROR_THEN_JOB = 'An error occurred: the connection was reset, retrying\n' + SUCCEEDED


@pytest.mark.parametrize('logs,read,cause', [
    (DEPRECATED_AFTER_JOB, {'took': True, 'job': 'test', 'result': 'Canceled', 'fault': 'deprecated',
                            'version': '2.316.1'}, 'runner fault: version 2.316.1 deprecated'),
    (DEPRECATED_BEFORE_JOB, {'took': False, 'job': None, 'result': None, 'fault': 'deprecated', 'version': '2.310.0'},
     'runner fault: version 2.310.0 deprecated'),
    (SUCCEEDED, {'took': True, 'job': 'build (3.11)', 'result': 'Succeeded', 'fault': None, 'version': None}, None),
    (FAILED, {'took': True, 'job': 'build (3.11)', 'result': 'Failed', 'fault': None, 'version': None}, None),
    (ERROR_FIRST, {'took': False, 'job': None, 'result': None, 'fault': 'error', 'version': None},
     'runner fault: an error before any job'),
    # an error after the job ran is the job's or the exit's, not a runner that cannot work
    (ERROR_IN_JOB, {'took': True, 'job': 'build (3.11)', 'result': 'Succeeded', 'fault': None, 'version': None}, None),
    # nor an error the runner got over, taking and running a job after it
    (ERROR_THEN_JOB, {'took': True, 'job': 'build (3.11)', 'result': 'Succeeded', 'fault': None, 'version': None},
     None),
    ('Listening for Jobs\n', {'took': False, 'job': None, 'result': None, 'fault': None, 'version': None}, None),
    (None, {'took': None, 'job': None, 'result': None, 'fault': None, 'version': None}, None),
])
def test_read_runner_log(logs, read, cause):
    got = p.read_runner_log(logs)
    # the time of the runner's own `Running job:` line, where it has one
    stamp = re.search(r'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)Z: Running job:', logs or '')
    assert got.pop('job_started') == (calendar.timegm(time.strptime(stamp.group(1), '%Y-%m-%d %H:%M:%S'))
                                      if stamp else None)
    assert got == read
    assert p.fault_cause(read) == cause


def test_what_a_hostile_runner_prints_is_bounded_and_printable():
    read = p.read_runner_log('Running job: %s\x1b[2K\nRunner version v1.2.3; rm -rf / is deprecated\n' % ('j' * 500))
    assert read['job'] == 'j' * 97 + '...' and read['fault'] is None    # the version's grammar: no match
    read = p.read_runner_log('Running job: a\x1b[2Kb\x07\n')
    assert read['job'] == 'a?[2Kb?'


def test_a_deprecated_runner_holds_its_pool_though_it_took_a_job():
    # The job it took was cancelled: a pool whose runners all do that looks healthy unless it is held.
    state = dict(p.fresh_state(), failures=0)
    read = p.read_runner_log(DEPRECATED_AFTER_JOB)
    state, events = p.ended(state, 'ci', read['took'], 9, T0, fault=p.fault_cause(read))
    assert kinds(events) == ['runner.failed', 'pool.held']
    assert state['hold_cause'] == 'runner fault: version 2.316.1 deprecated' and state['hold_until'] == T0 + 30
    assert events[0]['error'] == 'the runner failed: version 2.316.1 deprecated'
    # the next one backs off as any failure does
    state, events = p.ended(state, 'ci', True, 9, T0 + 31, fault=p.fault_cause(read))
    assert kinds(events) == ['pool.held'] and state['failures'] == 2 and state['hold_until'] == T0 + 31 + 60
    # a runner (started before the hold) that runs its job releases the pool
    state, events = p.ended(state, 'ci', True, 9, T0 + 50)
    assert kinds(events) == ['pool.released'] and state['failures'] == 0


# What a job prints reaches the runner container's log as the runner's own lines do (a step writes to the
# runner's stdout through /proc/1/fd/1, or it runs as the runner's child): forged lines in a job's span.
DEPRECATED_LINE = 'An error occured: Error: Forbidden Runner version v2.316.1 is deprecated and cannot receive messages.\n'
RUNNING_LINE = '2026-12-02 14:56:29Z: Running job: build (3.11)\n'
FORGED_COMPLETED = '2026-12-02 14:56:29Z: Job build (3.11) completed with result: Canceled\n'
OWN_COMPLETED = '2026-12-02 14:56:30Z: Job build (3.11) completed with result: Succeeded\n'
START = "Current runner version: '2.316.1'\n2026-12-02 14:56:28Z: Listening for Jobs\n"
FORGED_LOGS = {
    # the deprecated line alone, printed by the job
    'in the span': START + RUNNING_LINE + DEPRECATED_LINE + OWN_COMPLETED,
    # a forged `completed ... Canceled` line and the deprecated line: the runner's own completed line follows
    'forged completed': START + RUNNING_LINE + FORGED_COMPLETED + DEPRECATED_LINE + OWN_COMPLETED,
    # the runner's exit lines too
    'forged exit': START + RUNNING_LINE + FORGED_COMPLETED + DEPRECATED_LINE +
    'Runner listener exit with terminated error, stop the service, no retry needed.\nExiting runner...\n' +
    OWN_COMPLETED,
    # a job that prints `Running job:` itself, then a completed line and the deprecated line
    'forged running': START + RUNNING_LINE + '2026-12-02 14:56:29Z: Running job: other\n' +
    '2026-12-02 14:56:29Z: Job other completed with result: Canceled\n' + DEPRECATED_LINE + OWN_COMPLETED,
    # a process the job left behind prints it after the runner's last line: the job did not end Canceled
    'after a success': START + RUNNING_LINE + OWN_COMPLETED + DEPRECATED_LINE,
    'after a failure': START + RUNNING_LINE + OWN_COMPLETED.replace('Succeeded', 'Failed') + DEPRECATED_LINE,
    # a forged Canceled line and the deprecated line after the runner's own: two completed lines
    'forged after': START + RUNNING_LINE + OWN_COMPLETED + FORGED_COMPLETED + DEPRECATED_LINE,
    # a result that only begins like Canceled
    'not quite canceled': START + RUNNING_LINE + OWN_COMPLETED.replace('Succeeded', 'CanceledX') + DEPRECATED_LINE,
    # the runner's own completed line with a name longer than a result's grammar still counts as one
    'long job name': START + '2026-12-02 14:56:29Z: Running job: %s\n' % ('n' * 300) + FORGED_COMPLETED +
    DEPRECATED_LINE + '2026-12-02 14:56:30Z: Job %s completed with result: Succeeded\n' % ('n' * 300),
    # an error line in the span or after it: the job's, not a runner that cannot work
    'an error in the span': START + RUNNING_LINE + 'An error occurred: forged\n' + OWN_COMPLETED,
}


@pytest.mark.parametrize('case', sorted(FORGED_LOGS))
def test_what_a_job_prints_holds_nothing(case):
    read = p.read_runner_log(FORGED_LOGS[case])
    assert read['took'] is True and read['fault'] is None and read['version'] is None, read
    assert p.fault_cause(read) is None
    state, events = p.ended(p.fresh_state(), 'ci', read['took'], 9, T0, fault=p.fault_cause(read))
    assert events == [] and state['hold_until'] is None and state['failures'] == 0


def test_the_job_a_runner_ran_is_its_first_running_line():
    read = p.read_runner_log(FORGED_LOGS['forged running'])
    assert read['job'] == 'build (3.11)' and read['result'] == 'Succeeded'


def test_the_runner_s_own_faults_still_hold():
    # before the job's span: the runner's own lines
    read = p.read_runner_log(START + DEPRECATED_LINE + RUNNING_LINE + OWN_COMPLETED)
    assert (read['took'], read['fault'], read['version']) == (True, 'deprecated', '2.316.1')
    # after the one completed line, a Canceled one (actions/runner#3366), wherever the runner's exit lines are
    read = p.read_runner_log(START + RUNNING_LINE + FORGED_COMPLETED + 'Exiting runner...\n' + DEPRECATED_LINE)
    assert (read['fault'], read['version']) == ('deprecated', '2.316.1')
    # residual: a job whose token cancels its own run (its runner prints the one completed line, Canceled) and that
    # leaves a process printing after the runner's last line holds the pool; so does a job that ends the runner
    # before its completed line, having printed a Canceled one
    read = p.read_runner_log(START + RUNNING_LINE + FORGED_COMPLETED + DEPRECATED_LINE)
    assert read['fault'] == 'deprecated'


def test_record_denied_by_the_names_a_runner_keeps_credentials_under():
    diff = ['/runner', '/runner/_work', '/runner/_work/out.txt', '/runner/.credentials', '/tmp/.credentials_rsaparams',
            '/home/runner/.runner', '/tmp/copy-of-JITCONFIG.json', '/runner/credentials.txt']
    assert p.record_denied(diff) == ['/home/runner/.runner', '/runner/.credentials', '/tmp/.credentials_rsaparams',
                                     '/tmp/copy-of-JITCONFIG.json']
    assert p.record_denied(['/runner/_work/a']) == [] and p.record_denied(None) == []
    # the JIT config's mount point is listed as added, and committed empty: it does not count; a copy does
    assert p.record_denied(['/runner', '/runner/.jitconfig', '/tmp/.jitconfig'], mounts=('/runner/.jitconfig',)) == [
        '/tmp/.jitconfig']


def test_records_to_drop_keeps_the_newest_within_their_age():
    records = [{'id': str(i), 'created': T0 - 100 * i} for i in range(6)]
    assert [r['id'] for r in p.records_to_drop(records, 3, None, T0)] == ['3', '4', '5']
    assert [r['id'] for r in p.records_to_drop(records, 10, 250, T0)] == ['3', '4', '5']
    assert [r['id'] for r in p.records_to_drop(records[::-1], 5, 150, T0)] == ['2', '3', '4', '5']
    assert p.record_ref('CI', 'drover-m1-small-1-9', 'abcdef0123456789') == ('drover-record/ci',
                                                                             'drover-m1-small-1-9-abcdef012345')
    # made within one second: the runner's own second orders them
    same = [{'id': n, 'created': T0, 'labels': {'drover.runner': 'drover-m1-small-1-%d' % n}} for n in (12, 10, 11)]
    assert [r['id'] for r in p.records_to_drop(same, 2, None, T0)] == [10]
    assert [r['id'] for r in sorted(same, key=p.record_order)] == [10, 11, 12]
    # names the engine would refuse as a repository, and a tag past 128 characters
    assert [p.record_ref(pool, 'r', 'c1')[0] for pool in ('ci-', 'ci_', 'a..b', 'a___b', '_')] == [
        'drover-record/ci', 'drover-record/ci', 'drover-record/a-b', 'drover-record/a-b', 'drover-record/pool']
    long_name = 'drover-' + 'm' * 64 + '-' + 'profile' * 8 + '-1-1800000000'
    tag = p.record_ref('ci', long_name, 'f' * 64)[1]
    assert len(tag) == 128 and tag.startswith(long_name[:98]) and tag.endswith('-' + 'f' * 12)
    assert tag != p.record_ref('ci', long_name + 'x', 'f' * 64)[1]


@pytest.mark.parametrize('records,error', [
    ({'keep': 0}, 'profile.records.keep must be a whole number from 1 to 100, got 0'),
    ({'keep': True}, 'profile.records.keep must be a whole number from 1 to 100, got True'),
    ({'max_age': 10}, 'profile.records.max_age must be a whole number of seconds, at least 60, got 10'),
    ({'kept': 3}, 'profile.records has unsupported keys: kept'),
    ('yes', "profile.records must be a mapping with keep and max_age, got 'yes'"),
])
def test_records_bad_input(records, error):
    with pytest.raises(p_spec.SpecError) as exc:
        spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 4, 'records': records})
    assert str(exc.value) == error


def test_records_defaults():
    assert spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 4,
                         'records': {}}).profile.records == p_spec.Records(5, None)
    assert spec().profile.records is None


class RecordsEngine:
    def __init__(self):
        self.calls = []

    def images_labelled(self, labels):
        self.calls.append(('images', labels))
        return [{'id': 'sha256:1', 'tags': ['drover-record/gone:r1'], 'labels': {'drover.runner': 'r1'},
                 'created': T0}]

    def remove_image(self, ref):
        self.calls.append(('remove', ref))
        return True


def test_a_pool_drained_without_a_profile_takes_its_records_and_one_without_records_asks_nothing(tmp_path):
    from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import PoolPass
    from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store
    store = Store(str(tmp_path / 'store.db'))
    engine = RecordsEngine()
    gone = pool_spec({'pool': 'gone', 'repository': 'o/r', 'state': 'absent', 'token': 't'}, 'abc123')
    assert gone.profile is None                        # as a purge declares a pool no longer declared
    PoolPass(gone, engine, store, None, False, T0, str(tmp_path / 'jit'), [], 'scope').prune_records()
    assert engine.calls == [('images', {'drover.record': 'true', 'drover.pool': 'gone', 'drover.store': 'scope'}),
                            ('remove', 'sha256:1')]
    engine.calls = []
    PoolPass(spec(), engine, store, None, False, T0, str(tmp_path / 'jit'), [], 'scope').prune_records()
    assert engine.calls == []
    store.close()


def cache_spec(caches):
    return spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 4, 'caches': caches})


def test_caches_taken():
    got = cache_spec([{'name': 'deps', 'path': '/home/runner/.cache/', 'max_size': 200},
                      {'name': 'tools', 'path': '/opt/hostedtoolcache', 'scope': 'slot', 'mode': 'rw'},
                      {'name': 'mods', 'path': '/m', 'scope': 'pool', 'seed_from': 'slot1', 'max_size': 5},
                      {'name': 'pr', 'path': '/p', 'scope': 'pool', 'mode': 'ro', 'seed_from': 'pool:main-1'}]
                     ).profile.caches
    assert got == (p_spec.Cache('deps', '/home/runner/.cache', 'slot', 'rw', 200, None),
                   p_spec.Cache('tools', '/opt/hostedtoolcache', 'slot', 'rw', None, None),
                   p_spec.Cache('mods', '/m', 'pool', 'ro', 5, 'slot1'),
                   p_spec.Cache('pr', '/p', 'pool', 'ro', None, 'pool:main-1'))
    assert spec().profile.caches == ()


@pytest.mark.parametrize('caches,error', [
    ([{'name': 'deps', 'path': 'cache'}], "profile.caches[0].path must be an absolute path in the runner other than /, "
                                          "without : , . or .., got 'cache'"),
    ([{'name': 'deps', 'path': '/'}], "profile.caches[0].path must be an absolute path"),
    ([{'name': 'deps', 'path': '/c:/etc'}], "profile.caches[0].path must be an absolute path"),
    ([{'name': 'deps', 'path': '/c/../etc'}], "profile.caches[0].path must be an absolute path"),
    ([{'name': 'deps', 'path': '/a'}, {'name': 'deps', 'path': '/b'}], 'profile.caches[1].name deps is given twice'),
    ([{'name': 'a', 'path': '/c'}, {'name': 'b', 'path': '/c/'}], 'profile.caches[1].path /c/ is given twice'),
    ([{'name': 'deps', 'path': '/c', 'mode': 'ro'}], "profile.caches[0].mode must be rw for a slot cache"),
    ([{'name': 'deps', 'path': '/c', 'seed_from': 'slot1'}], 'profile.caches[0].seed_from is for a pool snapshot'),
    ([{'name': 'deps', 'path': '/c', 'scope': 'pool'}],
     "profile.caches[0].seed_from must be slot1 (a snapshot of slot 1's own cache, taken after a job ran there) or "
     "pool:<name> (the snapshot of another pool of this host), got None"),
    ([{'name': 'deps', 'path': '/c', 'scope': 'pool', 'seed_from': 'slot2'}], 'profile.caches[0].seed_from must be'),
    ([{'name': 'deps', 'path': '/c', 'scope': 'pool', 'seed_from': 'pool:'}], 'profile.caches[0].seed_from must be'),
    ([{'name': 'deps', 'path': '/c', 'scope': 'pool', 'mode': 'rw', 'seed_from': 'slot1'}],
     'profile.caches[0].mode must be ro for a pool snapshot'),
    ([{'name': 'deps', 'path': '/c', 'scope': 'host'}], 'profile.caches[0].scope must be slot or pool'),
    ([{'name': 'deps', 'path': '/c', 'scope': 'pool', 'seed_from': 'pool:a', 'max_size': 3}],
     'profile.caches[0].max_size: a snapshot of another pool is trimmed by that pool'),
    ([{'name': 'deps', 'path': '/c', 'max_size': 0}], 'profile.caches[0].max_size must be a whole number of MiB'),
    ([{'name': 'deps', 'path': '/c', 'size': 1}], 'profile.caches[0] has unsupported keys: size'),
    ('deps', 'profile.caches must be a list of at most 16 caches'),
])
def test_caches_bad_input(caches, error):
    with pytest.raises(p_spec.SpecError) as exc:
        cache_spec(caches)
    assert str(exc.value).startswith(error), str(exc.value)


def test_a_pool_snapshot_of_the_pool_itself_is_refused():
    with pytest.raises(p_spec.SpecError) as exc:
        spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2,
                      'caches': [{'name': 'c', 'path': '/c', 'scope': 'pool', 'seed_from': 'pool:%s' % spec().pool}]})
    assert str(exc.value).startswith('profile.caches[0].seed_from names the pool itself'), str(exc.value)


@pytest.mark.parametrize('cache', [
    {'name': 'c', 'path': '/c'},
    {'name': 'c', 'path': '/c', 'scope': 'pool', 'seed_from': 'slot1'},
])
def test_a_pool_of_forks_takes_only_another_pools_snapshot(cache):
    profile = {'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2, 'caches': [cache]}
    assert spec(profile=profile).pull_requests_from_forks is False
    with pytest.raises(p_spec.SpecError) as exc:
        spec(profile=profile, pull_requests_from_forks=True)
    assert str(exc.value).startswith('profile.caches[0]: a pool with pull_requests_from_forks takes read-only caches '
                                     'only, a snapshot of another pool (scope pool, seed_from pool:<name>)'), exc.value
    took = spec(profile=dict(profile, caches=[{'name': 'c', 'path': '/c', 'scope': 'pool', 'seed_from': 'pool:main'}]),
                pull_requests_from_forks=True)
    assert took.pull_requests_from_forks is True and took.profile.caches[0].seed_from == 'pool:main'


def test_trim_tree_removes_the_oldest_files_and_never_follows_a_link(tmp_path):
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    root = tmp_path / 'cache'
    (root / 'a').mkdir(parents=True)
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'precious').write_bytes(b'x' * 5000)
    for i, name in enumerate(('a/old', 'a/mid', 'new')):
        path = root / name
        path.write_bytes(b'y' * 1000)
        os.utime(str(path), (T0 + i, T0 + i))
    os.symlink(str(outside), str(root / 'link'))
    os.symlink(str(outside / 'precious'), str(root / 'a' / 'file-link'))
    assert _files.tree_size(str(root)) == (3000, 0)
    assert _files.trim_tree(str(root), 1500) == (2, 2000, 0)
    assert sorted(os.listdir(str(root / 'a'))) == ['file-link'] and (root / 'new').exists()
    assert (outside / 'precious').read_bytes() == b'x' * 5000
    assert _files.trim_tree(str(root), 1500) == (0, 0, 0)


def test_copy_tree_copies_files_dirs_and_links_but_no_device_or_fifo_and_no_setuid(tmp_path):
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    src, dst = tmp_path / 'seed', tmp_path / 'snap'
    (src / 'd').mkdir(parents=True)
    dst.mkdir()
    (src / 'd' / 'f').write_bytes(b'z' * 3000)
    os.utime(str(src / 'd' / 'f'), (T0, T0))
    (src / 'tool').write_bytes(b'#!/bin/sh\n')
    os.chmod(str(src / 'tool'), 0o4755)
    os.symlink('/etc/shadow', str(src / 'shadow'))
    os.mkfifo(str(src / 'pipe'))
    os.mknod(str(src / 'disk'), 0o600 | stat.S_IFCHR, os.makedev(1, 3))      # /dev/null's numbers
    assert _files.copy_tree(str(src), str(dst)) == (2, 3010, 2, 0)
    assert sorted(os.listdir(str(dst))) == ['d', 'shadow', 'tool']
    assert (dst / 'd' / 'f').read_bytes() == b'z' * 3000 and os.stat(str(dst / 'd' / 'f')).st_mtime == T0
    assert os.readlink(str(dst / 'shadow')) == '/etc/shadow' and os.path.islink(str(dst / 'shadow'))
    assert stat.S_IMODE(os.stat(str(dst / 'tool')).st_mode) == 0o755


def remove_deep(root):
    """Remove the tree `root` without recursion: its files, then its directories, deepest first."""
    folders, pending = [], [str(root)]
    while pending:
        folders.append(pending.pop())
        for entry in os.scandir(folders[-1]):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


@pytest.fixture
def deep_tree():
    """make(root, levels): a chain of `levels` directories `d` under `root` (made), a 10-byte file `f` in root and in
    each: a cache a job deepened. make.also(path): another tree to remove. Removed afterwards, without recursion
    (the tests' own walks, a secret sweep among them, recurse)."""
    made = []

    def make(root, levels):
        path = str(root)
        os.makedirs(path, exist_ok=True)
        made.append(path)
        for level in range(levels + 1):
            with open(os.path.join(path, 'f'), 'wb') as handle:
                handle.write(b'x' * 10)
            if level < levels:
                path = os.path.join(path, 'd')
                os.mkdir(path)
        return path
    make.also = made.append
    yield make
    for root in made:
        if os.path.isdir(root):
            remove_deep(root)


def test_a_tree_1000_levels_deep_is_walked_to_its_bound_and_what_is_left_out_counted(tmp_path, deep_tree):
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    src, dst = tmp_path / 'seed', tmp_path / 'snap'
    deep_tree(src, 1000)
    dst.mkdir()
    deep_tree.also(str(dst))
    # within the bound: the files of levels 1 .. TREE_DEPTH (root's own and those of d .. d x (TREE_DEPTH - 1));
    # left out: the directory at level TREE_DEPTH, with all it holds, counted as one
    files, left_out = _files.tree_files(str(src))
    depth = _files.TREE_DEPTH
    assert len(files) == depth and left_out == 1
    within = os.path.join(str(src), *(['d'] * (depth - 1) + ['f']))
    assert within in [f[0] for f in files] and all(len(f[0]) <= len(within) for f in files)
    assert _files.tree_size(str(src)) == (depth * 10, 1)
    assert _files.copy_tree(str(src), str(dst)) == (depth, depth * 10, 0, 1)
    assert (dst.joinpath(*(['d'] * (depth - 1) + ['f']))).read_bytes() == b'x' * 10
    assert not dst.joinpath(*(['d'] * depth)).exists()
    assert _files.tree_size(str(dst)) == (depth * 10, 0)
    # trimming takes what it saw, and leaves what lies below the bound as it is
    assert _files.trim_tree(str(src), 0) == (depth, depth * 10, 1)
    assert src.joinpath(*(['d'] * depth + ['f'])).exists() and not os.path.exists(within)


def test_a_walk_stops_after_tree_entries_and_counts_what_it_had_yet_to_look_at(tmp_path, monkeypatch):
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    monkeypatch.setattr(_files, 'TREE_ENTRIES', 5)
    for folder in 'abc':
        for name in ('1', '2', '3'):
            (tmp_path / 'root' / folder).mkdir(parents=True, exist_ok=True)
            (tmp_path / 'root' / folder / name).write_bytes(b'y')
    # a, b, c and two files of the first directory listed; left out: the third file, the two directories not listed
    files, left_out = _files.tree_files(str(tmp_path / 'root'))
    assert len(files) == 2 and left_out == 3
    assert _files.tree_size(str(tmp_path / 'root')) == (2, 3)
    (tmp_path / 'snap').mkdir()
    assert _files.copy_tree(str(tmp_path / 'root'), str(tmp_path / 'snap')) == (2, 2, 0, 3)


def test_a_path_longer_than_the_system_takes_is_left_out_and_counted(tmp_path):
    import errno
    import shutil
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    src, dst = tmp_path / 's', tmp_path / ('x' * 200) / ('y' * 200)
    src.mkdir()
    dst.mkdir(parents=True)
    fd = os.open(str(src), os.O_RDONLY)
    try:
        for level in range(20):                         # 20 names of 250 bytes: past PATH_MAX (4096) from level 16
            with os.fdopen(os.open('f', os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), 'wb') as handle:
                handle.write(b'z')
            os.mkdir('n' * 250, dir_fd=fd)
            fd, above = os.open('n' * 250, os.O_RDONLY, dir_fd=fd), fd
            os.close(above)
    finally:
        os.close(fd)
    try:
        files, left_out = _files.tree_files(str(src))
        assert left_out >= 1 and 10 <= len(files) < 20
        copied = _files.copy_tree(str(src), str(dst))
        # the copy's names are 400 bytes longer: it reaches fewer levels, and counts the rest
        assert copied[3] >= 1 and copied[0] < len(files) and copied[2] == 0
        with pytest.raises(OSError) as exc:
            os.lstat(os.path.join(str(src), *(['n' * 250] * 19 + ['f'])))
        assert exc.value.errno == errno.ENAMETOOLONG
    finally:
        shutil.rmtree(str(src))                         # by descriptors, as the names are too long for a path
        shutil.rmtree(str(dst))


class CacheEngine:
    """Volumes as directories under a folder: what PoolCaches asks of the engine."""

    def __init__(self, folder):
        self.folder = folder
        self.volumes = {}
        self.removed = []

    def volume(self, name):
        return self.volumes.get(name)

    def volume_create(self, name, driver, options, labels):
        path = os.path.join(str(self.folder), name)
        os.mkdir(path)
        self.volumes[name] = {'name': name, 'mountpoint': path, 'labels': dict(labels)}

    def volumes_labelled(self, labels):
        return [dict(v) for v in self.volumes.values()
                if all(k in v['labels'] and (value is None or v['labels'][k] == value) for k, value in labels.items())]

    def volume_remove(self, name, in_use_ok=False):
        self.removed.append(name)
        self.volumes.pop(name, None)


def test_a_cache_a_job_deepened_is_told_and_never_made_a_partial_snapshot(tmp_path, deep_tree):
    from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
    from ansible_collections.drover.fleet.plugins.module_utils.pools import caches as _pool_caches
    engine = CacheEngine(tmp_path / 'volumes')
    (tmp_path / 'volumes').mkdir()
    deep_tree.also(str(tmp_path / 'volumes'))
    pool = cache_spec([{'name': 'mods', 'path': '/m', 'scope': 'pool', 'seed_from': 'slot1', 'max_size': 1},
                       {'name': 'deps', 'path': '/d', 'max_size': 1}])
    events, warnings = [], []
    caches = _pool_caches.PoolCaches(engine, pool, 'scope', False, T0, events, warnings)
    caches.binds(0)
    caches.binds(1)
    first = caches.snapshots[('ci', 'mods')]
    for cache in ('mods', 'deps'):
        deep_tree(engine.volumes[_pool_caches.volume_name('scope', 'ci', cache, 1)]['mountpoint'], 1000)
    caches.ended(0, True)
    said = 'the walk left out 1 (a directory deeper than %d levels, with all it holds' % _files.TREE_DEPTH
    assert [w for w in warnings if said in w and 'cache mods' in w and 'not made' in w], warnings
    assert [w for w in warnings if said in w and 'cache deps' in w and 'more than max_size' in w], warnings
    # the partial copy is not the snapshot: runners keep mounting the one before
    assert 'cache.seeded' not in kinds(events) and caches.snapshots[('ci', 'mods')] == first
    partial = _pool_caches.volume_name('scope', 'ci', 'mods', 'g2')
    assert engine.removed == [partial] and partial not in engine.volumes
    assert 'cache.trimmed' not in kinds(events)             # what the walk reached is within max_size
    viewed = []
    views = _pool_caches.cache_views(engine, 'scope', 'ci', viewed)
    assert sorted(v['size'] for v in views if v['slot'] == 1) == [_files.TREE_DEPTH * 10] * 2     # what it reached
    assert len([w for w in viewed if said in w]) == 2, viewed


@pytest.mark.parametrize('gpus,error', [
    (-1, 'profile.gpus must be a whole number of GPUs from 0 to 64, got -1'),
    (65, 'profile.gpus must be a whole number of GPUs from 0 to 64, got 65'),
    (True, 'profile.gpus must be a whole number of GPUs from 0 to 64, got True'),
    ('1', "profile.gpus must be a whole number of GPUs from 0 to 64, got '1'"),
])
def test_profile_gpus_bad_input(gpus, error):
    with pytest.raises(p_spec.SpecError) as exc:
        spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2, 'gpus': gpus})
    assert str(exc.value) == error


def test_profile_gpus_taken():
    assert spec().profile.gpus == 0
    assert spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2, 'gpus': 2}).profile.gpus == 2


def test_a_runner_s_gpus_come_from_the_shared_ledger_and_a_slot_waits_without_them():
    from ansible_collections.drover.fleet.plugins.module_utils.gpu.apply import Ledger
    from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import PoolPass
    gpus = ['GPU-a', 'GPU-b']
    ledger = Ledger({'GPU-a': ('prod:train/main', 'prod:train')}, gpus, 'static')
    work = PoolPass(spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 3, 'gpus': 1}),
                    None, _Store(), None, False, T0, '/nonexistent', [], gpus=(ledger, 'env'))
    assert work._pin_gpus([0, 1, 2]) == [0]
    assert work.gpu_ids == {0: ['GPU-b']} and work.waiting_for == [{'slot': 2, 'cause': 'gpu'},
                                                                   {'slot': 3, 'cause': 'gpu'}]
    [event] = [e for e in work.events if e['event'] == 'runner.waiting']
    assert event['slots'] == [2, 3] and event['error'].startswith('profile.gpus')
    # the runner of slot 1 ended (no occupant): its GPU goes back; a runner found with its label keeps its own
    work.sync_gpus({})
    assert ledger.pins == {'GPU-a': ('prod:train/main', 'prod:train')}
    work.sync_gpus({1: {'runner_name': 'r', 'gpus': ['GPU-b']}})
    assert ledger.pins['GPU-b'] == ('pool@ci/slot2', 'pool@ci')
    # a label naming a GPU another holds is a warning, never a second pin
    work.sync_gpus({1: {'runner_name': 'r', 'gpus': ['GPU-b']}, 2: {'runner_name': 'r3', 'gpus': ['GPU-a']}})
    assert ledger.pins['GPU-a'] == ('prod:train/main', 'prod:train') and 'GPU-a' in work.warnings[-1]


@pytest.mark.parametrize('extra,error', [
    ({'docker': 'dind'}, "profile.docker must be one of none, rootless, sysbox, privileged, got 'dind'"),
    ({'docker': 'privileged'}, 'profile.docker is privileged: each runner would run privileged (Docker in Docker), '
                               'and any job it runs is root on the host; this host refuses it unless allow_privileged '
                               'is true (role variable drover_allow_privileged)'),
    ({'docker': 'rootless', 'network_mode': 'none'}, 'profile.docker rootless needs profile.network_mode bridge'),
    ({'docker': 'sysbox', 'network_mode': 'none'}, 'profile.docker sysbox needs profile.network_mode bridge'),
])
def test_profile_docker_bad_input(extra, error):
    with pytest.raises(p_spec.SpecError) as exc:
        spec(profile=dict({'name': 'small', 'image': 'drover.local/runner:1', 'slots': 2}, **extra))
    assert str(exc.value).startswith(error), str(exc.value)


def test_profile_docker_taken():
    assert spec().profile.docker == 'none'
    assert spec(profile={'name': 's', 'image': 'drover.local/runner:1', 'slots': 2, 'docker': 'rootless'}).profile.docker \
        == 'rootless'
    assert spec(profile={'name': 's', 'image': 'drover.local/runner:1', 'slots': 2, 'docker': 'sysbox'}).profile.docker \
        == 'sysbox'
    privileged = {'name': 's', 'image': 'drover.local/runner:1', 'slots': 2, 'docker': 'privileged'}
    assert spec(profile=privileged, allow_privileged=True).profile.docker == 'privileged'
    # draining such a pool needs no policy; host network with it is refused even where the host allows both
    assert spec(profile=privileged, state='absent').state == 'absent'
    with pytest.raises(p_spec.SpecError, match='profile.docker privileged needs profile.network_mode bridge'):
        spec(profile=dict(privileged, network_mode='host'), allow_privileged=True, allow_host_network=True)


class _Recorder(object):
    """An engine that records the runner containers a pass creates and starts."""

    def __init__(self):
        self.created = []

    def create(self, name, image, labels, **kwargs):
        self.created.append(dict(kwargs, name=name, image=image, labels=labels))
        return 'c%d' % len(self.created)

    def start(self, cid):
        pass


@pytest.mark.parametrize('docker,host,config', [
    ('sysbox', {'runtime': 'sysbox-runc'}, {'volumes': ['/var/lib/docker']}),
    ('privileged', {'privileged': True}, {'volumes': ['/var/lib/docker']}),
    ('none', None, None),
])
def test_a_runner_with_the_engine_of_its_image_gets_its_runtime_or_privileges_and_a_data_volume(docker, host, config):
    from ansible_collections.drover.fleet.plugins.module_utils.pools.apply import PoolPass
    engine = _Recorder()
    work = PoolPass(spec(profile={'name': 'small', 'image': 'drover.local/runner:1', 'slots': 1, 'docker': docker},
                         allow_privileged=True), engine, _Store(), None, False, T0, '/nonexistent', [], 'scope')
    assert work._launch((0, 'r1', 7, '/nonexistent/r1')) == ('c1', None)
    [made] = engine.created
    assert made['host'] == host and made['config'] == config
    assert (made['environment'].get('DOCKER_BUILDKIT') == '1') == (docker != 'none')
    # never the host's socket: the engine is the one inside the runner
    assert not any('docker.sock' in b for b in made['binds'])


def test_slot_ids_differ_by_store_pool_and_slot_and_fit_a_user_name():
    from ansible_collections.drover.fleet.plugins.module_utils.pools import slot_engine as se
    ids = set(se.slot_id(scope, pool, idx) for scope in ('a', 'b') for pool in ('ci', 'cd') for idx in range(3))
    assert len(ids) == 12 and all(len(i) == 10 for i in ids)
    assert len('drv' + se.slot_id('a', 'ci', 0)) <= 32


def test_a_subordinate_range_is_taken_above_every_range_given_and_clear_of_every_account(tmp_path):
    from ansible_collections.drover.fleet.plugins.module_utils.pools import slot_engine as se
    path = tmp_path / 'subuid'
    floor = se.SUBID_FLOOR
    path.write_text('alice:100000:65536\ndrvx:%d:65536\n' % floor)
    assert se._free_range(str(path), floor, set()) == floor + 65536
    assert se._free_range(str(tmp_path / 'none'), floor, set()) == floor
    # ranges below the floor (alice's, or a slot's of an earlier release) are not what the next starts above
    below = tmp_path / 'subgid'
    below.write_text('alice:100000:65536\ndrvold:200000:65536\n')
    assert se._free_range(str(below), floor, set()) == floor
    # an account's ID in the way (a directory user SSSD maps there): the range starts past it
    assert se._free_range(str(path), floor, {floor + 70000, 5}) == floor + 70001
    assert se._overlaps(floor, 65536, {floor + 65535}) and not se._overlaps(floor, 65536, {floor + 65536})
    # nothing left below the highest ID a user namespace maps
    try:
        se._free_range(str(path), se.SUBID_CEILING - 100, set())
        raise AssertionError('a range past the ceiling was given')
    except OSError as exc:
        assert 'no range of 65536 subordinate IDs is left' in str(exc)
    # the default floor is above what SSSD and FreeIPA map directory users to
    assert floor > 2000200000


PASSWD = 'root:x:0:0:root:/root:/bin/sh\nrunner:x:1001:121:,,,:/home/runner:/bin/bash\nodd:x:abc:1::/:/bin/sh\n'
GROUP = 'root:x:0:\ndocker:x:121:runner\nci:x:2000:\n'


@pytest.mark.parametrize('user, ids', [
    ('', None), ('root', None), ('0', None), ('0:0', None), ('root:root', None),
    ('runner', (1001, 121)), ('1001', (1001, 121)), ('1001:2000', (1001, 2000)), ('runner:ci', (1001, 2000)),
    ('4242', (4242, 0)), ('0:121', (0, 121)),
])
def test_an_image_s_user_as_the_engine_resolves_it(user, ids):
    assert p.image_ids(user, PASSWD, GROUP) == ids


@pytest.mark.parametrize('user, error', [
    ('ghost', "the image's user ghost is not in its /etc/passwd"),
    ('odd', "the image's user odd is not in its /etc/passwd"),
    ('runner:nogroup', "the image's group nogroup is not in its /etc/group"),
    ('4294967296', "the image's user 4294967296 is out of range"),
])
def test_an_image_user_the_image_lacks_is_refused_by_name(user, error):
    with pytest.raises(ValueError) as exc:
        p.image_ids(user, PASSWD, GROUP)
    assert str(exc.value) == error
    with pytest.raises(ValueError):
        p.image_ids('runner', None, None)
