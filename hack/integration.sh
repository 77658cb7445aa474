#!/usr/bin/env bash
# The integration suite (tests/integration) in a few pytest sessions at once, each over a group of its files, one
# test at a time within a group; then the files that must run alone. Used by `make integration` (and so `make test`).
#
#   PY=.venv/bin/python hack/integration.sh [pytest options, e.g. -k web or --durations=20]
#
# Why these groups: tasks share what no test can scope to itself - a container's name is its task's and
# container's (`web-main`, whatever the cluster), the network namespaces and filter rules made while a test runs
# (the netns_cleanup fixture), the credentials endpoint's address and NAT rules, the host role's units; runner pools
# share the slot users, their subordinate ID ranges and /var/lib/drover-slots; the simulated hosts run on engines of
# their own. So: the runner pools' files in one session, the simulated hosts' in another, every other file in the
# tasks' session. ALONE runs afterwards, with nothing else running: it restarts the engine, or takes syslog's socket
# over. Each session sweeps for its own tests' secrets (tests/sweep.py: the sessions share one syslog listener).
# A session's output is printed whole once it ends, so the groups' lines never interleave; the exit status is the
# first failing session's, or 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
PY=${PY:-$ROOT/.venv/bin/python}
cd "$ROOT" || exit 2

# (test_pool_gpus.py and test_pool_metrics.py converge tasks too - `train`, `web` - so they are the tasks' files)
POOLS=(test_gh_runner_pools.py test_gh_runner_slot.py test_pool_caches.py test_pool_docker.py test_pool_jobs.py test_pool_mirror.py
       test_pool_records.py test_pools_webhook.py test_slot_attacks.py)
FLEET=(test_services.py test_service_deploy.py test_fleet_engines.py)
ALONE=(test_engine_restart.py test_sweep.py)

in_list() {
  local needle=$1
  shift
  local item
  for item in "$@"; do [ "$item" = "$needle" ] && return 0; done
  return 1
}

pools=() fleet=() tasks=() alone=()
for path in tests/integration/test_*.py; do
  name=${path##*/}
  if in_list "$name" "${POOLS[@]}"; then pools+=("$path")
  elif in_list "$name" "${FLEET[@]}"; then fleet+=("$path")
  elif in_list "$name" "${ALONE[@]}"; then alone+=("$path")
  else tasks+=("$path")
  fi
done
# A file named in a group that is not there is a group gone stale: say so rather than run less.
for name in "${POOLS[@]}" "${FLEET[@]}" "${ALONE[@]}"; do
  [ -e "tests/integration/$name" ] || { echo "integration: tests/integration/$name is named in $0 but missing" >&2; exit 2; }
done

logs=$(mktemp -d /tmp/drover-integration.XXXXXX)
trap 'rm -rf "$logs"' EXIT
pids=() groups=()
start() {
  local group=$1
  shift
  "$PY" -m pytest -q -p no:cacheprovider "$@" >"$logs/$group.log" 2>&1 &
  pids+=("$!")
  groups+=("$group")
}
start tasks "${tasks[@]}" "$@"
start pools "${pools[@]}" "$@"
start fleet "${fleet[@]}" "$@"

rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  status=$?
  # 5: the options chose no test of that group (`-k`): not a failure
  [ "$status" = 5 ] && status=0
  echo "=== integration, ${groups[$i]} (exit $status) ==="
  cat "$logs/${groups[$i]}.log"
  [ "$rc" = 0 ] && [ "$status" != 0 ] && rc=$status
done

echo "=== integration, alone: ${alone[*]##*/} ==="
"$PY" -m pytest -q -p no:cacheprovider "${alone[@]}" "$@"
status=$?
[ "$status" = 5 ] && status=0
[ "$rc" = 0 ] && rc=$status
exit "$rc"
