# -*- coding: utf-8 -*-
"""Task definitions as users keep them, through the real module and engine: a port range published, the empty
values a skeleton leaves taken as absent (one warning), a template rendered by drover.fleet.ecs_render in a real
playbook, and what is left of a template refused naming the filter, with nothing on the host changed."""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

from helpers import IMAGE, ansible_env, host_snapshot, statuses, warnings_of


def box(engine, cluster):
    """The one container of the cluster, inspected."""
    found = engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster})
    assert len(found) == 1, found
    return engine.api.inspect_container(found[0].id)


def td(**container):
    c = {'name': 'web', 'image': IMAGE, 'memory': 64, 'command': ['sleep', '3600']}
    c.update(container)
    return {'family': 'web', 'containerDefinitions': [c]}


def test_a_container_port_range_is_published_a_free_host_port_each(engine, cluster, converge):
    r = converge(task_definition=td(portMappings=[{'containerPortRange': '18100-18102', 'protocol': 'tcp'}]))
    assert not r.get('failed'), r
    bound = box(engine, cluster)['NetworkSettings']['Ports']
    assert sorted(bound) == ['18100/tcp', '18101/tcp', '18102/tcp'], bound
    hosts = [int(bound[k][0]['HostPort']) for k in sorted(bound)]
    assert len(set(hosts)) == 3 and all(h > 0 for h in hosts), bound
    assert not converge(task_definition=td(portMappings=[{'containerPortRange': '18100-18102'}]))['changed']


def test_the_empty_values_of_a_skeleton_are_absent_with_one_warning(engine, cluster, converge):
    doc = td(hostname='', user='', workingDirectory='', linuxParameters={})
    doc.update(taskRoleArn='', executionRoleArn='')
    r = converge(task_definition=doc)
    assert not r.get('failed') and list(statuses(engine, cluster).values()) == ['running'], r
    empties = [w for w in warnings_of(r) if w.startswith('empty values taken as absent')]
    assert empties == ['empty values taken as absent, as a skeleton or a template leaves them: '
                       'task_definition.containerDefinitions[0].hostname, '
                       'task_definition.containerDefinitions[0].linuxParameters, '
                       'task_definition.containerDefinitions[0].user, '
                       'task_definition.containerDefinitions[0].workingDirectory, '
                       'task_definition.executionRoleArn, task_definition.taskRoleArn'], warnings_of(r)


def test_what_is_left_of_a_template_is_refused_naming_the_filter_and_nothing_changes(engine, cluster, converge,
                                                                                     store_path):
    scope = 'drover.cluster=%s' % cluster
    before = host_snapshot(engine, store_path, scope=scope)
    r = converge(task_definition=td(image='<IMAGE1_NAME>'))
    assert r.get('failed') and r['msg'] == (
        "task_definition.containerDefinitions[0].image is a template placeholder left in the file: '<IMAGE1_NAME>' "
        "(the filter drover.fleet.ecs_render fills them from values, images and environment, and "
        "drover.fleet.ecs_placeholders lists them)"), r
    assert host_snapshot(engine, store_path, scope=scope) == before


def test_a_playbook_renders_a_template_with_the_filter_and_runs_it(engine, cluster, store_path, tmp_path):
    template = td(image='${REPO}:${TAG}', cpu='${CPU}', environment=[{'name': 'RELEASE', 'value': 'old'}])
    template['containerDefinitions'][0]['name'] = '<NAME>'
    (tmp_path / 'web.json').write_text(json.dumps(template))
    repo, tag = IMAGE.rsplit(':', 1)
    (tmp_path / 'play.yml').write_text('''
- hosts: localhost
  gather_facts: false
  tasks:
    - name: List what the template needs
      ansible.builtin.set_fact:
        needs: "{{ lookup('file', 'web.json') | from_json | drover.fleet.ecs_placeholders | map(attribute='name') | list }}"
    - name: Run it rendered
      drover.fleet.ecs_task:
        cluster: %s
        store_path: %s
        task_definition: >-
          {{ lookup('file', 'web.json') | from_json
             | drover.fleet.ecs_render(values={'REPO': '%s', 'TAG': '%s', 'CPU': '128', 'NAME': 'web'},
                                       environment={'web': {'RELEASE': '7'}}) }}
    - name: Say what it needed
      ansible.builtin.debug:
        msg: "needs {{ needs | join(',') }}"
''' % (cluster, store_path, repo, tag))
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    run = subprocess.run([playbook, '-i', 'localhost,', '-c', 'local', str(tmp_path / 'play.yml')],
                         cwd=str(tmp_path), env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'needs NAME,REPO,TAG,CPU' in run.stdout, run.stdout
    assert list(statuses(engine, cluster).values()) == ['running']
    inspected = box(engine, cluster)
    assert inspected['Config']['Image'] == IMAGE and 'RELEASE=7' in inspected['Config']['Env']
    assert inspected['HostConfig']['CpuShares'] == 128
