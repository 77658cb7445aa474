# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/fleet.py --profile: when each task of a run started and ended on each host, as the controller sees it
(from queueing the task for the host to receiving its result), one JSON line per task result written to
$DROVER_BENCH_TASK_LOG. Enabled by the bench only (ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r'''
name: fleet_task_times
type: aggregate
short_description: The start and end of each task on each host, for the fleet bench's profile
description:
  - Writes one JSON line per task result (task name, action, status, host, start and end times) to the file
    named by the environment variable E(DROVER_BENCH_TASK_LOG).
author:
  - drover.fleet contributors (@drover)
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'fleet_task_times'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.run_start = time.time()
        self.started = {}
        self.path = os.environ.get('DROVER_BENCH_TASK_LOG')

    def v2_runner_on_start(self, host, task):
        self.started[(host.get_name(), task._uuid)] = time.time()

    def _done(self, result, status):
        end = time.time()
        task = result._task
        host = result._host.get_name()
        start = self.started.pop((host, task._uuid), end)
        if status == 'ok' and result._result.get('changed'):
            status = 'changed'
        if not self.path:
            return
        with open(self.path, 'a') as handle:
            handle.write(json.dumps({'host': host, 'name': task.get_name(), 'action': task.action,
                                     'status': status, 'start': start, 'end': end,
                                     'run_start': self.run_start}) + '\n')

    def v2_runner_on_ok(self, result):
        self._done(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._done(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._done(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._done(result, 'unreachable')
