#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's docker.io when no dockerd is
# installed, start one when none answers, wait until it does. Idempotent; prints one line.
# The test engine's bridge takes its addresses from 198.18.0.0/15 (reserved for network tests), and so do the
# networks it makes (the runner pools' own network): from 198.19.240.0/20, a /24 each.
set -euo pipefail
BIP=${DROVER_ENGINE_BIP:-198.18.0.1/24}
POOL=${DROVER_ENGINE_ADDRESS_POOL:-base=198.19.240.0/20,size=24}
LOG=${DROVER_ENGINE_LOG:-/var/log/drover-dockerd.log}

answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if answers; then
  echo "engine: answering ($(docker version --format '{{.Server.Version}}'))"
  exit 0
fi
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
if [ ${#missing[@]} -gt 0 ]; then
  echo "engine: installing docker.io from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi
if ! answers; then
  # No init system starts services here: run dockerd in its own session so it outlives this shell.
  setsid dockerd --bip "$BIP" --default-address-pool "$POOL" >>"$LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    answers && break
    sleep 1
  done
fi
if ! answers; then
  echo "engine: dockerd did not answer within 60 s; last lines of $LOG:" >&2
  tail -n 20 "$LOG" >&2 || true
  exit 1
fi
echo "engine: started ($(docker version --format '{{.Server.Version}}'))"
