"""Offline stand-in for the get-pip.py that ansible-test downloads to bootstrap pip.

ansible-test builds each sanity test's virtual environment without pip, then runs
~/.ansible/test/cache/get_pip_<version>.py (fetching it from ci-files.testing.ansible.com
when it is not cached) as __main__, with pip install arguments such as
``--disable-pip-version-check pip==24.2 --no-setuptools --no-wheel``, in a stripped environment.
That host is not reachable here, so hack/sanity.sh copies this file to the cache path.

What it does instead:
1. ``python -m ensurepip --upgrade`` in a child process.  ensurepip sets PIP_CONFIG_FILE to
   os.devnull in its own process, which would hide /etc/pip.conf (the CA bundle) and the
   configured index from a later pip run in the same process.
2. ``python -m pip install <the remaining arguments>`` in another child process, which reads
   pip's normal configuration and so reaches the configured index.
3. With --no-setuptools / --no-wheel: uninstall setuptools / wheel again where ensurepip
   (Python < 3.12 bundles setuptools) added them, so the venv matches what get-pip.py leaves.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

# get-pip.py options that ``pip install`` does not accept, and the package each one keeps out.
GET_PIP_ONLY_FLAGS = {
    '--no-setuptools': 'setuptools',
    '--no-wheel': 'wheel',
}


def installed(name: str) -> bool:
    """Whether the distribution is installed for this interpreter."""
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def run(cmd: list[str], env: dict[str, str]) -> None:
    """Run cmd quietly; show its output and exit with its status when it fails."""
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    if proc.returncode:
        sys.stdout.flush()
        sys.stderr.write(proc.stdout.decode('utf-8', 'replace'))
        sys.stderr.write('get_pip stand-in: command failed with status %d: %s\n'
                         % (proc.returncode, ' '.join(cmd)))
        sys.exit(proc.returncode)


def main() -> None:
    """Bootstrap pip with ensurepip, then install the requested packages with it."""
    argv = sys.argv[1:]
    args = [arg for arg in argv if arg not in GET_PIP_ONLY_FLAGS]
    unwanted = [pkg for flag, pkg in GET_PIP_ONLY_FLAGS.items() if flag in argv and not installed(pkg)]

    env = dict(os.environ)
    # quiet_pip.py reads GET_PIP; pip itself must not see it.
    env.pop('GET_PIP', None)
    # ensurepip's own PIP_CONFIG_FILE override must not leak in from anywhere.
    if env.get('PIP_CONFIG_FILE') == os.devnull:
        env.pop('PIP_CONFIG_FILE')

    run([sys.executable, '-m', 'ensurepip', '--upgrade'], env)

    if any(not arg.startswith('-') for arg in args):
        run([sys.executable, '-m', 'pip', 'install'] + args, env)

    requested = ' '.join(args).lower()
    unwanted = [pkg for pkg in unwanted if installed(pkg) and pkg not in requested]
    if unwanted:
        run([sys.executable, '-m', 'pip', 'uninstall', '--yes', '--disable-pip-version-check'] + unwanted, env)

    proc = subprocess.run([sys.executable, '-m', 'pip', '--version'], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=False)
    print('get_pip stand-in: %s' % proc.stdout.decode('utf-8', 'replace').strip())


if __name__ == '__main__':
    main()
