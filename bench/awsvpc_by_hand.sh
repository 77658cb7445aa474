#!/usr/bin/env bash
# The anchor of the bench's awsvpc group: an awsvpc task made and torn down by hand, with iproute2 and the
# docker CLI, the way the issue describes it (ip netns + ip link set netns + docker run --network container:).
# It does what drover.fleet.ecs_task does for one awsvpc task with one container, and nothing more: no
# store, no checks of what the host already shows, no rollback.
#
#   bench/awsvpc_by_hand.sh up     holder container (no network), its netns attached as a named netns, the
#                                  ENI (found by its MAC) moved in, lo and the ENI up, the address, the
#                                  default route, the credential veth on the lowest free /30 of 169.254.0.0/16
#                                  with the route to 169.254.170.2/32, then the task's container joining the
#                                  holder (--network container:<holder>)
#   bench/awsvpc_by_hand.sh down   the ENI back to the host (down, no address), the task container and the
#                                  holder removed, the credential veth deleted, the named netns deleted
#
# Docker cannot start a container in a named netns, so (as ecs_task does) a holder container owns the
# namespace and `ip netns attach` names it. Settings (environment): HAND_NETNS (drvbench-hand),
# HAND_NAME (drvbench-hand: containers <name>-holder and <name>-main), HAND_ENI_MAC (02:00:c6:12:d2:02),
# HAND_ADDRESS (198.18.210.2/24), HAND_GATEWAY (198.18.210.1), HAND_IMAGE (drover.local/busybox:1),
# HAND_LABEL (drover-bench=awsvpc-hand), HAND_CRED_IF (drvbh-cred: the host side of the credential veth).
# Must run as root. The bench times each of `up` and `down` as one process.
set -euo pipefail

NS=${HAND_NETNS:-drvbench-hand}
NAME=${HAND_NAME:-drvbench-hand}
MAC=$(printf '%s' "${HAND_ENI_MAC:-02:00:c6:12:d2:02}" | tr 'A-F' 'a-f')
ADDRESS=${HAND_ADDRESS:-198.18.210.2/24}
GATEWAY=${HAND_GATEWAY:-198.18.210.1}
IMAGE=${HAND_IMAGE:-drover.local/busybox:1}
LABEL=${HAND_LABEL:-drover-bench=awsvpc-hand}
CRED=${HAND_CRED_IF:-drvbh-cred}
TASK_CRED=drover-cred
ENDPOINT=169.254.170.2

# The name of the link with $MAC, in netns $1 (the host when empty); nothing when there is none.
eni_in() {
  ip ${1:+-n "$1"} -o link show | awk -v mac="link/ether $MAC " \
    'index(tolower($0), mac) { name = $2; sub(/@.*/, "", name); sub(/:$/, "", name); print name; exit }'
}

# The lowest /30 of 169.254.0.0/16 that no host link carries, outside 169.254.0.0/24, 169.254.169.0/24,
# 169.254.170.0/24 and 169.254.255.0/24 (as ecs_task allocates): prints its network address.
free_30() {
  local used c d
  used=" $(ip -4 -o addr show | awk '$4 ~ /^169\.254\.[0-9]+\.[0-9]+\/30$/ { split($4, a, "[./]"); \
         printf "169.254.%d.%d ", a[3], a[4] - a[4] % 4 }')"
  for c in $(seq 1 254); do
    case $c in 169 | 170) continue ;; esac
    for d in $(seq 0 4 252); do
      case $used in *" 169.254.$c.$d "*) ;; *) echo "169.254.$c.$d"; return 0 ;; esac
    done
  done
  echo "no free /30 in 169.254.0.0/16" >&2
  return 1
}

up() {
  local holder pid eni net base
  holder=$(docker run -d --network none --name "$NAME-holder" --label "$LABEL" "$IMAGE" sleep 2147483647)
  pid=$(docker inspect -f '{{.State.Pid}}' "$holder")
  ip netns attach "$NS" "$pid"
  eni=$(eni_in '')
  [ -n "$eni" ] || { echo "no link with MAC $MAC on the host" >&2; exit 1; }
  ip link set dev "$eni" netns "$NS"
  ip -n "$NS" link set lo up
  ip -n "$NS" link set "$eni" up
  ip -n "$NS" addr add "$ADDRESS" dev "$eni"
  ip -n "$NS" route replace default via "$GATEWAY"
  net=$(free_30)
  base=${net%.*}
  ip link add "$CRED" type veth peer name "$TASK_CRED" netns "$NS"
  ip addr add "$base.$((${net##*.} + 1))/30" dev "$CRED"
  ip link set "$CRED" up
  ip -n "$NS" addr add "$base.$((${net##*.} + 2))/30" dev "$TASK_CRED"
  ip -n "$NS" link set "$TASK_CRED" up
  ip -n "$NS" route replace "$ENDPOINT/32" via "$base.$((${net##*.} + 1))"
  docker run -d --network "container:$holder" --name "$NAME-main" --label "$LABEL" "$IMAGE" sleep 3600 >/dev/null
}

down() {
  local eni
  eni=$(eni_in "$NS")
  if [ -n "$eni" ]; then
    ip -n "$NS" link set "$eni" down
    ip -n "$NS" addr flush dev "$eni"
    ip -n "$NS" link set dev "$eni" netns $$      # this shell's netns: the host's
  fi
  docker rm -f "$NAME-main" "$NAME-holder" >/dev/null
  ip link del "$CRED"
  ip netns del "$NS"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
