# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: slot engines (gh_runner_slot profile.docker rootless) - what a slot's own engine costs.

On the real engine, as root, with what the host role's drover_host_slot_engines installs. Each round, for a slot
of its own (a pool name of the round's):
- cold: SlotEngine.ensure() on a host where the slot has nothing yet (its user and subordinate IDs, directory,
  holder, cgroup, and dockerd-rootless.sh until its socket answers) - what the first runner of a slot waits for;
- warm: ensure() again with the engine running (what each later start of a runner in the slot adds);
- empty: emptying the slot engine after a job (it holds a stopped container, a volume and a network);
and side by side the anchor: a busybox container created, started and removed on the host's engine (about what
starting a runner costs without an engine of its own). Then the slot is removed with its data and user.
Reported: medians of `--rounds` in seconds, and the ratios to the anchor. Nothing is asserted.

    python bench/slot_engine.py [--rounds 5]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'collection', 'dev'))

from ansible_collections.drover.fleet.plugins.module_utils._docker import Engine  # noqa: E402
from ansible_collections.drover.fleet.plugins.module_utils.pools.slot_engine import SlotEngine  # noqa: E402

IMAGE = 'drover.local/busybox:1'


def timed(call):
    began = time.monotonic()
    call()
    return time.monotonic() - began


def anchor(engine):
    def once():
        cid = engine.create('bench-anchor-%s' % uuid.uuid4().hex[:8], IMAGE, {'drover.bench': 'slot-engine'},
                            command=['true'])
        engine.start(cid)
        engine.remove(cid)
    return timed(once)


def dirty(slot):
    """What a job leaves in its slot engine: a stopped container, a volume, a network."""
    import docker
    client = slot.client()
    try:
        client.load_image(docker.from_env().api.get_image(IMAGE))
        client.create_volume('left')
        client.create_network('leftnet')
        client.create_container(IMAGE, command=['true'], name='left')
    finally:
        client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    engine = Engine(None, timeout=60)
    rows = {'cold': [], 'warm': [], 'empty': [], 'anchor': []}
    for dummy in range(args.rounds):
        pool = 'bench%s' % uuid.uuid4().hex[:8]
        slot = SlotEngine(engine, 'bench', pool, 0, IMAGE, {'drover.pool': pool, 'drover.slot': '1'}, memory=1024)
        try:
            rows['anchor'].append(anchor(engine))
            rows['cold'].append(timed(slot.ensure))
            rows['warm'].append(timed(slot.ensure))
            dirty(slot)
            rows['empty'].append(timed(slot.empty))
        finally:
            slot.remove(keep_data=False)
    base = statistics.median(rows['anchor'])
    print('slot engine, %d rounds (medians, seconds; ratio to the anchor: a container created, started and '
          'removed on the host engine, %.3f s)' % (args.rounds, base))
    for name in ('cold', 'warm', 'empty'):
        value = statistics.median(rows[name])
        print('  %-6s %.3f s  %.1fx' % (name, value, value / base))


if __name__ == '__main__':
    main()
