# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Placement constraints: ECS's cluster query language, evaluated against one host's attributes.

Owns: the grammar of a `memberOf` expression as this collection takes it, and its evaluation against a
mapping of attribute names to values (the host's own, and those its inventory declares).
Must not: read the host or anything else: the attributes are an argument. Raises SpecError (with the field
named) for an expression it cannot read.

The grammar (ECS's, for the subject `attribute:<name>`):
    expr    := term (('or' | '||') term)*
    term    := factor (('and' | '&&') factor)*
    factor  := ('not' | '!') factor | '(' expr ')' | 'attribute:' NAME test
    test    := ('==' | 'equals') VALUE | ('!=' | 'not_equals') VALUE
             | ('in' | 'not in' | 'not_in' | '!in') '[' VALUE (',' VALUE)* ']'
             | 'exists' | ('!exists' | 'not_exists')
             | ('=~' | 'matches') VALUE | ('!~' | 'not_matches') VALUE
A VALUE is a bare word or a quoted string ('...' or "..."); `=~` takes a regular expression that must match the
whole value, written up to the next blank (a closing parenthesis of the expression's own grouping excepted), or
quoted. An attribute the host does not have: `==`, `in`, `exists` and `=~` are false, their negations true.
Other subjects of ECS's language (agentConnected, ec2InstanceId, task:group, runningTasksCount...) describe
a fleet of instances and are refused by name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

_TOKEN = re.compile(r'\s*(?:(?P<str>"[^"]*"|\'[^\']*\')|(?P<op>==|!=|=~|!~|&&|\|\||[()\[\],!])|(?P<word>[^\s()\[\],"\'!=~&|]+))')
_OPS = {'==': '==', 'equals': '==', '!=': '!=', 'not_equals': '!=', 'in': 'in', 'not_in': 'not in',
        '!in': 'not in', 'exists': 'exists', '!exists': '!exists', 'not_exists': '!exists', '=~': '=~',
        'matches': '=~', '!~': '!~', 'not_matches': '!~'}
_REGEX_OPS = ('=~', '!~', 'matches', 'not_matches')
FLEET_SUBJECTS = ('agentConnected', 'agentVersion', 'ec2InstanceId', 'registeredAt', 'runningTasksCount',
                  'task:group')


def _tokens(text, field):
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        if out and out[-1][1] in _REGEX_OPS:
            # A regular expression is taken as it is, up to the next blank (or quoted, to hold blanks).
            raw = re.compile(r'\s*([^\s"\'][^\s]*)').match(text, pos)
            if raw:
                value = raw.group(1)
                while value.endswith(')') and value.count(')') > value.count('('):
                    value = value[:-1]          # the parenthesis that closes a group of the expression
                out.append(('value', value))
                pos = raw.start(1) + len(value)
                continue
        found = _TOKEN.match(text, pos)
        if not found or found.end() == pos:
            raise SpecError('%s cannot be read at character %d: %r' % (field, pos + 1, text))
        if found.group('str') is not None:
            out.append(('value', found.group('str')[1:-1]))
        elif found.group('op') is not None:
            out.append(('op', found.group('op')))
        else:
            out.append(('word', found.group('word')))
        pos = found.end()
    return out


class _Parser:
    def __init__(self, text, field):
        self.text = text
        self.field = field
        self.tokens = _tokens(text, field)
        self.pos = 0

    def fail(self, why):
        raise SpecError('%s %r: %s' % (self.field, self.text, why))

    def peek(self, offset=0):
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else (None, None)

    def take(self):
        tok = self.peek()
        self.pos += 1
        return tok

    def is_word(self, *words, offset=0):
        kind, value = self.peek(offset)
        return kind in ('word', 'op') and value is not None and value.lower() in words

    def parse(self):
        if not self.tokens:
            self.fail('the expression is empty')
        tree = self.expr()
        if self.pos < len(self.tokens):
            self.fail('unexpected %r' % self.peek()[1])
        return tree

    def expr(self):
        node = self.term()
        while self.is_word('or', '||'):
            self.take()
            node = ('or', node, self.term())
        return node

    def term(self):
        node = self.factor()
        while self.is_word('and', '&&'):
            self.take()
            node = ('and', node, self.factor())
        return node

    def factor(self):
        kind, value = self.peek()
        if kind is None:
            self.fail('the expression ends too soon')
        if self.is_word('not', '!') and not self.is_word('in', offset=1):
            self.take()
            return ('not', self.factor())
        if (kind, value) == ('op', '('):
            self.take()
            node = self.expr()
            if self.take() != ('op', ')'):
                self.fail('a parenthesis is not closed')
            return node
        if kind != 'word':
            self.fail('expected attribute:<name>, got %r' % value)
        self.take()
        subject, name = value.partition(':')[::2]
        if subject != 'attribute' or not name:
            if value in FLEET_SUBJECTS or subject == 'task':
                self.fail('the subject %s describes a fleet of ECS instances; a host of its own has only its '
                          'attributes (attribute:<name>)' % value)
            self.fail('expected attribute:<name>, got %r' % value)
        return ('test', name) + self.test()

    def value(self):
        kind, value = self.take()
        if kind not in ('word', 'value'):
            self.fail('expected a value, got %r' % (value if value is not None else 'the end'))
        return value

    def test(self):
        kind, value = self.peek()
        word = (value or '').lower()
        if word == 'not' and self.is_word('in', offset=1):
            self.take()
            word = 'not_in'
        elif (kind, value) == ('op', '!') and self.is_word('in', 'exists', offset=1):
            self.take()
            word = '!' + self.peek()[1].lower()
        op = _OPS.get(word)
        if op is None:
            self.fail('expected an operator (==, !=, in, not in, exists, !exists, =~, !~), got %r'
                      % (value if value is not None else 'the end'))
        self.take()
        if op in ('exists', '!exists'):
            return (op, None)
        if op in ('in', 'not in'):
            if self.take() != ('op', '['):
                self.fail('%s takes a list: [a, b]' % op)
            values = [self.value()]
            while self.peek() == ('op', ','):
                self.take()
                values.append(self.value())
            if self.take() != ('op', ']'):
                self.fail('a list is not closed with ]')
            return (op, tuple(values))
        arg = self.value()
        if op in ('=~', '!~'):
            try:
                re.compile(arg)
            except re.error as exc:
                self.fail('%r is not a regular expression (%s)' % (arg, exc))
        return (op, arg)


def parse(text, field):
    """The expression as a tree, or SpecError naming `field`."""
    if not isinstance(text, str):
        raise SpecError('%s must be a string, got %r' % (field, text))
    return _Parser(text, field).parse()


def _eval(node, attributes):
    kind = node[0]
    if kind == 'or':
        return _eval(node[1], attributes) or _eval(node[2], attributes)
    if kind == 'and':
        return _eval(node[1], attributes) and _eval(node[2], attributes)
    if kind == 'not':
        return not _eval(node[1], attributes)
    name, op, arg = node[1:]
    value = attributes.get(name)
    if op == 'exists':
        return value is not None
    if op == '!exists':
        return value is None
    if op == '==':
        return value is not None and value == arg
    if op == '!=':
        return value is None or value != arg
    if op == 'in':
        return value is not None and value in arg
    if op == 'not in':
        return value is None or value not in arg
    if op == '=~':
        return value is not None and re.fullmatch(arg, value) is not None
    return value is None or re.fullmatch(arg, value) is None        # !~


def holds(node, attributes):
    """Whether a host with `attributes` (name -> string) is a member of a parsed expression (parse())."""
    return _eval(node, attributes)


def matches(text, attributes, field='expression'):
    """Whether a host with `attributes` (name -> string) is a member of `text`."""
    return _eval(parse(text, field), dict((k, str(v)) for k, v in attributes.items() if v is not None))
