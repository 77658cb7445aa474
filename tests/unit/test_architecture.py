# -*- coding: utf-8 -*-
"""The folders of plugins/module_utils say the architecture (docs/architecture.md): one package per concern, each
imported only from above or beside it, no import cycle, and no loose file but the shared bottom. Read from the
source's own import statements, so that a new import that points upward fails here."""

from __future__ import absolute_import, division, print_function

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTILS = os.path.join(ROOT, 'plugins', 'module_utils')
PACKAGE = 'ansible_collections.drover.fleet.plugins.module_utils'

# The shared bottom: the only loose files. They import nothing of the collection.
BOTTOM = ('_code_cache', '_docker', '_spec_base')
# Each package's rank: a package imports only what ranks below it or beside it (the same rank).
RANKS = {
    'host': 1,
    'gpu': 2, 'aws': 2, 'network': 2,
    'tasks': 3,
    'front': 4,
    'services': 5, 'pools': 5,
}


def modules():
    """{dotted name under module_utils: path} of every file."""
    out = {}
    for folder, dirs, names in os.walk(UTILS):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in names:
            if name.endswith('.py'):
                rel = os.path.relpath(os.path.join(folder, name), UTILS)[:-3].replace(os.sep, '.')
                out[rel[:-len('.__init__')] if rel.endswith('.__init__') else rel] = os.path.join(folder, name)
    return out


def imports(path, known):
    """The collection's module_utils a file imports (dotted names under module_utils), from every import
    statement in it, at any depth (a function's own import counts too)."""
    tree = ast.parse(open(path).read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == PACKAGE or node.module.startswith(PACKAGE + '.')):
            base = node.module[len(PACKAGE) + 1:]
            for alias in node.names:
                name = '%s.%s' % (base, alias.name) if base else alias.name
                found.add(name if name in known else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + '.'):
                    found.add(alias.name[len(PACKAGE) + 1:])
    found.discard('')
    unknown = found - set(known)
    assert not unknown, '%s imports what is not there: %s' % (path, sorted(unknown))
    return found


def graph():
    known = modules()
    return dict((name, imports(path, known)) for name, path in known.items())


def package_of(name):
    return name.split('.')[0]


def rank(name):
    top = package_of(name)
    return 0 if top in BOTTOM else RANKS[top]


def test_no_loose_file_but_the_shared_bottom_and_every_package_is_ranked():
    loose = sorted(n for n in modules() if '.' not in n and not os.path.isdir(os.path.join(UTILS, n)))
    assert loose == sorted(BOTTOM)
    packages = sorted(n for n in os.listdir(UTILS) if os.path.isdir(os.path.join(UTILS, n)) and n != '__pycache__')
    assert packages == sorted(RANKS)


def test_the_shared_bottom_imports_nothing_of_the_collection():
    g = graph()
    assert dict((n, sorted(g[n])) for n in BOTTOM) == dict((n, []) for n in BOTTOM)


def test_every_package_is_imported_only_from_above_or_beside():
    g = graph()
    upward = sorted('%s -> %s' % (src, dst) for src, dsts in g.items() for dst in dsts if rank(dst) > rank(src))
    assert upward == []


def cycle(edges):
    """One cycle of a directed graph {node: targets}, as a list of nodes, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 'open'
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 'open':
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 'done'
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle_between_files_nor_between_packages():
    g = graph()
    assert cycle(g) is None
    packages = {}
    for src, dsts in g.items():
        packages.setdefault(package_of(src), set()).update(package_of(d) for d in dsts if package_of(d) != package_of(src))
    assert cycle(packages) is None


def test_the_checks_find_an_upward_import_and_a_cycle():
    """The checks themselves: an upward edge and a cycle are found where they are."""
    assert rank('pools.apply') > rank('tasks.plan') > rank('host.store') > rank('_docker')
    assert cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert cycle({'a': {'b'}, 'b': {'c'}, 'c': set()}) is None


@pytest.mark.parametrize('package', sorted(RANKS))
def test_each_package_says_what_it_owns_must_not_do_and_its_layers(package):
    doc = ast.get_docstring(ast.parse(open(os.path.join(UTILS, package, '__init__.py')).read()))
    assert doc and all(word in doc for word in ('Owns:', 'Must not:', 'Layers:')), doc
    # its layers name every file of the package, and nothing else
    layers = doc[doc.index('Layers:'):].split('Imports')[0]
    words = {'adapter', 'adapters', 'and', 'decider', 'deciders', 'pass', 'records'}
    named = set(re.findall(r'[a-z_]+', layers[len('Layers:'):])) - words
    files = set(n.split('.')[1] for n in modules() if n.startswith(package + '.'))
    assert named == files


def test_docs_architecture_shows_every_file_in_its_folder():
    with open(os.path.join(ROOT, 'docs', 'architecture.md')) as f:
        text = f.read()
    tree = text[text.index('```text'):]
    tree = tree[:tree.index('```', 3)]
    for name in modules():
        if name in RANKS:                   # a package's __init__.py
            continue
        shown = name.split('.')[-1] + '.py'
        assert shown in tree, '%s is not in the folder tree of docs/architecture.md' % name
    for package in RANKS:
        assert '%s/' % package in tree
