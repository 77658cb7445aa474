# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Services: the revision records a host keeps of a service's deployment (what ecs_task's service_revisions hands
it and ecs_task_info returns).

Owns: an instance's name (`<service>-<index>`), a record's keys and statuses, the bound of its numbers
(RECORD_BOUND), the declaration as stored (without its registry password, nor the keys left null), and the check
of records handed to a host. Kept apart from services.deploy (which decides deployments from the
records) so that ecs_task ships only this.
Must not: read a host or decide anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IN_PROGRESS, COMPLETED, FAILED, REPLACED = 'in_progress', 'completed', 'failed', 'replaced'
STATUSES = (IN_PROGRESS, COMPLETED, FAILED, REPLACED)
# an instance's index, as its name `<service>-<index>` writes it (no sign, no leading zero, ASCII digits)
_INDEX = re.compile(r'(?:0|[1-9][0-9]*)\Z')
# the cluster of a task or service that names none (ECS's)
DEFAULT_CLUSTER = 'default'
# a revision record, as the hosts keep it (ecs_task's service_revisions, ecs_task_info's): its fields, and the
# controller's seal over them (services.deploy.seal: a host cannot forge a record the placement takes)
SEALED_KEYS = ('cluster', 'service', 'revision', 'number', 'status', 'rollback_of', 'generation', 'declaration')
RECORD_KEYS = SEALED_KEYS + ('seal',)
# a record's number, rollback_of and generation are below this (a store's INTEGER holds up to 2**63 - 1: the next
# generation of a record at that would not fit)
RECORD_BOUND = 2 ** 31


def instance_index(name, service):
    """The index of the instance of `service` that a task named `name` is (`web-3`: 3), or None: only the name
    that service's instance `index` is given (`web-03` is not web's instance 3)."""
    if not isinstance(name, str) or not isinstance(service, str) or not name.startswith(service + '-'):
        return None
    rest = name[len(service) + 1:]
    return int(rest) if _INDEX.match(rest) else None


def stored_declaration(task):
    """What the hosts keep of a revision's task: the declaration without its registry password (and without the
    keys left null, as the host's store keeps it)."""
    out = dict((k, v) for k, v in json.loads(json.dumps(task)).items() if v is not None)
    auth = out.get('registry_auth')
    if isinstance(auth, dict):
        out['registry_auth'] = dict((k, v) for k, v in auth.items() if v is not None and k != 'password')
    return out


def bounded(value, low):
    """Whether `value` is a whole number (not a bool) from `low` up to RECORD_BOUND, RECORD_BOUND left out."""
    return not isinstance(value, bool) and isinstance(value, int) and low <= value < RECORD_BOUND


def records_option(raw, where='service_revisions'):
    """Revision records handed to a host (ecs_task's service_revisions), checked: a list of records for its store,
    or None. Raises SpecError naming the entry and the field."""
    if raw is None:
        return None
    out = []
    for i, rec in enumerate(raw):
        field = '%s[%d]' % (where, i)
        for key in ('cluster', 'service', 'revision'):
            if not isinstance(rec.get(key), str) or not rec[key]:
                raise SpecError('%s.%s must be a non-empty string, got %r' % (field, key, rec.get(key)))
        number = rec.get('number')
        if not bounded(number, 1):
            raise SpecError('%s.number must be a whole number of at least 1 and below %d, got %r'
                            % (field, RECORD_BOUND, number))
        if rec.get('status') not in STATUSES:
            raise SpecError('%s.status must be one of %s, got %r' % (field, ', '.join(STATUSES), rec.get('status')))
        back = rec.get('rollback_of')
        if back is not None and not bounded(back, 1):
            raise SpecError('%s.rollback_of must be a revision number or null (a whole number of at least 1 and '
                            'below %d), got %r' % (field, RECORD_BOUND, back))
        generation = rec.get('generation') or 0
        if not bounded(generation, 0):
            raise SpecError('%s.generation must be a whole number of at least 0 and below %d, got %r'
                            % (field, RECORD_BOUND, generation))
        if rec.get('seal') is not None and not isinstance(rec['seal'], str):
            raise SpecError('%s.seal must be a string or null' % field)
        if not isinstance(rec.get('declaration'), dict):
            raise SpecError('%s.declaration must be a mapping' % field)
        if (rec['declaration'].get('registry_auth') or {}).get('password') is not None:
            raise SpecError('%s.declaration.registry_auth.password: a registry password is never stored' % field)
        record = dict((k, rec.get(k)) for k in RECORD_KEYS)
        # (the options Ansible filled in with null are left out: the declaration as the controller gave it)
        record.update(generation=generation, declaration=stored_declaration(rec['declaration']))
        out.append(record)
    return out
