#!/usr/bin/env bash
# The demo's stand-in ENI (examples/inventory.yml, task demo-vpc): a veth pair whose host end, drvdemo-eni,
# has the ENI's MAC and is left down for ecs_task to find and move into the task's namespace, and whose other
# end, drvdemo-gw, is the gateway 198.18.220.1/24 in the namespace drvdemo-peer.
#
#   hack/demo-eni.sh up     plug it (again: whatever is left of an earlier one goes first)
#   hack/demo-eni.sh down   unplug it
set -euo pipefail
mac=02:00:c6:12:dc:02
case ${1:-} in
  up)
    "$0" down
    ip netns add drvdemo-peer
    ip link add drvdemo-eni address "$mac" type veth peer name drvdemo-gw netns drvdemo-peer
    ip -n drvdemo-peer addr add 198.18.220.1/24 dev drvdemo-gw
    ip -n drvdemo-peer link set lo up
    ip -n drvdemo-peer link set drvdemo-gw up
    echo "demo-eni: drvdemo-eni ($mac) plugged; its gateway 198.18.220.1 in netns drvdemo-peer"
    ;;
  down)
    ip link del drvdemo-eni 2>/dev/null || true
    ip netns del drvdemo-peer 2>/dev/null || true
    ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
