#!/usr/bin/env bash
# Start, stop or look at a GitHub stand-in (tests/fixtures/github_standin) that runs in the background,
# for the runner-pool demo (`make demo`) and the molecule scenario extensions/molecule/runners.
#
#   hack/standin.sh start  --port N [--token T] [--repo owner/name]...   start it (or find it running), wait until it answers
#   hack/standin.sh stop   --port N                                      stop it; fails when it saw OpenAPI violations
#   hack/standin.sh status --port N                                      0 when it runs and answers, else 1
#
# The stand-in serves http://127.0.0.1:N; its pid file and log are /tmp/drover-standin-N.pid and .log
# (--pidfile, --log); `stop` removes the log when the stand-in saw no violations. It runs in a session of
# its own (setsid), so it outlives the shell that started it.
# `start` is idempotent: a stand-in of this script already serving the port with the same token and
# repositories is kept as it is (its state too); one started with other arguments is stopped and replaced.
# Python: $DROVER_PYTHON, else the repository's .venv, else python3 (it needs requirements.txt installed,
# and @octokit/openapi from `make standin-deps`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
action=${1:-}
[ $# -gt 0 ] && shift
port='' token=test-token pidfile='' log='' repos=()
while [ $# -gt 0 ]; do
  case $1 in
    --port) port=$2; shift 2 ;;
    --token) token=$2; shift 2 ;;
    --repo) repos+=("$2"); shift 2 ;;
    --pidfile) pidfile=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    *) echo "standin: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $action in start | stop | status) ;; *)
  echo "usage: $0 start|stop|status --port N [--token T] [--repo owner/name]... [--pidfile F] [--log F]" >&2
  exit 2 ;;
esac
[[ $port =~ ^[0-9]+$ ]] || { echo "standin: --port N is required" >&2; exit 2; }
pidfile=${pidfile:-/tmp/drover-standin-$port.pid}
log=${log:-/tmp/drover-standin-$port.log}
url=http://127.0.0.1:$port
if [ -n "${DROVER_PYTHON:-}" ]; then
  py=$DROVER_PYTHON
elif [ -x "$root/.venv/bin/python" ]; then
  py=$root/.venv/bin/python
else
  py=python3
fi

# the stand-in's pid from the pid file, when that process is alive and is a stand-in on this port
our_pid() {
  local pid cmd
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)
  [[ $cmd == *github_standin.server*" --port $port "* ]] || return 1
  echo "$pid"
}

answers() {
  curl -fsS -m 2 -o /dev/null "$url/_standin/state" 2>/dev/null
}

wanted_cmd() {
  local r
  printf '%s' "-m github_standin.server --port $port --token $token"
  for r in "${repos[@]}"; do printf ' --repo %s' "$r"; done
}

stop_it() {   # $1: pid; TERM, then KILL after 10 s
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "standin: $pid did not stop on SIGTERM; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

case $action in
  status)
    if pid=$(our_pid) && answers; then
      echo "standin: running at $url (pid $pid)"
      exit 0
    fi
    echo "standin: not running on port $port"
    exit 1
    ;;

  start)
    if pid=$(our_pid); then
      cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline")
      if [[ "$cmd " == *" $(wanted_cmd) "* ]] && answers; then
        echo "standin: already running at $url (pid $pid)"
        exit 0
      fi
      echo "standin: replacing the stand-in on port $port (pid $pid): other arguments, or it does not answer"
      stop_it "$pid"
    fi
    rm -f "$pidfile"
    if answers || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "standin: port $port is taken by something else; pick another port" >&2
      exit 1
    fi
    args=(-m github_standin.server --port "$port" --token "$token")
    for r in "${repos[@]}"; do args+=(--repo "$r"); done
    # the child writes its own pid, then becomes the stand-in: the pid file names the server itself
    # shellcheck disable=SC2016 # $$, $0 and $@ are the child shell's
    (
      cd "$root"
      PYTHONPATH="$root/tests/fixtures${PYTHONPATH:+:$PYTHONPATH}" \
        setsid sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$py" "${args[@]}" \
        < /dev/null > "$log" 2>&1 &
    )
    for i in $(seq 300); do
      if answers; then
        echo "standin: started at $url (pid $(cat "$pidfile")), log $log"
        exit 0
      fi
      if [ "$i" -gt 5 ] && ! our_pid > /dev/null; then
        break
      fi
      sleep 0.1
    done
    echo "standin: the stand-in did not come up on port $port; its log ($log):" >&2
    cat "$log" >&2 || true
    if pid=$(our_pid); then stop_it "$pid"; fi
    rm -f "$pidfile"
    exit 1
    ;;

  stop)
    if ! pid=$(our_pid); then
      rm -f "$pidfile"
      echo "standin: not running on port $port"
      exit 0
    fi
    violations=$(curl -fsS -m 5 "$url/_standin/violations" 2>/dev/null || echo '?')
    stop_it "$pid"
    rm -f "$pidfile"
    case $violations in
      '[]')
        rm -f "$log"
        echo "standin: stopped (pid $pid); no OpenAPI violations"
        ;;
      '?')
        echo "standin: stopped (pid $pid); its violations could not be read, see $log" >&2
        exit 1
        ;;
      *)
        echo "standin: stopped (pid $pid); it saw OpenAPI violations:" >&2
        printf '%s\n' "$violations" | "$py" -c 'import json, sys; [print("  " + v) for v in json.load(sys.stdin)]' >&2 ||
          printf '%s\n' "$violations" >&2
        exit 1
        ;;
    esac
    ;;
esac
