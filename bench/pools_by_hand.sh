#!/usr/bin/env bash
# The anchor of the bench's pools group: the listings a runner-pool pass with nothing to do needs, made by
# hand, one pool after the other. Per pool: the engine's listing of the pool's containers
# (`docker ps -a --filter label=drover.pool=<pool>`), GitHub's listing of the repository's runners and its
# listing of queued workflow runs (curl, with the token). Nothing is decided and nothing is changed.
#
#   BENCH_GH_URL=http://127.0.0.1:PORT BENCH_GH_TOKEN=T bench/pools_by_hand.sh POOL=OWNER/REPO ...
#
# The token goes to curl on its standard input (-H @-), never on a command line. Every listing must
# answer (curl -f, set -e); its output goes to standard output (the bench's log).
set -euo pipefail
: "${BENCH_GH_URL:?the GitHub API URL}" "${BENCH_GH_TOKEN:?the token}"
[ $# -gt 0 ] || { echo "usage: $0 POOL=OWNER/REPO ..." >&2; exit 2; }

gh_get() {
  printf 'Authorization: Bearer %s\nAccept: application/vnd.github+json\n' "$BENCH_GH_TOKEN" |
    curl -sS -f -H @- "$BENCH_GH_URL$1"
  echo
}

for arg in "$@"; do
  pool=${arg%%=*}
  repo=${arg#*=}
  docker ps -a --filter "label=drover.pool=$pool" --format '{{.ID}} {{.Names}} {{.State}}'
  gh_get "/repos/$repo/actions/runners?per_page=100"
  gh_get "/repos/$repo/actions/runs?status=queued&per_page=100"
done
