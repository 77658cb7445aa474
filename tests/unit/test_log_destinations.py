# -*- coding: utf-8 -*-
"""Where a container's logs may go from the host (the host's log_addresses), and the log option names that reach
a file: the checks of a declaration, before anything is made."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens
from ansible_collections.drover.fleet.plugins.module_utils.aws import log_destinations as destinations
from ansible_collections.drover.fleet.plugins.module_utils.tasks import spec
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

IMG = 'drover.local/busybox:1'
ROUTER = firelens.directory('/var/lib/drover/store.db', 'prod', 'victim')
# A victim's router socket, as the engine would be asked to reach it in four spellings that a prefix test on the
# raw text lets through.
FORGED = ['UNIX://%s/socket/fluent.sock' % ROUTER, 'unix:%s/socket/fluent.sock' % ROUTER,
          'unix:///var/lock/../drover/firelens/%s/socket/fluent.sock' % ROUTER.rsplit('/', 1)[1],
          'unix:///run/%%64rover/firelens/%s/socket/fluent.sock' % ROUTER.rsplit('/', 1)[1],
          'unix:///proc/self/root%s/socket/fluent.sock' % ROUTER,
          'unix:///proc/1/root%s/socket/fluent.sock' % ROUTER]


def one(log, **policy):
    params = {'name': 'app', 'cluster': 'prod', 'execution_role_arn': 'exec',
              'containers': [{'name': 'web', 'image': IMG, 'log_configuration': log}]}
    params.update(policy)
    return spec.task_set(params)[0][0]


def refused(log, **policy):
    with pytest.raises(SpecError) as caught:
        one(log, **policy)
    return str(caught.value)


@pytest.mark.parametrize('address', FORGED)
def test_each_spelling_of_another_task_s_router_is_refused(address):
    log = {'log_driver': 'fluentd', 'options': {'fluentd-address': address, 'tag': 'web-firelens-victim'}}
    # Read as the engine reads it, whether the host lists it (an operator's slip) or not (the default).
    for policy in ({}, {'log_addresses': [address]}):
        assert refused(log, **policy) == (
            'containers[0].log_configuration.options.fluentd-address %s is a socket of the collection\'s own (a '
            'task\'s log router): a container logs to its own task\'s router with awsfirelens' % address)
    # Any other socket on the host is refused unless listed.
    other = 'unix:///run/elsewhere/fluent.sock'
    assert 'this host sends no container\'s output there (log_addresses: none;' in refused(
        dict(log, options={'fluentd-address': other}))


@pytest.mark.parametrize('address,path', [
    ('UNIX:///run/drover/x', '/run/drover/x'),
    ('unix:///run/%64rover/x', '/run/drover/x'),
    ('unix:///proc/self/root/run/drover/x', '/run/drover/x'),
    ('unix:///proc/1/root/proc/self/cwd/var/run/drover/../drover/x', '/var/run/drover/x'),
    ('unixgram://run/drover/x', '/drover/x'),        # the engine's URL parser takes "run" for a host name
    ('unix:/run/drover/x', '/run/drover/x'),          # ... and takes a path with no "//"
    ('unix:////run//drover/./x', '/run/drover/x'),
    ('tcp://127.0.0.1:24224', None),
    ('127.0.0.1:24224', None),
])
def test_a_socket_address_is_read_as_the_engine_reads_it(address, path):
    assert destinations.socket_path(address) == path


@pytest.mark.parametrize('log,words', [
    ({'log_driver': 'syslog'}, 'containers[0].log_configuration.log_driver syslog sends the container\'s output to '
                               'unix:///dev/log (no syslog-address given), which this host does not allow '
                               '(log_addresses: none; role variable drover_log_addresses)'),
    ({'log_driver': 'syslog', 'options': {'syslog-address': 'udp://198.18.0.9:514'}},
     'containers[0].log_configuration.options.syslog-address udp://198.18.0.9:514: this host sends no container\'s '
     'output there (log_addresses: none; role variable drover_log_addresses)'),
    ({'log_driver': 'fluentd'}, 'log_driver fluentd sends the container\'s output to tcp://127.0.0.1:24224'),
    ({'log_driver': 'gelf'}, 'containers[0].log_configuration.options.gelf-address is required'),
    ({'log_driver': 'gelf', 'options': {'gelf-address': 'udp://198.18.0.9:12201'}}, 'gelf-address udp://198.18.0.9'),
    # An address hidden as a secret option would go unseen: never a secret.
    ({'log_driver': 'gelf', 'secret_options': {'gelf-address': '/p'}},
     'secret_options.gelf-address: gelf-address is no secret'),
    ({'log_driver': 'syslog', 'secret_options': {'syslog-address': '/p'}}, 'syslog-address is no secret'),
])
def test_a_destination_the_host_does_not_list_is_refused(log, words):
    assert words in refused(log)


def test_listed_destinations_are_taken():
    for log, listed in (({'log_driver': 'syslog'}, 'unix:///dev/log'),
                        ({'log_driver': 'fluentd'}, 'tcp://127.0.0.1:24224'),
                        ({'log_driver': 'gelf', 'options': {'gelf-address': 'udp://198.18.0.9:12201'}},
                         'udp://198.18.0.9:12201')):
        assert one(log, log_addresses=[listed]).containers[0].log_configuration
        # Listed exactly as written: another spelling is another address.
        with pytest.raises(SpecError):
            one(log, log_addresses=[listed.upper()])
    # Drivers that keep the output on the host, or send it to the task's own router, need nothing listed.
    for driver in ('json-file', 'local', 'journald', 'none'):
        assert one({'log_driver': driver}).containers[0].log_configuration


def test_an_awslogs_endpoint_of_the_task_s_own_must_be_listed():
    log = {'log_driver': 'awslogs', 'options': {'awslogs-group': 'g', 'awslogs-endpoint': 'https://198.18.0.9'}}
    policy = {'aws_logs': True, 'aws_region': 'eu-west-1'}
    msg = refused(log, **policy)
    assert msg.startswith('containers[0].log_configuration.options.awslogs-endpoint https://198.18.0.9: this host '
                          'sends no container\'s output there'), msg
    assert one(log, log_addresses=['https://198.18.0.9'], **policy)
    assert one(log, aws_endpoint_url='https://198.18.0.9', **policy)        # the host's own endpoint
    assert one({'log_driver': 'awslogs', 'options': {'awslogs-group': 'g'}}, **policy)


@pytest.mark.parametrize('driver', ['awsfirelens', 'gelf'])
def test_a_secret_option_name_never_writes_a_line(driver):
    """A newline in a secret option's name would be a line of its own in the router's Fluent Bit file."""
    name = 'Retry_Limit\n[OUTPUT]\n    Name http'
    log = {'log_driver': driver, 'options': {'Name': 'es'} if driver == 'awsfirelens' else
           {'gelf-address': 'udp://198.18.0.9:12201'}, 'secret_options': {name: '/p'}}
    params = {'name': 'app', 'cluster': 'prod', 'execution_role_arn': 'exec', 'log_addresses': ['udp://198.18.0.9:12201'],
              'containers': [{'name': 'web', 'image': IMG, 'log_configuration': log},
                             {'name': 'router', 'image': IMG, 'firelens_configuration': {'type': 'fluentbit'}}]}
    with pytest.raises(SpecError) as caught:
        spec.task_set(params)
    assert str(caught.value) == ('containers[0].log_configuration.secret_options %r is not a log option\'s name: '
                                 'letters, digits, _ . - on one line' % name)
