# -*- coding: utf-8 -*-
"""FireLens, the pure parts: the router's configuration, the start order, the engine's log configuration."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.tasks import settings
from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IMG = 'drover.local/busybox:1'


def task(*containers):
    return spec.task_set({'name': 'logs', 'cluster': 'prod', 'containers': list(containers)})[0][0]


def c(name, **kw):
    out = {'name': name, 'image': IMG}
    out.update(kw)
    return out


ROUTER = c('router', firelens_configuration={'type': 'fluentbit'})


def test_the_router_starts_before_the_containers_that_log_to_it():
    decl = task(c('app', log_configuration={'log_driver': 'awsfirelens'}), c('plain'), ROUTER)
    assert [x.name for x in settings.start_order(decl.containers)] == ['router', 'app', 'plain']


def test_the_configuration_has_one_output_per_container_with_options():
    decl = task(c('app', log_configuration={'log_driver': 'awsfirelens', 'options': {
        'Name': 'firehose', 'region': 'eu-west-1', 'delivery_stream': 'x'}}),
        c('quiet', log_configuration={'log_driver': 'awsfirelens'}), ROUTER)
    text = firelens.config_text('prod', 'logs', decl.containers)
    assert text.splitlines()[1:] == [
        '[INPUT]', '    Name forward', '    unix_path /var/run/fluent.sock', '',
        '[FILTER]', '    Name record_modifier', '    Match *', '    Record ecs_cluster prod',
        '    Record ecs_task_definition logs', '    Record ecs_task_id logs', '',
        '[OUTPUT]', '    Name firehose', '    Match app-firelens*', '    delivery_stream x', '    region eu-west-1']


def test_no_metadata_and_a_file_of_the_user_s():
    router = c('router', firelens_configuration={'type': 'fluentbit', 'options': {
        'enable-ecs-log-metadata': 'false', 'config-file-type': 'file', 'config-file-value': '/etc/mine.conf'}})
    decl = task(c('app', log_configuration={'log_driver': 'awsfirelens'}), router)
    text = firelens.config_text('prod', 'logs', decl.containers)
    assert 'record_modifier' not in text and '@INCLUDE /etc/mine.conf\n' in text and '[OUTPUT]' not in text


def test_the_engine_s_log_configuration_and_the_router_s_mounts():
    decl = task(c('app', log_configuration={'log_driver': 'awsfirelens'}), ROUTER)
    path = firelens.directory('/var/lib/drover/store.db', 'prod', 'logs')
    assert path.startswith('/run/drover/firelens/') and len(path + '/socket/fluent.sock') < 108
    assert path != firelens.directory('/srv/other/store.db', 'prod', 'logs')
    assert path != firelens.directory('/var/lib/drover/store.db', 'prod', 'logs2')
    assert firelens.log_config(decl.containers[0], 'logs', path) == {'type': 'fluentd', 'config': {
        'fluentd-address': 'unix://%s/socket/fluent.sock' % path, 'fluentd-async': 'true', 'tag': 'app-firelens-logs'}}
    assert firelens.router_binds(path) == ['%s/socket:/var/run' % path,
                                           '%s/fluent-bit.conf:/fluent-bit/etc/fluent-bit.conf:ro' % path]


@pytest.mark.parametrize('options,words', [
    ({'enable-ecs-log-metadata': 'yes'}, 'containers[1].firelens_configuration.options.enable-ecs-log-metadata must be '
                                         'true or false'),
    ({'config-file-type': 'file'}, 'containers[1].firelens_configuration.options.config-file-value must be an '
                                   'absolute path'),
    ({'config-file-type': 'http'}, 'containers[1].firelens_configuration.options.config-file-type must be file'),
    ({'other': 'x'}, 'containers[1].firelens_configuration.options has unknown keys: other'),
])
def test_bad_router_options_are_named(options, words):
    with pytest.raises(SpecError) as err:
        task(c('app', log_configuration={'log_driver': 'awsfirelens'}),
             c('router', firelens_configuration={'type': 'fluentbit', 'options': options}))
    assert words in str(err.value)


def test_the_task_definition_form_names_ecs_fields():
    td = {'family': 'logs', 'containerDefinitions': [
        {'name': 'app', 'image': IMG, 'logConfiguration': {'logDriver': 'awsfirelens'}}]}
    with pytest.raises(SpecError) as err:
        spec.task_set({'task_definition': td})
    assert str(err.value) == ('task_definition.containerDefinitions[0].logConfiguration.logDriver awsfirelens needs '
                              'the task\'s log router: a container with firelensConfiguration (none in '
                              'task_definition.containerDefinitions)')
