# -*- coding: utf-8 -*-
"""What a stopped task keeps of a container's output: the last lines, bounded, the values it was given hidden."""

from __future__ import absolute_import, division, print_function

from ansible_collections.drover.fleet.plugins.module_utils.tasks.look import OUTPUT_BYTES, last_output


def test_the_last_hundred_lines_are_kept():
    text = '\n'.join('line %d' % i for i in range(250)) + '\n'
    kept = last_output(text, [])
    assert kept.splitlines() == ['line %d' % i for i in range(150, 250)]


def test_given_values_are_hidden_longest_first_and_short_ones_left():
    kept = last_output(b'token=s3cr3t-value-long, part s3cr3t, pin 123\n', ['s3cr3t', 's3cr3t-value-long', '123', ''])
    assert kept == 'token=********, part ********, pin 123'


def test_at_most_64_kib_the_newest_and_no_half_line():
    text = '\n'.join(('%04d ' % i) + 'x' * 995 for i in range(100))     # 100 lines of 1000 bytes
    kept = last_output(text, [])
    assert len(kept.encode('utf-8')) <= OUTPUT_BYTES
    lines = kept.splitlines()
    assert lines[-1].startswith('0099 ') and all(len(line) == 1000 for line in lines)
    assert len(lines) == OUTPUT_BYTES // 1001
    one_line = last_output('y' * (OUTPUT_BYTES * 2), [])        # one line longer than the bound: its end
    assert one_line == 'y' * OUTPUT_BYTES


def test_undecodable_bytes_and_no_output():
    assert last_output(b'caf\xe9 ok\n', []) == 'caf\ufffd ok'
    assert last_output(None, []) is None and last_output('', []) is None


def test_a_terminal_s_line_ends_and_a_value_on_several_lines_cut_by_the_tail():
    key = '-----BEGIN KEY-----\nAAAALINE1SECRET\nBBBBLINE2SECRET\n-----END KEY-----'
    # the tail begins inside the value: its last lines are hidden one by one
    assert last_output('BBBBLINE2SECRET\n-----END KEY-----\ndone\n', [key]) == '********\n********\ndone'
    # a terminal writes CR LF: the whole value is hidden all the same
    printed = ('key: ' + key + '\n').replace('\n', '\r\n')
    assert last_output(printed, [key]) == 'key: ********'


class GoneEngine:
    """An engine whose stopped container is gone by the time the pass asks what it was given."""

    def __init__(self):
        self.asked_logs = False

    def inspect(self, container_id):
        return {'exit_code': 3, 'oom_killed': False}

    def given_values(self, container_id):
        return None

    def logs(self, container_id, tail='all'):
        self.asked_logs = True
        return 'the secret is s3cr3t-value\n'


def test_a_container_gone_before_its_values_are_known_keeps_no_output():
    from ansible_collections.drover.fleet.plugins.module_utils.tasks.look import with_exit_codes
    engine = GoneEngine()
    obs = {'id': 'c1', 'state': 'exited', 'labels': {'drover.container': 'main'}}
    with_exit_codes(engine, {('prod', 'web'): [obs]}, [('prod', 'web')])
    assert obs['exit_code'] == 3 and 'last_output' not in obs and not engine.asked_logs
