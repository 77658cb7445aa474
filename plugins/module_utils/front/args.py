# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building the Ansible modules from their argument specs (the specs themselves: front/argspecs.py).

Owns: AnsibleModule made from a spec, with failures that name the option and secrets hidden, and the check
for the Docker SDK.
Must not: validate declarations (the spec modules do) or talk to anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.validation import check_type_dict

from ansible_collections.drover.fleet.plugins.module_utils._docker import HAS_DOCKER, DOCKER_IMPORT_ERROR
from ansible_collections.drover.fleet.plugins.module_utils.front.argspecs import values_at


def require_docker(module):
    if not HAS_DOCKER:
        module.fail_json(msg=missing_required_lib('docker'), exception=DOCKER_IMPORT_ERROR)


def _dict_like(value):
    """Whether ansible-core takes `value` for a mapping (a mapping, or a string of JSON or key=value)."""
    if isinstance(value, dict):
        return True
    if not isinstance(value, str):
        return False
    try:
        check_type_dict(value)
    except TypeError:
        return False
    return True


def not_mappings(spec, params, prefix=''):
    """The options with sub-options (at any depth) given a value that is not a mapping (or a list of them), as
    (name with its place, e.g. tasks[0].registry_auth, what it must be, the value)."""
    bad = []
    if not isinstance(params, dict):
        return bad
    for key in sorted(k for k, v in spec.items() if v.get('options')):
        value = params.get(key)
        where = prefix + key
        if value is None:
            continue
        if spec[key].get('type') == 'dict':
            if not _dict_like(value):
                bad.append((where, 'a mapping', value))
            elif isinstance(value, dict):
                bad.extend(not_mappings(spec[key]['options'], value, where + '.'))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if not _dict_like(item):
                    bad.append(('%s[%d]' % (where, i), 'a mapping', item))
                else:
                    bad.extend(not_mappings(spec[key]['options'], item, '%s[%d].' % (where, i)))
        elif not isinstance(value, str) or not all(_dict_like(part) for part in value.split(',')):
            bad.append((where, 'a list of mappings', value))   # a string: ansible-core splits it at commas
    return bad


def _widened(options, items):
    """`options` (sub-options) with the keys that `items` (mappings given for them) have and they do not
    declare added as raw options, at any depth."""
    out = dict(options)
    for item in items:
        out.update((k, {'type': 'raw'}) for k in item if k not in options)
    for key, opts in options.items():
        if opts.get('options'):
            given = [item.get(key) for item in items]
            given = [g for v in given for g in (v if isinstance(v, list) else [v]) if isinstance(g, dict)]
            if given:
                out[key] = dict(opts, options=_widened(opts['options'], given))
    return out


def _fail(spec, bad, exc=None):
    """Fail naming the options in `bad` (see not_mappings), logging and echoing no argument."""
    # Every option taken as it is (no sub-option is looked into): the secrets nested in the arguments cannot be
    # told apart before their options are, so nothing is logged and no argument is returned.
    loose = dict((k, {'type': 'raw', 'no_log': bool(v.get('no_log'))}) for k, v in spec.items())
    bare = AnsibleModule(argument_spec=loose, supports_check_mode=True, no_log=True)
    bad = bad or not_mappings(spec, bare.params)
    if not bad:
        raise exc  # pylint: disable=raising-bad-type
    what = '; '.join('%s must be %s, got %s' % (where, kind, type(value).__name__) for where, kind, value in bad)
    bare.fail_json(msg=what, invocation={'module_args': {}},
                   **({'exception_type': exc.__class__.__name__} if exc is not None else {}))


class _Module(AnsibleModule):
    """AnsibleModule whose invocation log hides the secrets of nested options whatever characters they hold."""

    # Paths of secrets inside values the argument spec takes whole (type raw), which it cannot declare no_log:
    # tuples of keys, a list met on the way standing for each of its items.
    nested_secrets = ()

    def _log_invocation(self):
        for path in self.nested_secrets:
            self.no_log_values.update(v for v in values_at(self.params, path) if isinstance(v, str) and v)
        # A nested option is logged as Python writes its list or dict, where a newline or a quote in a secret
        # (a PEM private key) is escaped (\n): that form is hidden only if it is a no_log value too.
        self.no_log_values.update(escaped_forms(self.no_log_values))
        super(_Module, self)._log_invocation()


def escaped_forms(values):
    """The forms that Python's repr gives the strings in `values`, where they differ."""
    out = set()
    for value in values:
        if isinstance(value, str):
            form = repr(value)[1:-1]
            if form != value:
                out.add(form)
    return out


def make_module(entries=(), nested_secrets=(), **kwargs):
    """AnsibleModule(**kwargs); but an option with sub-options given a value that is not a mapping (or a list
    of them), at any depth, fails with a message that names it, not with a traceback: ansible-core (2.19) looks
    into the sub-options before it checks the value's type.

    Ansible logs the module's arguments on the host (syslog, or the journal) when the module starts, hiding
    only the options, at any depth, that the argument spec declares no_log: every secret must be declared so.
    `entries` names the list options whose entries the module checks itself, naming the entry in its message
    (ansible-core's message names neither the entry nor its place): keys their sub-options do not declare are
    let through for that check to refuse, and the arguments are then not logged at all (a misspelt secret
    would be in clear). `nested_secrets`: paths of secrets inside options taken whole (type raw), hidden as
    no_log ones are."""
    spec = kwargs.get('argument_spec') or {}
    params = basic._load_params()
    params = params if isinstance(params, dict) else {}
    bad = not_mappings(spec, params)
    if bad:
        _fail(spec, bad)
    if entries:
        widened = dict(spec)
        for key in entries:
            given = params.get(key)
            if isinstance(given, list):
                widened[key] = dict(spec[key], options=_widened(spec[key]['options'], [g for g in given if isinstance(g, dict)]))
        if widened != spec:
            kwargs['argument_spec'] = widened
            kwargs['no_log'] = True
    cls = type('_Module', (_Module,), {'nested_secrets': tuple(nested_secrets)}) if nested_secrets else _Module
    try:
        module = cls(**kwargs)
    except (TypeError, AttributeError) as exc:
        _fail(spec, None, exc)
        return None
    store_path = module.params.get('store_path')
    if store_path is not None and not os.path.isabs(store_path):
        # A relative store would be a new, empty one in whatever directory the module runs in.
        module.fail_json(msg='store_path must be an absolute path, got %r' % store_path)
    return module
