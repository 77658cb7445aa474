# -*- coding: utf-8 -*-
"""The secret sweep (tests/sweep.py) finds what it is there to find: a secret on a process's command line or
in its environment, in a container's configuration, in a file, and a JIT config file that others may read.
A Sweep of its own, with secrets the session's sweep does not know."""

from __future__ import absolute_import, division, print_function

import os
import pathlib
import shutil
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
