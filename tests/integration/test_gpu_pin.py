# -*- coding: utf-8 -*-
"""gpu_pin and gpu_info through the module entry point, on a real store, with a static list of fake GPU
UUIDs (no GPU or Docker engine needed): four steps, all-or-nothing, best effort versus strict, release,
persistence across processes, and bad input that leaves the store as it was."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

from helpers import store_rows, warnings_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUS = ['GPU-00000000-0000-0000-0000-00000000000%d' % i for i in range(1, 5)]
G1, G2, G3, G4 = GPUS


@pytest.fixture
def pin(module_runner, store_path):
    def run(check=False, diff=False, **args):
        args.setdefault('store_path', store_path)
        args.setdefault('discovery', 'static')
        args.setdefault('devices', list(GPUS))
        return module_runner('gpu_pin', args, check=check, diff=diff)
    return run


@pytest.fixture
def gpu_info(module_runner, store_path):
    def run(**args):
        args.setdefault('store_path', store_path)
        args.setdefault('discovery', 'static')
        args.setdefault('devices', list(GPUS))
        return module_runner('gpu_info', args)
    return run


def four_steps(pin, **args):
    """check -> apply -> again -> check again; returns the four results."""
    results = [pin(check=check, **args) for check in (True, False, False, True)]
    for r in results:
        assert not r.failed, r.get('msg')
    assert [r['changed'] for r in results] == [True, True, False, False]
    return results


def pins_in_store(path):
    rows = store_rows(path)
    return None if rows is None else sorted((r[0], r[1], r[2]) for r in rows['gpu_pins'])


def test_pin_in_four_steps(pin, store_path):
    check = pin(check=True, task='train', container='main', count=2)
    assert check['changed'] and check['gpu_ids'] == [G1, G2]
    assert store_rows(store_path) is None and not os.path.exists(store_path + '.lock')
    results = four_steps(pin, task='train', container='main', count=2)
    for r in results:
        assert r['gpu_ids'] == [G1, G2] and r['pinned'] == {'train/main': [G1, G2]}
        assert r['free'] == [G3, G4] and r['devices'] == GPUS and r['source'] == 'static' and r['stale'] == []
    assert pins_in_store(store_path) == [(G1, 'train/main', 'train'), (G2, 'train/main', 'train')]


def test_check_mode_writes_nothing_on_an_existing_store(pin, store_path):
    pin(task='train', container='main', count=1)
    rows = store_rows(store_path)
    r = pin(check=True, task='other', container='main', count=2)
    assert r['changed'] and r['gpu_ids'] == [G2, G3]
    assert store_rows(store_path) == rows


def test_second_key_and_count_change(pin, store_path):
    pin(task='a', container='main', count=1)
    b = pin(task='b', container='main', count=2)
    assert b['gpu_ids'] == [G2, G3]
    results = four_steps(pin, task='a', container='main', count=2)
    assert results[1]['gpu_ids'] == [G1, G4]
    assert results[1]['pinned'] == {'a/main': [G1, G4], 'b/main': [G2, G3]} and results[1]['free'] == []


def test_all_or_nothing_best_effort(pin, store_path):
    pin(task='a', container='main', count=3)
    rows = store_rows(store_path)
    r = pin(task='b', container='main', count=2)
    assert not r.failed and not r['changed'] and r['gpu_ids'] == []
    assert any('gpu ledger: requested 2 GPUs, 1 free' in w for w in warnings_of(r)), warnings_of(r)
    assert r['free'] == [G4] and 'b/main' not in r['pinned']
    assert store_rows(store_path) == rows


def test_all_or_nothing_strict(pin, store_path):
    pin(task='a', container='main', count=3)
    rows = store_rows(store_path)
    r = pin(task='b', container='main', count=2, strict=True)
    assert r.failed and r['msg'] == 'gpu ledger: requested 2 GPUs, 1 free'
    assert not r['changed'] and r['free'] == [G4]
    assert store_rows(store_path) == rows
    check = pin(check=True, task='b', container='main', count=2, strict=True)
    assert check.failed and check['msg'] == 'gpu ledger: requested 2 GPUs, 1 free'


def test_release_of_a_task_in_four_steps(pin, store_path):
    pin(task='a', container='one', count=1)
    pin(task='a', container='two', count=2)
    pin(task='b', container='one', count=1)
    results = four_steps(pin, task='a', state='absent')
    assert results[1]['pinned'] == {'b/one': [G4]} and results[1]['free'] == [G1, G2, G3]
    assert results[1]['gpu_ids'] == []
    assert pins_in_store(store_path) == [(G4, 'b/one', 'b')]


def test_release_of_one_container(pin, store_path):
    pin(task='a', container='one', count=1)
    pin(task='a', container='two', count=1)
    results = four_steps(pin, task='a', container='one', state='absent')
    assert results[1]['pinned'] == {'a/two': [G2]}


def test_diff_mode(pin):
    pin(task='a', container='one', count=1)
    r = pin(check=True, diff=True, task='b', container='one', count=1)
    assert r['diff'] == {'before': {'pinned': {'a/one': [G1]}},
                         'after': {'pinned': {'a/one': [G1], 'b/one': [G2]}}}
    r = pin(diff=True, task='a', state='absent')
    assert r['diff'] == {'before': {'pinned': {'a/one': [G1]}}, 'after': {'pinned': {}}}


def test_info_lists_the_ledger_and_changes_nothing(pin, gpu_info, store_path):
    empty = gpu_info()
    assert not empty.failed and empty['pinned'] == {} and empty['free'] == GPUS
    assert store_rows(store_path) is None
    pin(task='a', container='one', count=2)
    rows = store_rows(store_path)
    r = gpu_info()
    assert not r['changed'] and r['devices'] == GPUS and r['source'] == 'static'
    assert r['pinned'] == {'a/one': [G1, G2]} and r['free'] == [G3, G4] and r['stale'] == []
    assert store_rows(store_path) == rows


def test_vanished_gpu_is_stale_not_dropped(pin, gpu_info, store_path):
    pin(task='a', container='one', count=2)
    fewer = [G2, G3, G4]
    r = gpu_info(devices=fewer)
    assert r['stale'] == [G1] and r['pinned'] == {'a/one': [G2, G1]} and r['free'] == [G3, G4]
    p = pin(task='b', container='one', count=1, devices=fewer)
    assert p['gpu_ids'] == [G3] and p['stale'] == [G1]
    assert any('not discovered' in w and G1 in w for w in warnings_of(p))
    assert (G1, 'a/one', 'a') in pins_in_store(store_path)
    gone = pin(task='a', state='absent', devices=fewer)
    assert gone['stale'] == [] and gone['pinned'] == {'b/one': [G3]}


def _start_fresh_interpreter(name, args):
    code = ('import json, sys; sys.path.insert(0, %r); from conftest import run_module; '
            'print(json.dumps(run_module(%r, json.loads(sys.argv[1]))))' % (os.path.join(ROOT, 'tests'), name))
    return subprocess.Popen([sys.executable, '-c', code, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT, universal_newlines=True)


def _result_of(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _in_a_fresh_interpreter(name, args):
    return _result_of(_start_fresh_interpreter(name, args))


def test_pins_survive_a_new_process(pin, store_path):
    first = pin(task='a', container='one', count=2)
    args = dict(store_path=store_path, discovery='static', devices=GPUS)
    listed = _in_a_fresh_interpreter('gpu_info', args)
    assert listed['pinned'] == {'a/one': [G1, G2]} and listed['free'] == [G3, G4]
    again = _in_a_fresh_interpreter('gpu_pin', dict(args, task='a', container='one', count=2))
    assert not again['changed'] and again['gpu_ids'] == first['gpu_ids']
    other = _in_a_fresh_interpreter('gpu_pin', dict(args, task='b', container='one', count=2))
    assert other['gpu_ids'] == [G3, G4]
    assert pin(task='a', container='one', count=2)['gpu_ids'] == [G1, G2]


def test_concurrent_pins_never_share_a_gpu(store_path):
    args = dict(store_path=store_path, discovery='static', devices=GPUS, count=1, container='main')
    procs = [_start_fresh_interpreter('gpu_pin', dict(args, task='t%d' % i)) for i in range(len(GPUS) + 1)]
    results = [_result_of(p) for p in procs]
    got = [r['gpu_ids'] for r in results]
    assert sorted(u for ids in got for u in ids) == GPUS
    assert sorted(len(ids) for ids in got) == [0] + [1] * len(GPUS)
    assert len(pins_in_store(store_path)) == len(GPUS)


BAD = [
    (dict(task='a', container='one', count=-1), 'count'),
    (dict(task='', container='one', count=1), 'task'),
    (dict(task='a/b', container='one', count=1), 'task'),
    (dict(task='a', container='', count=1), 'container'),
    (dict(task='a', count=1), 'container'),
    (dict(task='a', container='one'), 'count'),
    (dict(task='a', state='absent', count=1), 'count'),
    (dict(task='a', container='one', count=1, devices=[]), 'devices'),
    (dict(task='a', container='one', count=1, devices=None), 'devices'),
    (dict(task='a', container='one', count=1, devices=[G1, G2, G1]), 'devices'),
    (dict(task='a', container='one', count=1, devices=[G1, '']), 'devices'),
    (dict(task='a', container='one', count=1, discovery='auto', devices=[G1]), 'devices'),
]


@pytest.mark.parametrize('args,field', BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_names_the_field_and_changes_nothing(pin, store_path, args, field):
    pin(task='keep', container='one', count=1)
    rows = store_rows(store_path)
    for check in (True, False):
        r = pin(check=check, **args)
        assert r.failed, r
        assert field in r['msg'], r['msg']
        assert store_rows(store_path) == rows


def test_container_without_task_is_refused(module_runner, store_path):
    r = module_runner('gpu_pin', dict(container='one', count=1, discovery='static', devices=GPUS,
                                      store_path=store_path))
    assert r.failed and 'task' in r['msg']
    assert store_rows(store_path) is None


def test_bad_discovery_input_for_info(gpu_info, store_path):
    r = gpu_info(devices=[])
    assert r.failed and 'devices' in r['msg']
    r = gpu_info(discovery='auto', devices=[G1])
    assert r.failed and 'devices' in r['msg']
    assert store_rows(store_path) is None
