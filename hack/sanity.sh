#!/usr/bin/env bash
# Run `ansible-test sanity` for the drover.fleet collection on this machine (no containers).
#
#   VENV=.venv hack/sanity.sh [extra ansible-test sanity options, e.g. --test pep8]
#
# ansible-test only runs from inside ansible_collections/<namespace>/<name>/ as a real path, and only
# sees files git knows.  So this script copies the files this repository's git knows (tracked, plus
# untracked files that are not ignored) into collection/ansible_collections/drover/fleet/ (ignored by
# .gitignore), makes that copy its own throwaway git repository, and runs ansible-test there.
# Results land in collection/ansible_collections/drover/fleet/tests/output/ until the next run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VENV=${VENV:-.venv}
case $VENV in /*) ;; *) VENV=$ROOT/$VENV ;; esac
PY=$VENV/bin/python
ANSIBLE_TEST=$VENV/bin/ansible-test
[ -x "$ANSIBLE_TEST" ] || { echo "sanity: $ANSIBLE_TEST not found (create the venv first, e.g. make venv)" >&2; exit 1; }

NAMESPACE=drover
NAME=fleet
DEST=${ROOT:?}/collection/ansible_collections/$NAMESPACE/$NAME

# --- 1. Assemble the collection copy --------------------------------------------------------------
# Start from scratch each run so files deleted or renamed in the repository do not linger.
rm -rf -- "${DEST:?}"
mkdir -p -- "$DEST"

# Paths relative to ROOT; never copy the copy itself or the venv, even where .gitignore lacks them.
venv_rel=${VENV#"$ROOT"/}
(
  cd "$ROOT"
  git ls-files -z -co --exclude-standard |
    while IFS= read -r -d '' f; do
      case $f in
        collection/*|"$venv_rel"/*) continue ;;
        # The Salt extension and its suite are not part of the collection (galaxy.yml's build_ignore).
        salt/*|tests/salt/*|.venv-salt/*) continue ;;
      esac
      # Tracked but deleted in the work tree: nothing to copy.
      [ -e "$f" ] || [ -L "$f" ] || continue
      printf '%s\0' "$f"
    done |
    xargs -0 --no-run-if-empty cp -a --parents -t "$DEST" --
)

git_local() {
  git -C "$DEST" -c user.name='drover sanity' -c user.email='sanity@drover.invalid' \
    -c commit.gpgsign=false -c init.defaultBranch=main -c core.hooksPath=/dev/null "$@"
}
git_local init -q
git_local add -A
git_local commit -q --no-verify -m 'sanity snapshot'
echo "sanity: $(git_local ls-files | wc -l) files copied to ${DEST#"$ROOT"/}"

# --- 2. Offline stand-in for get-pip.py --------------------------------------------------------------
# ansible-test creates each sanity venv without pip, then runs get-pip.py, which it downloads from
# https://ci-files.testing.ansible.com/ansible-test/get-pip-<pip version>.py unless it is cached at
# ~/.ansible/test/cache/get_pip_<pip version with _ for .>.py (ansible_test/_util/target/setup/
# requirements.py, bootstrap()).  That host is unreachable here, so cache hack/get_pip_standin.py
# under that name (get_pip_24_2.py for ansible-core 2.19).  The version comes from the installed
# ansible-test so an upgrade cannot leave the stand-in under a stale name.
pip_version=$(cd / && "$PY" - <<'EOF'
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version='3.11'))['pip'])
EOF
)
cache_dir=${HOME:?}/.ansible/test/cache
mkdir -p -- "$cache_dir"
install -m 0644 "$ROOT/hack/get_pip_standin.py" "$cache_dir/get_pip_${pip_version//./_}.py"

# --- 3. shellcheck ----------------------------------------------------------------------------------
# The shellcheck sanity test needs the shellcheck program; without it ansible-test only warns
# 'Required program "shellcheck" not found.' and skips the test.  Install Debian's package if we can.
if ! command -v shellcheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sanity: installing shellcheck from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq shellcheck >/dev/null 2>&1 ||
      { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; } ||
      echo "sanity: WARNING: could not install shellcheck; the shellcheck sanity test will be skipped" >&2
  else
    echo "sanity: WARNING: shellcheck is not installed; the shellcheck sanity test will be skipped" >&2
  fi
fi

# --- 4. Run the sanity tests -------------------------------------------------------------------------
export PATH=$VENV/bin:$PATH
cd "$DEST"
start=$SECONDS
status=0
"$ANSIBLE_TEST" sanity --python 3.11 --color no --requirements "$@" || status=$?
echo "sanity: ansible-test finished with status $status after $((SECONDS - start))s (output: ${DEST#"$ROOT"/}/tests/output/)"
exit "$status"
