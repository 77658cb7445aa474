#!/usr/bin/env bash
# Start a local authenticated registry for the tests and push the busybox test image to it. Idempotent.
#   hack/registry.sh        start (if not answering yet) and push drover.local/busybox:1 as
#                           127.0.0.1:$PORT/drover/busybox:1 (skipped when the registry already holds it)
#   hack/registry.sh stop   kill the registry this script started (by its pid file)
#   hack/registry.sh status exit 0 when a registry runs (this script's, by its pid file) or answers on the port
# Debian's docker-registry (distribution v2) serves plain HTTP with htpasswd (bcrypt) basic auth on
# 127.0.0.1 only; the engine treats 127.0.0.0/8 as an insecure registry by default, so no TLS is needed.
# No init system runs here: the registry runs in its own session (setsid), logging into the state dir.
set -euo pipefail
PORT=${DROVER_REGISTRY_PORT:-5000}
DIR=${DROVER_REGISTRY_DIR:-/var/lib/drover-test-registry}
USER_NAME=${DROVER_REGISTRY_USER:-drover}
PASSWORD=${DROVER_REGISTRY_PASSWORD:-drover-test-pw}
ECR_PASSWORD=${DROVER_REGISTRY_ECR_PASSWORD:-123456789012-auth-token}
IMAGE=${DROVER_BUSYBOX_IMAGE:-drover.local/busybox:1}
HOST=127.0.0.1:$PORT
REMOTE=$HOST/drover/busybox:1
PIDFILE=$DIR/registry.pid
LOG=$DIR/registry.log
CONFIG=$DIR/config.yml
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

status_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$HOST/v2/" 2>/dev/null || true; }

# The pid in the pid file, when it is a live docker-registry process (guards against a reused pid).
our_pid() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'docker-registry' || return 1
  echo "$pid"
}

stop() {
  local pid
  if pid=$(our_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null || true
      sleep 0.2
    fi
    rm -f "$PIDFILE"
    echo "registry: stopped (pid $pid)"
  else
    rm -f "$PIDFILE"
    echo "registry: not running"
  fi
}

status() {
  local pid
  if pid=$(our_pid); then
    echo "registry: running (pid $pid)"
  elif [ "$(status_code)" = 401 ]; then
    echo "registry: answering on $HOST"
  else
    echo "registry: not running"
    return 1
  fi
}

case "${1:-start}" in
  stop) stop; exit 0 ;;
  status) status; exit $? ;;
  start) ;;
  *) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac

# --- start -----------------------------------------------------------------------------------------
missing=()
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "registry: installing ${missing[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  # Where policy-rc.d does not forbid it, the package's init script may have started the Debian
  # service on :5000 (all addresses, its own config); stop it so only ours runs.
  if [ -f /var/run/docker-registry.pid ] && kill -0 "$(cat /var/run/docker-registry.pid)" 2>/dev/null; then
    /etc/init.d/docker-registry stop >/dev/null 2>&1 || true
  fi
fi
REGISTRY_BIN=$(command -v docker-registry 2>/dev/null || echo /usr/bin/docker-registry)

code=$(status_code)
# A registry started before the ECR user was added: start it again with the new htpasswd.
if [ "$code" = 401 ] && ! grep -q '^AWS:' "$DIR/htpasswd" 2>/dev/null; then
  stop
  code=$(status_code)
fi
if [ "$code" = 401 ]; then
  echo "registry: answering on $HOST"
elif [ "$code" != 000 ]; then
  echo "registry: something else answers on $HOST (GET /v2/ -> HTTP $code), not an authenticated registry" >&2
  exit 1
else
  mkdir -p "$DIR/data"
  chmod 700 "$DIR"
  htpasswd -Bbc "$DIR/htpasswd" "$USER_NAME" "$PASSWORD" >/dev/null 2>&1
  # The user and password of the ECR authorization token that moto (tests' STS and ECR) issues for the
  # account 123456789012: an ECR pull in the tests authenticates with exactly that token.
  htpasswd -Bb "$DIR/htpasswd" AWS "$ECR_PASSWORD" >/dev/null 2>&1
  [ -s "$DIR/http-secret" ] || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/http-secret"
  cat > "$CONFIG" <<EOF
version: 0.1
log:
  level: info
  fields:
    service: drover-test-registry
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: $HOST
  secret: $(cat "$DIR/http-secret")
  headers:
    X-Content-Type-Options: [nosniff]
auth:
  htpasswd:
    realm: drover-test-registry
    path: $DIR/htpasswd
EOF
  # A stale pid file from a registry that died, or one that no longer answers: clear it first.
  if pid=$(our_pid); then kill "$pid" 2>/dev/null || true; sleep 0.5; fi
  rm -f "$PIDFILE"
  # sh writes its own pid, then execs the registry in place: the pid file names the registry itself.
  # shellcheck disable=SC2016 # the single quotes are meant: the inner sh expands its own arguments
  setsid sh -c 'echo $$ > "$1"; exec "$2" serve "$3"' registry "$PIDFILE" "$REGISTRY_BIN" "$CONFIG" \
    >>"$LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 150); do
    [ "$(status_code)" = 401 ] && break
    sleep 0.2
  done
  if [ "$(status_code)" != 401 ]; then
    echo "registry: did not answer 401 on http://$HOST/v2/ within 30 s; last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  echo "registry: started on $HOST (pid $(cat "$PIDFILE"), state in $DIR)"
fi

# --- the runner pools' registry mirror image (gh_runner_slot's mirror), from the binary installed above -----
MIRROR_IMAGE=${DROVER_REGISTRY_IMAGE:-drover.local/registry:1}
if ! docker image inspect "$MIRROR_IMAGE" >/dev/null 2>&1; then
  docker image inspect drover.local/busybox:1 >/dev/null 2>&1 || "$HERE/images.sh"
  sh "$HERE/../roles/host/files/registry_image.sh" "$MIRROR_IMAGE" drover.local/busybox:1 "$REGISTRY_BIN"
fi

# --- push ------------------------------------------------------------------------------------------
docker image inspect "$IMAGE" >/dev/null 2>&1 || "$HERE/images.sh"
local_id=$(docker image inspect --format '{{.Id}}' "$IMAGE")
# The config digest of a v2 manifest is the image id: skip the push when the registry holds this image.
remote_id=$(curl -s --max-time 10 -u "$USER_NAME:$PASSWORD" \
  -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
  "http://$HOST/v2/drover/busybox/manifests/1" 2>/dev/null \
  | tr -d ' \n' | grep -o '"config":{[^}]*}' | grep -o 'sha256:[0-9a-f]*' | head -n 1 || true)
if [ "$remote_id" = "$local_id" ]; then
  echo "registry: $REMOTE present"
  exit 0
fi
# Log in with a throwaway client config, so no credentials land in /root/.docker/config.json even
# when a step fails; log out and drop it (and the local tag, so tests really pull) on any exit.
DOCKER_CONFIG=$(mktemp -d)
export DOCKER_CONFIG
cleanup() {
  docker logout "$HOST" >/dev/null 2>&1 || true
  rm -rf "$DOCKER_CONFIG"
  docker image rm "$REMOTE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
printf '%s' "$PASSWORD" | docker login --username "$USER_NAME" --password-stdin "$HOST" >/dev/null 2>&1 \
  || { echo "registry: docker login to $HOST as $USER_NAME failed (a registry started with other" \
            "credentials? run '$0 stop' and start again)" >&2; exit 1; }
docker tag "$IMAGE" "$REMOTE"
docker push "$REMOTE" >/dev/null
echo "registry: pushed $IMAGE as $REMOTE"
