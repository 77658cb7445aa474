# -*- coding: utf-8 -*-
"""Helpers of the integration tests: listings of what the host holds, to prove what changed."""

from __future__ import absolute_import, division, print_function

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from sweep import register

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = os.environ.get('DROVER_BUSYBOX_IMAGE', 'drover.local/busybox:1')
REGISTRY = '127.0.0.1:%s' % os.environ.get('DROVER_REGISTRY_PORT', '5000')
REGISTRY_USER = os.environ.get('DROVER_REGISTRY_USER', 'drover')
REGISTRY_PASSWORD = register(os.environ.get('DROVER_REGISTRY_PASSWORD', 'drover-test-pw'))


def task_containers(engine, cluster):
    """(name, status, labels) of every container of the cluster, sorted by name."""
    out = []
    for c in engine.containers.list(all=True, filters={'label': 'drover.cluster=%s' % cluster}):
        out.append((c.name, c.status, c.labels))
    return sorted(out, key=lambda t: t[0])


# What the runner pools make (their session runs beside the tasks' one: hack/integration.sh): a task's pass never
# makes or removes one of these, so a tasks' test that lists "every drover container" leaves them out.
POOL_ROLES = ('runner', 'mirror', 'cache', 'slot-holder', 'pools-network', 'record', 'image-user', 'externals-copy')


def all_drover_containers(engine, scope=None):
    """(id, status) of every drover container but the runner pools', or of those labelled with `scope` (a
    `label=value`): a test proves what it changed in its own cluster or pool, whatever else the host runs
    meanwhile."""
    if scope:
        listing = engine.containers.list(all=True, filters={'label': scope})
    else:
        listing = [c for c in engine.containers.list(all=True, filters={'label': 'drover.role'})
                   if 'drover.pool' not in c.labels and c.labels.get('drover.role') not in POOL_ROLES]
    return sorted((c.id, c.status) for c in listing)


def store_rows(path):
    """Every row of every table of the store, or None when there is no store file."""
    if not os.path.exists(path):
        return None
    db = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return dict((t, db.execute('SELECT * FROM %s ORDER BY 1, 2' % t).fetchall()) for t in tables)
    finally:
        db.close()


def host_snapshot(engine, path, scope=None):
    return {'containers': all_drover_containers(engine, scope), 'store': store_rows(path)}


def wait_for(predicate, timeout=20, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError('condition not met within %s s' % timeout)


def container(name, command=None, **kw):
    spec = {'name': name, 'image': IMAGE, 'command': command or ['sleep', '3600']}
    spec.update(kw)
    return spec


def warnings_of(result):
    """The warning texts of a module result (ansible-core 2.19 returns them as structured summaries)."""
    out = []
    for w in result.get('warnings') or []:
        out.append(w.get('event', {}).get('msg', '') if isinstance(w, dict) else w)
    return out


def statuses(engine, cluster):
    """Container name -> status of every container of the cluster, in name order."""
    return dict((name, status) for name, status, labels in task_containers(engine, cluster))


def netns_list():
    """The host's named network namespaces."""
    import subprocess
    out = subprocess.run(['ip', '-o', 'netns', 'list'], capture_output=True, text=True, check=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


def host_links():
    """(name, mac) of every link in the host's namespace."""
    import json
    import subprocess
    out = subprocess.run(['ip', '-j', 'link', 'show'], capture_output=True, text=True, check=True).stdout
    return sorted((l['ifname'], l.get('address')) for l in json.loads(out))


def net_snapshot(engine, path, scope=None):
    """Everything a task network can leave behind: namespaces, host links, drover containers, store rows."""
    snap = host_snapshot(engine, path, scope)
    # (the task namespaces: a simulated host's, drvfleet-*, is the suite's own)
    snap['netns'] = [n for n in netns_list() if n.startswith('drover-')]
    # Docker's own veth* (bridge containers of other tasks) and br-* (its networks: the runner pools') come and go;
    # ours are dv* and the stand-in ENIs.
    snap['links'] = [l for l in host_links() if not l[0].startswith(('veth', 'br-'))]
    return snap


def dockerd_pids():
    out = subprocess.run(['pgrep', '-x', 'dockerd'], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def restart_engine():
    """Stop the Docker engine (SIGTERM: it stops the containers on its way down) and start it again with
    hack/engine.sh; returns when it answers."""
    for pid in dockerd_pids():
        os.kill(pid, 15)
    wait_for(lambda: not dockerd_pids(), timeout=60)
    subprocess.run([os.path.join(ROOT, 'hack', 'engine.sh')], check=True, capture_output=True, timeout=120)


def ansible_env(tmp_path, extra=None):
    """The environment of an ansible-playbook run of a test: the collection from the work tree, this
    interpreter, homes and temporary files under tmp_path, no colour, never the machine's own fleet-wide
    holds or callback settings."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(('DROVER_EVENTS_', 'ANSIBLE_')))
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, 'collection', 'dev'),
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_HOME=str(tmp_path / 'ansible-home'),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'),
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_FORCE_COLOR='0',
        ANSIBLE_LOCALHOST_WARNING='false',
        DROVER_EVENTS_FLEET_STATE_PATH=str(tmp_path / 'controller' / 'fleet-holds.json'),
    )
    env.update(extra or {})
    return env


def four_steps(converge, **args):
    """check -> apply -> again -> check again; returns the four results."""
    results = [converge(check=check, **args) for check in (True, False, False, True)]
    for r in results:
        assert not r.failed, r.get('msg')
    assert [r['changed'] for r in results] == [True, True, False, False], [r['changed'] for r in results]
    return results


def module_process(args, module='ecs_task'):
    """The module run in a process of its own (one a test can kill), with `args`; its result on stdout."""
    code = ('import json, sys; sys.path.insert(0, %r); from conftest import run_module; '
            'print(json.dumps(run_module(%r, json.loads(sys.argv[1]))))' % (os.path.join(ROOT, 'tests'), module))
    return subprocess.Popen([sys.executable, '-c', code, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT, universal_newlines=True)


def kill_when(proc, ready, timeout=60):
    """Kill the module process `proc` (SIGKILL) once `ready()` gives a true value, half a second later (the module
    is then waiting); returns that value. The process is reaped whatever happens."""
    try:
        value = wait_for(ready, timeout=timeout)
        time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    return value


def sim_host(tmp_path, one, cluster, **more):
    """The inventory variables of a simulated host (tests/fixtures/fleet_engines.py's engine `one`), reached
    locally: its engine, a store of its own under tmp_path/hosts, its tasks' cluster; `more` on top."""
    return dict({'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'drover_docker_host': one.host,
                 'drover_store_path': str(tmp_path / 'hosts' / one.name / 'state' / 'store.db'),
                 'drover_tasks_cluster': cluster}, **more)
