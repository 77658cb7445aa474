# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A runner slot's own Docker engine (profile.docker: rootless), never the host's.

Each slot of such a pool has an unprivileged host user of its own (drv<10 hex>, a system user with a subordinate
ID range of 65,536 IDs), a directory under SLOTS_ROOT owned by it (its engine's data root, its runtime directory
with the socket, and the jobs' work folder), a network holder on the host's engine (a container that holds the
slot's network namespace: the runner joins it, and the slot engine's published ports are there, so a step reaches
a service container at localhost:<port>), and Debian's dockerd-rootless.sh run as that user in the holder's
network namespace. A container escape in a job lands as that user. The engine outlives the slot's runners (its
images and build cache stay, a layer cache of the slot's own); after each runner its containers, volumes and
networks go.

Owns: the slot user, its directory, the holder, starting and stopping the slot engine, emptying it between jobs,
and the binds a runner gets. Needs, on the host: rootlesskit, slirp4netns, newuidmap (uidmap), and /dev/net/tun
usable by any user (the host role prepares them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time

from ansible_collections.drover.fleet.plugins.module_utils import _files
from ansible_collections.drover.fleet.plugins.module_utils._cgroup import CgroupError, Cgroups

SLOTS_ROOT = '/var/lib/drover-slots'
ROOTLESS_SCRIPT = '/usr/share/docker.io/contrib/dockerd-rootless.sh'
NEEDS = ('rootlesskit', 'slirp4netns', 'newuidmap', 'newgidmap', 'nsenter', 'setpriv', 'iptables')
SUBIDS = 65536
SUBID_FLOOR = 200000
START_TIMEOUT = 60
HOLDER_ROLE = 'slot-holder'
SOCKET_IN_RUNNER = '/var/run/docker.sock'
LINK_LOCAL = '169.254.0.0/16'


class SlotEngineError(Exception):
    """A slot's engine cannot be had."""


def host_ready():
    """What the host lacks for slot engines: [] or the words that say it."""
    missing = [n for n in NEEDS if shutil.which(n) is None]
    if not os.path.exists(ROOTLESS_SCRIPT):
        missing.append(ROOTLESS_SCRIPT)
    out = []
    if missing:
        out.append('missing %s (Debian: rootlesskit, slirp4netns, uidmap, docker.io)' % ', '.join(missing))
    try:
        mode = os.stat('/dev/net/tun').st_mode
        if mode & 0o006 != 0o006:
            out.append('/dev/net/tun is mode %04o: slot users cannot open it (0666, as Debian makes it)'
                       % stat.S_IMODE(mode))
    except OSError:
        out.append('/dev/net/tun is missing')
    return out


def slot_id(scope, pool, idx):
    """A slot's short ID: its user's name and its directory's."""
    return hashlib.sha256(('%s/%s/%d' % (scope or '', pool, idx + 1)).encode()).hexdigest()[:10]


class SlotEngine:
    """One slot's engine: `engine` is the host's (for the holder), `labels` those of the slot's holder."""

    def __init__(self, engine, scope, pool, idx, holder_image, labels, root=SLOTS_ROOT, cpus=None, memory=None,
                 mirrors=None):
        self.engine = engine
        # The registry mirrors its engine pulls through (gh_runner_slot's mirror): a list, or None to keep what its
        # configuration says (a mirror that is down this pass: the engine falls back to the registry itself).
        self.mirrors = mirrors
        # The whole slot (runner, engine, the jobs' containers) in one parent cgroup with the profile's limits.
        self.cgroup_parent = '/drover/slot-%s' % slot_id(scope, pool, idx)
        self.cpus, self.memory = cpus, memory
        self._cgroups = None
        self.id = slot_id(scope, pool, idx)
        self.user = 'drv%s' % self.id
        self.dir = os.path.join(root, self.id)
        self.work = os.path.join(self.dir, 'work')
        self.run_dir = os.path.join(self.dir, 'run')
        self.config_file = os.path.join(self.dir, 'daemon.json')
        self.socket = os.path.join(self.run_dir, 'docker.sock')
        self.holder_name = 'drover-slot-%s' % self.id
        self.holder_image = holder_image
        self.labels = dict(labels, **{'drover.role': HOLDER_ROLE})
        self.root = root
        self.ids = None                 # (uid, gid) of the slot's user, once ensure() made it

    # --- the slot's user and directory ------------------------------------------------------------

    def _ids(self):
        import pwd
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            return None
        return entry.pw_uid, entry.pw_gid

    def ensure_user(self):
        """The slot's user, with a subordinate ID range of its own; its (uid, gid)."""
        if self._ids() is None:
            _run(['useradd', '--system', '--no-create-home', '--home-dir', self.dir, '--shell', '/usr/sbin/nologin',
                  self.user])
        for path, flag in (('/etc/subuid', '--add-subuids'), ('/etc/subgid', '--add-subgids')):
            if not _has_range(path, self.user):
                start = _next_range(path)
                _run(['usermod', flag, '%d-%d' % (start, start + SUBIDS - 1), self.user])
        return self._ids()

    def ensure_dirs(self, uid, gid):
        if not os.path.isdir(self.root):
            os.makedirs(self.root, 0o711)
        os.chmod(self.root, 0o711)
        # Only the slot's user (its runner and its engine) enters any of it: another slot's engine, which resolves a
        # bind mount's path as its own user, cannot mount this slot's workspace or data.
        for path in (self.dir, os.path.join(self.dir, 'home'), self.run_dir, os.path.join(self.dir, 'data'),
                     self.work):
            if not os.path.isdir(path) or os.path.islink(path):
                if os.path.lexists(path):
                    raise SlotEngineError('%s is not a directory' % path)
                os.mkdir(path, 0o700)
            os.chown(path, uid, gid)
            os.chmod(path, 0o700)

    # --- the holder -----------------------------------------------------------------------------

    def holder(self):
        """The holder's engine view (id, state, pid), or None."""
        found = [c for c in self.engine.list_role(HOLDER_ROLE) if c['name'] == self.holder_name]
        if not found:
            return None
        state = self.engine.inspect(found[0]['id']) or {}
        return {'id': found[0]['id'], 'state': found[0]['state'], 'pid': state.get('pid')}

    def ensure_holder(self):
        """The holder running, with the slot's network rules in its namespace."""
        held = self.holder()
        if held is None or held['state'] != 'running' or not held['pid']:
            if held is not None:
                self.engine.remove(held['id'])
            cid = self.engine.create(self.holder_name, self.holder_image, self.labels, command=['sleep', '2147483647'])
            self.engine.start(cid)
            held = self.holder()
            if held is None or not held['pid']:
                raise SlotEngineError('the holder %s did not start' % self.holder_name)
        self._block_link_local(held['pid'])
        return held

    @staticmethod
    def _block_link_local(pid):
        """Nothing in the slot (its runner, its engine's containers through slirp4netns, which connects from this
        namespace) reaches a link-local address: an instance metadata service, the credentials endpoint."""
        rule = ['OUTPUT', '-d', LINK_LOCAL, '-j', 'REJECT']
        base = ['nsenter', '--net=/proc/%d/ns/net' % pid, '--', 'iptables', '-w']
        if subprocess.run(base + ['-C'] + rule, capture_output=True, timeout=30, check=False).returncode != 0:
            try:
                _run(base + ['-I'] + rule)
            except (OSError, subprocess.SubprocessError) as exc:
                raise SlotEngineError('the slot\'s network cannot block %s: %s' % (LINK_LOCAL, exc))

    # --- the engine -----------------------------------------------------------------------------

    def _pidfile(self):
        return os.path.join(self.dir, 'engine.pid')

    def _pid(self):
        try:
            with open(self._pidfile()) as handle:
                pid = int(handle.read().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def client(self, timeout=30):
        import docker
        return docker.APIClient(base_url='unix://%s' % self.socket, timeout=timeout, version='auto')

    def answers(self):
        if not os.path.exists(self.socket):
            return False
        try:
            client = self.client(timeout=5)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:  # pylint: disable=broad-except
            return False

    def ensure(self):
        """The slot's engine answering on its socket (started when it is not), its holder running. Returns
        whether it was started now. Raises SlotEngineError."""
        problems = host_ready()
        if problems:
            raise SlotEngineError('this host cannot run slot engines: %s' % '; '.join(problems))
        try:
            uid, gid = self.ensure_user()
            self.ensure_dirs(uid, gid)
            self.ids = (uid, gid)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SlotEngineError('slot user %s: %s' % (self.user, exc))
        holder = self.ensure_holder()
        procs = self._ensure_cgroup()
        try:
            reload = self._write_config()
        except OSError as exc:
            raise SlotEngineError('slot %s: its engine\'s configuration: %s' % (self.id, exc))
        if self._pid() is not None and self.answers() and (not reload or self._reload()):
            return False
        self.stop_engine()
        env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': os.path.join(self.dir, 'home'),
               'XDG_RUNTIME_DIR': self.run_dir, 'USER': self.user}
        argv = ['nsenter', '--net=/proc/%d/ns/net' % holder['pid'], '--',
                'setpriv', '--reuid=%d' % uid, '--regid=%d' % gid, '--init-groups', '--inh-caps=-all',
                ROOTLESS_SCRIPT, '--data-root', os.path.join(self.dir, 'data'), '--host', 'unix://%s' % self.socket,
                '--exec-root', os.path.join(self.run_dir, 'exec'), '--config-file', self.config_file]
        if procs:
            # The engine joins the slot's cgroup before it starts anything: its containers are in it too.
            argv = ['sh', '-c', 'for f in $DROVER_CGROUP_PROCS; do echo $$ > "$f" || exit 1; done; exec "$@"',
                    'sh'] + argv
            env['DROVER_CGROUP_PROCS'] = ' '.join(procs)
        log = open(os.path.join(self.dir, 'engine.log'), 'ab')
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=self.dir,
                                    start_new_session=True, close_fds=True)
        finally:
            log.close()
        with open(self._pidfile(), 'w') as handle:
            handle.write('%d\n' % proc.pid)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SlotEngineError('the engine of slot %s exited (%s): see %s' % (
                    self.id, proc.returncode, os.path.join(self.dir, 'engine.log')))
            if self.answers():
                return True
            time.sleep(0.2)
        raise SlotEngineError('the engine of slot %s did not answer within %d s' % (self.id, START_TIMEOUT))

    def _write_config(self):
        """The engine's configuration file (root's, 0644: the slot's user reads it) as `mirrors` says; whether it
        changed."""
        try:
            with open(self.config_file) as handle:
                had = handle.read()
        except OSError:
            had = None
        if self.mirrors is None and had is not None:
            return False
        text = json.dumps({'registry-mirrors': list(self.mirrors)} if self.mirrors else {}, sort_keys=True) + '\n'
        if text == had:
            return False
        _files.write_whole(self.config_file, text, 0o644)
        return True

    def _reload(self):
        """A running engine reads its configuration file again (registry-mirrors is one it reloads on SIGHUP);
        False when it cannot be told (then it is started again)."""
        try:
            with open(os.path.join(self.run_dir, 'docker.pid')) as handle:
                pid = int(handle.read().strip())
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                if self.config_file.encode() not in handle.read().split(b'\0'):
                    return False            # an engine started before it had this file
            os.kill(pid, signal.SIGHUP)
        except (OSError, ValueError):
            return False
        return True

    def cgroups(self):
        """The host's cgroups when the engine's driver is cgroupfs (which takes a cgroup parent path), else None."""
        if self._cgroups is None:
            driver, version = self.engine.cgroups()
            self._cgroups = Cgroups(version) if driver == 'cgroupfs' else False
        return self._cgroups or None

    def _ensure_cgroup(self):
        """The slot's parent cgroup with the profile's limits; the cgroup.procs files the engine joins ([] when the
        engine's cgroup driver is not cgroupfs)."""
        groups = self.cgroups()
        if groups is None:
            return []
        try:
            groups.ensure(self.cgroup_parent, int(self.cpus * 1024) if self.cpus else None, self.memory)
        except CgroupError as exc:
            raise SlotEngineError(str(exc))
        rel = self.cgroup_parent.strip('/')
        if groups.version == 2:
            return [os.path.join(groups.root, rel, 'cgroup.procs')]
        return [os.path.join(groups.root, c, rel, 'cgroup.procs') for c in ('memory', 'cpu')]

    def oom_kills(self):
        """How many processes the kernel killed for memory in the slot's cgroup so far (None: not known)."""
        groups = self.cgroups()
        if groups is None:
            return None
        rel = self.cgroup_parent.strip('/')
        name = 'memory.events' if groups.version == 2 else 'memory.oom_control'
        path = os.path.join(groups.root, rel, name) if groups.version == 2 else \
            os.path.join(groups.root, 'memory', rel, name)
        try:
            with open(path) as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == 'oom_kill' and parts[1].isdigit():
                        return int(parts[1])
        except OSError:
            return None
        return None

    def stop_engine(self):
        pid = self._pid()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if _alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
        try:
            os.unlink(self._pidfile())
        except OSError:
            pass

    def empty(self):
        """After a job: the slot engine's containers, volumes and networks go; its images and build cache stay.
        [] or the warnings."""
        if not self.answers():
            return []
        warnings = []
        client = self.client()
        try:
            for row in client.containers(all=True):
                try:
                    client.remove_container(row['Id'], force=True, v=True)
                except Exception as exc:  # pylint: disable=broad-except
                    warnings.append('slot %s: container %s stays: %s' % (self.id, row['Id'][:12], exc))
            client.prune_volumes(filters={'all': 'true'} if _api_at_least(client, '1.42') else None)
            client.prune_networks()
        except Exception as exc:  # pylint: disable=broad-except
            warnings.append('slot %s: its engine could not be emptied: %s' % (self.id, exc))
        finally:
            client.close()
        return warnings

    def remove(self, keep_data=True):
        """The slot's engine stopped and its holder removed; its directory too unless `keep_data`."""
        self.stop_engine()
        held = self.holder()
        if held is not None:
            self.engine.remove(held['id'])
        groups = self.cgroups()
        if groups is not None:
            try:
                groups.remove(self.cgroup_parent)
            except CgroupError as exc:
                raise OSError(str(exc))
        if keep_data:
            return
        if os.path.isdir(self.dir):
            # Files the slot's containers made belong to its subordinate IDs: root removes them all.
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._ids() is not None:
            for path, flag in (('/etc/subuid', '--del-subuids'), ('/etc/subgid', '--del-subgids')):
                for name, start, count in _ranges(path):
                    if name == self.user:
                        _run(['usermod', flag, '%d-%d' % (start, start + count - 1), self.user])
            _run(['userdel', self.user])

    def binds(self):
        """What a runner of the slot gets: the slot engine's socket where Docker's clients look for it, and the
        work folder at the same path as the engine sees it (a job's `docker run -v "$PWD:/w"` names a host path)."""
        return ['%s:%s' % (self.socket, SOCKET_IN_RUNNER), '%s:%s' % (self.work, self.work)]


def _api_at_least(client, version):
    try:
        have = tuple(int(p) for p in client.api_version.split('.'))
    except (AttributeError, ValueError):
        return False
    return have >= tuple(int(p) for p in version.split('.'))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().split(')')[-1].split()[0] != 'Z'
    except OSError:
        return False


def _run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise OSError('%s failed: %s' % (' '.join(argv[:2]), (done.stderr.strip().splitlines() or ['exit %d' % done.returncode])[-1]))


def _ranges(path):
    out = []
    try:
        with open(path) as handle:
            for line in handle:
                parts = line.strip().split(':')
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    out.append((parts[0], int(parts[1]), int(parts[2])))
    except OSError:
        pass
    return out


def _has_range(path, user):
    return any(name == user and count >= SUBIDS for name, dummy, count in _ranges(path))


def _next_range(path):
    """The start of a free range of SUBIDS IDs: above every range given out."""
    return max([SUBID_FLOOR] + [start + count for dummy, start, count in _ranges(path)])
