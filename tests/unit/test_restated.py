# -*- coding: utf-8 -*-
"""The first pass's restated (drover.fleet.converge with services): which of the services' kept instances the host's
own settings now make otherwise, from the revision's task in the host's records."""

from __future__ import absolute_import, division, print_function

from ansible_collections.drover.fleet.plugins.module_utils.tasks import look as host_look
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec

IMG = 'drover.local/busybox:1'
AWSLOGS = {'log_driver': 'awslogs', 'options': {'awslogs-group': 'web', 'awslogs-region': 'us-east-1',
                                                'awslogs-stream-prefix': 'web'}}
TASK = {'network_mode': 'none', 'containers': [{'name': 'main', 'image': IMG, 'command': ['sleep', '3600'],
                                                'memory': 16, 'log_configuration': AWSLOGS}]}
TD = {'task_definition': {'family': 'api', 'networkMode': 'none', 'containerDefinitions': [
    {'name': 'app', 'image': IMG, 'memory': 16, 'essential': True, 'logConfiguration': {
        'logDriver': 'awslogs', 'options': AWSLOGS['options']}}]}}
KEEP = [{'cluster': 'prod', 'service': 'web'}, {'cluster': 'batch', 'service': 'api'}]
RECORDS = [{'cluster': 'prod', 'service': 'web', 'revision': 'r1', 'declaration': TASK},
           {'cluster': 'batch', 'service': 'api', 'revision': 'a1', 'declaration': TD}]


def run_of(task, key, revision, host):
    """The containers of an instance started as its share declared it, under the host's settings `host`."""
    raw = dict((k, v) for k, v in task.items() if k != 'registry_auth')
    raw.update(name=key[1], cluster=key[0], restart='always', revision=revision)
    decl = spec.task(raw, host=spec.host_policy(dict(host)))
    return [{'labels': {'drover.revision': revision, 'drover.spec-hash': decl.spec_hash,
                        'drover.container': c.name, 'drover.spec-fields': decl.fields}} for c in decl.containers]


def fleet(host):
    return {('prod', 'web-0'): run_of(TASK, ('prod', 'web-0'), 'r1', host),
            ('batch', 'api-3'): run_of(TD, ('batch', 'api-3'), 'a1', host),
            ('prod', 'web-1'): run_of(TASK, ('prod', 'web-1'), 'r0', host),       # a revision the records lack
            ('prod', 'own'): run_of(TASK, ('prod', 'own'), 'r1', host)}           # the host's own task


def test_as_started_nothing_is_restated_in_either_form_and_either_cluster():
    host = {'log_drivers': ['local', 'json-file'], 'log_driver_map': {'awslogs': 'local'}}
    assert host_look.restated_instances(dict(host, purge_keep=KEEP), fleet(host), RECORDS) == {}
    assert host_look.restated_instances(dict(host, purge_keep=None), fleet(host), RECORDS) == {}


def test_a_log_driver_mapped_anew_restates_the_instances_with_the_field():
    before = {'log_drivers': ['local', 'json-file'], 'log_driver_map': {'awslogs': 'local'}}
    now = dict(before, log_driver_map={'awslogs': 'json-file'}, purge_keep=KEEP)
    assert host_look.restated_instances(now, fleet(before), RECORDS) == {
        ('prod', 'web-0'): ['containers[main].log_configuration'],
        ('batch', 'api-3'): ['containers[app].log_configuration']}


def test_a_refusal_is_told_per_instance_and_a_policy_that_cannot_be_read_refuses_all_without_raising():
    before = {'log_drivers': ['local', 'json-file'], 'log_driver_map': {'awslogs': 'local'}}
    out = host_look.restated_instances(dict(before, log_drivers=['json-file'], purge_keep=KEEP), fleet(before), RECORDS)
    assert sorted(out) == [('batch', 'api-3'), ('prod', 'web-0')]
    assert all('not allowed on this host' in text for text in out.values()), out
    out = host_look.restated_instances(dict(before, bind_paths=['srv'], purge_keep=KEEP), fleet(before), RECORDS)
    assert sorted(out) == [('batch', 'api-3'), ('prod', 'web-0')] and 'bind_paths' in out[('prod', 'web-0')], out


def test_a_record_that_is_no_task_is_told_as_the_share_would_fail_and_nothing_raises():
    """(A record is checked when written; one that is still no task fails the second pass as it fails here.)"""
    host = {'log_drivers': ['local', 'json-file'], 'log_driver_map': {'awslogs': 'json-file'}}
    for declaration, said in (({'containers': [3]}, 'containers[0] must be a mapping'),
                              ({'task_definition': 'x'}, 'task_definition must be a mapping'),
                              ({'containers': [{'name': 'main', 'image': IMG, 'memory': 'lots'}]},
                               'containers[0].memory must be a whole number')):
        odd = [dict(RECORDS[0], declaration=declaration)]
        out = host_look.restated_instances(dict(host, purge_keep=KEEP), fleet(host), odd)
        assert list(out) == [('prod', 'web-0')] and said in out[('prod', 'web-0')], out


def test_a_stored_registry_user_without_its_password_is_no_refusal():
    host = {'log_drivers': ['local', 'json-file'], 'log_driver_map': {'awslogs': 'local'}}
    kept = dict(TASK, registry_auth={'registry': 'r.test', 'username': 'u'})
    records = [dict(RECORDS[0], declaration=kept)]
    grouped = {('prod', 'web-0'): run_of(kept, ('prod', 'web-0'), 'r1', host)}
    auth = {'registry': 'r.test', 'username': 'u', 'password': 'p'}
    assert host_look.restated_instances(dict(host, purge_keep=KEEP, registry_auth=auth), grouped, records) == {}
