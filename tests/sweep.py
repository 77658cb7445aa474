# -*- coding: utf-8 -*-
"""The secret sweep: for the whole test session, every secret the tests hand to the collection (GitHub
tokens, App private keys, registry and ECR passwords) or that the GitHub stand-in issues (JIT configs, the
runner secrets in them, installation tokens) is registered here, and looked for:

- in /proc/<pid>/cmdline and /proc/<pid>/environ of every other process on the host, read over and over
  while the tests run (module processes, ansible-playbook, runner and task containers' processes);
- in `docker inspect` of every container the engine creates, read when the engine reports the creation;
- an ECS secret (a value of a container's `secrets` or environment files, read from AWS when its task starts) is
  registered with its home, the one container whose environment it belongs in (`register(value, home=name)`):
  there - in that container's Config.Env, its log driver's options (a log secret option) and in the environ of
  its processes (found by their cgroup) - it is
  where it belongs, and it is looked for everywhere else, that container's labels and command lines included;
- in every module result and playbook output the tests read, and every webhook body the tests receive;
- in every file under the session's temporary directory when the session ends (stores, callback event logs,
  unit files, service logs), and in what the test engine logged during the session;
- in what was sent to syslog during the session (Ansible logs each module's arguments there when the module
  starts, hiding only the options its argument spec declares no_log): where the host has no syslog listener
  on /dev/log (test machines run no syslog daemon), the sweep binds one there for the session, keeps what it
  receives in memory and removes it at the end (a /dev/log of the host's is never touched); where journald
  runs, the journal of the session's time is read at the end.

Not searched, and why: the files a test writes as the user's input (module argument files, playbooks and
variable files that carry a secret the way a user's vault-decrypted variables do; each is named to the
sweep with `given()`), and JIT config files (jit/, each a root-only file, mode 0400, that the design mounts
into its runner container; their mode is checked).
A hit fails the session; the summary names where it was found, never the secret."""

from __future__ import absolute_import, division, print_function

import errno
import fcntl
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time

ENGINE_LOG = os.environ.get('DROVER_ENGINE_LOG', '/var/log/drover-dockerd.log')
CONTAINER_ID = re.compile(r'\b([0-9a-f]{64})\b')
MIN_LENGTH = 12              # shorter strings are not unique enough to search for
DEV_LOG = '/dev/log'         # where syslog(3) sends
# The sessions running at once on the host share one listener on /dev/log: the one that bound it forwards
# every datagram to the socket each other session binds in this directory (tmpfs), and when it ends, it hands
# its socket on /dev/log to one of them (SCM_RIGHTS: not a datagram lost); one of them takes /dev/log over if
# it was killed. The directory is flock'ed while a session decides, and removed by the last one.
RELAY = '/run/drover-sweep-syslog'
JOURNAL_SOCKET = '/run/systemd/journal/socket'   # journald runs
DATAGRAM_MAX = 1 << 20
HANDOVER = b'drover-sweep: /dev/log handed over'


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tag(line):
    """The program a syslog line names ("<14>Dec  3 13:50:00 ansible-ecs_task[12]: ..."), not its message."""
    head = line.split(': ', 1)[0]
    return head.rsplit(' ', 1)[-1][:60] if ': ' in line else '?'


class SyslogTap:
    """What is sent to syslog (/dev/log) while the session runs, kept in memory (`lines`).

    `mode`: 'own' (this session bound /dev/log, and forwards to the other sessions), 'shared' (another
    session's listener forwards to this one), or why nothing is received: the host's own listener (a syslog
    daemon, journald: the journal is read instead), a socket of the host's without a listener, no permission."""

    def __init__(self, path=DEV_LOG, relay=RELAY):
        self.path = path
        self.relay = relay
        self.owner_file = os.path.join(relay, 'owner')
        self.lines = []
        self.mode = 'not started'
        self.sock = None
        self.inode = None
        self.mine = None             # the socket this session receives forwarded datagrams on ('shared')
        self.dropped = 0             # datagrams another session could not take (its queue full)
        self.stopping = threading.Event()
        self.thread = None
        self.lock = threading.Lock()

    # -- the relay directory, locked while a session decides who listens --

    def _locked(self):
        while True:
            os.makedirs(self.relay, mode=0o700, exist_ok=True)
            fd = os.open(self.relay, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(self.relay).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)             # removed by the last session meanwhile: make it anew

    def _owner(self):
        """(pid, inode) of the session whose listener is on /dev/log, or None."""
        try:
            with open(self.owner_file) as handle:
                pid, inode = (int(x) for x in handle.read().split())
        except (OSError, ValueError):
            return None
        try:
            if os.stat(self.path).st_ino != inode or not _alive(pid):
                return None
        except OSError:
            return None
        return pid, inode

    def _probe(self):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            probe.connect(self.path)
            return 'listening'
        except FileNotFoundError:
            return 'missing'
        except ConnectionRefusedError:
            return 'stale'
        except OSError as exc:
            return 'unusable (%s)' % os.strerror(exc.errno)
        finally:
            probe.close()

    def _settle(self):
        """Under the lock: listen on /dev/log, or on a relay socket, or not at all (self.mode says)."""
        state = self._probe()
        if state == 'stale':
            try:
                with open(self.owner_file) as handle:
                    leftover = int(handle.read().split()[1]) == os.stat(self.path).st_ino
            except (OSError, ValueError, IndexError):
                leftover = False
            if not leftover:
                self.mode = "none: %s is the host's, with no listener" % self.path
                return
            os.unlink(self.path)     # a sweep's, left by a session that was killed
            state = 'missing'
        if state == 'listening':
            if self._owner() is None:
                self.mode = "none: the host's own listener on %s (syslog daemon or journald)" % self.path
                return
            if self.mine is None:
                self.mine = os.path.join(self.relay, '%d-%x.sock' % (os.getpid(), id(self)))
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sock.bind(self.mine)
                self._use(sock)
            self.mode = 'shared'
            return
        if state != 'missing':
            self.mode = 'none: %s is %s' % (self.path, state)
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(self.path)
            os.chmod(self.path, 0o666)
        except OSError as exc:
            sock.close()
            self.mode = 'none: cannot listen on %s (%s)' % (self.path, os.strerror(exc.errno))
            return
        self.inode = os.stat(self.path).st_ino
        with open(self.owner_file + '.new', 'w') as handle:
            handle.write('%d %d\n' % (os.getpid(), self.inode))
        os.replace(self.owner_file + '.new', self.owner_file)
        self._use(sock)
        if self.mine is not None:    # taken over from the session that ended
            os.unlink(self.mine)
            self.mine = None
        self.mode = 'own'

    def _use(self, sock):
        sock.settimeout(0.5)
        old, self.sock = self.sock, sock
        if old is not None:
            old.close()

    # -- the session --

    def start(self):
        try:
            fd = self._locked()
        except OSError as exc:
            self.mode = 'none: cannot use %s (%s)' % (self.relay, os.strerror(exc.errno))
            return
        try:
            self._settle()
        finally:
            os.close(fd)
        if self.sock is not None:
            self.thread = threading.Thread(target=self._listen, daemon=True)
            self.thread.start()

    def _listen(self):
        out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            while not self.stopping.is_set():
                try:
                    self._take(out, *socket.recv_fds(self.sock, DATAGRAM_MAX, 1)[:2])
                except socket.timeout:
                    if self.mode == 'shared' and self._owner() is None:
                        fd = self._locked()      # the listening session was killed: take /dev/log over
                        try:
                            if self._owner() is None:
                                self._settle()
                        finally:
                            os.close(fd)
                except OSError:
                    if self.stopping.is_set():
                        break
                    raise
        finally:
            out.close()

    def _take(self, out, data, fds):
        """One datagram received; or the listening socket on /dev/log, handed over by the session that ends."""
        if fds:
            if data == HANDOVER and self.mine is not None:
                self._use(socket.socket(fileno=fds.pop(0)))
                self.inode = os.stat(self.path).st_ino
                os.unlink(self.mine)
                self.mine = None
                self.mode = 'own'
            for extra in fds:
                os.close(extra)
            return
        with self.lock:
            self.lines.append(data.decode('utf-8', 'replace'))
        if self.mode == 'own':
            self._forward(out, data)

    def _hand_over(self):
        """Under the lock: pass the socket on /dev/log to another session that listens, so not a datagram is
        lost; False when there is none."""
        for name in sorted(os.listdir(self.relay)):
            path = os.path.join(self.relay, name)
            pid = name.split('-', 1)[0]
            if not name.endswith('.sock') or path == self.mine or not pid.isdigit() or not _alive(int(pid)):
                continue
            with open(self.owner_file + '.new', 'w') as handle:
                handle.write('%s %d\n' % (pid, self.inode))
            os.replace(self.owner_file + '.new', self.owner_file)
            out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                out.connect(path)
                socket.send_fds(out, [HANDOVER], [self.sock.fileno()])
                return True
            except OSError:
                continue
            finally:
                out.close()
        return False

    def _forward(self, out, data):
        try:
            names = [n for n in os.listdir(self.relay) if n.endswith('.sock')]
        except OSError:
            return
        for name in names:
            try:
                out.sendto(data, socket.MSG_DONTWAIT, os.path.join(self.relay, name))
            except ConnectionRefusedError:
                try:
                    os.unlink(os.path.join(self.relay, name))    # its session was killed
                except OSError:
                    pass
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.ENOBUFS):
                    self.dropped += 1

    def _sweep_relay(self):
        """Under the lock: remove what sessions that were killed left in the relay directory."""
        for name in os.listdir(self.relay):
            path = os.path.join(self.relay, name)
            if name == 'owner' and self._owner() is None:
                pass
            elif name.endswith('.sock') and name.split('-', 1)[0].isdigit() and not _alive(int(name.split('-', 1)[0])):
                pass
            else:
                continue
            try:
                os.unlink(path)
            except OSError:
                pass

    def mark(self):
        """Where the lines received from now on begin (see since)."""
        with self.lock:
            return len(self.lines)

    def since(self, mark):
        with self.lock:
            return list(self.lines[mark:])

    def stop(self):
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(5)
        if self.sock is None:
            return
        fd = self._locked()
        try:
            # What is still queued (a hand-over included: then this session hands /dev/log on in turn).
            self.sock.setblocking(False)
            out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                while True:
                    try:
                        self._take(out, *socket.recv_fds(self.sock, DATAGRAM_MAX, 1)[:2])
                    except (BlockingIOError, socket.timeout):
                        break
                    self.sock.setblocking(False)
            finally:
                out.close()
            if self.mode == 'own' and not self._hand_over():
                try:
                    if os.stat(self.path).st_ino == self.inode:
                        os.unlink(self.path)
                except OSError:
                    pass
                try:
                    with open(self.owner_file) as handle:
                        if handle.read().split()[0] == str(os.getpid()):
                            os.unlink(self.owner_file)
                except (OSError, IndexError):
                    pass
            if self.mine is not None:
                try:
                    os.unlink(self.mine)
                except OSError:
                    pass
                self.mine = None
            self.sock.close()
            self.sock = None
            self._sweep_relay()
            try:
                os.rmdir(self.relay)     # the last session on the host: nothing left behind
            except OSError:
                pass
        finally:
            os.close(fd)


def journal(since, until):
    """The journal's messages from `since` to `until` (epoch seconds), where journald runs; None elsewhere."""
    if not os.path.exists(JOURNAL_SOCKET) or shutil.which('journalctl') is None:
        return None
    done = subprocess.run(['journalctl', '--no-pager', '-q', '-o', 'cat', '--since', '@%d' % int(since),
                           '--until', '@%d' % (int(until) + 1)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.decode('utf-8', 'replace').splitlines()


def comm(pid):
    """A process's short name (/proc/<pid>/comm): it names the process in a hit without quoting its arguments."""
    try:
        with open('/proc/%s/comm' % pid) as handle:
            return handle.read().strip()
    except OSError:
        return '?'


class Sweep:
    def __init__(self):
        self.secrets = []            # in the order registered: a process read again is searched for new ones only
        self.known = set()
        self.forms = {}              # each secret: the forms it is looked for in
        self.homes = {}              # a secret -> the names of the containers whose environment holds it
        self.names = {}              # container ID -> name, of the containers inspected
        self.inputs = set()          # files the tests wrote as the user's input
        self.hits = []
        self.counts = dict((k, 0) for k in ('process reads', 'container inspections', 'containers gone before inspection',
                                            'outputs', 'files', 'jit files', 'syslog lines', 'journal lines',
                                            'records'))
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.stream = None
        self.log_offset = None
        self.since = None            # the time of the last engine event seen: a watch resumed asks from there
        self.syslog = None
        self.started = None
        self.journal_read = False

    # --- what to look for ---------------------------------------------------------------------------------

    def register(self, value, home=None):
        """Look for `value` from now on; `home`: the name of a container whose environment it belongs in (a
        secret read by two containers is registered with each)."""
        if isinstance(value, bytes):
            value = value.decode('utf-8', 'replace')
        if isinstance(value, str) and len(value) >= MIN_LENGTH:
            with self.lock:
                if home is not None:
                    self.homes.setdefault(value, set()).add(home)
                if value not in self.known:
                    self.known.add(value)
                    self.secrets.append(value)
                    # As Python and JSON write it inside a list or a mapping (a newline as \\n): how a nested
                    # argument is logged.
                    self.forms[value] = tuple(set((value, repr(value)[1:-1], json.dumps(value)[1:-1])))
        return value

    def given(self, path):
        """A file a test wrote as the user's input (module arguments, a playbook, variables): not searched."""
        with self.lock:
            self.inputs.add(os.path.realpath(str(path)))
        return path

    def look(self, text, where, count='outputs', start=0):
        """Search `text` for the secrets registered (from the `start`-th on); returns how many there are."""
        if isinstance(text, bytes):
            text = text.decode('utf-8', 'replace')
        with self.lock:
            secrets = self.secrets[start:]
            self.counts[count] += 1
        for number, secret in enumerate(secrets, start + 1):
            if any(form in text for form in self.forms[secret]):
                with self.lock:
                    # Which secret by its number and length only: not a character of it.
                    self.hits.append('%s (secret no. %d, %d characters)' % (where, number, len(secret)))
        return start + len(secrets)

    # --- while the tests run ------------------------------------------------------------------------------

    def start(self):
        try:
            self.log_offset = os.path.getsize(ENGINE_LOG)
        except OSError:
            self.log_offset = 0      # made later in the session (make test starts the engine first, as a rule)
        self.since = int(time.time())
        self.started = time.time()
        self.syslog = SyslogTap()
        self.syslog.start()
        for target in (self._processes, self._containers):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _processes(self):
        mine = str(os.getpid())
        seen = {}                    # (pid, part) -> (what it read, how many secrets it was searched for)
        while not self.stopping.wait(0.2):
            now = {}
            for pid in os.listdir('/proc'):
                if not pid.isdigit() or pid == mine:
                    continue
                for part in ('cmdline', 'environ'):
                    try:
                        with open('/proc/%s/%s' % (pid, part), 'rb') as handle:
                            raw = handle.read()
                    except OSError:
                        continue
                    if part == 'environ' and self.homes:
                        raw = self._outside_home(pid, raw)
                        if raw is None:
                            continue     # a container's process, its container not inspected yet: read it again
                    before = seen.get((pid, part))
                    start = before[1] if before and before[0] == raw else 0
                    if before and start == len(self.secrets):
                        now[(pid, part)] = before
                        continue
                    done = self.look(raw.replace(b'\0', b' '), 'process %s %s (%s)' % (pid, part, comm(pid)),
                                     count='process reads', start=start)
                    now[(pid, part)] = (raw, done)
            seen = now

    def _outside_home(self, pid, raw):
        """The environ of a process with the secrets that belong in it taken out (those whose home is its
        container); None when it is in a container the sweep has not inspected yet."""
        try:
            with open('/proc/%s/cgroup' % pid, 'rb') as handle:
                ids = CONTAINER_ID.findall(handle.read().decode('ascii', 'replace'))
        except OSError:
            return raw
        if not ids:
            return raw
        with self.lock:
            name = self.names.get(ids[-1])
            homed = [v for v, homes in self.homes.items() if name in homes]
        if name is None:
            return None
        for value in homed:
            raw = raw.replace(b'=' + value.encode('utf-8') + b'\0', b'=\0')
        return raw

    def _containers(self):
        import docker
        while not self.stopping.is_set():
            client = None
            try:
                client = docker.from_env(timeout=30)
                # From the last event seen: containers created while the engine restarted are read too.
                self.stream = client.events(since=self.since, decode=True,
                                            filters={'type': 'container', 'event': 'create'})
                if self.stopping.is_set():
                    break
                for event in self.stream:
                    self.since = max(self.since, int(event.get('time') or 0))
                    self._inspect(client, event['id'])
            except Exception:  # pylint: disable=broad-except  # no engine yet, or it restarts: ask again
                pass
            finally:
                if client is not None:
                    client.close()
            self.stopping.wait(0.5)

    def _inspect(self, client, container_id):
        try:
            attrs = client.api.inspect_container(container_id)
        except Exception:  # pylint: disable=broad-except  # removed at once, or the engine went
            with self.lock:
                self.counts['containers gone before inspection'] += 1
            return
        name = (attrs.get('Name') or '').lstrip('/')
        with self.lock:
            self.names[attrs.get('Id')] = name
            homed = [v for v, homes in self.homes.items() if name in homes]
        config = attrs.get('Config') or {}
        if homed and config.get('Env'):
            # Its own secrets belong in its environment as NAME=value: there only.
            attrs = dict(attrs, Config=dict(config, Env=[e for e in config['Env']
                                                         if e.partition('=')[2] not in homed]))
        log = (attrs.get('HostConfig') or {}).get('LogConfig') or {}
        if homed and log.get('Config'):
            # ... and in its log driver's options (ECS's secretOptions), as option: value.
            attrs = dict(attrs, HostConfig=dict(attrs['HostConfig'], LogConfig=dict(log, Config=dict(
                (k, v) for k, v in log['Config'].items() if v not in homed))))
        self.look(json.dumps(attrs), 'docker inspect %s' % attrs.get('Name'), count='container inspections')

    # --- at the end ---------------------------------------------------------------------------------------

    def stop(self):
        self.stopping.set()
        if self.stream is not None:
            try:
                self.stream.close()
            except Exception:  # pylint: disable=broad-except
                pass
        for thread in self.threads:
            thread.join(5)
        if self.syslog is not None:
            self.syslog.stop()

    def logs(self):
        """What syslog received in the session, and the journal of the session's time where journald runs."""
        if self.syslog is not None:
            for number, line in enumerate(self.syslog.since(0), 1):
                self.look(line, 'syslog line %d (%s)' % (number, _tag(line)), count='syslog lines')
        if self.started is not None:
            lines = journal(self.started, time.time())
            if lines is not None:
                self.journal_read = True
                for number, line in enumerate(lines, 1):
                    self.look(line, 'journal line %d' % number, count='journal lines')

    def files(self, root):
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for name in names:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                if os.path.basename(folder) == 'jit':
                    self.counts['jit files'] += 1
                    if stat.S_IMODE(info.st_mode) != 0o400:
                        self.hits.append('%s: a JIT config file of mode %o, not 0400' % (path, stat.S_IMODE(info.st_mode)))
                    continue
                if os.path.realpath(path) in self.inputs:
                    continue
                try:
                    with open(path, 'rb') as handle:
                        raw = handle.read()
                except OSError as exc:
                    self.hits.append('%s: cannot be read to be searched (%s)' % (path, exc))
                    continue
                self.look(raw, path, count='files')

    def engine_log(self):
        if self.log_offset is None:
            return
        try:
            with open(ENGINE_LOG, 'rb') as handle:
                handle.seek(self.log_offset)
                self.look(handle.read(), ENGINE_LOG, count='files')
        except OSError:
            pass

    def summary(self):
        tap = self.syslog.mode if self.syslog is not None else 'not started'
        if self.syslog is not None and self.syslog.dropped:
            tap += ', %d datagrams not forwarded' % self.syslog.dropped
        return 'secret sweep: %d secrets looked for in %d process reads, %d container inspections (%d containers ' \
               'gone before), %d outputs, %d files, %d records of failed jobs (docker save), %d syslog lines (listener: %s), %d journal lines (%s) (and %d ' \
               'JIT config files checked for mode 0400; %d input files the tests wrote not searched): %d found' % (
                   len(self.secrets), self.counts['process reads'], self.counts['container inspections'],
                   self.counts['containers gone before inspection'], self.counts['outputs'], self.counts['files'],
                   self.counts['records'], self.counts['syslog lines'], tap, self.counts['journal lines'],
                   'read' if self.journal_read else 'no journald', self.counts['jit files'], len(self.inputs),
                   len(self.hits))


SWEEP = Sweep()
register = SWEEP.register
look = SWEEP.look
given = SWEEP.given
