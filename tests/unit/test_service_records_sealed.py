# -*- coding: utf-8 -*-
"""The services' revision records are trusted only as far as the controller can prove it wrote them: the placement
(drover.fleet.service_placement's place) seals every record it hands a host, and takes back only records sealed
under its key, held by a host that declares the service, whose revision is the digest of their declaration and
whose numbers are within bounds. A compromised host that writes records of its own into its store (the declared
revision `failed`, a `completed` revision 99 that runs another container, a generation of 2**63 - 1) changes
nothing of what another host runs; one warning a host and service says how many were dropped, and why, never
what they hold. The controller's key file (plugin_utils/_records_key.py): made once, 0600 in a 0700 directory,
never through a link."""

from __future__ import absolute_import, division, print_function

import json
import os
import stat

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.drover.fleet.plugins.action.service_placement import place
from ansible_collections.drover.fleet.plugins.module_utils.services import deploy as pd
from ansible_collections.drover.fleet.plugins.module_utils.front.argspecs import ecs_task_spec
from ansible_collections.drover.fleet.plugins.module_utils.tasks.revisions import (
    RECORD_BOUND, SEALED_KEYS, records_option)
from ansible_collections.drover.fleet.plugins.module_utils.host.store import Store
from ansible_collections.drover.fleet.plugins.plugin_utils import _records_key
from ansible_collections.drover.fleet.plugins.plugin_utils._records_key import RecordsKeyError, records_key

KEY = b'unit-tests-records-key-0123456789abcdef'
OTHER_KEY = b'another-controller-key-0123456789'
NOW = '2026-12-06T00:00:00Z'
TASK = {'network_mode': 'none', 'containers': [{'name': 'main', 'image': 'drover.local/web:1', 'memory': 64}],
        'registry_auth': {'registry': 'drover.local', 'username': 'u', 'password': 'hunter2-registry'}}
WEB = dict(TASK, name='web', cluster='prod', desired_count=2)
# what a compromised host would have every host of the service run
FORGED = {'network_mode': 'none', 'containers': [{'name': 'main', 'image': 'drover.local/miner:1',
                                                  'command': ['mine', '--pool', 'evil.example'], 'memory': 64}]}
FORGED_WORDS = ('miner', 'evil.example')


def _run(hosts, out):
    """Each host runs what the placement gave it, healthy, and keeps the records it was handed."""
    for raw in hosts:
        raw['tasks'] = [{'name': d['name'], 'cluster': d['cluster'], 'last_status': 'RUNNING',
                         'revision': d['revision'], 'health_status': 'UNKNOWN', 'health_checked': False}
                        for d in out['placement'].get(raw['name'], [])]
        raw['revisions'] = out['revisions'].get(raw['name'], [])


def steady():
    """h1 and h2 declare web (2 instances, its deployment completed), h3 declares no service: the hosts and the
    placement of a pass over them that changes nothing."""
    hosts = [{'name': name, 'up': True, 'capacity': {'cpu': 1024, 'memory': 256}, 'attributes': {},
              'services': [WEB] if name != 'h3' else [], 'tasks': [], 'declared': []} for name in ('h1', 'h2', 'h3')]
    for dummy in range(2):                          # started, then the deployment completes
        _run(hosts, place(hosts, now=NOW, seal_key=KEY))
    out = place(hosts, now=NOW, seal_key=KEY)
    assert out['second_pass'] == {'h1': False, 'h2': False, 'h3': False} and out['warnings'] == [], out['warnings']
    assert [r['status'] for r in out['revisions']['h1']] == ['completed']
    return hosts, out


def _forged_set(legit, seal_with=None, **change):
    """What a compromised host writes: the declared revision `failed` and a `completed` revision 99 whose task is
    FORGED, both of a later generation than the real ones (so that they win the merge); sealed with `seal_with`
    where given, else with no seal."""
    failed = dict(legit, status='failed', generation=legit['generation'] + 10)
    other = dict(legit, revision=pd.revision_of(FORGED), number=99, status='completed', rollback_of=None,
                 generation=legit['generation'] + 10, declaration=pd.stored_declaration(FORGED))
    out = []
    for rec in (failed, other):
        rec = dict(rec, **change)
        rec['seal'] = pd.seal(seal_with, rec) if seal_with else None
        out.append(rec)
    return out


def _edited(legit):
    """The host's own sealed record edited (failed, a later generation), its seal kept; and revision 99 with the
    same seal."""
    return [dict(r, seal=legit['seal']) for r in _forged_set(legit)]


def _relabelled(legit):
    """Records the controller sealed for service api, relabelled as web's."""
    return [dict(r, service='web') for r in _forged_set(dict(legit, service='api'), KEY)]


def _not_its_digest(legit):
    """Revision 99 sealed (as a leaked seal would be), but its revision is not the digest of its declaration."""
    failed, other = _forged_set(legit)
    other = dict(other, revision='0123456789ab')
    return [failed, dict(other, seal=pd.seal(KEY, other))]


FORGERIES = {
    # name: (the forged records, given the host's real record; the host that holds them; the reason told)
    'unsealed': (_forged_set, 'h2', 'unsealed'),
    'sealed under another key': (lambda legit: _forged_set(legit, OTHER_KEY), 'h2', 'badly sealed'),
    'edited after sealing': (_edited, 'h2', 'badly sealed'),
    'of another service than they claim': (_relabelled, 'h2', 'badly sealed'),
    'on a host that does not declare the service': (lambda legit: _forged_set(legit, KEY), 'h3',
                                                    'its host does not declare the service'),
    'revision not the digest of its declaration': (_not_its_digest, 'h2',
                                                   'revision not the digest of its declaration, unsealed'),
    'a generation of 2**63 - 1': (lambda legit: _forged_set(legit, KEY, generation=2 ** 63 - 1), 'h2',
                                  'numbers out of bounds'),
    'a number of 2**63 - 1': (lambda legit: _forged_set(legit, KEY, number=2 ** 63 - 1), 'h2',
                              'numbers out of bounds'),
}


@pytest.mark.parametrize('forgery', sorted(FORGERIES))
def test_records_a_host_forged_are_dropped_and_the_warning_says_so(forgery):
    hosts, before = steady()
    make, holder, reason = FORGERIES[forgery]
    legit = next(r for r in hosts[1]['revisions'] if r['service'] == 'web')
    forged = make(legit)
    raw = next(h for h in hosts if h['name'] == holder)
    raw['revisions'] = raw['revisions'] + forged
    out = place(hosts, now=NOW, seal_key=KEY)
    # nothing of the forged records reaches a host: each runs and keeps what it did, on the declared revision
    assert out['placement'] == before['placement']
    for words in FORGED_WORDS:
        assert words not in json.dumps(out['placement']) and words not in json.dumps(out['revisions'])
    assert out['revisions'] == before['revisions']
    assert [(v['revision'], v['deployment']) for v in out['services']] == [(1, 'completed')]
    assert all(r['generation'] < RECORD_BOUND and r['number'] < RECORD_BOUND
               for records in out['revisions'].values() for r in records)
    # one warning for the host and the service, with the count and the reason, none of the records' content
    said = [w for w in out['warnings'] if 'revision record' in w]
    assert len(said) == 1 and said[0].startswith('host %s: 2 revision records of service web (cluster prod) not '
                                                 'taken: ' % holder), said
    assert said[0].endswith(': ' + reason), said
    for what in FORGED_WORDS + (legit['seal'], '99', str(2 ** 63 - 1)):
        assert what not in said[0], (what, said)
    assert said[0] in out['report']
    # the host that holds them gets its records written anew (a host not declaring the service keeps its own)
    assert out['second_pass'] == {'h1': False, 'h2': holder == 'h2', 'h3': False}


def test_a_record_of_a_host_that_declares_the_service_and_sealed_right_is_taken():
    """What the seal stops, it stops alone: the same records sealed under the placement's key, held by a host that
    declares the service, are taken (the declared revision failed, rolled back to revision 99)."""
    hosts, before = steady()
    legit = next(r for r in hosts[1]['revisions'] if r['service'] == 'web')
    hosts[1]['revisions'] = hosts[1]['revisions'] + _forged_set(legit, KEY)
    out = place(hosts, now=NOW, seal_key=KEY)
    assert not [w for w in out['warnings'] if 'revision record' in w]
    assert 'miner' in json.dumps(out['placement'])


@pytest.mark.parametrize('unsealed', [True, False])
def test_the_records_of_an_earlier_release_or_another_key_are_taken_as_empty_once(unsealed):
    """Unsealed records (an earlier release), or records sealed under another key (a new key): the history is empty
    once - the declared revision is recorded anew, its deployment started and completed at once where its instances
    run on untouched - and the next pass is steady."""
    hosts, before = steady()
    if unsealed:
        for raw in hosts:
            raw['revisions'] = [dict(r, seal=None) for r in raw['revisions']]
    out = place(hosts, now=NOW, seal_key=OTHER_KEY)
    assert out['placement'] == before['placement']
    assert sorted(w for w in out['warnings'] if 'revision record' in w) == [
        'host %s: 1 revision record of service web (cluster prod) not taken: %s'
        % (host, 'unsealed' if unsealed else 'badly sealed') for host in ('h1', 'h2')]
    assert [e['event'] for e in out['events']] == ['service.deployment.started', 'service.deployment.completed']
    assert out['second_pass'] == {'h1': True, 'h2': True, 'h3': False}
    _run(hosts, out)
    out = place(hosts, now=NOW, seal_key=OTHER_KEY)
    assert out['second_pass'] == {'h1': False, 'h2': False, 'h3': False} and out['warnings'] == []
    assert [(v['revision'], v['deployment']) for v in out['services']] == [(1, 'completed')]
    assert out['placement'] == before['placement'] and out['events'] == []


def test_sealed_records_still_verify_after_the_host_s_argument_spec_and_store(tmp_path):
    """A no-op converge stays a no-op: the records the placement hands a host go through ecs_task's argument spec
    (the options it leaves out filled in with null), records_option and the host store, and come back in its look
    (JSON); they are taken, and no host needs a second pass."""
    hosts, before = steady()
    spec = {'service_revisions': ecs_task_spec()['service_revisions']}
    for raw in hosts:
        found = ArgumentSpecValidator(spec).validate({'service_revisions': before['revisions'].get(raw['name'], [])})
        assert found.error_messages == []
        with Store(str(tmp_path / raw['name'] / 'store.db')) as store:
            store.set_service_revisions(records_option(found.validated_parameters['service_revisions']), 1.0)
            raw['revisions'] = json.loads(json.dumps(store.service_revisions()))
    assert [r['seal'] for r in hosts[0]['revisions']] == [r['seal'] for r in before['revisions']['h1']]
    out = place(hosts, now=NOW, seal_key=KEY)
    assert out['warnings'] == [] and out['second_pass'] == {'h1': False, 'h2': False, 'h3': False}
    assert out['revisions'] == before['revisions']


def test_the_seal_covers_every_field():
    record = {'cluster': 'prod', 'service': 'web', 'revision': pd.revision_of(TASK), 'number': 3,
              'status': 'completed', 'rollback_of': None, 'generation': 7, 'declaration': pd.stored_declaration(TASK)}
    mark = pd.seal(KEY, record)
    assert mark == pd.seal(KEY, json.loads(json.dumps(record))) and len(mark) == 64
    assert pd.seal(OTHER_KEY, record) != mark
    changes = {'cluster': 'dev', 'service': 'api', 'revision': 'x', 'number': 4, 'status': 'failed', 'rollback_of': 2,
               'generation': 8, 'declaration': FORGED}
    assert sorted(changes) == sorted(SEALED_KEYS)
    for key, value in changes.items():
        assert pd.seal(KEY, dict(record, **{key: value})) != mark, key
    sealed = pd.sealed(KEY, record)
    assert pd.untrusted(KEY, sealed, ('prod', 'web')) is None
    assert pd.untrusted(KEY, sealed, ('prod', 'api')) == 'of another service'
    assert pd.untrusted(KEY, dict(sealed, generation=True), ('prod', 'web')) == 'numbers out of bounds'
    assert pd.untrusted(KEY, dict(sealed, rollback_of=RECORD_BOUND), ('prod', 'web')) == 'numbers out of bounds'
    assert pd.untrusted(KEY, dict(sealed, seal=''), ('prod', 'web')) == 'unsealed'
    assert pd.untrusted(KEY, dict(sealed, seal='é'), ('prod', 'web')) == 'badly sealed'


def test_a_host_s_look_of_another_shape_does_not_stop_the_placement():
    """Records that are not mappings, or name a service as a list, are left out (they would fail the placement of
    every host)."""
    hosts, before = steady()
    hosts[1]['revisions'] = hosts[1]['revisions'] + ['x', {'cluster': ['prod'], 'service': 'web'}, None]
    out = place(hosts, now=NOW, seal_key=KEY)
    assert out['placement'] == before['placement'] and out['second_pass']['h2'] is False


def test_a_run_that_places_nothing_keeps_a_host_s_instances_by_its_own_records_alone():
    """A run that does not reach every host (a host's own timer: no records key there) keeps each instance as it
    runs: its revision's task from the sealed history where there is a key, else from the host's own records (whose
    revision is their declaration's digest). Another host's unsealed record decides nothing there."""
    hosts, before = steady()
    old = dict(TASK, containers=[dict(TASK['containers'][0], image='drover.local/web:0')])
    record = {'cluster': 'prod', 'service': 'web', 'revision': pd.revision_of(old), 'number': 7, 'status': 'completed',
              'rollback_of': None, 'generation': 1, 'declaration': pd.stored_declaration(old)}
    hosts[0]['tasks'][0]['revision'] = record['revision']           # h1's instance runs that older revision

    def kept():
        out = place(hosts, complete=False, now=NOW, seal_key=None)
        return out['placement']['h1'][0]['containers'][0]['image'], out['revisions'], out['warnings']
    hosts[1]['revisions'] = hosts[1]['revisions'] + [record]         # h2 remembers it, unsealed: not for h1
    assert kept() == ('drover.local/web:1', {'h1': [], 'h2': [], 'h3': []}, [])
    hosts[0]['revisions'] = hosts[0]['revisions'] + [record]         # h1 remembers it itself: kept as it runs
    assert kept()[0] == 'drover.local/web:0'
    hosts[0]['revisions'][-1] = dict(record, declaration=pd.stored_declaration(FORGED))    # not its digest
    assert kept()[0] == 'drover.local/web:1'
    # with the key, the sealed history of the service's hosts keeps it too
    hosts[0]['revisions'].pop()
    hosts[1]['revisions'][-1] = pd.sealed(KEY, record)
    out = place(hosts, complete=False, now=NOW, seal_key=KEY)
    assert out['placement']['h1'][0]['containers'][0]['image'] == 'drover.local/web:0'
    with pytest.raises(ValueError):
        place(hosts, now=NOW, seal_key=None)


# --- the controller's key -----------------------------------------------------------------------------------------

def test_the_key_is_made_once_0600_in_a_0700_folder_and_read_back(tmp_path):
    home = tmp_path / 'ansible-home'
    key = records_key(home=str(home))
    path = _records_key.key_path(str(home))
    assert path == str(home / 'drover-fleet' / 'records.key')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert len(key) == 64 and int(key, 16) >= 0
    assert records_key(home=str(home)) == key                       # read back, never made anew
    assert records_key(home=str(tmp_path / 'elsewhere')) != key
    assert os.listdir(os.path.dirname(path)) == ['records.key']     # nothing left aside
    assert records_key(home=str(tmp_path / 'timer'), create=False) is None    # a run that places nothing
    assert not (tmp_path / 'timer').exists()
    assert records_key(home=str(home), create=False) == key
    given = 'a-vault-kept-key-of-the-fleet'
    assert records_key(given, home=str(home)) == given.encode('utf-8')
    with pytest.raises(RecordsKeyError) as exc:
        records_key('short-key', home=str(home))
    assert 'at least 16 characters, it has 9' in str(exc.value) and 'short-key' not in str(exc.value)


def test_a_link_or_a_file_others_may_read_at_the_key_is_refused(tmp_path):
    home = tmp_path / 'ansible-home'
    folder = home / 'drover-fleet'
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(str(folder), 0o700)
    planted = tmp_path / 'planted'
    planted.write_text('0' * 64)
    os.chmod(str(planted), 0o600)
    os.symlink(str(planted), str(folder / 'records.key'))
    with pytest.raises(RecordsKeyError) as exc:
        records_key(home=str(home))
    assert 'symbolic link' in str(exc.value)
    assert planted.read_text() == '0' * 64
    os.unlink(str(folder / 'records.key'))
    (folder / 'records.key').write_text('0' * 64)
    os.chmod(str(folder / 'records.key'), 0o644)
    with pytest.raises(RecordsKeyError) as exc:
        records_key(home=str(home))
    assert 'mode 0600' in str(exc.value) and '0' * 64 not in str(exc.value)
    os.chmod(str(folder / 'records.key'), 0o600)
    assert records_key(home=str(home)) == b'0' * 64
    (folder / 'records.key').write_text('z' * 64)
    with pytest.raises(RecordsKeyError) as exc:
        records_key(home=str(home))
    assert 'is not 64 hexadecimal digits' in str(exc.value) and 'z' * 64 not in str(exc.value)
    (folder / 'records.key').write_text('0' * 64 + '\n')
    with pytest.raises(RecordsKeyError) as exc:
        records_key(home=str(home))
    assert 'is not 64 bytes long' in str(exc.value)


def test_a_folder_others_may_write_is_refused(tmp_path):
    home = tmp_path / 'ansible-home'
    folder = home / 'drover-fleet'
    folder.mkdir(parents=True)
    for mode in (0o755, 0o777):
        os.chmod(str(folder), mode)
        with pytest.raises(RecordsKeyError) as exc:
            records_key(home=str(home))
        assert 'must be a directory of this user alone (mode 0700)' in str(exc.value)
        assert not (folder / 'records.key').exists()
    os.chmod(str(folder), 0o700)
    os.chmod(str(home), 0o777)                                      # a folder above it that others may write
    with pytest.raises(RecordsKeyError):
        records_key(home=str(home))
