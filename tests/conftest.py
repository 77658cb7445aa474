# -*- coding: utf-8 -*-
"""Shared test set-up: make the repository importable as ansible_collections.drover.fleet, run modules
in-process the way Ansible does (arguments in, one JSON result out), and sweep the whole session for the
secrets the tests use (tests/sweep.py; DROVER_SWEEP=0 turns it off)."""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import sys
import contextlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = os.path.join(ROOT, 'collection', 'dev')
LINK = os.path.join(DEV, 'ansible_collections', 'drover', 'fleet')
if not os.path.islink(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(ROOT, LINK)
if DEV not in sys.path:
    sys.path.insert(0, DEV)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'fixtures'))

from sweep import SWEEP  # noqa: E402  pylint: disable=wrong-import-position
from github_standin.server import StandIn  # noqa: E402  pylint: disable=wrong-import-position

SWEEPING = os.environ.get('DROVER_SWEEP', '1') != '0'


def pytest_sessionstart(session):  # pylint: disable=unused-argument
    if SWEEPING:
        StandIn.secret_hook = SWEEP.register
        SWEEP.start()


def pytest_sessionfinish(session, exitstatus):  # pylint: disable=unused-argument
    if not SWEEPING:
        return
    SWEEP.stop()
    factory = getattr(session.config, '_tmp_path_factory', None)
    if factory is not None and getattr(factory, '_basetemp', None) is not None:
        SWEEP.files(str(factory.getbasetemp()))
    SWEEP.engine_log()
    SWEEP.logs()
    if SWEEP.hits:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if SWEEPING:
        terminalreporter.write_line(SWEEP.summary())
        for hit in SWEEP.hits:
            terminalreporter.write_line('  secret found: %s' % hit, red=True)


class ModuleResult(dict):
    """A module's result, and whether it failed."""

    @property
    def failed(self):
        return bool(self.get('failed'))


def run_module(name, args, check=False, diff=False):
    """Run drover.fleet.<name>'s main() with `args` as Ansible would, and return its result."""
    import importlib
    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    mod = importlib.import_module('ansible_collections.drover.fleet.plugins.modules.%s' % name)
    payload = dict(args)
    payload['_ansible_check_mode'] = check
    payload['_ansible_diff'] = diff
    payload.setdefault('_ansible_remote_tmp', '/tmp')
    payload.setdefault('_ansible_keep_remote_files', False)
    basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': payload}))
    basic._ANSIBLE_PROFILE = 'legacy'
    # Each run starts with no warnings, as a module process does (they are kept module-wide in-process).
    from ansible.module_utils.common import warnings as ansible_warnings
    ansible_warnings._global_warnings.clear()
    ansible_warnings._global_deprecations.clear()
    # A module process is never the controller: once a test of this process has imported controller code (a filter
    # plugin), Ansible would send the module's warnings to the controller's display instead of its result.
    try:
        from ansible.module_utils import _internal as ansible_internal
    except ImportError:                     # an ansible-core before 2.19: no such switch
        ansible_internal = type('NoSwitch', (), {'is_controller': False})
    was_controller, ansible_internal.is_controller = ansible_internal.is_controller, False
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            mod.main()
        except SystemExit:
            pass
        finally:
            ansible_internal.is_controller = was_controller
    text = out.getvalue()
    SWEEP.look(text, 'result of module %s' % name)
    try:
        return ModuleResult(json.loads(text))
    except ValueError:
        raise AssertionError('module %s printed no JSON result: %r' % (name, text[-2000:]))


@pytest.fixture
def module_runner():
    return run_module
