# -*- coding: utf-8 -*-
"""Kill trials for runner pools: gh_runner_slot, over two pools in one call against the GitHub stand-in, is
SIGKILLed at a seeded random moment of a pass that starts their runners; the next pass must reach the
declared state with nothing left over: every registration at the stand-in held by a slot, no runner
container outside a slot, no JIT config file without a live runner, no container started twice."""

from __future__ import absolute_import, division, print_function

import os
import random
import signal
import time
import uuid

import pytest

from poolrig import PoolRig, run
from procs import module_process  # pylint: disable=wrong-import-order
from sweep import register  # pylint: disable=wrong-import-order

TRIALS = int(os.environ.get('FAULT_TRIALS', '3'))
SEED = int(os.environ.get('FAULT_SEED', str(int(time.time()))))
TOKEN = register('ghp_sentinel_faults_%s' % uuid.uuid4().hex)


@pytest.fixture
def rig(engine, tmp_path):
    made = PoolRig(tmp_path, TOKEN)
    yield made
    made.close(engine)


@pytest.mark.parametrize('number', range(TRIALS))
def test_killed_pool_pass_then_converged(engine, rig, tmp_path, number):
    delay = random.Random(SEED * 1000 + 500 + number).uniform(0.0, 2.5)
    context = 'seed %d pool trial %d: killed after %.2f s' % (SEED, number, delay)
    rig.since = int(time.time()) - 1
    victim = module_process('gh_runner_slot', rig.args, tmp_path, 'victim')
    time.sleep(delay)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)

    after = run(rig.args, tmp_path, 'after')
    rig.check_converged(engine, after, context)
