# -*- coding: utf-8 -*-
"""The reconcile timer's unit: rendered from the role's template with its defaults, the values systemd reads."""

from __future__ import absolute_import, division, print_function

import os

import jinja2
import yaml
from ansible.plugins.filter.core import FilterModule

ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'roles', 'reconcile_timer')


def render(**overrides):
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as f:
        variables = yaml.safe_load(f)
    variables.update(overrides)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, 'templates')), keep_trailing_newline=True)
    env.filters.update(FilterModule().filters())   # the template uses Ansible's filters (bool)
    text = env.get_template('drover-reconcile.timer.j2').render(**variables)
    return dict(line.split('=', 1) for line in text.splitlines() if '=' in line and not line.startswith('#'))


def test_the_timer_fires_within_a_second_of_due_by_default():
    # systemd's default AccuracySec is 1min: without it a 15 s interval would run about once a minute
    timer = render(drover_reconcile_timer_interval='15s', drover_reconcile_timer_randomized_delay='2s')
    assert timer['OnUnitActiveSec'] == '15s'
    assert timer['RandomizedDelaySec'] == '2s'
    assert timer['AccuracySec'] == '1s'


def test_the_accuracy_is_a_variable():
    assert render(drover_reconcile_timer_accuracy='100ms')['AccuracySec'] == '100ms'
