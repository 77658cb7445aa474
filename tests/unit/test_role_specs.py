# -*- coding: utf-8 -*-
"""The runner_pools role takes every option gh_runner_slot takes of a pool, with the same type, elements, choices
and no_log: its entry point's options are written from the module's table (hack/gen-role-specs.py), and this
fails when one lags."""

from __future__ import absolute_import, division, print_function

import os
import subprocess
import sys

import yaml

from ansible_collections.drover.fleet.plugins.module_utils.front.argspecs import MIRROR_OPTIONS, POOL_OPTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECS = os.path.join(ROOT, 'roles', 'runner_pools', 'meta', 'argument_specs.yml')


def _role_options():
    with open(SPECS) as handle:
        return yaml.safe_load(handle)['argument_specs']['main']['options']


def _differences(module, role, path=''):
    """What the role's options lack or say otherwise than the module's: a list of lines."""
    out = []
    for name, arg in module.items():
        here = '%s%s' % (path, name)
        theirs = (role or {}).get(name)
        if theirs is None:
            out.append('%s: the module takes it, the role does not' % here)
            continue
        for key in ('type', 'elements', 'choices', 'no_log'):
            mine = arg.get(key)
            if key == 'type':
                mine = mine or 'str'
            if key == 'no_log':
                mine = bool(mine)
            if (theirs.get(key, 'str' if key == 'type' else (False if key == 'no_log' else None))) != mine:
                out.append('%s: %s is %r in the module, %r in the role' % (here, key, mine, theirs.get(key)))
        if arg.get('options'):
            out.extend(_differences(arg['options'], theirs.get('options'), here + '.'))
    for name in set(role or ()) - set(module):
        out.append('%s%s: the role takes it, the module does not' % (path, name))
    return out


def test_the_role_takes_every_option_of_a_pool_the_module_takes():
    assert _differences(POOL_OPTIONS, _role_options()['drover_pools']['options']) == []


def test_the_role_s_mirror_is_the_module_s():
    assert _differences(MIRROR_OPTIONS, _role_options()['drover_pools_mirror']['options']) == []


def test_a_role_that_lags_is_told():
    role = yaml.safe_load(yaml.safe_dump(_role_options()['drover_pools']['options']))
    del role['profile']['options']['docker']
    role['profile']['options']['network_mode']['choices'] = ['bridge']
    assert _differences(POOL_OPTIONS, role) == [
        "profile.network_mode: choices is ['bridge', 'host', 'none'] in the module, ['bridge'] in the role",
        'profile.docker: the module takes it, the role does not']


def test_the_role_s_pool_options_are_written_from_the_module_s_table():
    run = subprocess.run([sys.executable, os.path.join(ROOT, 'hack', 'gen-role-specs.py'), '--check'],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
