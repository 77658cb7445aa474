# -*- coding: utf-8 -*-
"""Where a container's ports are published (ECS's networkBindings), from the engine's listing: what the listing's
`Ports` rows become, and what a task's container view tells of them."""

from __future__ import absolute_import, division, print_function

from ansible_collections.drover.fleet.plugins.module_utils._docker import listed_ports
from ansible_collections.drover.fleet.plugins.module_utils.tasks import plan as plan_mod

# a listing's Ports as the engine gives them: an exposed port not published, one published on IPv4 and IPv6 (the
# same host port), a UDP port on one address, and the same row twice
ROWS = [{'PrivatePort': 9000, 'Type': 'tcp'},
        {'IP': '0.0.0.0', 'PrivatePort': 8080, 'PublicPort': 32768, 'Type': 'tcp'},
        {'IP': '::', 'PrivatePort': 8080, 'PublicPort': 32768, 'Type': 'tcp'},
        {'IP': '127.0.0.1', 'PrivatePort': 53, 'PublicPort': 5353, 'Type': 'udp'},
        {'IP': '::', 'PrivatePort': 8080, 'PublicPort': 32768, 'Type': 'tcp'}]


def test_only_published_ports_are_listed_once_each_and_sorted():
    assert listed_ports(ROWS) == [('0.0.0.0', 8080, 32768, 'tcp'), ('127.0.0.1', 53, 5353, 'udp'),
                                  ('::', 8080, 32768, 'tcp')]
    assert listed_ports(None) == [] and listed_ports([]) == []


def obs(state, ports):
    return {'id': 'c1', 'state': state, 'image': 'i', 'labels': {'drover.container': 'main'}, 'ports': ports}


def test_a_running_container_tells_its_bindings_and_a_stopped_one_none():
    ports = listed_ports(ROWS)
    view = plan_mod.container_view(obs('running', ports))
    assert view['network_bindings'] == [
        {'bind_ip': '0.0.0.0', 'container_port': 8080, 'host_port': 32768, 'protocol': 'tcp'},
        {'bind_ip': '127.0.0.1', 'container_port': 53, 'host_port': 5353, 'protocol': 'udp'},
        {'bind_ip': '::', 'container_port': 8080, 'host_port': 32768, 'protocol': 'tcp'}]
    # (a container that exited keeps no published port, whatever a stale listing said)
    assert plan_mod.container_view(obs('exited', ports))['network_bindings'] == []
    assert plan_mod.container_view(obs('running', []))['network_bindings'] == []
    assert plan_mod.container_view({'id': 'c1', 'state': 'running', 'labels': {}})['network_bindings'] == []
