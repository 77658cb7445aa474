#!/usr/bin/env bash
# `make bench`: the modules against their anchors, measured side by side in one run (see bench/README.md).
# `make bench` first runs `make setup` (venv, engine, images, the stand-in's OpenAPI description, collection
# link); run alone, this script expects those and makes only the anchor venv (bench/.venv-anchor: the full
# `ansible` package, for community.docker; only when the ecs group runs). Settings: BENCH_GROUPS (ecs,
# awsvpc, pools: all; creds with all; load, pickup, td, salt and fleet only when named), BENCH_REPEAT (5), BENCH_WARMUP (1), BENCH_COUNT (20), BENCH_WORKDIR (/tmp/drover-bench),
# BENCH_CALLS (1), BENCH_SETTLE (0.5), BENCH_POOLS (10), BENCH_SLOTS (4); results in
# bench/results/latest.{json,md}. The awsvpc and pools groups need root.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
ANCHOR=${BENCH_ANCHOR_VENV:-$ROOT/bench/.venv-anchor}
export VENV BENCH_ANCHOR_VENV=$ANCHOR
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$ROOT/collection/dev}

if [ ! -x "$VENV/bin/python" ] || [ ! -x "$VENV/bin/ansible-playbook" ]; then
  echo "bench: no project venv at $VENV: run \`make bench\` (or \`make setup\`) first" >&2
  exit 1
fi
if [ ! -d "$ANSIBLE_COLLECTIONS_PATH/ansible_collections/drover/fleet/plugins" ]; then
  echo "bench: drover.fleet is not linked under $ANSIBLE_COLLECTIONS_PATH: run \`make collection\`" >&2
  exit 1
fi

# The anchor venv, on the same base interpreter as the project venv, so both sides run one Python.
REQS=$ROOT/bench/requirements-anchor.txt
case " ${BENCH_GROUPS:-all} " in
  *" all "* | *ecs*) want_anchor=1 ;;
  *) want_anchor=0 ;;
esac
if [ "$want_anchor" = 1 ] && { [ ! -f "$ANCHOR/.installed" ] || [ "$REQS" -nt "$ANCHOR/.installed" ]; }; then
  BASE_PY=$(readlink -f "$VENV/bin/python")
  echo "bench: making the anchor venv $ANCHOR (ansible with community.docker, docker SDK) from $BASE_PY"
  test -x "$ANCHOR/bin/python" || "$BASE_PY" -m venv "$ANCHOR"
  "$ANCHOR/bin/python" -m pip install -q --upgrade pip
  "$ANCHOR/bin/python" -m pip install -q -r "$REQS"
  touch "$ANCHOR/.installed"
fi

# The creds group (the credentials endpoint) is bench/credentials.py and the load group bench/load.py,
# scripts of their own; the other groups are bench.py's.
groups=" ${BENCH_GROUPS:-all} "
groups=${groups//,/ }
rest=()
for g in $groups; do
  case $g in
    creds | load | pickup | td | salt | fleet) ;;
    all) rest+=(ecs awsvpc pools) ;;
    *) rest+=("$g") ;;
  esac
done
case "$groups" in *" all "* | *" creds "*) want_creds=1 ;; *) want_creds=0 ;; esac
if [ ${#rest[@]} -gt 0 ]; then
  BENCH_GROUPS="${rest[*]}" "$VENV/bin/python" "$ROOT/bench/bench.py" "$@"
fi
if [ "$want_creds" = 1 ]; then
  mkdir -p "$ROOT/bench/results"
  "$VENV/bin/python" "$ROOT/bench/credentials.py" --json "$ROOT/bench/results/credentials.json"
fi
# pickup (job pickup latency, timer against webhook-triggered passes) runs only when named: BENCH_GROUPS=pickup
case "$groups" in *" pickup "*)
  mkdir -p "$ROOT/bench/results"
  "$VENV/bin/python" "$ROOT/bench/pickup.py" --json "$ROOT/bench/results/pickup.json" ;;
esac
# td (20 task definitions of ~15 fields against 20 plain tasks, no-op passes) runs only when named: BENCH_GROUPS=td
case "$groups" in *" td "*)
  mkdir -p "$ROOT/bench/results"
  "$VENV/bin/python" "$ROOT/bench/td.py" --json "$ROOT/bench/results/td.json" ;;
esac
# salt (a no-op salt-call state.apply of 20 tasks against test.ping) runs only when named: BENCH_GROUPS=salt
case "$groups" in *" salt "*)
  mkdir -p "$ROOT/bench/results"
  test -x "$ROOT/.venv-salt/bin/salt-call" || make -C "$ROOT" salt-venv
  "$VENV/bin/python" "$ROOT/bench/salt.py" --json "$ROOT/bench/results/salt.json" ;;
esac
# load (200 tasks, 10 pools) runs only when named: BENCH_GROUPS=load
case "$groups" in *" load "*)
  mkdir -p "$ROOT/bench/results"
  "$VENV/bin/python" "$ROOT/bench/load.py" --json "$ROOT/bench/results/load.json" ;;
esac
# fleet (N simulated hosts, each a dockerd of its own, converged and reconciled by the playbooks) runs only when
# named: BENCH_GROUPS=fleet; bench/fleet.py --profile profiles one host's pass per role task
case "$groups" in *" fleet "*)
  mkdir -p "$ROOT/bench/results"
  "$VENV/bin/python" "$ROOT/bench/fleet.py" --json "$ROOT/bench/results/fleet.json" ;;
esac
