# -*- coding: utf-8 -*-
"""The GPU ledger: pure functions over pins {uuid: (key, task)} and the host's devices."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.gpu import plan as g

DEVICES = ['GPU-00000000-0000-0000-0000-00000000000%d' % i for i in range(4)]
D0, D1, D2, D3 = DEVICES


def pinned_to(pins, key):
    return g.held(pins, key, DEVICES)


def test_pin_takes_lowest_index_free_first():
    pins, uuids, error = g.pin({}, DEVICES, 'a/main', 'a', 2)
    assert error is None and uuids == [D0, D1]
    assert pins == {D0: ('a/main', 'a'), D1: ('a/main', 'a')}
    pins, uuids, error = g.pin(pins, DEVICES, 'b/main', 'b', 1)
    assert error is None and uuids == [D2]
    assert g.free(pins, DEVICES) == [D3]


def test_pin_skips_holes_in_index_order():
    pins = {D1: ('x/c', 'x')}
    pins, uuids, error = g.pin(pins, DEVICES, 'a/main', 'a', 2)
    assert (uuids, error) == ([D0, D2], None)


def test_short_ledger_is_all_or_nothing_with_the_exact_message():
    start = {D0: ('x/c', 'x'), D1: ('x/c', 'x'), D2: ('y/c', 'y')}
    pins, uuids, error = g.pin(start, DEVICES, 'a/main', 'a', 2)
    assert error == 'gpu ledger: requested 2 GPUs, 1 free'
    assert uuids == [] and pins == start
    assert g.free(pins, DEVICES) == [D3]


def test_short_ledger_on_an_empty_host():
    pins, uuids, error = g.pin({}, [], 'a/main', 'a', 1)
    assert (pins, uuids, error) == ({}, [], 'gpu ledger: requested 1 GPUs, 0 free')


def test_the_caller_pins_are_never_changed_in_place():
    start = {D0: ('x/c', 'x')}
    copy = dict(start)
    g.pin(start, DEVICES, 'a/main', 'a', 2)
    g.release(start, 'x')
    g.release_key(start, 'x/c')
    g.adopt(start, 'a/main', 'a', [D3])
    assert start == copy


def test_pin_is_idempotent_for_the_same_count():
    pins, first, error = g.pin({}, DEVICES, 'a/main', 'a', 2)
    again, second, error2 = g.pin(pins, DEVICES, 'a/main', 'a', 2)
    assert error is None and error2 is None
    assert second == first and again == pins


def test_idempotent_pin_keeps_gpus_that_are_not_the_lowest():
    pins = {D2: ('a/main', 'a'), D3: ('a/main', 'a')}
    again, uuids, error = g.pin(pins, DEVICES, 'a/main', 'a', 2)
    assert (uuids, error) == ([D2, D3], None) and again == pins


def test_repin_grows_keeping_what_the_key_holds():
    pins = {D0: ('x/c', 'x'), D2: ('a/main', 'a')}
    pins, uuids, error = g.pin(pins, DEVICES, 'a/main', 'a', 3)
    assert error is None and uuids == [D1, D2, D3]
    assert pins[D0] == ('x/c', 'x')


def test_repin_shrinks_to_the_lowest_it_holds():
    pins, uuids, error = g.pin({}, DEVICES, 'a/main', 'a', 3)
    pins, uuids, error = g.pin(pins, DEVICES, 'a/main', 'a', 1)
    assert (uuids, error) == ([D0], None)
    assert g.free(pins, DEVICES) == [D1, D2, D3]


def test_repin_short_counts_what_the_key_holds_and_changes_nothing():
    start = {D0: ('a/main', 'a'), D1: ('x/c', 'x'), D2: ('x/c', 'x')}
    pins, uuids, error = g.pin(start, DEVICES, 'a/main', 'a', 3)
    assert error == 'gpu ledger: requested 3 GPUs, 2 free'
    assert pins == start and uuids == []


def test_pin_zero_releases_the_key():
    pins, uuids, error = g.pin({D0: ('a/main', 'a')}, DEVICES, 'a/main', 'a', 0)
    assert (pins, uuids, error) == ({}, [], None)


def test_release_frees_every_key_of_the_task_only():
    pins = {D0: ('a/one', 'a'), D1: ('a/two', 'a'), D2: ('ab/one', 'ab'), D3: ('b/one', 'b')}
    left, gone = g.release(pins, 'a')
    assert gone == [D0, D1]
    assert left == {D2: ('ab/one', 'ab'), D3: ('b/one', 'b')}
    again, gone2 = g.release(left, 'a')
    assert again == left and gone2 == []


def test_release_key_frees_one_container():
    pins = {D0: ('a/one', 'a'), D1: ('a/two', 'a')}
    left, gone = g.release_key(pins, 'a/one')
    assert gone == [D0] and left == {D1: ('a/two', 'a')}


def test_adopt_repins_known_uuids():
    pins, uuids, error = g.adopt({}, 'a/main', 'a', [D3, D1])
    assert error is None and uuids == [D3, D1]
    assert pins == {D3: ('a/main', 'a'), D1: ('a/main', 'a')}
    again, uuids2, error2 = g.adopt(pins, 'a/main', 'a', [D3, D1])
    assert again == pins and error2 is None


def test_adopt_replaces_the_keys_other_pins():
    pins = {D0: ('a/main', 'a'), D1: ('a/main', 'a')}
    pins, uuids, error = g.adopt(pins, 'a/main', 'a', [D2])
    assert error is None and pins == {D2: ('a/main', 'a')}


def test_adopt_refuses_a_double_pin_and_changes_nothing():
    start = {D1: ('b/main', 'b'), D0: ('a/main', 'a')}
    pins, uuids, error = g.adopt(start, 'a/main', 'a', [D0, D1])
    assert pins == start and uuids == []
    assert error == ('gpu ledger: cannot adopt %s, %s for a/main: %s is pinned to b/main' % (D0, D1, D1))


def test_adopt_of_an_undiscovered_gpu_is_kept_and_reported_stale():
    pins, uuids, error = g.adopt({}, 'a/main', 'a', ['GPU-gone'])
    assert error is None
    assert g.stale(pins, DEVICES) == ['GPU-gone']
    assert g.free(pins, DEVICES) == DEVICES


def test_stale_pins_are_reported_not_dropped():
    pins = {D0: ('a/main', 'a'), 'GPU-gone': ('a/main', 'a'), D1: ('b/main', 'b')}
    view = g.view(pins, DEVICES)
    assert view['stale'] == ['GPU-gone']
    assert view['pinned'] == {'a/main': [D0, 'GPU-gone'], 'b/main': [D1]}
    assert view['free'] == [D2, D3] and view['devices'] == DEVICES
    # Pinning another key leaves the stale pin where it is and never hands it out.
    after, uuids, error = g.pin(pins, DEVICES, 'c/main', 'c', 2)
    assert error is None and uuids == [D2, D3] and after['GPU-gone'] == ('a/main', 'a')
    # A key whose stale pin still counts keeps it (idempotent) ...
    same, uuids, error = g.pin(pins, DEVICES, 'a/main', 'a', 2)
    assert same == pins and uuids == [D0, 'GPU-gone']
    # ... and releasing the task is what frees it.
    left, gone = g.release(pins, 'a')
    assert gone == sorted([D0, 'GPU-gone']) and g.stale(left, DEVICES) == []


def test_a_vanished_device_is_stale_for_its_holder():
    pins, uuids, error = g.pin({}, DEVICES, 'a/main', 'a', 2)
    fewer = DEVICES[1:]
    assert g.stale(pins, fewer) == [D0]
    assert g.free(pins, fewer) == [D2, D3]


def test_keys_and_tasks():
    assert g.key_for('train-42', 'main') == 'train-42/main'
    assert g.task_of('train-42/main') == 'train-42'
    for task in ('', 'a/b', None):
        with pytest.raises(g.PinError, match='task'):
            g.key_for(task, 'main')
    with pytest.raises(g.PinError, match='container'):
        g.key_for('a', '')
    with pytest.raises(g.PinError, match='key'):
        g.pin({}, DEVICES, 'b/main', 'a', 1)
    with pytest.raises(g.PinError, match='count'):
        g.pin({}, DEVICES, 'a/main', 'a', -1)


def test_short_message():
    assert g.short_message(4, 3) == 'gpu ledger: requested 4 GPUs, 3 free'


def test_short_for_names_the_field_and_the_hosts_gpus():
    assert g.short_for('containers[1].gpu', 2, 4, 1) == \
        'containers[1].gpu asks for 2 GPUs; this host has 4 GPUs, 1 free'
    assert g.short_for('task_definition.containerDefinitions[0].resourceRequirements', 1, 1, 0) == \
        'task_definition.containerDefinitions[0].resourceRequirements asks for 1 GPU; this host has 1 GPU, 0 free'
    assert g.short_for('containers[0].gpu', 2, 0, 0) == \
        'containers[0].gpu asks for 2 GPUs; this host has 0 GPUs, 0 free'


def test_could_have_is_the_free_gpus_and_the_keys_own():
    pins = {D0: ('a/main', 'a'), D1: ('b/main', 'b'), 'GPU-gone': ('a/main', 'a')}
    # a/main holds D0 (and a stale GPU, which it cannot be given again); D2 and D3 are free.
    assert g.could_have(pins, DEVICES, 'a/main') == 3
    assert g.could_have(pins, DEVICES, 'c/main') == 2
    # The count pin's own message gives, for the same ledger.
    assert g.pin(pins, DEVICES, 'a/main', 'a', 4)[2] == g.short_message(4, 3)


def test_a_runner_pool_s_pins_are_told_from_a_task_s():
    assert g.runners_task('ci') == 'pool@ci' and g.is_runners(g.runners_task('ci'))
    assert not g.is_runners('prod/web') and not g.is_runners('web')
