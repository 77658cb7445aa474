# -*- coding: utf-8 -*-
# Copyright: drover.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A runner slot's own Docker engine (profile.docker: rootless), never the host's.

Each slot of such a pool has an unprivileged host user of its own (drv<10 hex>, a system user with a subordinate
ID range of 65,536 IDs), a directory under SLOTS_ROOT (root's; below it the engine's data root, its runtime
directory with the socket, and the jobs' work folder, the slot user's), a network holder on the host's engine (a
container that holds the slot's network namespace, on the pools' own bridge network, where no other container of
the host is: the runner joins it, and the slot engine's published ports are there, so a step reaches a service
container at localhost:<port>), and Debian's dockerd-rootless.sh run as that user in the holder's
network namespace. A container escape in a job lands as that user. The engine outlives the slot's runners; after
each runner, nothing a job made stays for the next: its containers, volumes, networks, build cache and images go
(but images pulled from Docker Hub, kept under a name of root's alone, so that the next pull fetches nothing), and
so does everything in the slot's work folder and home.

A job commands its slot's engine, so whatever the slot's user can write, a job can write (a job container binds any
path the engine can reach). Root's own files of a slot therefore live where that user cannot write: the slot's top
directory is root's (0711), and holds the engine's configuration, log and the record of the process root started;
only the folders below it (home, run, data, work) are the slot user's. The engine is known by what root started (its
pid with its start time), never by a pid read from the slot user's files, and its socket is used only once proven
to be its dockerd's (the peer's credentials), through a link of root's that a job cannot replace.

Owns: the slot user, its directory, the pools' network, the holder, starting and stopping the slot engine (and
every process of the slot user when it stops), proving its socket, emptying it between jobs, and the binds a runner
gets. Needs, on the host: rootlesskit, slirp4netns, newuidmap (uidmap), and /dev/net/tun usable by any user (the
host role prepares them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import time

from ansible_collections.drover.fleet.plugins.module_utils.host import files as _files
from ansible_collections.drover.fleet.plugins.module_utils.host.cgroup import CgroupError, Cgroups
from ansible_collections.drover.fleet.plugins.module_utils._docker import EngineError
from ansible_collections.drover.fleet.plugins.module_utils.host.opening import STORE_LABEL
from ansible_collections.drover.fleet.plugins.module_utils._spec_base import SpecError

SLOTS_ROOT = '/var/lib/drover-slots'
ROOTLESS_SCRIPT = '/usr/share/docker.io/contrib/dockerd-rootless.sh'
NEEDS = ('rootlesskit', 'slirp4netns', 'newuidmap', 'newgidmap', 'nsenter', 'setpriv', 'iptables', 'mount',
         'pivot_root')
SUBIDS = 65536
# Where slot users' subordinate ID ranges start, by default: above every ID an account of the host may have. Debian
# gives accounts IDs below 60000 (and 65534); systemd's dynamic users and containers stay below 0x70000000; SSSD maps
# directory users from 200000 to 2000200000 by default, FreeIPA from a base of up to about 2,000,000,000 (200,000 a
# range). A job container's user N is the host's ID <range start> + N - 1: it must never be an account's.
SUBID_FLOOR = 2 ** 31
SUBID_CEILING = 2 ** 32 - 2             # the highest ID a user namespace maps
START_TIMEOUT = 60
HOLDER_ROLE = 'slot-holder'
NETWORK_ROLE = 'pools-network'
SOCKET_IN_RUNNER = '/var/run/docker.sock'
LINK_LOCAL = '169.254.0.0/16'
STOP_WAIT = 20                          # seconds an engine has to stop on SIGTERM before its user's processes are killed
SWEEP_WAIT = 5                          # seconds the slot user's processes have to go once killed
ROOT_FILE_MAX = 64 * 1024               # the most root reads of a file of its own in a slot's directory
KEPT_REPOSITORY = 'drover-kept'         # the one name an image pulled from Docker Hub keeps between jobs
# The slot engine's own view of the filesystem, made in RootlessKit's mount namespace (the slot user mapped to
# root there, nothing of it seen on the host) just before dockerd starts: dockerd-rootless.sh runs `dockerd` from
# PATH, where the slot's bin folder (root's) comes first. A job container that binds /var/run/docker.sock gets its
# slot's engine (RootlessKit's /run is a copy whose docker.sock leads to the host's); the runner's externals folder
# (the runner binds it at /__e in a `container:` job's containers) is there at the path the runner knows, from a
# copy of the runner image's that is root's and read-only to the slot. For that, the view is a new root: a tmpfs
# where each entry of / is bound as it is, but the folders on the way to the externals, which are tmpfs copies of
# their own (so no folder is made on the host, as /runner or /home/runner would be); the old root stays at /.host
# where the kernel keeps it there (it is the same filesystem, with the same permissions).
START_SCRIPT = '''#!/bin/sh
# drover.fleet: the view of the slot engine of slot %(slot)s, then its dockerd (written by the pools pass).
set -eu
socket=%(socket)s
at=%(at)s
source=%(source)s
rm -f /run/docker.sock
ln -s "$socket" /run/docker.sock
# spread FROM TO REST: TO a tmpfs with FROM's entries bound in it, but the one REST goes through (made anew)
spread() {
  from=$1 to=$2 rest=$3
  first=${rest%%%%/*}
  mount -t tmpfs -o mode=0755 drover-view "$to"
  for entry in "$from"/* "$from"/.[!.]* "$from"/..?*; do
    name=${entry##*/}
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    [ "$name" = "$first" ] && continue
    if [ -L "$entry" ]; then
      ln -s "$(readlink "$entry")" "$to/$name"
    elif [ -d "$entry" ]; then
      mkdir "$to/$name" && mount --rbind "$entry" "$to/$name"
    else
      : > "$to/$name" && mount --bind "$entry" "$to/$name"
    fi
  done
  mkdir "$to/$first"
  if [ "$first" = "$rest" ]; then
    mount --bind "$source" "$to/$first"
    mount -o remount,bind,ro "$to/$first" 2>/dev/null || true
  elif [ -d "$from/$first" ] && [ ! -L "$from/$first" ]; then
    spread "$from/$first" "$to/$first" "${rest#*/}"
  else
    mkdir -p "$to/$rest"
    mount --bind "$source" "$to/$rest"
  fi
}
if [ -n "$at" ]; then
  root=$XDG_RUNTIME_DIR/view
  mkdir -p "$root"
  spread "" "$root" "${at#/}"
  mkdir "$root/.host"
  cd "$root"
  pivot_root . .host
  cd /
  umount -l /.host 2>/dev/null || true
fi
PATH=${PATH#*:}
exec dockerd "$@"
'''


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


def subid_floor_option(value):
    """gh_runner_slot's slot_subid_floor, checked: where slot users' subordinate ID ranges may start (None: the
    default). Raises SpecError naming the option."""
    if value is None:
        return SUBID_FLOOR
    if isinstance(value, bool) or not isinstance(value, int) or not 65536 <= value <= SUBID_CEILING - SUBIDS + 1:
        raise SpecError('slot_subid_floor must be a whole number from 65536 to %d (a range of %d IDs fits below '
                        '%d), got %r' % (SUBID_CEILING - SUBIDS + 1, SUBIDS, SUBID_CEILING + 1, value))
    return value


def pools_network(scope):
    """The name of the pools' own bridge network (of one store on an engine): the slot holders and the pools' mirror
    are on it alone, so that no other container of the host (a task of another tenant) reaches the mirror or what
    a slot publishes."""
    return 'drover-pools-%s' % (scope[:8] if scope else 'host')


def ensure_network(engine, scope):
    """The pools' network, made when missing; its name. Raises SlotEngineError when a network of that name is not
    it."""
    name = pools_network(scope)
    labels = {'drover.role': NETWORK_ROLE}
    if scope:
        labels[STORE_LABEL] = scope
    try:
        found = engine.network(name)
        if found is None:
            engine.network_create(name, labels)
            return name
    except EngineError as exc:
        raise SlotEngineError('the pools\' network %s: %s' % (name, exc))
    if found['driver'] != 'bridge' or any(found['labels'].get(k) != v for k, v in labels.items()):
        raise SlotEngineError('network %s is not the pools\' network of this store (remove it, or rename it)' % name)
    return name


def remove_network(engine, scope):
    """The pools' network removed once nothing is attached to it (else it stays)."""
    try:
        engine.network_remove(pools_network(scope))
    except EngineError:
        pass


def slot_id(scope, pool, idx):
    """A slot's short ID: its user's name and its directory's."""
    return hashlib.sha256(('%s/%s/%d' % (scope or '', pool, idx + 1)).encode()).hexdigest()[:10]


class SlotEngine:
    """One slot's engine: `engine` is the host's (for the holder), `labels` those of the slot's holder."""

    def __init__(self, engine, scope, pool, idx, holder_image, labels, root=SLOTS_ROOT, cpus=None, memory=None,
                 mirrors=None, keep_pulled=True, subid_floor=SUBID_FLOOR):
        self.engine = engine
        self.subid_floor = subid_floor   # where its user's subordinate IDs may start (ensure_user)
        self.moved = False              # its user's subordinate IDs moved this pass (ensure_user)
        # Whether images pulled from Docker Hub stay between jobs (kept_image); a pool of forks' jobs keeps none.
        self.keep_pulled = keep_pulled
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
        # root's, in the slot's top directory (root's): the engine's configuration, log, the process root started,
        # and root's link to the engine's socket once proven
        self.config_file = os.path.join(self.dir, 'daemon.json')
        self.log_file = os.path.join(self.dir, 'engine.log')
        self.pid_file = os.path.join(self.dir, 'engine.pid')
        self.socket_link = os.path.join(self.dir, 'engine.sock')
        self.bin_dir = os.path.join(self.dir, 'bin')
        self.start_file = os.path.join(self.bin_dir, 'dockerd')
        # (where the runner's externals folder is in its image, the host's root-owned copy of it), or None
        self.externals = None
        # the slot user's (the engine makes it in its runtime directory): never used before it is proven
        self.socket = os.path.join(self.run_dir, 'docker.sock')
        self.holder_name = 'drover-slot-%s' % self.id
        self.holder_image = holder_image
        self.labels = dict(labels, **{'drover.role': HOLDER_ROLE})
        self.scope = scope
        self.network = pools_network(scope)
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
        """The slot's user, with a subordinate ID range of its own at or above `subid_floor` that no account of the
        host has an ID in (getent); its (uid, gid). A range below the floor, or one an account's ID falls in (made
        by an earlier release, or an account made since), is given up for a new one: then `moved` is set, and the
        engine's data (whose files belong to the old range's IDs) must go."""
        if self._ids() is None:
            _run(['useradd', '--system', '--no-create-home', '--home-dir', self.dir, '--shell', '/usr/sbin/nologin',
                  self.user])
        taken = None
        for path, add, delete in (('/etc/subuid', '--add-subuids', '--del-subuids'),
                                  ('/etc/subgid', '--add-subgids', '--del-subgids')):
            mine = [(start, count) for name, start, count in _ranges(path) if name == self.user]
            if taken is None and mine:
                taken = _account_ids()
            if any(count >= SUBIDS and start >= self.subid_floor and not _overlaps(start, count, taken or ())
                   for start, count in mine):
                continue
            for start, count in mine:
                _run(['usermod', delete, '%d-%d' % (start, start + count - 1), self.user])
                self.moved = True
            if taken is None:
                taken = _account_ids()
            start = _free_range(path, self.subid_floor, taken)
            _run(['usermod', add, '%d-%d' % (start, start + SUBIDS - 1), self.user])
        return self._ids()

    def ensure_dirs(self, uid, gid):
        """The slot's top directory, root's (0711: the slot's user enters it, and can make nothing in it), and below
        it the folders that are the slot user's alone (0700): home, run, data, work. Nothing is followed: a link or a
        file where a folder goes is removed, owners and modes are set through the folder's own descriptor. A top
        directory that was the slot user's (an earlier release made it so) loses root's files in it: a job could
        have put them there."""
        if not os.path.isdir(self.root):
            os.makedirs(self.root, 0o711)
        os.chmod(self.root, 0o711)
        if _own_dir(self.dir, 0, 0, 0o711) != 0:
            for path in (self.pid_file, self.log_file, self.config_file, self.socket_link):
                _unlink(path)
        # Only the slot's user (its runner and its engine) enters any of it: another slot's engine, which resolves a
        # bind mount's path as its own user, cannot mount this slot's workspace or data.
        for path in (os.path.join(self.dir, 'home'), self.run_dir, os.path.join(self.dir, 'data'), self.work):
            _own_dir(path, uid, gid, 0o700)

    # --- the holder -----------------------------------------------------------------------------

    def holder(self):
        """The holder's engine view (id, state, pid, networks), or None."""
        found = [c for c in self.engine.list_role(HOLDER_ROLE) if c['name'] == self.holder_name]
        if not found:
            return None
        state = self.engine.inspect(found[0]['id']) or {}
        return {'id': found[0]['id'], 'state': found[0]['state'], 'pid': state.get('pid'),
                'networks': state.get('networks') or {}}

    def ensure_holder(self):
        """The holder running on the pools' network, with the slot's network rules in its namespace: (its view,
        whether it was made now: then an engine started in an earlier holder's namespace must start again)."""
        held = self.holder()
        fresh = held is None or held['state'] != 'running' or not held['pid'] or self.network not in held['networks']
        if fresh:
            if held is not None:
                self.engine.remove(held['id'])
            network = ensure_network(self.engine, self.scope)
            # (IPv6 off in the slot's namespace: no link-local neighbour of the host's, no route the IPv4 rules miss)
            cid = self.engine.create(self.holder_name, self.holder_image, self.labels, command=['sleep', '2147483647'],
                                     network_mode=network, host={'sysctls': {
                                         'net.ipv6.conf.all.disable_ipv6': '1',
                                         'net.ipv6.conf.default.disable_ipv6': '1'}})
            self.engine.start(cid)
            held = self.holder()
            if held is None or not held['pid']:
                raise SlotEngineError('the holder %s did not start' % self.holder_name)
        self._block_link_local(held['pid'])
        return held, fresh

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

    def _engine(self):
        """The pid of the engine's first process as root started it (its record, root's, names the pid and that
        process's start time), while that process runs; else None."""
        raw = _read_root_file(self.pid_file)
        try:
            record = json.loads(raw) if raw is not None else None
            pid, start = int(record['pid']), int(record['start'])
        except (ValueError, TypeError, KeyError):
            return None
        return pid if pid > 1 and _start_time(pid) == start and _alive(pid) else None

    def _uid_gid(self):
        return self.ids or self._ids()

    def _prove_socket(self):
        """Root's link to the engine's socket (socket_link), made anew from what the engine's runtime directory
        holds, once that is proven to be a socket whose listener is the dockerd of the engine root started (the
        child of rootlesskit's child); else None. What a job put there (a link to another socket, a socket of its
        own, a file) is never used."""
        engine, ids = self._engine(), self._uid_gid()
        if engine is None or ids is None:
            return None
        fresh = self.socket_link + '.new'
        _unlink(fresh)
        try:
            os.link(self.socket, fresh, follow_symlinks=False)     # whatever is there, itself: never through a link
        except OSError:
            return None
        try:
            info = os.lstat(fresh)
            if not stat.S_ISSOCK(info.st_mode) or info.st_uid != ids[0]:
                return None
            peer = _listener(fresh)
            if peer is None or peer[1] != ids[0] or _parent(_parent(peer[0])) != engine:
                return None
            os.replace(fresh, self.socket_link)
        except OSError:
            return None
        finally:
            _unlink(fresh)
        return self.socket_link

    def client(self, timeout=30):
        import docker
        return docker.APIClient(base_url='unix://%s' % self.socket_link, timeout=timeout, version='auto')

    def answers(self):
        """Whether the engine root started answers on its proven socket."""
        if self._prove_socket() is None:
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
            if self.moved:
                # the engine's data belongs to the IDs its user had: it starts anew, empty
                self.stop_engine()
                _clear(os.path.join(self.dir, 'data'))
        except (OSError, subprocess.SubprocessError) as exc:
            raise SlotEngineError('slot user %s: %s' % (self.user, exc))
        holder, fresh = self.ensure_holder()
        if fresh:
            self.stop_engine()          # its network namespace was the holder's that went
        procs = self._ensure_cgroup()
        try:
            changed = self._write_config()
            changed = self._write_start() or changed
        except OSError as exc:
            raise SlotEngineError('slot %s: its engine\'s configuration: %s' % (self.id, exc))
        # (only a slot with no runner is ensured: a start disturbs no job)
        if not changed and self.answers():
            return False
        self.stop_engine()
        env = {'PATH': '%s:/usr/sbin:/usr/bin:/sbin:/bin' % self.bin_dir, 'HOME': os.path.join(self.dir, 'home'),
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
        try:
            log = _files.open_file(self.log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=self.dir,
                                        start_new_session=True, close_fds=True)
            finally:
                os.close(log)
            _files.write_whole(self.pid_file, json.dumps({'pid': proc.pid, 'start': _start_time(proc.pid)}) + '\n',
                               0o600)
        except OSError as exc:
            raise SlotEngineError('slot %s: its engine cannot be started: %s' % (self.id, exc))
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SlotEngineError('the engine of slot %s exited (%s): see %s' % (
                    self.id, proc.returncode, self.log_file))
            if self.answers():
                # what an engine of an earlier release (or one stopped midway) kept goes as after a job
                problems = self._clean()
                if problems:
                    raise SlotEngineError('; '.join(problems))
                return True
            time.sleep(0.2)
        raise SlotEngineError('the engine of slot %s did not answer within %d s' % (self.id, START_TIMEOUT))

    def _write_config(self):
        """The engine's configuration file (root's, 0644: the slot's user reads it) as `mirrors` says; whether it
        changed (then the engine starts again: BuildKit reads the mirrors, and that a mirror speaks plain HTTP, only
        when the engine starts; a reload is not enough). A plain-HTTP mirror is also among `insecure-registries`:
        without it BuildKit asks it over HTTPS and a build's base image never comes through it."""
        had = _read_root_file(self.config_file)
        if self.mirrors is None and had is not None:
            return False
        config = {}
        if self.mirrors:
            config['registry-mirrors'] = list(self.mirrors)
            # (with its scheme: the engine takes the address alone for its own pulls, and BuildKit takes http:// as
            # plain HTTP, where an address alone would be HTTPS without verification)
            plain = [m.rstrip('/') for m in self.mirrors if m.startswith('http://')]
            if plain:
                config['insecure-registries'] = plain
        text = json.dumps(config, sort_keys=True) + '\n'
        if text == had:
            return False
        _files.write_whole(self.config_file, text, 0o644)
        return True

    def _write_start(self):
        """The engine's start script (root's, 0755, in root's bin folder of the slot), as START_SCRIPT with the slot's
        socket and externals; whether it changed (then the engine starts again)."""
        at, source = self.externals or ('', '')
        text = START_SCRIPT % {'slot': self.id, 'socket': shlex.quote(self.socket), 'at': shlex.quote(at),
                               'source': shlex.quote(source)}
        if _read_root_file(self.start_file) == text:
            return False
        _own_dir(self.bin_dir, 0, 0, 0o755)
        _files.write_whole(self.start_file, text, 0o755)
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
        """The engine stopped: the process group root started asked to stop (SIGTERM, STOP_WAIT seconds), then every
        process left of the slot's user killed as that user (its containerd, its containers' processes, what a job
        left running), so that nothing of the engine's outlives it; root's record of it and its socket link go."""
        engine = self._engine()
        if engine is not None:
            try:
                os.killpg(engine, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.monotonic() + STOP_WAIT
            while time.monotonic() < deadline and _alive(engine):
                time.sleep(0.1)
        ids = self._uid_gid()
        if ids is not None and ids[0] != 0:
            self._sweep(*ids)
        for path in (self.pid_file, self.socket_link):
            _unlink(path)
        # The engine's runtime directory too (its pid file, where a job may have named a live process so that
        # dockerd would not start; rootlesskit's state): the next engine finds only what it makes.
        try:
            _clear(self.run_dir)
        except OSError:
            pass

    @staticmethod
    def _sweep(uid, gid):
        """Every process of the slot's user killed, by that user (kill(-1) signals what it may signal: its own
        processes, and those of its user namespaces), and waited for a little."""
        child = os.fork()
        if child == 0:                  # (only system calls here, then out: no cleanup of the parent's state)
            try:
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)             # pylint: disable=protected-access
        os.waitpid(child, 0)
        deadline = time.monotonic() + SWEEP_WAIT
        while time.monotonic() < deadline and _processes_of(uid):
            time.sleep(0.1)

    def empty(self):
        """After a job, nothing it left for the next job of the slot: the slot engine's containers, volumes, networks
        and build cache go, its images but those pulled from Docker Hub (kept_image), and everything in the slot's
        work folder and home. An engine that cannot be proven (a job took its socket away, or put something else
        there) or emptied is stopped with every process of the slot's user, and its data removed: the next runner's
        pass starts it anew, empty. [] or the warnings."""
        if not self.answers():
            return self._reset('its engine did not answer after the job')
        problems = self._clean()
        if problems:
            return problems + self._reset('its engine could not be emptied')
        return self._clear_folders()

    def _clean(self):
        """The engine emptied of what jobs made (see empty); [] or the problems."""
        problems = []
        client = self.client()
        try:
            for row in client.containers(all=True):
                try:
                    client.remove_container(row['Id'], force=True, v=True)
                except Exception as exc:  # pylint: disable=broad-except
                    problems.append('slot %s: container %s stays: %s' % (self.id, row['Id'][:12], exc))
            client.prune_volumes(filters={'all': 'true'} if _api_at_least(client, '1.42') else None)
            client.prune_networks()
            for image in client.images():
                name = kept_image(image, self.keep_pulled)
                refs = [r for r in (image.get('RepoTags') or []) + (image.get('RepoDigests') or [])
                        if '<none>' not in r and r != name]
                if name is None:
                    client.remove_image(image['Id'], force=True)
                    continue
                client.tag(image['Id'], *name.split(':', 1))
                for ref in refs:
                    client.remove_image(ref, noprune=True)
            client.prune_images(filters={'dangling': True})
            client.prune_builds(all=True)
        except Exception as exc:  # pylint: disable=broad-except
            problems.append('slot %s: its engine could not be emptied: %s' % (self.id, exc))
        finally:
            client.close()
        return problems

    def _clear_folders(self):
        """Everything under the slot's work folder and home removed (as root, links never followed)."""
        problems = []
        for folder in (self.work, os.path.join(self.dir, 'home')):
            try:
                _clear(folder)
            except OSError as exc:
                problems.append('slot %s: %s could not be emptied: %s' % (self.id, folder, exc))
        return problems

    def _reset(self, why):
        """The engine stopped (every process of the slot's user killed) and its data, work folder and home removed;
        the warnings."""
        self.stop_engine()
        out = ['slot %s: %s: it was stopped and its data removed (the next job starts it anew)' % (self.id, why)]
        try:
            _clear(os.path.join(self.dir, 'data'))
        except OSError as exc:
            out.append('slot %s: its data could not be removed: %s' % (self.id, exc))
        return out + self._clear_folders()

    def remove(self, keep_data=True):
        """The slot's engine stopped and its holder removed; its directory too unless `keep_data`."""
        self.stop_engine()
        held = self.holder()
        if held is not None:
            self.engine.remove(held['id'])
        remove_network(self.engine, self.scope)
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
        """What a runner of the slot gets: the slot engine's socket (root's proven link to it, which a job cannot
        replace) where Docker's clients look for it, and the
        work folder at the same path as the engine sees it (a job's `docker run -v "$PWD:/w"` names a host path)."""
        return ['%s:%s' % (self.socket_link, SOCKET_IN_RUNNER), '%s:%s' % (self.work, self.work)]


def kept_image(image, keep_pulled=True):
    """The one name under which an image of a slot engine stays after a job (`drover-kept:<its ID>`), or None when
    it goes: only an image pulled from Docker Hub (a digest of a Hub name: what the pools' mirror serves) stays,
    under a name of root's, every name a job could have given it (a tag, a digest) removed. What a job built,
    tagged, loaded or pulled from another registry goes, and every image where `keep_pulled` is false (a pool of
    forks' jobs). A later job's `docker pull` of that image finds its layers: nothing is fetched again."""
    if not keep_pulled or not any(_hub_name(ref.partition('@')[0]) for ref in image.get('RepoDigests') or ()
                                  if ref.partition('@')[2].startswith('sha256:')):
        return None
    return '%s:%s' % (KEPT_REPOSITORY, image['Id'].split(':')[-1][:20])


def _hub_name(name):
    """Whether a repository name is Docker Hub's (no registry host before its first `/`, or Docker Hub's own)."""
    first, slash, dummy = name.partition('/')
    if not first or first.startswith('<'):
        return False
    if not slash or not ('.' in first or ':' in first or first == 'localhost'):
        return True
    return first in ('docker.io', 'index.docker.io', 'registry-1.docker.io')


def _clear(folder):
    """Remove everything under `folder` (as root; a link is removed, never followed)."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


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


def _proc_stat(pid):
    """The fields of /proc/<pid>/stat after the command's name (state first), or None."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_time(pid):
    """When the process started (clock ticks after boot): with its pid, what names one process; None."""
    fields = _proc_stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def _parent(pid):
    fields = _proc_stat(pid) if pid else None
    return int(fields[1]) if fields else None


def _processes_of(uid):
    """The pids of the processes whose real user is `uid`."""
    out = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            if os.stat('/proc/%s' % name).st_uid == uid:
                out.append(int(name))
        except OSError:
            continue
    return out


def _listener(path, timeout=5):
    """(pid, uid, gid) of the process that listens on the Unix socket `path` (SO_PEERCRED), or None."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        return struct.unpack('3i', sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i')))
    except OSError:
        return None
    finally:
        sock.close()


def _read_root_file(path):
    """What root's own file at `path` holds (at most ROOT_FILE_MAX bytes, as text), or None: only a regular file of
    root's, opened without following a link and without waiting (a FIFO or a device is never read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, 'O_CLOEXEC', 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0:
            return None
        return os.read(fd, ROOT_FILE_MAX).decode('utf-8', 'replace')
    except OSError:
        return None
    finally:
        os.close(fd)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _own_dir(path, uid, gid, mode):
    """The directory `path` made (or kept) with that owner and mode, never through a link: a link or anything
    else where it goes is removed first. Returns the owner it had (-1: made now)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        info = None
    if info is None:
        os.mkdir(path, 0o700)
    had = _files.own_dir(path, uid, gid, mode)
    return -1 if info is None else had.st_uid


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


def _account_ids():
    """Every user and group ID the host's accounts have, as NSS lists them (getent: local files, and directory
    services that enumerate)."""
    out = set()
    for database in ('passwd', 'group'):
        try:
            done = subprocess.run(['getent', database], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        for line in done.stdout.splitlines():
            parts = line.split(':')
            if len(parts) > 2 and parts[2].isdigit():
                out.add(int(parts[2]))
    return out


def _overlaps(start, count, ids):
    return any(start <= i < start + count for i in ids)


def _free_range(path, floor, taken):
    """The start of a free range of SUBIDS IDs: the lowest at or above `floor` that overlaps no range given out
    there and holds no account's ID (`taken`). Raises OSError when none is left below SUBID_CEILING."""
    used = [(start, start + count) for dummy, start, count in _ranges(path)]
    start = floor
    while start + SUBIDS - 1 <= SUBID_CEILING:
        end = start + SUBIDS
        clash = [e for s, e in used if s < end and start < e] + [i + 1 for i in taken if start <= i < end]
        if not clash:
            return start
        start = max(clash)
    raise OSError('no range of %d subordinate IDs is left between %d and %d in %s'
                  % (SUBIDS, floor, SUBID_CEILING, path))
