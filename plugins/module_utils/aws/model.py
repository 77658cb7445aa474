# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ECS task definitions checked by AWS's own model: the RegisterTaskDefinition input shape of botocore.

Owns: turning a task definition as users have it (a file, `describe-task-definition` output, the input of
`register-task-definition`) into the RegisterTaskDefinition input, cleaned, or a SpecError whose message
names every path that is wrong (`task_definition.containerDefinitions[0].cpu`); the rule for template
placeholders left in a file; the list of container fields a later release handles (next_release_fields).
Must not: touch Docker, the network or the disk (beyond botocore's bundled model, read once and kept);
decide what the collection does with a valid document (that is tasks.spec's). Raises SpecError for every
fault of the document, and ImportError only when botocore is missing (callers check HAS_BOTOCORE first).

What normalize does, in order:
1. A bare list is refused: it is container definitions without the task definition around them.
   A `{"taskDefinition": {...}}` wrapper (a whole `describe-task-definition` output) is unwrapped; its
   `tags` beside `taskDefinition` are kept (the inner `tags` win when both are given), boto3's
   `ResponseMetadata` is dropped, any other key beside it is refused.
2. The keys only DescribeTaskDefinition returns (OUTPUT_ONLY) are dropped.
3. A member that is null, an empty list or an empty mapping is dropped, at every depth, as if absent
   (after its own members were cleaned, so `{"options": null}` goes too); so is a member of a structure that
   is an empty string (step 5; `"taskRoleArn": ""`), but for a `value` (an environment variable or a tag may
   be empty). The empty strings and mappings dropped are named in one warning. Elements of a list are kept
   as they are, so that the indexes in messages are the ones in the file: a null element is refused by
   the model.
4. A container definition that is not a mapping (a string: a placeholder that stood for a whole
   definition) is refused, naming `containerDefinitions[N]`; then every string value (never a key) is
   checked for template placeholders, before the model, so that `"cpu": "${cpu}"` is named a placeholder
   and not a type error. The styles and where each counts are aws.template's (one table, which the filters
   ecs_placeholders and ecs_render share); the message names the filter that fills them.
5. A number written as a string is taken as that number where the model wants an integer or a long
   (`"containerPort": "8080"`, `"memory": "512"`): digits with an optional leading '-', optionally
   surrounded by whitespace. A string that is not a whole number there is refused, naming the field and
   quoting the value. `"true"`/`"false"` (any case, optionally surrounded by whitespace) are taken where the
   model wants a boolean; another string there is refused the same way. A boolean where the model wants a
   number is refused (Python counts it as an int, the model does not). The task-level `cpu` and `memory`
   are strings in the model and stay strings.
6. botocore's ParamValidator checks types, required members and unknown keys; its report is given back
   with each path starting with `field.`, all errors joined with '; ' (at most MAX_ERRORS of them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import importlib.util
import re

from ansible_collections.drover.fleet.plugins.module_utils.aws import template as _td_template
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

# botocore is found now and imported when a document is first checked: a pass without task definitions (the
# repeated converge of a fleet) does not pay for its import.
try:
    HAS_BOTOCORE = importlib.util.find_spec('botocore') is not None
except (ImportError, ValueError):
    HAS_BOTOCORE = False
BOTOCORE_IMPORT_ERROR = None if HAS_BOTOCORE else 'ImportError: No module named botocore'

OPERATION = 'RegisterTaskDefinition'
# Returned by DescribeTaskDefinition (and RegisterTaskDefinition's output), never part of its input.
OUTPUT_ONLY = ('taskDefinitionArn', 'revision', 'status', 'requiresAttributes', 'compatibilities',
               'registeredAt', 'registeredBy', 'deregisteredAt')
# Container-level fields a later release handles; normalize accepts them, the caller refuses them.
FIELDS_NEXT = ()
LOG_FIELDS_NEXT = ()
LOG_DRIVERS_NEXT = ()
# The most errors one message lists, and the most characters of one error or of a quoted value.
MAX_ERRORS = 10
MAX_ERROR_CHARS = 300
MAX_VALUE_CHARS = 80

_INTEGER = re.compile(r'\A\s*-?[0-9]+\s*\Z')
_BOOLEANS = {'true': True, 'false': False}
# The start of each line of botocore's report, and what ends the path in it.
_REPORT_LINE = re.compile(r'\A(Missing required parameter in |Unknown parameter in |'
                          r'Invalid (?:type|value|length) for (?:document )?parameter |Invalid parameter |'
                          r'Invalid number of parameters set for tagged union structure |'
                          r'Must set one of the following keys for tagged union ?structure )'
                          r'(.*?)(: |, |\. |\Z)', re.S)
_REPORT_SPLIT = re.compile(r'\n(?=Missing required |Unknown parameter |Invalid |Must set one )')
_CLASS = re.compile(r"<class '([A-Za-z_.]+)'>")

# botocore's session, model and validator, made on the first call and kept (reading the model is the
# slow part: tens of milliseconds).
_CACHE = {}


def _botocore(name='botocore'):
    """botocore (or one of its modules), imported on first use."""
    return importlib.import_module(name)


def model_version():
    """botocore's version (its bundled ECS model is the one that judges), or None without botocore."""
    return _botocore().__version__ if HAS_BOTOCORE else None


def _model():
    cached = _CACHE.get('model')
    if cached is None:
        if not HAS_BOTOCORE:
            raise ImportError('botocore is required to check an ECS task definition: %s' % BOTOCORE_IMPORT_ERROR)
        # botocore's loader and model, not a session: a session imports the whole client stack (credentials,
        # endpoints, retries), which checking a document never uses.
        data = _botocore('botocore.loaders').Loader().load_service_model('ecs', 'service-2')
        service = _botocore('botocore.model').ServiceModel(data, service_name='ecs')
        cached = (service.operation_model(OPERATION).input_shape, _botocore('botocore.validate').ParamValidator())
        _CACHE['model'] = cached
    return cached


def input_shape():
    """The RegisterTaskDefinition input shape (cached)."""
    return _model()[0]


def kind_at(parts):
    """The model's type of the field at `parts` (keys and indexes, a taskDefinition wrapper allowed):
    'integer', 'string', 'structure'...; None where the model has no such field or botocore is missing."""
    if not HAS_BOTOCORE:
        return None
    shape = input_shape()
    for part in parts[1:] if parts[:1] == ('taskDefinition',) else parts:
        kind = shape.type_name
        if kind == 'structure' and not isinstance(part, int) and part in shape.members:
            shape = shape.members[part]
        elif kind == 'list' and isinstance(part, int):
            shape = shape.member
        elif kind == 'map' and not isinstance(part, int):
            shape = shape.value
        else:
            return None
    return shape.type_name


def _quote(value):
    text = repr(value)
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS - 3] + '...'
    return text


def _refuse(errors, hint=None):
    shown = [e if len(e) <= MAX_ERROR_CHARS else e[:MAX_ERROR_CHARS - 3] + '...' for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        shown.append('and %d more' % (len(errors) - MAX_ERRORS))
    raise SpecError('; '.join(shown) + (' (%s)' % hint if hint else ''))


def _unwrap(td, field):
    if isinstance(td, list):
        raise SpecError('%s is a list: give it as containerDefinitions of a task definition with a family' % field)
    if not isinstance(td, dict):
        raise SpecError('%s must be a mapping (a task definition), got %s' % (field, type(td).__name__))
    if 'taskDefinition' not in td:
        return td
    inner = td['taskDefinition']
    if not isinstance(inner, dict):
        raise SpecError('%s.taskDefinition must be a mapping (a task definition), got %s'
                        % (field, type(inner).__name__))
    others = [k for k in td if k not in ('taskDefinition', 'tags', 'ResponseMetadata')]
    if others:
        raise SpecError('Unknown parameter in %s: "%s", must be one of: taskDefinition, tags' % (field, others[0]))
    if td.get('tags') is not None and inner.get('tags') is None:
        inner = dict(inner, tags=td['tags'])
    return inner


def _empty(value):
    return value is None or (isinstance(value, (list, dict)) and not value)


def _clean(value, parts=(), dropped=None):
    """A copy without null, empty-list and empty-mapping members, at every depth; the path of each empty
    mapping dropped is added to `dropped`."""
    if isinstance(value, dict):
        out = {}
        for key, member in value.items():
            member = _clean(member, parts + (key,), dropped)
            if isinstance(member, dict) and not member and dropped is not None:
                dropped.append(parts + (key,))
            if not _empty(member):
                out[key] = member
        return out
    if isinstance(value, list):
        return [_clean(v, parts + (i,), dropped) for i, v in enumerate(value)]
    return value


def _path(field, parts):
    text = field
    for part in parts:
        text += '[%d]' % part if isinstance(part, int) else '.%s' % part
    return text


def _placeholders(td, field, errors):
    """Appends a message for each string value that holds a template placeholder (aws.template's rule)."""
    seen = set()
    for found in _td_template.find(td, field):
        if found.field not in seen:
            seen.add(found.field)
            errors.append('%s is a template placeholder left in the file: %s' % (found.field, _quote(found.value)))


def _coerce(value, shape, parts, field, errors, dropped=None):
    """The value with numbers and booleans written as strings taken as such, where the model says so; a member
    of a structure that is an empty string dropped as absent (its path added to `dropped`), but for a `value`
    (an environment variable or a tag may be empty)."""
    kind = shape.type_name
    if kind == 'structure' and isinstance(value, dict):
        members = shape.members
        for key in list(value):
            if value[key] == '' and key in members and key != 'value':
                del value[key]
                if dropped is not None:
                    dropped.append(parts + (key,))
            elif key in members:
                value[key] = _coerce(value[key], members[key], parts + (key,), field, errors, dropped)
                if value[key] == {} and members[key].type_name == 'structure':
                    del value[key]          # its members were all empty: `{"credentialsParameter": ""}`
    elif kind == 'list' and isinstance(value, list):
        for i, member in enumerate(value):
            value[i] = _coerce(member, shape.member, parts + (i,), field, errors, dropped)
    elif kind == 'map' and isinstance(value, dict):
        for key in value:
            value[key] = _coerce(value[key], shape.value, parts + (key,), field, errors, dropped)
    elif kind in ('integer', 'long'):
        if isinstance(value, bool):
            errors.append('%s must be an integer, got %s' % (_path(field, parts), _quote(value)))
        elif isinstance(value, str):
            if _INTEGER.match(value):
                return int(value.strip())
            errors.append('%s must be an integer, got %s' % (_path(field, parts), _quote(value)))
    elif kind == 'boolean' and isinstance(value, str):
        taken = _BOOLEANS.get(value.strip().lower())
        if taken is None:
            errors.append('%s must be true or false, got %s' % (_path(field, parts), _quote(value)))
        return taken
    return value


def _order(parts):
    return tuple((0, p, '') if isinstance(p, int) else (1, 0, p) for p in parts)


def _report_line(line, field):
    """One line of botocore's report with its path rewritten to start with `field`."""
    line = _CLASS.sub(r'\1', line)
    found = _REPORT_LINE.match(line)
    if not found:
        return '%s: %s' % (field, line)
    name = found.group(2)
    path = field if name in ('', 'input') else '%s.%s' % (field, name)
    return found.group(1) + path + line[found.end(2):]


def normalize(td, field='task_definition', warnings=None):
    """The task definition `td` as RegisterTaskDefinition input, cleaned (a new dict), or SpecError.

    The steps and the placeholder rule are in the module docstring. `warnings`: a list that gets one warning
    naming the empty strings and empty mappings taken as absent.
    """
    dropped = []
    td = _clean(_unwrap(td, field), (), dropped)
    for key in OUTPUT_ONLY:
        td.pop(key, None)
    errors = []
    containers = td.get('containerDefinitions')
    if isinstance(containers, list):
        for i, container in enumerate(containers):
            if isinstance(container, str):
                errors.append('%s.containerDefinitions[%d] is a string, not a container definition (a mapping): %s'
                              % (field, i, _quote(container)))
                containers[i] = None
    _placeholders(td, field, errors)
    if errors:
        _refuse(errors, _td_template.HINT)
    shape, validator = _model()
    td = _coerce(td, shape, (), field, errors, dropped)
    if errors:
        _refuse(errors)
    if dropped and warnings is not None:
        warnings.append('empty values taken as absent, as a skeleton or a template leaves them: %s'
                        % ', '.join(_path(field, parts) for parts in sorted(dropped, key=_order)))
    report = validator.validate(td, shape)
    if report.has_errors():
        _refuse([_report_line(line, field) for line in _REPORT_SPLIT.split(report.generate_report())])
    return td


def next_release_fields(td, field='task_definition'):
    """(path, key) for each container-level field of a normalized `td` that a later release handles.

    `key` names what is not supported yet: a field (FIELDS_NEXT, `secretOptions`) or `awsfirelens`, the log
    driver; `path` is where it is, starting with `field`. The caller refuses them ("... is not supported yet").
    """
    found = []
    for i, container in enumerate(td.get('containerDefinitions') or ()):
        if not isinstance(container, dict):
            continue
        where = '%s.containerDefinitions[%d]' % (field, i)
        found.extend(('%s.%s' % (where, key), key) for key in FIELDS_NEXT if key in container)
        logs = container.get('logConfiguration')
        if isinstance(logs, dict):
            found.extend(('%s.logConfiguration.%s' % (where, key), key) for key in LOG_FIELDS_NEXT if key in logs)
            if logs.get('logDriver') in LOG_DRIVERS_NEXT:
                found.append(('%s.logConfiguration.logDriver' % where, logs['logDriver']))
    return found
