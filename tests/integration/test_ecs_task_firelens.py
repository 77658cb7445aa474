# -*- coding: utf-8 -*-
"""FireLens on the real engine: a task's log router (the container with `firelensConfiguration`), the
configuration the collection writes for it, and the containers that log with `awsfirelens` through the engine's
fluentd driver. The router's image here is the test busybox (no Fluent Bit is at hand): the test's own forward
receiver (tests/fixtures/fluent_forward.py) listens on the router's socket, as Fluent Bit would inside the router,
and receives the lines the engine's driver sends."""

from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import uuid

import pytest

from fluent_forward import Receiver
from helpers import container, host_snapshot, statuses, wait_for
from sweep import register

from ansible_collections.drover.fleet.plugins.module_utils.host import files
from ansible_collections.drover.fleet.plugins.module_utils.aws import firelens

APP_LOG = {'log_driver': 'awsfirelens', 'options': {'Name': 'cloudwatch_logs', 'region': 'us-west-2',
                                                    'log_group_name': 'app', 'auto_create_group': 'true'}}


def router(**kw):
    spec = container('log_router', firelens_configuration={'type': 'fluentbit'})
    spec.update(kw)
    return spec


def app(log=None, **kw):
    spec = container('app', ['sh', '-c', 'echo line-one; echo line-two; exec sleep 3600'],
                     log_configuration=log or APP_LOG)
    spec.update(kw)
    return spec


@pytest.fixture
def receiver(store_path, cluster):
    """The router's socket on the host, with the test's receiver listening on it (in the socket directory's own
    tmpfs, mounted as the converge mounts it: the converge finds it there and keeps it)."""
    path = firelens.directory(store_path, cluster, 'logs')
    os.makedirs(firelens.socket_dir(path), 0o755)
    assert files.mount_bounded(firelens.socket_dir(path), firelens.SOCKET_DIR_KIB, firelens.SOCKET_DIR_INODES)
    got = Receiver(os.path.join(firelens.socket_dir(path), firelens.SOCKET)).start()
    yield got
    got.stop()
    files.unmount(firelens.socket_dir(path))    # a test that leaves its task running (the cluster's cleanup
    shutil.rmtree(path, ignore_errors=True)     # removes its containers, not what the task's converge wrote)


def started_at(engine, name):
    return engine.api.inspect_container(name)['State']['StartedAt']


def test_containers_log_to_the_task_s_router_through_the_engine(engine, cluster, converge, store_path, receiver):
    args = dict(name='logs', containers=[app(), router(), container('plain')])
    check = converge(check=True, **args)
    path = firelens.directory(store_path, cluster, 'logs')
    assert check['changed'] and statuses(engine, cluster) == {}
    assert os.listdir(path) == ['socket']            # check mode wrote nothing (the socket is the test's receiver's)
    r = converge(**args)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    # The engine's driver delivers the app's lines to the router's socket, tagged as ECS tags them.
    wait_for(lambda: receiver.lines('app-firelens-logs') == ['line-one', 'line-two'], timeout=15)
    assert set(t for t, _r in receiver.records) == {'app-firelens-logs'}      # only the app logs to the router
    assert (os.stat(path).st_mode & 0o777, os.stat(os.path.join(path, 'fluent-bit.conf')).st_mode & 0o777) == (
        0o700, 0o644)
    app_c = engine.api.inspect_container('logs-app')
    assert app_c['HostConfig']['LogConfig'] == {'Type': 'fluentd', 'Config': {
        'fluentd-address': 'unix://%s/socket/fluent.sock' % path, 'fluentd-async': 'true', 'tag': 'app-firelens-logs'}}
    assert engine.api.inspect_container('logs-plain')['HostConfig']['LogConfig']['Type'] == 'json-file'
    # The router: its configuration (read-only) and its socket's directory, and it started first.
    mounts = dict((m['Destination'], (m['Source'], m['RW'])) for m in engine.api.inspect_container(
        'logs-log_router')['Mounts'])
    assert mounts == {'/fluent-bit/etc/fluent-bit.conf': ('%s/fluent-bit.conf' % path, False),
                      '/var/run': ('%s/socket' % path, True)}
    assert started_at(engine, 'logs-log_router') < started_at(engine, 'logs-app')
    with open(os.path.join(path, 'fluent-bit.conf'), encoding='utf-8') as handle:
        text = handle.read()
    assert '[INPUT]\n    Name forward\n    unix_path /var/run/fluent.sock\n' in text, text
    assert '    Record ecs_cluster %s\n' % cluster in text and '    Record ecs_task_definition logs\n' in text, text
    assert ('[OUTPUT]\n    Name cloudwatch_logs\n    Match app-firelens*\n    auto_create_group true\n'
            '    log_group_name app\n    region us-west-2\n') in text, text
    assert text.count('[OUTPUT]') == 1
    assert not converge(**args)['changed']

    # A changed output replaces the task's containers and rewrites the router's configuration.
    changed = converge(name='logs', containers=[app(log=dict(APP_LOG, options={'Name': 'firehose',
                                                                               'delivery_stream': 's'})),
                                                router(), container('plain')])
    assert changed['changed'] and changed['task']['changed_fields'] == ['containers[app].log_configuration']
    with open(os.path.join(path, 'fluent-bit.conf'), encoding='utf-8') as handle:
        assert '[OUTPUT]\n    Name firehose\n    Match app-firelens*\n    delivery_stream s\n' in handle.read()
    # Absent: the containers and the task's FireLens files go.
    receiver.stop()
    assert converge(name='logs', state='absent')['changed']
    assert statuses(engine, cluster) == {} and not os.path.exists(path)


def test_the_task_definition_form_routes_the_same_way(engine, cluster, converge, store_path, receiver):
    td = {'family': 'logs', 'containerDefinitions': [
        {'name': 'log_router', 'image': container('x')['image'], 'essential': True, 'command': ['sleep', '3600'],
         'firelensConfiguration': {'type': 'fluentbit', 'options': {
             'enable-ecs-log-metadata': 'false', 'config-file-type': 'file', 'config-file-value': '/extra.conf'}}},
        {'name': 'app', 'image': container('x')['image'], 'essential': True,
         'command': ['sh', '-c', 'echo from-a-task-definition; exec sleep 3600'],
         'logConfiguration': {'logDriver': 'awsfirelens', 'options': {
             'Name': 'es', 'Host': 'search.example', 'Port': '443'}}}]}
    r = converge(task_definition=td)
    assert r['task']['last_status'] == 'RUNNING', r['task']
    wait_for(lambda: receiver.lines('app-firelens-logs') == ['from-a-task-definition'], timeout=15)
    with open(os.path.join(firelens.directory(store_path, cluster, 'logs'), 'fluent-bit.conf'), encoding='utf-8') as f:
        text = f.read()
    assert 'record_modifier' not in text and '@INCLUDE /extra.conf\n' in text, text
    assert '[OUTPUT]\n    Name es\n    Match app-firelens*\n    Host search.example\n    Port 443\n' in text, text
    assert not converge(task_definition=td)['changed']


def test_a_secret_option_reaches_the_router_s_environment_and_its_file_names_it(
        engine, cluster, converge, store_path, receiver, moto_aws, host_aws_credentials):
    import boto3
    value = register('firelens-secret-%s' % uuid.uuid4().hex, home='logs-log_router')
    ssm = boto3.client('ssm', region_name='eu-west-1', endpoint_url=moto_aws)
    ssm.put_parameter(Name='/drover-test/%s/es' % cluster, Value=value, Type='SecureString')
    log = dict(APP_LOG, options={'Name': 'es', 'HTTP_User': 'app'},
               secret_options={'HTTP_Passwd': '/drover-test/%s/es' % cluster})
    r = converge(name='logs', execution_role_arn='arn:aws:iam::123456789012:role/logs', aws_endpoint_url=moto_aws,
                 aws_region='eu-west-1', containers=[app(log=log), router()])
    assert r['task']['last_status'] == 'RUNNING', r['task']
    path = firelens.directory(store_path, cluster, 'logs')
    with open(os.path.join(path, 'fluent-bit.conf'), encoding='utf-8') as handle:
        text = handle.read()
    assert '    HTTP_Passwd ${DROVER_FIRELENS_APP_HTTP_PASSWD}\n    HTTP_User app\n' in text and value not in text, text
    env = engine.api.inspect_container('logs-log_router')['Config']['Env']
    assert 'DROVER_FIRELENS_APP_HTTP_PASSWD=%s' % value in env
    assert value not in json.dumps(engine.api.inspect_container('logs-app')) and value not in json.dumps(r)
    wait_for(lambda: receiver.lines('app-firelens-logs') == ['line-one', 'line-two'], timeout=15)
    ssm.delete_parameter(Name='/drover-test/%s/es' % cluster)


@pytest.mark.parametrize('containers,options,words', [
    ([app(), container('other')], {}, 'containers[0].log_configuration.log_driver awsfirelens needs the task\'s log '
                                      'router: a container with firelens_configuration (none in containers)'),
    ([app(), router(), router(name='second')], {}, 'containers[2].firelens_configuration: a task has one log '
                                                   'router; containers log_router and second both declare one'),
    ([app(), router(firelens_configuration={'type': 'fluentd'})], {},
     'containers[1].firelens_configuration.type fluentd is not supported (supported: fluentbit)'),
    ([app(), router(log_configuration=APP_LOG)], {},
     'containers[1].log_configuration.log_driver awsfirelens: the log router cannot log to itself'),
    ([app(), router(firelens_configuration={'type': 'fluentbit', 'options': {
        'config-file-type': 's3', 'config-file-value': 'arn:aws:s3:::b/k'}})],
     {}, 'containers[1].firelens_configuration.options.config-file-type s3 is not supported yet'),
    ([app(log={'log_driver': 'awsfirelens', 'options': {'region': 'x'}}), router()], {},
     'containers[0].log_configuration.options needs Name'),
    ([app(log={'log_driver': 'awsfirelens', 'options': {'Name': 'es', 'Host': 'h\n[INPUT]\n    Name tail'}}),
      router()], {}, 'containers[0].log_configuration.options.Host: a Fluent Bit output option is a name'),
    ([app(log={'log_driver': 'awsfirelens', 'options': {'Name': 'es', 'name': 'es'}}), router()], {},
     'containers[0].log_configuration.options: Name, name: an output has one Name'),
    ([app(log={'log_driver': 'awsfirelens', 'options': {'Name': 'es', 'Match': '*'}}), router()], {},
     'containers[0].log_configuration.options: Match, Name: an output has one Name, and the collection writes its '
     'Match'),
    ([container('other', log_configuration={'log_driver': 'fluentd', 'options': {
        'fluentd-address': 'unix:///var/run//drover/firelens/0123/socket/fluent.sock'}})], {},
     'containers[0].log_configuration.options.fluentd-address unix:///var/run//drover/firelens/0123/socket/fluent.sock '
     'is a socket of the collection\'s own'),
    ([app(), router()], {'log_drivers': ['json-file']},
     'containers[0].log_configuration.log_driver awsfirelens logs through the engine\'s fluentd driver, which is '
     'not allowed on this host (allowed: json-file)'),
])
def test_a_bad_firelens_declaration_is_refused_naming_the_field_and_nothing_changes(
        engine, cluster, converge, store_path, containers, options, words):
    before = host_snapshot(engine, store_path, cluster)
    r = converge(name='logs', containers=containers, **options)
    assert r.failed and words in r['msg'], r.get('msg')
    assert host_snapshot(engine, store_path, cluster) == before
    assert not os.path.exists(firelens.directory(store_path, cluster, 'logs'))


def forged_addresses(path):
    """The victim's router socket in four spellings the engine takes for the same socket."""
    sock = os.path.join(firelens.socket_dir(path), firelens.SOCKET)
    return ['UNIX://%s' % sock, 'unix://%s' % sock.replace('/drover/', '/%64rover/', 1),
            'unix:///proc/self/root%s' % sock, 'unix:///proc/1/root%s' % sock]


def test_another_task_cannot_write_into_a_task_s_router(engine, cluster, converge, store_path, receiver):
    """Another tenant names the victim's router socket (its path is a digest anyone can work out) with the victim's
    tag: refused before anything is made, in every spelling, and the router never sees a forged line."""
    victim = converge(name='logs', containers=[app(), router()])
    assert victim['task']['last_status'] == 'RUNNING', victim['task']
    wait_for(lambda: receiver.lines('app-firelens-logs') == ['line-one', 'line-two'], timeout=15)
    before = [host_snapshot(engine, store_path, 'drover.cluster=%s' % c) for c in (cluster, cluster + 'x')]
    for address in forged_addresses(firelens.directory(store_path, cluster, 'logs')):
        r = converge(name='forger', cluster=cluster + 'x', log_addresses=[address], containers=[container(
            'app', ['sh', '-c', 'echo forged-line; exec sleep 3600'], log_configuration={
                'log_driver': 'fluentd', 'options': {'fluentd-address': address, 'tag': 'app-firelens-logs'}})])
        assert r.failed and r['msg'].startswith('containers[0].log_configuration.options.fluentd-address %s is a '
                                                'socket of the collection\'s own' % address), r['msg']
        assert [host_snapshot(engine, store_path, 'drover.cluster=%s' % c) for c in (cluster, cluster + 'x')] == before
    assert receiver.lines('app-firelens-logs') == ['line-one', 'line-two']
    assert 'forged-line' not in json.dumps(receiver.records)


def test_the_router_writes_into_a_bounded_directory_of_its_own(engine, cluster, converge, store_path):
    """The router's socket directory is a tmpfs of its own (SOCKET_DIR_KIB): a router that writes more than that
    fills it, not the host's /run; it goes with the task."""
    r = converge(name='logs', containers=[app(), router()])
    assert r['task']['last_status'] == 'RUNNING', r['task']
    sockets = firelens.socket_dir(firelens.directory(store_path, cluster, 'logs'))
    assert os.path.ismount(sockets)
    size = os.statvfs(sockets)
    assert size.f_blocks * size.f_frsize == firelens.SOCKET_DIR_KIB * 1024
    run_before = os.statvfs('/run')
    wrote = engine.containers.get('logs-log_router').exec_run(
        ['sh', '-c', 'dd if=/dev/zero of=/var/run/fill bs=1024 count=%d' % (4 * firelens.SOCKET_DIR_KIB)])
    assert wrote.exit_code != 0 and b'No space left on device' in wrote.output, wrote
    run_after = os.statvfs('/run')
    assert (run_before.f_bfree - run_after.f_bfree) * run_after.f_frsize < 1024 * 1024     # the host's /run: untouched
    assert not converge(name='logs', containers=[app(), router()])['changed']
    assert converge(name='logs', state='absent')['changed']
    assert not os.path.ismount(sockets) and not os.path.exists(sockets)
