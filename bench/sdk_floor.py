# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The floor: the Docker SDK creating and starting N containers, one after the other, in one process.

The bench times this whole process from the outside (interpreter start and `import docker` included,
as ecs_task pays them too). It makes the calls ecs_task's adapter makes for a new single-container
task, and no others: create (with an empty host config) and start; no image check, no store, no
listing. On stdout, one JSON line with the time the process spent in each part, for the report.

    python bench/sdk_floor.py --count 20 --image drover.local/busybox:1 --prefix bench-sdk- \
        --label drover-bench=sdk [--docker-host unix:///path]
"""

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import docker  # noqa: E402

T_IMPORTED = time.perf_counter()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, default=20)
    parser.add_argument('--image', default='drover.local/busybox:1')
    parser.add_argument('--prefix', default='bench-sdk-')
    parser.add_argument('--label', default='drover-bench=sdk', help='KEY=VALUE put on every container')
    parser.add_argument('--docker-host', default=None, help='engine address; else DOCKER_HOST or the default socket')
    args = parser.parse_args(argv)
    key, dummy, value = args.label.partition('=')

    if args.docker_host:
        api = docker.APIClient(base_url=args.docker_host)
    else:
        api = docker.from_env().api
    t_connected = time.perf_counter()
    for i in range(args.count):
        created = api.create_container(
            image=args.image, name='%s%02d' % (args.prefix, i), command=['sleep', '3600'],
            labels={key: value}, host_config=api.create_host_config(), detach=True)
        api.start(created['Id'])
    t_done = time.perf_counter()
    api.close()
    json.dump({
        'import_s': round(T_IMPORTED - T0, 4),
        'connect_s': round(t_connected - T_IMPORTED, 4),
        'create_start_s': round(t_done - t_connected, 4),
        'per_container_s': round((t_done - t_connected) / max(args.count, 1), 4),
    }, sys.stdout)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main(sys.argv[1:])
