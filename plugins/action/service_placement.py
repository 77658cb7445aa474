# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""drover.fleet.service_placement: the services of a fleet placed on its hosts, once, on the controller.

Reads what the play found on every host (capacity, the tasks it runs, whether its engine answered) and the
services as declared, asks the decider (_plan_service.plan) where each task instance runs, and returns each
host's share as task declarations for drover.fleet.tasks. Keeps nothing between runs: where the services stand
is read from the hosts each time, so controllers (AWX jobs, timers) agree. Changes nothing.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.drover.fleet.plugins.module_utils import _plan_service as ps
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

DEFAULT_CLUSTER = 'default'


def _instances(svc_cluster, services, host, tasks):
    """The instances of the services a host runs: tasks of the service's cluster named <service>-<index>."""
    found = []
    for task in tasks or []:
        cluster, name = task.get('cluster'), task.get('name') or ''
        for svc in services:
            m = re.match(r'^%s-(\d+)\Z' % re.escape(svc.name), name)
            if m and cluster == svc_cluster[svc.name] and task.get('last_status') != 'STOPPED':
                found.append(ps.Instance(svc.name, int(m.group(1)), host))
    return found


def _declared_clash(svc_cluster, services, hosts):
    """A declared task with the name of a service's instance would be taken for it: refused, naming both."""
    for host in hosts:
        for i, decl in enumerate(host.get('declared') or []):
            name = decl.get('name') if isinstance(decl, dict) else None
            cluster = (decl.get('cluster') if isinstance(decl, dict) else None) or host.get('cluster') or DEFAULT_CLUSTER
            for svc in services:
                if isinstance(name, str) and cluster == svc_cluster[svc.name] \
                        and re.match(r'^%s-\d+\Z' % re.escape(svc.name), name):
                    raise AnsibleActionFail(
                        'hosts[%s].declared[%d].name %s in cluster %s is the name of an instance of service %s '
                        '(<service>-<index>): rename the task or the service' % (host['name'], i, name, cluster,
                                                                                 svc.name))


def place(raw_services, raw_hosts):
    """The placement: {'placement': {host: [task declaration]}, 'clusters': {host: [cluster]}, 'unplaced': {...},
    'lost': [...], 'services': [...]}. Raises AnsibleActionFail naming the field."""
    try:
        services = [ps.service_spec(raw, 'services[%d]' % i) for i, raw in enumerate(raw_services)]
        names = [s.name for s in services]
        if len(set(names)) != len(names):
            raise SpecError('services: a service name is declared more than once')
        hosts = [ps.host_spec(dict(raw.get('capacity') or {}, name=raw.get('name'), up=raw.get('up', True),
                                   attributes=raw.get('attributes')), 'hosts[%d]' % i)
                 for i, raw in enumerate(raw_hosts)]
        used = {}
        for raw in raw_hosts:
            spent = [0, 0, 0]
            for i, decl in enumerate(raw.get('declared') or []):
                for at, amount in enumerate(ps.needs(decl, 'hosts[%s].declared[%d]' % (raw['name'], i))):
                    spent[at] += amount
            used[raw['name']] = tuple(spent)
    except SpecError as exc:
        raise AnsibleActionFail(str(exc))
    raw_by_name = dict((raw['name'], raw) for raw in raw_services)
    svc_cluster = dict((s.name, raw_by_name[s.name].get('cluster') or DEFAULT_CLUSTER) for s in services)
    _declared_clash(svc_cluster, services, raw_hosts)
    found = [inst for raw in raw_hosts if raw.get('up', True)
             for inst in _instances(svc_cluster, services, raw['name'], raw.get('tasks'))]
    decided = ps.plan(services, hosts, found, used)
    placement = dict((h.name, []) for h in hosts if h.up)
    clusters = dict((h.name, sorted(set(svc_cluster.values()))) for h in hosts if h.up)
    for inst in list(decided.keep) + list(decided.start):
        raw = raw_by_name[inst.service]
        decl = dict((k, v) for k, v in raw.items() if k in ('task_definition', 'containers', 'network_mode',
                                                            'restart', 'volumes', 'cpu', 'memory'))
        # A service keeps its count: an instance that stops is started again (ECS's service scheduler).
        decl.setdefault('restart', 'always')
        decl.update(name=ps.instance_name(inst.service, inst.index), cluster=svc_cluster[inst.service])
        placement[inst.host].append(decl)
    for decls in placement.values():
        decls.sort(key=lambda d: d['name'])
    views = []
    for svc in services:
        running = [i for i in list(decided.keep) + list(decided.start) if i.service == svc.name]
        views.append({'name': svc.name, 'cluster': svc_cluster[svc.name], 'desired_count': svc.desired,
                      'placed': len(running),
                      'started': sorted(ps.instance_name(i.service, i.index) + '@' + i.host
                                        for i in decided.start if i.service == svc.name),
                      'stopped': sorted(ps.instance_name(i.service, i.index) + '@' + i.host
                                        for i in decided.stop if i.service == svc.name),
                      'lost': sorted(ps.instance_name(i.service, i.index) + '@' + i.host
                                     for i in decided.lost if i.service == svc.name),
                      'unplaced': decided.unplaced.get(svc.name)})
    return {'placement': placement, 'clusters': clusters, 'services': views,
            'unplaced': decided.unplaced}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars or {})
        dummy, args = self.validate_argument_spec(argument_spec={
            'services': {'type': 'list', 'elements': 'dict', 'required': True},
            'hosts': {'type': 'list', 'elements': 'dict', 'required': True},
        })
        result.update(place(args['services'], args['hosts']))
        result['changed'] = False
        return result
