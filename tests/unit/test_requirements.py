# -*- coding: utf-8 -*-
"""The collection's runtime requirements (requirements-runtime.txt, what an execution environment installs) against
its code: every library the plugins and the host role's files import is one of them (or comes with ansible-core),
none of the tests' tools is, and the host role's default libraries are the same lines."""

from __future__ import absolute_import, division, print_function

import ast
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The distribution that gives each importable name the code uses (those of ansible-core come with it).
GIVEN_BY = {'docker': 'docker', 'github': 'pygithub', 'pynvml': 'nvidia-ml-py', 'pyroute2': 'pyroute2',
            'boto3': 'boto3', 'botocore': 'boto3', 'jmespath': 'jmespath', 'cryptography': 'cryptography',
            'ansible': 'ansible-core', 'yaml': 'ansible-core', 'jinja2': 'ansible-core'}
TEST_TOOLS = ('molecule', 'pytest', 'pytest-xdist', 'hypothesis', 'antsibull-changelog', 'ansible-lint', 'moto',
              'msgpack', 'prometheus_client', 'jsonschema', 'referencing', 'pyjwt', 'ansible-rulebook',
              'ansible-builder')


def requirement_lines(path):
    """{distribution name in lower case: the requirement as written} of a requirements file (no -r lines)."""
    out = {}
    with open(path) as handle:
        for line in handle:
            line = line.split('#')[0].strip()
            if line and not line.startswith('-'):
                out[re.split(r'[<>=!\[ ;]', line, maxsplit=1)[0].lower()] = line
    return out


def imported(paths):
    """{top-level name: [files]} of every import in `paths` (at any depth of the code)."""
    out = {}
    for path in paths:
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                out.setdefault(name.split('.')[0], []).append(os.path.relpath(path, ROOT))
    return out


def code_files():
    for folder in ('plugins', os.path.join('roles', 'host', 'files')):
        for base, dirs, files in os.walk(os.path.join(ROOT, folder)):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in files:
                if name.endswith('.py'):
                    yield os.path.join(base, name)


def test_every_library_the_code_imports_is_a_runtime_requirement():
    runtime = requirement_lines(os.path.join(ROOT, 'requirements-runtime.txt'))
    local = ('ansible_collections', '__future__')
    third = dict((n, f) for n, f in imported(code_files()).items()
                 if n not in sys.stdlib_module_names and n not in local)
    unknown = sorted(n for n in third if n not in GIVEN_BY)
    assert not unknown, 'imported, of no known distribution (add it to requirements-runtime.txt and GIVEN_BY): %s' % (
        dict((n, third[n][:3]) for n in unknown))
    missing = sorted(set(GIVEN_BY[n] for n in third) - set(runtime) - {'ansible-core'})
    assert not missing, 'imported but not in requirements-runtime.txt: %s' % missing
    assert {'docker', 'github', 'pynvml', 'pyroute2', 'boto3'} <= set(third), sorted(third)


def test_the_runtime_requirements_hold_no_test_tool_and_the_venv_takes_them_all():
    runtime = requirement_lines(os.path.join(ROOT, 'requirements-runtime.txt'))
    assert not set(TEST_TOOLS) & set(runtime), sorted(set(TEST_TOOLS) & set(runtime))
    with open(os.path.join(ROOT, 'requirements.txt')) as handle:
        assert '-r requirements-runtime.txt' in handle.read().splitlines()
    with open(os.path.join(ROOT, 'meta', 'execution-environment.yml')) as handle:
        ee = yaml.safe_load(handle)['dependencies']
    assert (ee['python'], ee['system']) == ('requirements-runtime.txt', 'bindep.txt')


def test_the_host_role_installs_the_runtime_requirements_as_written():
    runtime = requirement_lines(os.path.join(ROOT, 'requirements-runtime.txt'))
    with open(os.path.join(ROOT, 'roles', 'host', 'defaults', 'main.yml')) as handle:
        packages = yaml.safe_load(handle)['drover_host_python_packages']
    for package in packages:
        name = re.split(r'[<>=!\[ ;]', package['name'], maxsplit=1)[0].lower()
        assert runtime.get(name) == package['name'], (package, runtime.get(name))
        assert GIVEN_BY.get(package['import']) == name, package
