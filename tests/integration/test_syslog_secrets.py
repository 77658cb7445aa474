# -*- coding: utf-8 -*-
"""Ansible logs a module's arguments on the host (syslog, or the journal) when the module starts, hiding only
the options its argument spec declares no_log. The secrets nested in entries of `tasks` and `pools` are
declared so: a real module process logs its invocation with them masked, and never in clear.

The session's sweep receives what is sent to syslog (tests/sweep.py binds /dev/log where the host has no
listener) or reads the journal where journald runs; each run here is in check mode against a store in the
test's own directory and a GitHub that is not there, so it leaves nothing on the host."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from helpers import IMAGE
from sweep import SWEEP, given, journal, look, register

DEV = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'collection', 'dev')
MASK = '********'


def logged_invocation(module, args, tmp_path):
    """The syslog (or journal) lines of one real module process of drover.fleet.<module>, run in check mode
    with `args` in a file as Ansible hands them over; and its result."""
    path = given(str(tmp_path / ('args-%s.json' % module)))
    with open(path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=True, _ansible_diff=False,
                                               _ansible_module_name='drover.fleet.%s' % module)}, handle)
    tap = SWEEP.syslog
    listening = tap is not None and tap.mode in ('own', 'shared')
    mark = tap.mark() if listening else None
    began = time.time()
    done = subprocess.run([sys.executable, '-m', 'ansible_collections.drover.fleet.plugins.modules.%s' % module, path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=DEV),
                          text=True, timeout=300, check=False)
    look(done.stdout + done.stderr, '%s process output' % module)
    result = json.loads(done.stdout[done.stdout.index('{'):])
    ident = 'ansible-drover.fleet.%s' % module
    deadline = time.time() + 5
    while True:
        if listening:
            lines = tap.since(mark)
        else:
            lines = journal(began - 1, time.time())
            if lines is None:
                pytest.fail('no syslog line can be read on this host: the sweep could not listen on /dev/log '
                            '(%s) and journald does not run' % (tap.mode if tap else 'no sweep'))
        ours = [line for line in lines if ident in line]
        if ours or time.time() > deadline:
            return ours, result
        time.sleep(0.1)


def test_nested_registry_password_is_masked_in_the_invocation_log(engine, tmp_path):
    password = register('registry-pw-%s' % uuid.uuid4().hex)
    top = register('registry-top-%s' % uuid.uuid4().hex)
    args = {'store_path': str(tmp_path / 'store.db'), 'cluster': 'syslog-%s' % uuid.uuid4().hex[:6],
            'registry_auth': {'registry': '198.18.0.1:5000', 'username': 'top', 'password': top},
            'tasks': [{'name': 'pulled', 'containers': [{'name': 'main', 'image': '198.18.0.1:5000/drover/none:1'}],
                       'registry_auth': {'registry': '198.18.0.1:5000', 'username': 'someone', 'password': password}},
                      {'name': 'local', 'containers': [{'name': 'main', 'image': IMAGE}]}]}
    lines, result = logged_invocation('ecs_task', args, tmp_path)
    assert lines, 'ecs_task logged no invocation to syslog'
    text = '\n'.join(lines)
    assert 'Invoked with' in text and 'tasks=' in text and 'someone' in text, text
    assert password not in text and top not in text
    assert "'password': '%s'" % MASK in text, text            # the nested one, masked
    assert 'registry_auth=' in text
    assert password not in json.dumps(result) and top not in json.dumps(result)
    assert result['invocation']['module_args']['tasks'][0]['registry_auth']['password'] == \
        'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert not os.path.exists(str(tmp_path / 'store.db'))    # check mode: not even the store


def test_nested_github_secrets_are_masked_in_the_invocation_log(engine, tmp_path):
    token = register('ghp_%s' % uuid.uuid4().hex)
    key = register('-----BEGIN RSA PRIVATE KEY-----\n%s\n-----END RSA PRIVATE KEY-----' % uuid.uuid4().hex)
    top = register('ghp_top%s' % uuid.uuid4().hex)
    pull = register('pull-%s' % uuid.uuid4().hex)
    profile = {'name': 'small', 'image': IMAGE, 'slots': 1,
               'registry_auth': {'registry': 'registry.invalid', 'username': 'u', 'password': pull}}
    args = {'store_path': str(tmp_path / 'store.db'), 'api_url': 'http://127.0.0.1:9', 'token': top,
            'machine_id': 'syslogtest', 'github_timeout': 2,
            'pools': [{'pool': 'sys-a', 'repository': 'octo/a', 'labels': ['self-hosted'], 'profile': profile,
                       'token': token},
                      {'pool': 'sys-b', 'repository': 'octo/b', 'labels': ['self-hosted'], 'profile': profile,
                       'token': None, 'app_id': 1, 'installation_id': 2, 'app_private_key': key}]}
    lines, result = logged_invocation('gh_runner_slot', args, tmp_path)
    assert lines, 'gh_runner_slot logged no invocation to syslog'
    text = '\n'.join(lines)
    assert 'Invoked with' in text and 'pools=' in text and 'sys-a' in text, text
    for secret in (token, key, top, pull):
        # A key's newlines are escaped in the logged list: that form must not be in clear either.
        assert secret not in text and repr(secret)[1:-1] not in text and secret not in json.dumps(result)
    assert "'token': '%s'" % MASK in text and "'app_private_key': '%s'" % MASK in text, text
    entries = result['invocation']['module_args']['pools']
    assert entries[0]['token'] == entries[1]['app_private_key'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert not os.path.exists(str(tmp_path / 'store.db'))
