# -*- coding: utf-8 -*-
"""The secret sweep: for the whole test session, every secret the tests hand to the collection (GitHub
tokens, App private keys, registry and ECR passwords) or that the GitHub stand-in issues (JIT configs, the
runner secrets in them, installation tokens) is registered here, and looked for:

- in /proc/<pid>/cmdline and /proc/<pid>/environ of every other process on the host, read over and over
  while the tests run (module processes, ansible-playbook, runner and task containers' processes);
- in `docker inspect` of every container the engine creates, read when the engine reports the creation;
- in every module result and playbook output the tests read, and every webhook body the tests receive;
- in every file under the session's temporary directory when the session ends (stores, callback event logs,
  unit files, service logs), and in what the test engine logged during the session.

Not searched, and why: the files a test writes as the user's input (module argument files, playbooks and
variable files that carry a secret the way a user's vault-decrypted variables do; each is named to the
sweep with `given()`), and JIT config files (jit/, each a root-only file, mode 0400, that the design mounts
into its runner container; their mode is checked).
A hit fails the session; the summary names where it was found, never the secret."""

from __future__ import absolute_import, division, print_function

import json
import os
import stat
import threading
import time

ENGINE_LOG = os.environ.get('DROVER_ENGINE_LOG', '/var/log/drover-dockerd.log')
MIN_LENGTH = 12              # shorter strings are not unique enough to search for


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
        self.inputs = set()          # files the tests wrote as the user's input
        self.hits = []
        self.counts = dict((k, 0) for k in ('process reads', 'container inspections', 'containers gone before inspection',
                                            'outputs', 'files', 'jit files'))
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.stream = None
        self.log_offset = None
        self.since = None            # the time of the last engine event seen: a watch resumed asks from there

    # --- what to look for ---------------------------------------------------------------------------------

    def register(self, value):
        if isinstance(value, bytes):
            value = value.decode('utf-8', 'replace')
        if isinstance(value, str) and len(value) >= MIN_LENGTH:
            with self.lock:
                if value not in self.known:
                    self.known.add(value)
                    self.secrets.append(value)
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
            if secret in text:
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
                    before = seen.get((pid, part))
                    start = before[1] if before and before[0] == raw else 0
                    if before and start == len(self.secrets):
                        now[(pid, part)] = before
                        continue
                    done = self.look(raw.replace(b'\0', b' '), 'process %s %s (%s)' % (pid, part, comm(pid)),
                                     count='process reads', start=start)
                    now[(pid, part)] = (raw, done)
            seen = now

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
        return 'secret sweep: %d secrets looked for in %d process reads, %d container inspections (%d containers ' \
               'gone before), %d outputs, %d files (and %d JIT config files checked for mode 0400; %d input files the ' \
               'tests wrote not searched): %d found' % (
                   len(self.secrets), self.counts['process reads'], self.counts['container inspections'],
                   self.counts['containers gone before inspection'], self.counts['outputs'], self.counts['files'],
                   self.counts['jit files'], len(self.inputs), len(self.hits))


SWEEP = Sweep()
register = SWEEP.register
look = SWEEP.look
given = SWEEP.given
