# -*- coding: utf-8 -*-
"""A drover.fleet module run as Ansible runs it, for the fault tests: a process of its own (that a test may
kill), its arguments in a file; and its one JSON result."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEV = os.path.join(ROOT, 'collection', 'dev')
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from sweep import given, look  # noqa: E402  pylint: disable=wrong-import-position


def module_process(module, args, tmp_path, tag):
    """drover.fleet.<module> started with `args` (written to tmp_path/args-<tag>.json, the user's input)."""
    path = given(str(tmp_path / ('args-%s.json' % tag)))
    with open(path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=False, _ansible_diff=False)}, handle)
    return subprocess.Popen([sys.executable, '-m', 'ansible_collections.drover.fleet.plugins.modules.%s' % module, path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=DEV),
                            text=True)


def result_of(proc, raw=False):
    """The result a module process printed (its output swept for secrets); with raw, (result, stdout + stderr).
    A process that printed none fails the test with its exit status, output and error output."""
    out, err = proc.communicate(timeout=300)
    look(out + err, '%s process output' % proc.args[2].rsplit('.', 1)[-1])
    try:
        result = json.loads(out[out.index('{'):])
    except ValueError:
        raise AssertionError('no result (rc %s): %s %s' % (proc.returncode, out[-2000:], err[-3000:]))
    return (result, out + err) if raw else result
