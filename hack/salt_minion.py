# -*- coding: utf-8 -*-
"""A masterless Salt minion of its own under one directory, for the demo, the Salt bench and the Salt suite:
`conf/minion` (file_client local, its own root_dir and log file, file_roots on salt/examples, pillar_roots on
`pillar/`, the drover.fleet collection of this checkout), `pillar/top.sls` that gives every minion the pillar
`drover`, and `salt-call --local -c <base>/conf` to run it.

    python hack/salt_minion.py <base> [minion id]      # writes the config; prints the -c directory
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(base, minion_id='drover', root_dir=None, file_roots=()):
    """Write the minion's config under `base` (made 0700); returns the config directory (salt-call's -c).
    Salt puts its sockets under root_dir, whose path must stay short (a socket path fits in 107 bytes)."""
    conf, pillar = os.path.join(base, 'conf'), os.path.join(base, 'pillar')
    root_dir = root_dir or os.path.join(base, 'root')
    for path in (base, conf, pillar, root_dir):
        os.makedirs(path, mode=0o700, exist_ok=True)
    config = {
        'id': minion_id, 'file_client': 'local', 'root_dir': root_dir,
        'log_file': os.path.join(root_dir, 'minion.log'),
        'file_roots': {'base': [os.path.join(ROOT, 'salt', 'examples')] + list(file_roots)},
        'pillar_roots': {'base': [pillar]},
        'drover.collections_path': os.path.join(ROOT, 'collection', 'dev'),
    }
    with open(os.path.join(conf, 'minion'), 'w') as handle:
        json.dump(config, handle, indent=1)
    with open(os.path.join(pillar, 'top.sls'), 'w') as handle:
        handle.write("base:\n  '*':\n    - drover\n")
    return conf


def write_host(base, host=None, policy=None):
    """Set the minion's own drover.host and drover.policy (its config file, 0600)."""
    path = os.path.join(base, 'conf', 'minion')
    with open(path) as handle:
        config = json.load(handle)
    config['drover.host'], config['drover.policy'] = host or {}, policy or {}
    with open(os.open(path + '.new', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as handle:
        json.dump(config, handle, indent=1)
    os.replace(path + '.new', path)


def write_pillar(base, drover):
    """Set the pillar key `drover` of the minion under `base` (JSON is YAML); its `host` and `policy` parts, the
    host's own, go into the minion's configuration as drover.host and drover.policy, never its pillar
    (salt/examples/drover/init.sls). Returns the pillar file's path."""
    drover = dict(drover)
    write_host(base, drover.pop('host', None), drover.pop('policy', None))
    path = os.path.join(base, 'pillar', 'drover.sls')
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as handle:
        json.dump({'drover': drover}, handle)
    return path


if __name__ == '__main__':
    print(write(sys.argv[1], *sys.argv[2:3]))
