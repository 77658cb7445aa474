# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every declaration check shares: the error type and the rule for names.

Owns: SpecError and the name rule (Docker's, for tasks, clusters and containers).
Must not: touch the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Docker names: a letter or digit, then letters, digits, '_', '.', '-'.
# \Z, not $: '$' also matches before a trailing newline, and a name ends up in paths and labels.
NAME_RE = re.compile(r'^[a-zA-Z0-9][a-zA-Z0-9_.-]*\Z')


class SpecError(ValueError):
    """A declaration breaks a rule; the message names the field and what is wrong."""


def check_name(value, field):
    if not isinstance(value, str) or not value:
        raise SpecError('%s is required and must be a non-empty string' % field)
    if not NAME_RE.match(value):
        raise SpecError('%s %r is not a valid name: use letters, digits, "_", "." and "-", starting with a '
                        'letter or digit' % (field, value))
    return value
