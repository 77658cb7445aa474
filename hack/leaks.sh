#!/usr/bin/env bash
# After the suite: the host must hold nothing a test made. Lists and fails on any task netns or test
# peer netns, credential-link or stand-in ENI link, credential-link filter rule, netns holder container,
# or container of a test cluster (t + 10 hex digits, s + 10 for the Salt suite, and the molecule clusters),
# runner container of a test pool, simulated engines of a fleet run, task volume (or shared volume of a test cluster), parent cgroup of a sized task, running GitHub stand-in, the credentials endpoint's address or DNAT rule, and any GPU pin in
# the host's default store.
set -uo pipefail
left=()
while read -r ns _; do
  case $ns in drover-*|drvtest-*) left+=("netns $ns") ;; esac
done < <(ip netns list 2>/dev/null)
for dir in /etc/netns/drover-*; do
  [ -e "$dir" ] && left+=("directory $dir")
done
while read -r link; do
  case $link in dv*|teni*|mol-*) left+=("link $link") ;; esac
done < <(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1)
while read -r name cluster; do
  [ -n "$name" ] || continue
  left+=("container $name (cluster $cluster)")
done < <(docker ps -a --filter label=drover.role=netns-holder --format '{{.Names}} {{.Label "drover.cluster"}}')
while read -r name cluster; do
  [ -n "$name" ] || continue
  [[ $cluster =~ ^(t[0-9a-f]{10}x?|s[0-9a-f]{10}|f[0-9a-f]{6}|molecule|molnet|molrec|galaxycheck)$ ]] && left+=("container $name (cluster $cluster)")
done < <(docker ps -a --filter label=drover.role --format '{{.Names}} {{.Label "drover.cluster"}}')
while read -r name pool; do
  [ -n "$name" ] || continue
  [[ $pool =~ ^(p[0-9a-f]{8}[a-z]?(alpha|beta)?|sp[0-9a-f]{8}|molrun|molrec)$ ]] && left+=("runner container $name (pool $pool)")
done < <(docker ps -a --filter label=drover.role=runner --format '{{.Names}} {{.Label "drover.pool"}}')
# The credential links' filter rules (filter table, keyed to a link's host side dv<10 hex>).
while read -r rule; do
  left+=("filter rule: $rule")
done < <(iptables -S 2>/dev/null | grep -E -- '-[io] dv[0-9a-f]{10}( |$)' || true)
# The credentials endpoint's address (dummy interface or lo) and its DNAT rules.
if ip -o -4 addr show | grep -q '169.254.170.2/32'; then left+=("address 169.254.170.2 (credentials endpoint)"); fi
while read -r rule; do
  left+=("nat rule: $rule")
done < <(iptables -t nat -S 2>/dev/null | grep '169.254.170.2' || true)
# The molecule scenarios' stand-ins (the demo's, on 18766, is the demo's business).
for port in 18764 18765; do
  pidfile=/tmp/drover-standin-$port.pid
  if [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    left+=("GitHub stand-in running ($pidfile)")
  fi
done
# The engine volumes of tasks (drover.scope=task: removed with their task), and shared volumes provisioned for a
# test cluster; the parent cgroups of sized tasks (/drover/<task>-<digest> in any hierarchy).
while read -r name cluster; do
  [ -n "$name" ] || continue
  left+=("task volume $name (cluster $cluster)")
done < <(docker volume ls --filter label=drover.scope=task --format '{{.Name}} {{.Label "drover.cluster"}}')
while read -r name cluster; do
  [ -n "$name" ] || continue
  [[ $cluster =~ ^(t[0-9a-f]{10}x?|s[0-9a-f]{10}|f[0-9a-f]{6}|molecule|molnet|molrec|galaxycheck)$ ]] && left+=("shared volume $name (cluster $cluster)")
done < <(docker volume ls --filter label=drover.scope=shared --format '{{.Name}} {{.Label "drover.cluster"}}')
for dir in /sys/fs/cgroup/drover/*/ /sys/fs/cgroup/*/drover/*/; do
  [ -d "$dir" ] && left+=("cgroup ${dir%/}")
done
# Records of failed jobs (gh_runner_slot's profile.records): a test's pool takes its own with it.
while read -r ref; do
  [ -n "$ref" ] && left+=("record image $ref")
done < <(docker images --filter label=drover.record=true --format '{{.Repository}}:{{.Tag}}' 2>/dev/null)
# A task's FireLens files (its log router's configuration and socket), which go with the task.
for dir in /run/drover/firelens/*/; do
  [ -d "$dir" ] && left+=("FireLens files ${dir%/}")
done
while read -r target; do
  [ -n "$target" ] && left+=("mount $target")
done < <(findmnt -rn -o TARGET 2>/dev/null | grep '^/run/drover/' || true)
# Simulated hosts' engines (tests/fixtures/fleet_engines.py: the fleet test's and the fleet bench's dockerd,
# one directory per run); a fleet bench running meanwhile shows here too.
for dir in /run/drover-fleet/*/ /var/lib/drover-fleet/*/; do
  [ -d "$dir" ] && left+=("simulated engines ${dir%/}")
done
while read -r ns _; do
  case $ns in drvfleet-*) left+=("simulated engines' netns $ns") ;; esac
done < <(ip netns list 2>/dev/null)
# The ECR name the registry tests point at the local registry (tests/integration/test_registry_pull.py).
grep -q 'drover-test' /etc/hosts 2>/dev/null && left+=("/etc/hosts line: $(grep 'drover-test' /etc/hosts | head -1)")
store=/var/lib/drover/store.db
if [ -f "$store" ] && command -v python3 >/dev/null; then
  pins=$(python3 -c "import sqlite3,sys; db=sqlite3.connect('file:$store?mode=ro', uri=True)
try: print(db.execute('select count(*) from gpu_pins').fetchone()[0])
except sqlite3.Error: print(0)" 2>/dev/null || echo 0)
  [ "${pins:-0}" = 0 ] || left+=("$pins GPU pin(s) in $store")
fi
if [ ${#left[@]} -gt 0 ]; then
  echo "leaks: the suite left these behind:" >&2
  printf '  %s\n' "${left[@]}" >&2
  exit 1
fi
echo "leaks: none (no task netns, test links, holders, test containers, task volumes, task cgroups or records left)"
