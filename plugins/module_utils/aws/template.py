# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Template placeholders in ECS task definitions: what counts as one, where, and filling them.

Owns: the one table of placeholder styles (STYLES) and the rule of where each counts (by the field it is in),
`find` (every placeholder of a document, with the field as the document names it, its text and its variable
name), and `render` (a document with its placeholders filled from values, images and environment set by
container name, as the deploy tools do). ecs_task refuses what `find` finds (aws.model); the filters
drover.fleet.ecs_placeholders and drover.fleet.ecs_render are `find` and `render`.
Must not: touch Docker, the network or the disk; read AWS's model itself (a caller that has it passes
`kind_of`, the model's type of a field, so that a placeholder that makes up a number field becomes a number).
Raises SpecError, naming every placeholder left unfilled and every value nothing used.

Where a placeholder counts:
- In command-like arrays (`command`, `entryPoint`, `healthCheck.command`) an element only when it is, as a
  whole, a placeholder of a style other than `${X}` and `$X`: a shell expands those (`["sh", "-c", "$CMD"]`).
- In values a program in the container reads as free text (`environment[].value`, `dockerLabels` values) only
  a whole value: an application may expand `${X}` or `{{x}}` in them itself.
- Everywhere else (names, images, ARNs, regions, paths, log options...) nothing expands a template, so a
  placeholder counts inside a longer value too, in the styles marked `inside` (`$X` inside a longer value
  only before a character that cannot go on a name, `%XY%` with a name of two characters or more, so that
  strftime's `%Y%m%d` and FireLens's `$(ecs_cluster)` pass).
A Go template that starts with a dot (`{{.Name}}`, Docker's log `tag` option) is never a placeholder, but
`{{ .Env.X }}` is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import copy
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

_NAME = r'[A-Za-z_][A-Za-z0-9_.-]*'
_WORD = r'[A-Za-z_][A-Za-z0-9_]*'

# One style of placeholder: its name, the pattern of a whole value (group 1: the expression), the pattern inside
# a longer value (None: only a whole value counts), whether a shell would expand it (then it never counts in a
# command), and an example for the docs.
Style = collections.namedtuple('Style', ('style', 'whole', 'inside', 'shell', 'example'))
STYLES = (
    Style('github', r'\$\{\{\s*(?P<e>[^{}]*?)\s*\}\}', r'\$\{\{\s*(?P<e>[^{}]*?)\s*\}\}', False, '${{ secrets.IMAGE }}'),
    Style('mustache', r'\{\{-?\s*(?P<e>\.Env\.%s|[^\s.}][^}]*?)\s*-?\}\}' % _WORD,
          r'\{\{-?\s*(?P<e>\.Env\.%s|[^\s.}][^}]*?)\s*-?\}\}' % _WORD, False, '{{ must_env `IMAGE` }}'),
    Style('shell-braces', r'\$\{(?P<e>[^{}]*)\}', r'\$\{(?P<e>[^{}]*)\}', True, '${IMAGE}'),
    Style('dollars', r'\$\$\$+(?P<e>%s?)\$\$\$+' % _NAME, r'\$\$\$+(?P<e>%s?)\$\$\$+' % _NAME, False, '$$$IMAGE$$$'),
    Style('hash-braces', r'#\{(?P<e>[^{}]+)\}', r'#\{(?P<e>[^{}]+)\}', False, '#{Image}'),
    Style('percent', r'%%(?P<e>%s)%%' % _NAME, r'%(?P<e>[A-Za-z_][A-Za-z0-9_]+)%', False, '%IMAGE%'),
    Style('angle', r'<(?P<e>[^<>]+)>', r'<(?P<e>%s)>' % _NAME, False, '<IMAGE1_NAME>'),
    Style('braces', r'\{(?P<e>%s)\}' % _NAME, r'(?<![$#{])\{(?P<e>%s)\}(?!\})' % _WORD, False, '{image}'),
    Style('underscores', r'__(?P<e>[A-Z](?:[A-Z0-9_]*[A-Z0-9])?)__',
          r'(?<![A-Za-z0-9])__(?P<e>[A-Z](?:[A-Z0-9_]*?[A-Z0-9])?)__', False, '__TAG__'),
    Style('shell', r'\$(?P<e>%s)' % _WORD, r'(?<![\\$])\$(?P<e>%s)(?=[-:/.@]|\Z)' % _WORD, True, '$IMAGE'),
)

# Arrays whose elements are a command's arguments; a shell may run them.
COMMAND_PATHS = (('containerDefinitions', 'command'), ('containerDefinitions', 'entryPoint'),
                 ('containerDefinitions', 'healthCheck', 'command'))
# Free text a program in the container reads: only whole values are placeholders.
FREE_TEXT_PATHS = (('containerDefinitions', 'environment', 'value'), ('containerDefinitions', 'dockerLabels'))
# The filters that fill what ecs_task refuses (named in its message).
HINT = ('the filter drover.fleet.ecs_render fills them from values, images and environment, and '
        'drover.fleet.ecs_placeholders lists them')


def _compile(kind, styles, whole=False):
    """One regex of the styles' `kind` patterns, each as a group s<i>, its expression as the group e<i>."""
    parts = ['(?P<s%d>%s)' % (i, getattr(s, kind).replace('(?P<e>', '(?P<e%d>' % i))
             for i, s in enumerate(STYLES) if s in styles and getattr(s, kind)]
    return re.compile((r'\A(?:%s)\Z' if whole else '%s') % '|'.join(parts))


_ALL = STYLES
_NOT_SHELL = tuple(s for s in STYLES if not s.shell)
_WHOLE = {'command': _compile('whole', _NOT_SHELL, True), 'free': _compile('whole', _ALL, True),
          'other': _compile('whole', _ALL, True)}
_INSIDE = _compile('inside', _ALL)
# ecspresso's functions, `{{ must_env `X` }}` and `{{ env `X` `default` }}`; a shell's `${X:-default}`.
_ENV_CALL = re.compile(r'\A(?:must_env|env)\s+[`"\']([^`"\']+)[`"\'](?:\s+[`"\']([^`"\']*)[`"\'])?\s*\Z')
_SHELL_DEFAULT = re.compile(r'\A(%s)(?::?-(.*))?\Z' % _WORD, re.S)

# field: where it is, as the document names it; text: the placeholder; value: the whole string it is in; parts:
# the keys and indexes of field.
Placeholder = collections.namedtuple('Placeholder', ('field', 'text', 'name', 'style', 'whole', 'default', 'value',
                                                     'parts'))


def context(parts):
    """Where a value is, by the names on its path (indexes and a taskDefinition wrapper left out): command,
    free (text a program reads) or other."""
    names = tuple(p for p in parts if not isinstance(p, int))
    if names[:1] == ('taskDefinition',):
        names = names[1:]
    if names in COMMAND_PATHS:
        return 'command'
    if names in FREE_TEXT_PATHS or names[:-1] in FREE_TEXT_PATHS:
        return 'free'
    return 'other'


def path(parts, field=''):
    """A field as the document names it: containerDefinitions[0].image (after `field.` where given)."""
    text = field
    for part in parts:
        text += '[%d]' % part if isinstance(part, int) else ('.%s' % part if text else part)
    return text


def _name(style, expression):
    """The variable a placeholder names, and the default it gives (None)."""
    expression = expression.strip()
    if style == 'mustache':
        if expression.startswith('.Env.'):
            return expression[len('.Env.'):], None
        call = _ENV_CALL.match(expression)
        if call:
            return call.group(1), call.group(2)
    if style == 'shell-braces':
        found = _SHELL_DEFAULT.match(expression)
        if found:
            return found.group(1), found.group(2)
    return expression, None


def _matches(found):
    groups = found.groupdict()
    for i, style in enumerate(STYLES):
        if groups.get('s%d' % i) is not None:
            name, default = _name(style.style, groups['e%d' % i])
            return style.style, name, default
    raise AssertionError('no style matched')     # pragma: no cover


def in_value(value, parts):
    """The placeholders in one string value at `parts`: [(start, end, style, name, default, whole)]."""
    where = context(parts)
    text = value.strip()
    found = _WHOLE[where].match(text)
    if found:
        style, name, default = _matches(found)
        return [(0, len(value), style, name, default, True)]
    if where != 'other':
        return []
    out = []
    for found in _INSIDE.finditer(value):
        style, name, default = _matches(found)
        out.append((found.start(), found.end(), style, name, default, False))
    return out


def find(doc, field=''):
    """Every placeholder of a task definition (or of any part of one, at `field`), in document order."""
    out = []

    def walk(value, parts):
        if isinstance(value, dict):
            for key, member in value.items():
                walk(member, parts + (key,))
        elif isinstance(value, list):
            for i, member in enumerate(value):
                walk(member, parts + (i,))
        elif isinstance(value, str):
            for start, end, style, name, default, whole in in_value(value, parts):
                out.append(Placeholder(path(parts, field), value if whole else value[start:end], name, style,
                                       whole, default, value, parts))
    walk(doc, ())
    return out


def _typed(value, kind):
    """A value for a whole field of the model's type `kind` (integer, long, boolean, string, ...)."""
    if kind in ('integer', 'long') and isinstance(value, str) and re.match(r'\A\s*-?[0-9]+\s*\Z', value):
        return int(value)
    if kind == 'boolean' and isinstance(value, str) and value.strip().lower() in ('true', 'false'):
        return value.strip().lower() == 'true'
    if kind == 'string' and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def _text(value, name, where, problems):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (str, int, float)):
        return str(value)
    problems.append('values.%s is a %s, but %s uses it inside a longer value' % (name, type(value).__name__, where))
    return None


class _Fill:
    """One pass over a document that fills the placeholders it can."""

    def __init__(self, values, kind_of):
        self.values, self.kind_of = values, kind_of
        self.used, self.problems = set(), []

    def value(self, name, default):
        if name in self.values:
            self.used.add(name)
            return True, self.values[name]
        if default is not None:
            return True, default
        return False, None

    def string(self, value, parts):
        """(filled value, spliced: a list to put in place of a list element)."""
        found = in_value(value, parts)
        if not found:
            return value, False
        if found[0][5]:
            ok, given = self.value(found[0][3], found[0][4])
            if not ok:
                return value, False
            if isinstance(given, list) and parts and isinstance(parts[-1], int):
                return given, True
            return _typed(copy.deepcopy(given), self.kind_of(parts) if self.kind_of else None), False
        out, at = [], 0
        for start, end, _style, name, default, _whole in found:
            ok, given = self.value(name, default)
            text = _text(given, name, path(parts), self.problems) if ok else None
            out.append(value[at:start] + (value[start:end] if text is None else text))
            at = end
        out.append(value[at:])
        return ''.join(out), False

    def walk(self, value, parts):
        if isinstance(value, dict):
            return dict((key, self.walk(member, parts + (key,))) for key, member in value.items())
        if isinstance(value, list):
            out = []
            for i, member in enumerate(value):
                if isinstance(member, str):
                    filled, spliced = self.string(member, parts + (i,))
                    if spliced:
                        out.extend(filled)
                        continue
                    out.append(filled)
                else:
                    out.append(self.walk(member, parts + (i,)))
            return out
        if isinstance(value, str):
            return self.string(value, parts)[0]
        return value


def _containers(doc):
    inner = doc.get('taskDefinition') if isinstance(doc.get('taskDefinition'), dict) else doc
    defs = inner.get('containerDefinitions')
    return [c for c in defs if isinstance(c, dict)] if isinstance(defs, list) else []


def _by_container(doc, given, option, problems, strict):
    """(container definition, value) for each container name of `given` (images or environment) the document
    has; a name it has not is a problem with `strict`."""
    by_name = dict((c.get('name'), c) for c in _containers(doc))
    for name, value in (given or {}).items():
        if name in by_name:
            yield by_name[name], value
        elif strict:
            problems.append('%s.%s: the task definition has no container %s (containers: %s)'
                            % (option, name, name, ', '.join(sorted(str(n) for n in by_name)) or 'none'))


def _set_images(doc, images, problems, strict):
    for container, image in _by_container(doc, images, 'images', problems, strict):
        if not isinstance(image, str) or not image:
            problems.append('images.%s must be an image reference, got %r' % (container['name'], image))
        else:
            container['image'] = image


def _set_environment(doc, environment, problems, strict):
    for container, pairs in _by_container(doc, environment, 'environment', problems, strict):
        if not isinstance(pairs, dict):
            problems.append('environment.%s must be a mapping of variable names to values' % container['name'])
            continue
        current = container.get('environment')
        current = list(current) if isinstance(current, list) else []
        for key, val in pairs.items():
            text = val if isinstance(val, str) else _text(val, key, 'environment', problems)
            entry = {'name': str(key), 'value': text}
            at = [i for i, e in enumerate(current) if isinstance(e, dict) and e.get('name') == key]
            if at:
                current[at[0]] = entry
            else:
                current.append(entry)
        container['environment'] = current


def render(doc, values=None, images=None, environment=None, strict=True, kind_of=None):
    """`doc` with its placeholders filled, as a new document, or SpecError naming each problem.

    values: variable name -> value. A placeholder that makes up a whole value takes the value as given (a
    number, a mapping: a whole container definition, a list: spliced in place of a list element), a string
    made a number or a boolean where `kind_of(parts)` (the model's type of the field) says so; inside a longer
    value, its text. A default the template gives (`${X:-d}`, `{{ env "X" "d" }}`) fills an absent value.
    images: container name -> image; environment: container name -> {NAME: value} (set, or added), as the
    deploy action that renders a task definition does. Then every placeholder left is named (field and
    variable), and with `strict` every value given that nothing used and every container name not found.
    """
    if not isinstance(doc, dict):
        raise SpecError('the task definition must be a mapping, got %s' % type(doc).__name__)
    for option, given in (('values', values), ('images', images), ('environment', environment)):
        if given is not None and not isinstance(given, dict):
            raise SpecError('%s must be a mapping, got %s' % (option, type(given).__name__))
    fill = _Fill(dict(values or {}), kind_of)
    out = fill.walk(copy.deepcopy(doc), ())
    problems = list(fill.problems)
    _set_images(out, images, problems, strict)
    _set_environment(out, environment, problems, strict)
    left = find(out)
    if left:
        problems.append('placeholders left unfilled: %s' % ', '.join(
            '%s %s (%s)' % (p.field, p.text if len(p.text) <= 60 else p.text[:57] + '...', p.name) for p in left))
    unused = sorted(set(values or {}) - fill.used)
    if unused and strict:
        problems.append('values that no placeholder uses: %s' % ', '.join(unused))
    if problems:
        raise SpecError('; '.join(problems))
    return out
