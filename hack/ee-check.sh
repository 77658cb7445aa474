#!/usr/bin/env bash
# `make ee`: what an execution environment gets of drover.fleet, as ansible-builder reads it (offline).
#  - `ansible-builder introspect` of the collection lists its Python and system requirements: every Python one must be
#    a line of requirements-runtime.txt, and none a test tool of requirements.txt's;
#  - `ansible-builder create` makes the build context of an EE definition that installs the collection (a tarball
#    built here), as docs/awx.md shows one, without error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${VENV:-$root/.venv}
work=$(mktemp -d /tmp/drover-ee.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$venv/bin/ansible-builder" introspect "$root/collection/dev" > "$work/introspect.yml"
"$venv/bin/python" - "$work/introspect.yml" "$root/requirements-runtime.txt" "$root/requirements.txt" <<'PY'
import re
import sys

import yaml

found, runtime_file, all_file = sys.argv[1:]


def names(path):
    out = set()
    for line in open(path):
        line = line.split('#')[0].strip()
        if line and not line.startswith('-'):
            out.add(re.split(r'[<>=!\[ ;]', line, maxsplit=1)[0].lower())
    return out


data = yaml.safe_load(open(found)) or {}
python = set(re.split(r'[<>=!\[ ;]', entry.split('#')[0].strip(), maxsplit=1)[0].lower()
             for entry in data.get('python') or ())
runtime = names(runtime_file)
tools = names(all_file) - runtime - {'ansible-core'}
problems = []
if python != runtime:
    problems.append('ansible-builder reads %s, requirements-runtime.txt has %s' % (sorted(python), sorted(runtime)))
if python & tools:
    problems.append('test tools in the EE: %s' % sorted(python & tools))
if not data.get('system'):
    problems.append('no system requirements (bindep.txt)')
if problems:
    sys.exit('ee: ' + '; '.join(problems))
print('ee: the EE gets %d Python libraries (%s) and %d system packages, no test tool'
      % (len(python), ', '.join(sorted(python)), len(data['system'])))
PY

"$venv/bin/ansible-galaxy" collection build --output-path "$work/dist" "$root" >/dev/null
tarball=$(find "$work/dist" -name 'drover-fleet-*.tar.gz' | head -1)
cat > "$work/execution-environment.yml" <<DEF
version: 3
images:
  base_image:
    name: quay.io/centos/centos:stream9
dependencies:
  ansible_core:
    package_pip: ansible-core>=2.19,<2.20
  ansible_runner:
    package_pip: ansible-runner
  galaxy:
    collections:
      - name: $tarball
        type: file
DEF
"$venv/bin/ansible-builder" create -f "$work/execution-environment.yml" -c "$work/context" >/dev/null
if ! { [ -f "$work/context/Containerfile" ] || [ -f "$work/context/Dockerfile" ]; } ||
   ! grep -q "$(basename "$tarball")" "$work/context/_build/requirements.yml"; then
  echo "ee: ansible-builder create made no build context" >&2
  exit 1
fi
echo "ee: ansible-builder create made the build context of $(basename "$tarball")"
