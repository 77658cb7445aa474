# -*- coding: utf-8 -*-
"""The secret sweep (tests/sweep.py) finds what it is there to find: a secret on a process's command line or
in its environment, in a container's configuration, in a file, and a JIT config file that others may read.
A Sweep of its own, with secrets the session's sweep does not know."""

from __future__ import absolute_import, division, print_function

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from helpers import IMAGE, wait_for
from sweep import Sweep


def test_the_sweep_finds_secrets_where_they_must_not_be(engine):
    probe = Sweep()
    argv_secret = probe.register('probe-argv-%s' % uuid.uuid4().hex)
    env_secret = probe.register('probe-env-%s' % uuid.uuid4().hex)
    box_secret = probe.register('probe-box-%s' % uuid.uuid4().hex)
    file_secret = probe.register('probe-file-%s' % uuid.uuid4().hex)
    probe.register('short')                                          # too short to look for
    assert len(probe.secrets) == 4
    probe.start()
    # The secrets early in argv and first in the environment: where a hit's label could quote them.
    sleeper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(5)  # ' + argv_secret],
                               env={'PROBE': env_secret, 'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
    box = None
    try:
        time.sleep(1.5)   # the engine watch is connected
        box = engine.containers.create(IMAGE, ['sleep', '1'], environment={'PROBE': box_secret},
                                       name='sweep-probe-%s' % uuid.uuid4().hex[:6])
        wait_for(lambda: len(probe.hits) >= 3, timeout=15)
    finally:
        sleeper.kill()
        sleeper.wait()
        probe.stop()
        if box is not None:
            box.remove(force=True)
    # Outside the session's temporary directory, which the session's own sweep reads at the end.
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix='drover-sweep-probe-'))
    (tmp_path / 'store.db').write_text('x' + file_secret)
    jit = tmp_path / 'jit'
    jit.mkdir()
    (jit / 'runner-1').write_text('readable by all')
    os.chmod(str(jit / 'runner-1'), 0o644)
    try:
        probe.files(str(tmp_path))
    finally:
        shutil.rmtree(str(tmp_path))
    text = '\n'.join(probe.hits)
    assert 'cmdline' in text and 'environ' in text, text
    assert 'docker inspect /sweep-probe-' in text, text
    assert str(tmp_path / 'store.db') in text and 'a JIT config file of mode 644' in text, text
    # Never the secret, nor a piece of it (each ends in 32 random hex digits: none of 6 of them in a row).
    secrets = (argv_secret, env_secret, box_secret, file_secret)
    assert not any(s[i:i + 6] in text for s in secrets for i in range(len(s) - 32, len(s) - 5)), text
    assert 'found' in probe.summary() and ': %d found' % len(probe.hits) in probe.summary()


def test_an_ecs_secret_may_live_in_its_own_container_s_environment_only(engine):
    """An ECS secret belongs in the environment of the container that asks for it: there (its inspect's Config.Env,
    its running process's environ) it is no hit; in another container's environment, or in its own container's
    labels, it is."""
    probe = Sweep()
    tag = uuid.uuid4().hex[:6]
    home, other = 'sweep-home-%s' % tag, 'sweep-other-%s' % tag
    in_env = probe.register('probe-ecs-env-%s' % uuid.uuid4().hex, home=home)
    in_label = probe.register('probe-ecs-label-%s' % uuid.uuid4().hex, home=home)
    probe.start()
    boxes = []
    try:
        time.sleep(1.5)   # the engine watch is connected
        boxes.append(engine.containers.run(IMAGE, ['sleep', '30'], environment={'S': in_env}, labels={'L': in_label},
                                           name=home, detach=True))
        pid = engine.api.inspect_container(home)['State']['Pid']
        boxes.append(engine.containers.create(IMAGE, ['sleep', '1'], environment={'S': in_env}, name=other))
        wait_for(lambda: len(probe.hits) >= 2, timeout=15)
        time.sleep(1)     # the process scan has read the home container's process a few times
    finally:
        probe.stop()
        for box in boxes:
            box.remove(force=True)
    text = '\n'.join(probe.hits)
    assert sorted(h.split(' (secret')[0] for h in probe.hits) == ['docker inspect /%s' % home, 'docker inspect /%s' % other], text
    assert 'secret no. 2' in [h for h in probe.hits if home in h][0] and 'process %d' % pid not in text, text
    assert probe.counts['process reads'] > 0 and probe.names, probe.summary()


def test_the_sweep_finds_a_secret_sent_to_syslog():
    # Sent as `logger` sends (its message from stdin: never on a command line), while the session's own
    # sweep already listens on /dev/log (or the host's syslog does): a second sweep gets every line too.
    probe = Sweep()
    secret = probe.register('probe-syslog-%s' % uuid.uuid4().hex)
    key = probe.register('-----BEGIN PROBE KEY-----\n%s\n-----END PROBE KEY-----' % uuid.uuid4().hex)
    probe.start()
    try:
        assert probe.syslog.mode in ('own', 'shared') or 'host' in probe.syslog.mode, probe.syslog.mode
        subprocess.run(['logger', '-t', 'drover-sweep-probe'], input=secret, text=True, check=True, timeout=30)
        # Nested in a logged argument, a key's newlines are written escaped: that form is a hit too.
        subprocess.run(['logger', '-t', 'drover-sweep-probe'], input=repr({'key': key}), text=True, check=True,
                       timeout=30)
        if probe.syslog.mode in ('own', 'shared'):
            wait_for(lambda: len([x for x in probe.syslog.since(0) if 'drover-sweep-probe' in x]) >= 2, timeout=10)
    finally:
        probe.stop()
    probe.logs()
    text = '\n'.join(probe.hits)
    assert len(probe.hits) == 2 and all(('syslog line' in h and '(drover-sweep-probe)' in h) or 'journal line' in h
                                        for h in probe.hits), text
    assert secret[-32:-26] not in text and key[-60:-54] not in text
    assert ' syslog lines (listener: ' in probe.summary() and ': 2 found' in probe.summary()


def test_syslog_listeners_of_sessions_at_once_share_and_hand_over(tmp_path):
    # Sessions at once, on a socket path of the test's own (not /dev/log): the first listens and forwards, the
    # second receives through the relay and gets the listening socket when the first ends; the last leaves
    # nothing.
    from sweep import SyslogTap
    path, relay = str(tmp_path / 'log'), str(tmp_path / 'relay')
    first, second = SyslogTap(path, relay), SyslogTap(path, relay)
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        first.start()
        second.start()
        assert (first.mode, second.mode) == ('own', 'shared')
        sender.sendto(b'<14>one', path)
        wait_for(lambda: second.since(0) == ['<14>one'] and first.since(0) == ['<14>one'], timeout=5)
        first.stop()                 # hands its socket on /dev/log over: nothing sent meanwhile is lost
        sender.sendto(b'<14>two', path)
        wait_for(lambda: second.since(0) == ['<14>one', '<14>two'], timeout=5)
        assert second.mode == 'own' and first.since(0) == ['<14>one']
        third = SyslogTap(path, relay)
        third.start()                # a third session, to which the second hands over in turn
        assert third.mode == 'shared'
        second.stop()
        sender.sendto(b'<14>three', path)
        wait_for(lambda: third.since(0) == ['<14>three'], timeout=5)
        third.stop()
    finally:
        sender.close()
        first.stop()
        second.stop()
    assert not os.path.exists(path) and not os.path.exists(relay)
    # A socket of someone else's there, with no listener: never removed, nothing received.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()
    fourth = SyslogTap(path, relay)
    fourth.start()
    fourth.stop()
    assert fourth.mode.startswith('none') and os.path.exists(path)
    os.unlink(path)


def test_the_sweep_reads_the_journal_where_journald_runs(tmp_path, monkeypatch):
    import sweep
    secret = 'probe-journal-%s' % uuid.uuid4().hex
    tools = tmp_path / 'bin'
    tools.mkdir()
    (tools / 'journalctl').write_text('#!/bin/sh\necho "$@" > %s\necho "Dec 03 x: a line"\necho "x %s"\n'
                                      % (tmp_path / 'asked', secret))
    os.chmod(str(tools / 'journalctl'), 0o755)
    (tmp_path / 'socket').write_text('')
    monkeypatch.setattr(sweep, 'JOURNAL_SOCKET', str(tmp_path / 'socket'))
    monkeypatch.setenv('PATH', '%s:%s' % (tools, os.environ['PATH']))
    probe = Sweep()
    probe.register(secret)
    probe.started = 1000000000
    probe.logs()
    assert probe.hits == ['journal line 2 (secret no. 1, %d characters)' % len(secret)]
    assert '--since @1000000000' in (tmp_path / 'asked').read_text()
    assert '2 journal lines (read)' in probe.summary()
