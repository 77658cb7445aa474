# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench: noop_floor - where the ecs_task no-op stands between a ping run and the least a Docker module costs.

Three playbooks of the same shape (one task on localhost), run side by side, the order rotating each round:

- ping:     ansible.builtin.ping (the fixed cost of any playbook run);
- floor:    a module of a few lines that builds its AnsibleModule, imports the Docker SDK and makes the one
            labelled listing a no-op pass makes: what any module that asks the engine through the SDK costs;
- ecs_noop: drover.fleet.ecs_task over the bench's N plain tasks (bench.py's `ecs_converge.yml`), nothing to do.

Reported: the median of each and the ratios ecs_noop/ping, floor/ping and ecs_noop/floor, with what the
no-op costs above the floor. Nothing is asserted. The N tasks are converged once first and purged at the end.

With `--against DIR` (a folder that holds ansible_collections/drover/fleet: another version of the collection,
e.g. a `git worktree` of an earlier commit), the same no-op of that version runs in the same rotation
(`ecs_against`), and the ratio ecs_noop/ecs_against says what a change cost.

    python bench/noop_floor.py [--rounds 7] [--against DIR]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402

FLOOR_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={'label': {'type': 'str', 'required': True}}, supports_check_mode=True)
    import docker
    api = docker.APIClient(base_url='unix:///var/run/docker.sock', version='auto')
    listed = api.containers(all=True, filters={'label': module.params['label']})
    api.close()
    module.exit_json(changed=False, listed=len(listed))


if __name__ == '__main__':
    main()
'''


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--against', metavar='DIR', help='another version of the collection to run beside')
    args = parser.parse_args(argv)
    os.makedirs(bench.LOGS, exist_ok=True)
    bench.write_playbooks()
    library = os.path.join(bench.WORK, 'playbooks', 'library')
    os.makedirs(library, exist_ok=True)
    with open(os.path.join(library, 'drover_floor.py'), 'w') as f:
        f.write(FLOOR_MODULE)
    bench._write({'floor.yml': bench._play('bench - the least a Docker SDK module costs', [
        {'name': 'List the cluster', 'drover_floor': {'label': 'drover.cluster=%s' % bench.CLUSTER}}])})
    runner = bench.Runner()
    books = (('ping', 'ping.yml'), ('floor', 'floor.yml'), ('ecs_noop', 'ecs_converge.yml'))
    paths = {}
    if args.against:
        books += (('ecs_against', 'ecs_converge.yml'),)
        paths['ecs_against'] = os.path.abspath(args.against)
    samples = dict((name, []) for name, dummy in books)
    own = bench.COLLECTIONS_PATH
    # the other version's ANSIBLE_HOME: each action plugin keeps one payload a module (docs/scale.md), so two
    # versions sharing one home would each build theirs on every run
    home, own_home = os.path.join(bench.WORK, 'ansible-home-against'), os.environ.get('ANSIBLE_HOME')
    os.makedirs(home, mode=0o700, exist_ok=True)

    def restore_home():
        if own_home is None:
            os.environ.pop('ANSIBLE_HOME', None)
        else:
            os.environ['ANSIBLE_HOME'] = own_home

    runner.playbook('cold', 'project', 'ecs_converge.yml')
    try:
        for n in range(args.rounds + 1):
            order = books[n % len(books):] + books[:n % len(books)]
            for name, book in order:
                bench.COLLECTIONS_PATH = paths.get(name, own)
                if name in paths:           # its kept payloads apart: one version's would replace the other's
                    os.environ['ANSIBLE_HOME'] = home
                try:
                    seconds = runner.playbook('%s-%d' % (name, n), 'project', book, changed=False)
                finally:
                    bench.COLLECTIONS_PATH = own
                    restore_home()
                if n:                       # round 0 warms the caches, left out
                    samples[name].append(seconds)
    finally:
        runner.playbook('purge', 'project', 'ecs_purge.yml')
    med = dict((k, statistics.median(v)) for k, v in samples.items())
    print('medians of %d rounds (s): %s' % (args.rounds, ', '.join('%s %.3f' % (k, med[k]) for k, dummy in books)))
    if args.against:
        ratio = med['ecs_noop'] / med['ecs_against']
        print('ecs_noop/ecs_against %.3f (%s against %s)' % (ratio, own, args.against))
    ratios = (med['ecs_noop'] / med['ping'], med['floor'] / med['ping'], med['ecs_noop'] / med['floor'],
              med['ecs_noop'] - med['floor'], med['floor'] - med['ping'])
    print('ecs_noop/ping %.2f, floor/ping %.2f, ecs_noop/floor %.2f; above the floor: %.3f s, '
          'the floor above ping: %.3f s' % ratios)
    return 0


if __name__ == '__main__':
    sys.exit(main())
