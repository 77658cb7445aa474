#!/usr/bin/env bash
# After the suite: the host must hold nothing a test made. Lists and fails on any task netns or test
# peer netns, credential-link or stand-in ENI link, credential-link filter rule, netns holder container,
# or container of a test cluster (t + 10 hex digits, s + 10 for the Salt suite, and the molecule clusters),
# runner container or cache volume of a test pool, registry mirror, simulated engines of a fleet run, task volume (or shared volume
# of a test cluster), parent cgroup of a sized task, running GitHub stand-in, the credentials endpoint's address or
# DNAT rule, and any GPU pin in the host's default store.
#
# hack/leaks.sh --remove: before the suites, what an earlier run that was killed midway left (the same list) is
# removed instead, each named; only GPU pins and a fleet run whose engines still run are left to be reported.
set -uo pipefail
remove=0
[ "${1:-}" = --remove ] && remove=1
TEST_CLUSTERS='^(t[0-9a-f]{10}x?|s[0-9a-f]{10}|f[0-9a-f]{6}|molecule|molnet|molrec|galaxycheck)$'
TEST_POOLS='^(p[0-9a-f]{8}[a-z]?(alpha|beta)?|sp[0-9a-f]{8}|molrun|molrec)$'
left=()
# A veth's peer goes with it: a link already gone counts as removed.
del_link() { ip link delete "$1" 2>/dev/null || ! ip link show "$1" >/dev/null 2>&1; }
# found TEXT [COMMAND...]: a thing left behind; with --remove, COMMAND removes it (none: it is only reported).
found() {
  local text=$1
  shift
  if [ "$remove" = 1 ] && [ $# -gt 0 ]; then
    if "$@" >/dev/null 2>&1; then echo "leaks: removed what an earlier run left: $text"; return; fi
    text="$text (could not be removed)"
  fi
  left+=("$text")
}
while read -r ns _; do
  case $ns in drover-*|drvtest-*) found "netns $ns" ip netns delete "$ns" ;; esac
done < <(ip netns list 2>/dev/null)
for dir in /etc/netns/drover-*; do
  [ -e "$dir" ] && found "directory $dir" rm -rf "$dir"
done
while read -r link; do
  case $link in dv*|teni*|mol-*) found "link $link" del_link "$link" ;; esac
done < <(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1)
while read -r name cluster; do
  [ -n "$name" ] || continue
  found "container $name (cluster $cluster)" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.role=netns-holder --format '{{.Names}} {{.Label "drover.cluster"}}')
while read -r name cluster; do
  [ -n "$name" ] || continue
  [[ $cluster =~ $TEST_CLUSTERS ]] && found "container $name (cluster $cluster)" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.role --format '{{.Names}} {{.Label "drover.cluster"}}')
while read -r name pool; do
  [ -n "$name" ] || continue
  [[ $pool =~ $TEST_POOLS ]] && found "runner container $name (pool $pool)" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.role=runner --format '{{.Names}} {{.Label "drover.pool"}}')
# The credential links' filter rules (filter table, keyed to a link's host side dv<10 hex>).
while read -r rule; do
  read -ra words <<< "${rule/-A /-D }"       # the rule as iptables -S prints it, appended -> deleted
  found "filter rule: $rule" iptables "${words[@]}"
done < <(iptables -S 2>/dev/null | grep -E -- '-[io] dv[0-9a-f]{10}( |$)' || true)
# The credentials endpoint's address (dummy interface or lo) and its DNAT rules.
if ip -o -4 addr show | grep -q '169.254.170.2/32'; then
  dev=$(ip -o -4 addr show | awk '$4 == "169.254.170.2/32" {print $2; exit}')
  found "address 169.254.170.2 (credentials endpoint)" ip addr del 169.254.170.2/32 dev "$dev"
fi
while read -r rule; do
  read -ra words <<< "${rule/-A /-D }"
  found "nat rule: $rule" iptables -t nat "${words[@]}"
done < <(iptables -t nat -S 2>/dev/null | grep '169.254.170.2' || true)
# The molecule scenarios' stand-ins (the demo's, on 18766, is the demo's business).
for port in 18764 18765; do
  pidfile=/tmp/drover-standin-$port.pid
  if [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    found "GitHub stand-in running ($pidfile)" kill "$(cat "$pidfile")"
  fi
done
# The engine volumes of tasks (drover.scope=task: removed with their task), and shared volumes provisioned for a
# test cluster; the parent cgroups of sized tasks (/drover/<task>-<digest> in any hierarchy).
while read -r name cluster; do
  [ -n "$name" ] || continue
  found "task volume $name (cluster $cluster)" docker volume rm -f "$name"
done < <(docker volume ls --filter label=drover.scope=task --format '{{.Name}} {{.Label "drover.cluster"}}')
while read -r name cluster; do
  [ -n "$name" ] || continue
  [[ $cluster =~ $TEST_CLUSTERS ]] && found "shared volume $name (cluster $cluster)" docker volume rm -f "$name"
done < <(docker volume ls --filter label=drover.scope=shared --format '{{.Name}} {{.Label "drover.cluster"}}')
for dir in /sys/fs/cgroup/drover/*/ /sys/fs/cgroup/*/drover/*/; do
  [ -d "$dir" ] && found "cgroup ${dir%/}" rmdir "$dir"
done
# Records of failed jobs (gh_runner_slot's profile.records): a test's pool takes its own with it.
while read -r ref; do
  [ -n "$ref" ] && found "record image $ref" docker rmi -f "$ref"
done < <(docker images --filter label=drover.record=true --format '{{.Repository}}:{{.Tag}}' 2>/dev/null)
# Cache volumes of a test pool's slots (profile.caches): a test's pool purges its own.
while read -r name pool; do
  [ -n "$name" ] || continue
  [[ $pool =~ $TEST_POOLS ]] && found "cache volume $name (pool $pool)" docker volume rm -f "$name"
done < <(docker volume ls --filter label=drover.role=cache --format '{{.Name}} {{.Label "drover.pool"}}')
# Slot engines (profile.docker rootless): their holders, engine processes, directories and users.
while read -r name pool; do
  [ -n "$name" ] || continue
  [[ $pool =~ $TEST_POOLS ]] && found "slot holder $name (pool $pool)" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.role=slot-holder --format '{{.Names}} {{.Label "drover.pool"}}')
while read -r pid _; do
  [ -n "$pid" ] && found "slot engine process $pid" kill -9 "$pid"
done < <(pgrep -f 'dockerd-rootless.sh --data-root /var/lib/drover-slots/' 2>/dev/null || true)
for dir in /var/lib/drover-slots/*/; do
  [ -d "$dir" ] && found "slot engine directory ${dir%/}" rm -rf "$dir"
done
while IFS=: read -r user _; do
  case $user in drv[0-9a-f]*) [ ${#user} = 13 ] && found "slot user $user" userdel "$user" ;; esac
done < /etc/passwd
# The pools' registry mirrors (gh_runner_slot's mirror: a test's pool removes its own) and the upstream registries
# the mirror tests stand in for Docker Hub with.
while read -r name _; do
  [ -n "$name" ] && found "registry mirror $name" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.role=mirror --format '{{.Names}} .')
while read -r name _; do
  [ -n "$name" ] && found "registry mirror volume $name" docker volume rm -f "$name"
done < <(docker volume ls --filter label=drover.role=mirror --format '{{.Name}} .')
# The pools' own networks (made for slot holders and the mirror, so removed after them; a test's pool removes its own with them).
while read -r name _; do
  [ -n "$name" ] && found "pools network $name" docker network rm "$name"
done < <(docker network ls --filter label=drover.role=pools-network --format '{{.Name}} .')
while read -r name _; do
  [ -n "$name" ] && found "test upstream registry $name" docker rm -f "$name"
done < <(docker ps -a --filter label=drover.test=upstream --format '{{.Names}} .')
# A task's FireLens files (its log router's configuration and socket), which go with the task.
for dir in /run/drover/firelens/*/; do
  [ -d "$dir" ] && found "FireLens files ${dir%/}" rm -rf "$dir"
done
while read -r target; do
  [ -n "$target" ] && found "mount $target" umount -l "$target"
done < <(findmnt -rn -o TARGET 2>/dev/null | grep '^/run/drover/' || true)
# Simulated hosts' engines (tests/fixtures/fleet_engines.py: the fleet test's and the fleet bench's dockerd,
# one directory per run, tagged). A run whose engines still live (a fleet bench running meanwhile) is only
# reported; one whose engines are all gone (its run was killed) is removed with --remove: what still runs from
# its folders, its mounts (deepest first), its netns and its folders.
fleet_alive() {  # fleet_alive TAG: a dockerd of that run still runs
  local pidfile pid
  for pidfile in /run/drover-fleet/"$1"/*/dockerd.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null)
    [[ $pid =~ ^[0-9]+$ ]] || continue
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q "/drover-fleet/$1/" && return 0
  done
  return 1
}
fleet_remove() {  # fleet_remove TAG
  local tag=$1 pid point
  fleet_alive "$tag" && return 1
  for pid in $(pgrep -f "/drover-fleet/$tag/" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  while read -r point; do
    umount -l "$point" 2>/dev/null
  done < <(findmnt -rn -o TARGET 2>/dev/null | grep -E "^/(run|var/lib)/drover-fleet/$tag(/|$)" | sort -r)
  ip netns delete "drvfleet-$tag" 2>/dev/null
  rm -rf "/run/drover-fleet/$tag" "/var/lib/drover-fleet/$tag" && ! ip netns list 2>/dev/null | grep -q "^drvfleet-$tag\b"
}
declare -A fleet_tags=()
for dir in /run/drover-fleet/*/ /var/lib/drover-fleet/*/; do
  [ -d "$dir" ] && fleet_tags[$(basename "$dir")]=1
done
while read -r ns _; do
  case $ns in drvfleet-*) fleet_tags[${ns#drvfleet-}]=1 ;; esac
done < <(ip netns list 2>/dev/null)
for tag in "${!fleet_tags[@]}"; do
  if fleet_alive "$tag"; then
    found "simulated engines of run $tag (still running)"
  else
    found "simulated engines of run $tag (/run/drover-fleet/$tag, /var/lib/drover-fleet/$tag, netns drvfleet-$tag)" \
      fleet_remove "$tag"
  fi
done
# The ECR name the registry tests point at the local registry (tests/integration/test_registry_pull.py).
grep -q 'drover-test' /etc/hosts 2>/dev/null && found "/etc/hosts line: $(grep 'drover-test' /etc/hosts | head -1)" sed -i '/drover-test/d' /etc/hosts
store=/var/lib/drover/store.db
if [ -f "$store" ] && command -v python3 >/dev/null; then
  pins=$(python3 -c "import sqlite3,sys; db=sqlite3.connect('file:$store?mode=ro', uri=True)
try: print(db.execute('select count(*) from gpu_pins').fetchone()[0])
except sqlite3.Error: print(0)" 2>/dev/null || echo 0)
  [ "${pins:-0}" = 0 ] || found "$pins GPU pin(s) in $store"
fi
if [ ${#left[@]} -gt 0 ]; then
  if [ "$remove" = 1 ]; then
    echo "leaks: an earlier run left these behind, and they were not removed:" >&2
  else
    echo "leaks: the suite left these behind:" >&2
  fi
  printf '  %s\n' "${left[@]}" >&2
  exit 1
fi
[ "$remove" = 1 ] && { echo "leaks: nothing (else) left by an earlier run"; exit 0; }
echo "leaks: none (no task netns, test links, holders, test containers, task volumes, task cgroups or records left)"
