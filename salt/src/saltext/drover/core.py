"""The bridge from Salt to the drover.fleet collection's core.

Owns: finding the installed collection and importing its core (never a copy of it), checking a state's
arguments against the Ansible module's own argument spec (the same types, choices, defaults and rules, so a
state and a module given the same declaration converge the same), hiding secrets in what goes back to Salt,
and turning the core's result into a Salt state return, its events into events on Salt's event bus.
Must not: plan or apply anything itself (the core does), or import anything of Ansible's.
"""

import copy
import importlib
import logging
import os
import sys

log = logging.getLogger(__name__)

PACKAGE = 'ansible_collections.drover.fleet.plugins.module_utils'
# Where Ansible looks for collections when ANSIBLE_COLLECTIONS_PATH is not set (ansible-core's default).
DEFAULT_PATHS = ('~/.ansible/collections', '/usr/share/ansible/collections')
CONFIG_KEY = 'drover.collections_path'
HIDDEN = '********'


class Invalid(ValueError):
    """A state's arguments do not fit the module's argument spec; the message names the option."""


def _candidates(opts):
    configured = (opts or {}).get(CONFIG_KEY) or os.environ.get('DROVER_COLLECTIONS_PATH')
    out = []
    for value in (configured, os.environ.get('ANSIBLE_COLLECTIONS_PATH') or os.environ.get('ANSIBLE_COLLECTIONS_PATHS')):
        if isinstance(value, (list, tuple)):
            out.extend(value)
        elif value:
            out.extend(value.split(os.pathsep))
    if not out:
        out.extend(DEFAULT_PATHS)
    return [os.path.expanduser(p) for p in out if p]


def find_collection(opts=None):
    """The directory that holds ansible_collections/drover/fleet, put on sys.path; None when none is found.
    The first of: the minion option `drover.collections_path` (or DROVER_COLLECTIONS_PATH), then
    ANSIBLE_COLLECTIONS_PATH, then Ansible's default collection paths. Each entry may name the directory
    that holds ansible_collections/ or ansible_collections/ itself."""
    for path in _candidates(opts):
        base = os.path.dirname(path.rstrip('/')) if os.path.basename(path.rstrip('/')) == 'ansible_collections' else path
        if os.path.isdir(os.path.join(base, 'ansible_collections', 'drover', 'fleet', 'plugins', 'module_utils')):
            if base not in sys.path:
                sys.path.append(base)
            return base
    return None


def core(name, opts=None):
    """The collection's module_utils module `name` (e.g. 'tasks.apply'). Raises ImportError, saying where the
    collection was looked for, when it cannot be imported."""
    try:
        return importlib.import_module('%s.%s' % (PACKAGE, name))
    except ImportError as first:
        if find_collection(opts) is None:
            raise ImportError('the drover.fleet collection was not found (looked in %s; set the minion option %s or '
                              'ANSIBLE_COLLECTIONS_PATH): %s' % (', '.join(_candidates(opts)), CONFIG_KEY, first))
        return importlib.import_module('%s.%s' % (PACKAGE, name))


def missing(opts, needs=('docker',)):
    """Why the extension cannot load here (the reason for __virtual__), or None."""
    try:
        core('front.argspecs', opts)
    except ImportError as exc:
        return str(exc)
    checks = {'docker': ('_docker', 'HAS_DOCKER', 'the Docker SDK for Python (pip install docker)'),
              'github': ('pools.github', 'HAS_GITHUB', 'PyGithub (pip install PyGithub)')}
    lacking = [checks[n][2] for n in needs if not getattr(core(checks[n][0], opts), checks[n][1])]
    return 'missing %s' % ' and '.join(lacking) if lacking else None


# --- arguments, checked as the Ansible module checks them ----------------------------------------------------

TRUE = ('yes', 'on', '1', 'true', 'y', 't')
FALSE = ('no', 'off', '0', 'false', 'n', 'f')


def _convert(kind, value, where):
    if kind in (None, 'raw'):
        return value
    if kind in ('str', 'path'):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise Invalid('%s must be a string, got %s' % (where, type(value).__name__))
        return os.path.expanduser(os.path.expandvars(value)) if kind == 'path' else value
    if kind == 'bool':
        if isinstance(value, bool):
            return value
        if isinstance(value, (str, int)) and str(value).lower() in TRUE + FALSE:
            return str(value).lower() in TRUE
        raise Invalid('%s must be a boolean, got %r' % (where, value))
    if kind in ('int', 'float'):
        if isinstance(value, bool):
            raise Invalid('%s must be %s, got a boolean' % (where, 'an integer' if kind == 'int' else 'a number'))
        try:
            number = float(value) if kind == 'float' else int(value)
            if kind == 'int' and isinstance(value, float) and value != number:
                raise ValueError(value)
            return number
        except (TypeError, ValueError):
            raise Invalid('%s must be %s, got %r' % (where, 'an integer' if kind == 'int' else 'a number', value))
    if kind == 'list':
        if isinstance(value, str):
            value = [v.strip() for v in value.split(',')]
        if not isinstance(value, list):
            raise Invalid('%s must be a list, got %s' % (where, type(value).__name__))
        return value
    if kind == 'dict':
        if not isinstance(value, dict):
            raise Invalid('%s must be a mapping, got %s' % (where, type(value).__name__))
        return value
    return value


def check(spec, given, rules=None, where='', open_keys=False):
    """`given` checked against `spec` (an Ansible argument spec), with every option present and the spec's
    defaults applied: unknown options, types, choices, required options, sub-options at any depth and the rules
    (mutually_exclusive, required_if, required_one_of) as AnsibleModule checks them. Raises Invalid naming the
    option. `open_keys`: options the spec does not declare are let through (the core checks them itself and
    names them)."""
    if not isinstance(given, dict):
        raise Invalid('%s must be a mapping, got %s' % (where.rstrip('.') or 'the arguments', type(given).__name__))
    unknown = sorted(k for k in given if k not in spec)
    if unknown and not open_keys:
        raise Invalid('%sunsupported options: %s (supported: %s)' % (
            ('%s: ' % where.rstrip('.')) if where else '', ', '.join(unknown), ', '.join(sorted(spec))))
    out = dict((k, given[k]) for k in unknown)
    for key, opt in spec.items():
        name = where + key
        value = given.get(key)
        if value is None:
            if opt.get('required'):
                raise Invalid('%s is required' % name)
            out[key] = copy.deepcopy(opt.get('default'))
            continue
        value = _convert(opt.get('type', 'str'), value, name)
        if opt.get('type') == 'list' and opt.get('elements'):
            value = [_convert(opt['elements'], v, '%s[%d]' % (name, i)) for i, v in enumerate(value)]
        choices = opt.get('choices')
        if choices:
            for v in (value if isinstance(value, list) else [value]):
                if v not in choices:
                    raise Invalid('%s must be one of %s, got %r' % (name, ', '.join(map(str, choices)), v))
        subs = opt.get('options')
        if subs:
            entry_open = open_keys or all(s.get('type') == 'raw' for s in subs.values())
            if isinstance(value, list):
                value = [check(subs, v, opt.get('rules'), '%s[%d].' % (name, i), entry_open) for i, v in enumerate(value)]
            else:
                value = check(subs, value, opt.get('rules'), name + '.', entry_open)
        out[key] = value
    _rules(rules or {}, out, where)
    return out


def _rules(rules, params, where):
    def given(k):
        return params.get(k) is not None
    for group in rules.get('mutually_exclusive', ()):
        both = [where + k for k in group if given(k)]
        if len(both) > 1:
            raise Invalid('options are mutually exclusive: %s' % ', '.join(both))
    for group in rules.get('required_one_of', ()):
        if not any(given(k) for k in group):
            raise Invalid('one of these options is required: %s' % ', '.join(where + k for k in group))
    for key, value, needed in rules.get('required_if', ()):
        if params.get(key) == value:
            lacking = [where + k for k in needed if not given(k)]
            if lacking:
                raise Invalid('%s%s is %s but these options are missing: %s' % (where, key, value, ', '.join(lacking)))


def secrets(spec, params, extra_paths=()):
    """The secret values in `params`: every option the spec declares no_log, at any depth, and the values at
    `extra_paths` (tuples of keys; a list met on the way stands for each of its items)."""
    found = set()

    def walk(spec, params):
        if not isinstance(params, dict):
            return
        for key, opt in spec.items():
            value = params.get(key)
            if value is None:
                continue
            if opt.get('no_log') and isinstance(value, str) and value:
                found.add(value)
            if opt.get('options'):
                for item in value if isinstance(value, list) else [value]:
                    walk(opt['options'], item)
    walk(spec, params)
    for path in extra_paths:
        found.update(v for v in core('front.argspecs').values_at(params, path) if isinstance(v, str) and v)
    # Also the forms a secret takes when a list or a mapping holding it is written out (a PEM key's newlines).
    found.update(repr(v)[1:-1] for v in list(found) if repr(v)[1:-1] != v)
    return found


def redact(data, hidden):
    """`data` with every secret of `hidden` replaced, wherever it appears in a string, at any depth."""
    if not hidden:
        return data
    if isinstance(data, str):
        for value in sorted(hidden, key=len, reverse=True):
            if value in data:
                data = data.replace(value, HIDDEN)
        return data
    if isinstance(data, dict):
        return dict((redact(k, hidden), redact(v, hidden)) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return [redact(v, hidden) for v in data]
    return data


def _plain(value):
    """A plain copy of pillar data (Salt 3008 hands pillar out in masking dict and list types)."""
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in dict.items(value))
    if isinstance(value, list):
        return [_plain(v) for v in list.__iter__(value)]
    return value


def pillar_at(pillar, key):
    """The pillar value at `key` (parts joined by ':'), or None."""
    value = pillar.value() if callable(getattr(pillar, 'value', None)) else pillar   # the loader's context proxy
    for part in key.split(':'):
        if not hasattr(value, 'keys') or part not in value:
            return None
        value = value[part]
    return _plain(value)


def state_args(kwargs, pillar=None, reserved=()):
    """The arguments Salt passed a state function, less Salt's own (__id__, __env__, __sls__, __pub_*).

    `pillar_key` (e.g. drover:tasks) names a pillar mapping whose options are taken as if they were given
    (those given as arguments win): the state is then declared without its secrets, which Salt would otherwise
    keep in the minion's cache of the compiled states (highstate.cache.p) with the rest of its arguments.
    `reserved`: the host's own options (its engine, its store, its policy), which that mapping may not hold:
    whoever writes the declarations does not set the policy that bounds them."""
    given = dict((k, v) for k, v in kwargs.items() if not k.startswith('__'))
    key = given.pop('pillar_key', None)
    if key is not None:
        found = pillar_at(pillar or {}, str(key))
        if not isinstance(found, dict):
            raise Invalid('pillar_key: the pillar has no mapping under %s' % key)
        own = sorted(k for k in found if k in reserved)
        if own:
            raise Invalid('pillar_key %s: %s %s the host\'s own (its engine, its store, its AWS endpoint, its '
                          'policy), given as the state\'s arguments (the example state takes them from the minion\'s '
                          'configuration, drover.host and drover.policy), never with the declarations'
                          % (key, ', '.join(own), 'is' if len(own) == 1 else 'are'))
        merged = dict(found)
        merged.update(given)
        given = merged
    return given



def declared(name, state, kwargs, pillar, key, plural=None, reserved=()):
    """What a state function declares, for the Ansible module's argument spec: its arguments (state_args, the
    host's `reserved` options never from the pillar), the state ID as the option `key` unless given (or unless the
    state declares `plural` entries), and the state function's `state`. Raises Invalid, naming the option."""
    given = state_args(kwargs, pillar, tuple(reserved) + tuple(core('front.argspecs').HOST_OWN))
    if plural is None or plural not in given:
        given.setdefault(key, name)
    given['state'] = state
    return given

# --- results and events -------------------------------------------------------------------------------------

def tag_of(event):
    """Salt event tag of one of the core's events: drover/<subject>/<event>, e.g.
    drover/task/prod/web/task.stopped, drover/pool/ci/pool.held."""
    return 'drover/%s/%s' % (event.get('subject') or 'host', event.get('event') or 'event')


def fire(salt_funcs, opts, events):
    """Fire the core's events on the minion's event bus (what event.fire does, through one connection for all of
    them); with a master, send them there too (event.send) so that a reactor sees them. Returns how many the
    local bus took (none when no minion daemon holds the bus: a masterless salt-call on its own) and how many
    went to the master."""
    taken = sent = 0
    try:
        import salt.utils.event
        with salt.utils.event.get_event('minion', sock_dir=opts['sock_dir'], opts=opts, listen=False) as bus:
            for event in events:
                # No minion daemon holds the bus (salt-call on its own): the first event says so; trying the
                # others would only open a connection each.
                if not bus.fire_event(dict(event), tag_of(event)):
                    break
                taken += 1
    except Exception as exc:  # pylint: disable=broad-except
        log.debug('drover: events not fired on the local bus: %s', exc)
    if opts.get('master_type') != 'disable' and opts.get('file_client') != 'local' and not opts.get('local'):
        for event in events:
            try:
                if salt_funcs['event.send'](tag_of(event), dict(event)):
                    sent += 1
            except Exception as exc:  # pylint: disable=broad-except
                log.debug('drover: event %s not sent: %s', tag_of(event), exc)
    return taken, sent


def _changes(result):
    """What changed, as Salt's `changes`: the core's diff (before/after per key) as old/new, and the names
    of what was started, stopped or released."""
    if not result.get('changed'):
        return {}
    out = {}
    diff = result.get('diff') or {}
    before, after = diff.get('before'), diff.get('after')
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                out[key] = {'old': before.get(key), 'new': after.get(key)}
    elif before is not None or after is not None:
        out['diff'] = {'old': before, 'new': after}
    for key in ('started', 'stopped', 'released', 'orphans_deleted'):
        if result.get(key):
            out[key] = result[key]
    if not out:
        for key in ('tasks', 'task', 'pool', 'pools', 'netns', 'gpu_ids'):
            if key in result:
                out[key] = result[key]
                break
        else:
            out['changed'] = True
    return out


def run_state(name, converge, params, hidden, test, salt_funcs, opts, what):
    """Call the core's `converge` and return Salt's state dict (name, result, changes, comment), secrets
    hidden. `converge(params, check_mode)` returns the core's result or raises its failure (.msg, .result)."""
    ret = {'name': name, 'result': None, 'changes': {}, 'comment': ''}
    try:
        result = converge(params, test)
    except Exception as exc:  # the core's failure types (TaskFailure, GpuFailure) carry msg and result
        if not hasattr(exc, 'msg'):
            raise
        done = getattr(exc, 'result', None) or {}
        ret.update(result=False, comment=redact(exc.msg, hidden),
                   changes=redact(_changes(done) if done.get('changed') else {}, hidden))
        if done.get('events') and not test:
            fire(salt_funcs, opts, redact(done['events'], hidden))
        return ret
    changes = redact(_changes(result), hidden)
    warnings = redact(result.get('warnings') or [], hidden)
    events = redact(result.get('events') or [], hidden)
    if test:
        ret['result'] = None if result.get('changed') else True
        ret['comment'] = '%s would change' % what if result.get('changed') else '%s: nothing to change' % what
    else:
        ret['result'] = True
        ret['comment'] = '%s converged' % what if result.get('changed') else '%s: nothing to change' % what
        if events:
            taken, sent = fire(salt_funcs, opts, events)
            if taken or sent:
                ret['comment'] += '; %d event(s) fired' % len(events)
            else:
                ret['comment'] += '; %d event(s) not fired: no minion process holds the event bus' % len(events)
    if warnings:
        ret['comment'] += '\nwarnings: ' + '; '.join(str(w) for w in warnings)
        ret['warnings'] = warnings
    ret['changes'] = changes
    return ret


def invalid(name, exc, hidden=()):
    return {'name': name, 'result': False, 'changes': {}, 'comment': redact('invalid arguments: %s' % exc, set(hidden))}


try:
    from salt.exceptions import CommandExecutionError as CommandFailed
except ImportError:  # outside Salt (unit tests of this file)
    class CommandFailed(Exception):
        pass
