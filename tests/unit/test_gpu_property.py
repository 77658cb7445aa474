# -*- coding: utf-8 -*-
"""Properties of the GPU ledger over random sequences of pin, release and adopt: no GPU is ever held by
two keys, none is lost, and an operation that fails changes nothing."""

from __future__ import absolute_import, division, print_function

from hypothesis import given, settings, strategies as st

from ansible_collections.drover.fleet.plugins.module_utils.gpu import plan as g

DEVICES = ['GPU-00000000-0000-0000-0000-%012d' % i for i in range(6)]
TASKS = ['a', 'b', 'c']
CONTAINERS = ['main', 'side']

keys = st.tuples(st.sampled_from(TASKS), st.sampled_from(CONTAINERS))
ops = st.one_of(
    st.tuples(st.just('pin'), keys, st.integers(min_value=0, max_value=len(DEVICES) + 1)),
    st.tuples(st.just('release'), st.sampled_from(TASKS)),
    st.tuples(st.just('release_key'), keys),
    st.tuples(st.just('adopt'), keys, st.lists(st.sampled_from(DEVICES), max_size=3)),
)


def check_invariants(pins):
    view = g.view(pins, DEVICES)
    listed = [u for uuids in view['pinned'].values() for u in uuids]
    # No UUID is held by two keys: each appears once across every key.
    assert len(listed) == len(set(listed))
    # None is lost: pinned and free are disjoint and together are exactly the devices.
    assert not set(listed) & set(view['free'])
    assert sorted(listed + view['free']) == sorted(DEVICES)
    assert view['stale'] == []
    for uuid, (key, task) in pins.items():
        assert g.task_of(key) == task


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=40))
def test_ledger_invariants_hold_over_any_sequence(sequence):
    pins = {}
    for op in sequence:
        before = dict(pins)
        if op[0] == 'pin':
            (task, container), n = op[1], op[2]
            key = g.key_for(task, container)
            free_for_key = len(g.free(pins, DEVICES)) + len(g.held(pins, key, DEVICES))
            pins, uuids, error = g.pin(pins, DEVICES, key, task, n)
            if error:
                assert free_for_key < n
                assert error == 'gpu ledger: requested %d GPUs, %d free' % (n, free_for_key)
                assert pins == before and uuids == []
            else:
                assert len(uuids) == n and g.held(pins, key, DEVICES) == uuids
                # Nobody else's pin moved.
                assert dict((u, p) for u, p in pins.items() if p[0] != key) == \
                    dict((u, p) for u, p in before.items() if p[0] != key)
        elif op[0] == 'release':
            pins, gone = g.release(pins, op[1])
            assert all(before[u][1] == op[1] for u in gone)
            assert all(p[1] != op[1] for p in pins.values())
        elif op[0] == 'release_key':
            key = g.key_for(*op[1])
            pins, gone = g.release_key(pins, key)
            assert all(p[0] != key for p in pins.values())
        else:
            (task, container), uuids = op[1], op[2]
            key = g.key_for(task, container)
            pins, got, error = g.adopt(pins, key, task, uuids)
            if error:
                assert pins == before and got == []
                assert any(u in before and before[u][0] != key for u in uuids)
            else:
                assert sorted(g.held(pins, key, DEVICES)) == sorted(set(uuids))
                assert all(before.get(u, (key,))[0] == key for u in uuids)
        check_invariants(pins)


@settings(max_examples=200, deadline=None)
@given(st.lists(ops, max_size=30), st.integers(min_value=0, max_value=len(DEVICES)))
def test_pin_is_idempotent_after_any_sequence(sequence, n):
    pins = {}
    for op in sequence:
        if op[0] == 'pin':
            key = g.key_for(*op[1])
            pins = g.pin(pins, DEVICES, key, op[1][0], op[2])[0]
        elif op[0] == 'release':
            pins = g.release(pins, op[1])[0]
    first, uuids, error = g.pin(pins, DEVICES, 'z/main', 'z', n)
    again, uuids2, error2 = g.pin(first, DEVICES, 'z/main', 'z', n)
    assert error2 == error
    if error is None:
        assert again == first and uuids2 == uuids
