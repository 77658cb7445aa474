#!/usr/bin/env bash
# `make demo-salt`: the example fleet, converged by Ansible, then by Salt from the same declaration.
# Run by the demo recipe after its two Ansible converges (the stand-in GitHub and the stand-in ENI are up):
#  1. examples/salt/pillar.yml writes this host's pillar from examples/inventory.yml;
#  2. a masterless minion of the demo's own (DEMO_DIR/salt: file_client local, the state salt/examples/drover)
#     runs `salt-call --local state.apply drover` with test=True, then for real: Salt finds nothing to change;
#  3. the web task's container is killed: Salt restarts it, and an Ansible converge then finds nothing to do;
#  4. `salt-call --local drover.tasks` and `drover.pools` show the fleet as Salt sees it.
# Every step checks what it shows, and the script fails when a step does not hold.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO_DIR=${DEMO_DIR:-/tmp/drover-demo}
SALT_VENV=${SALT_VENV:-$ROOT/.venv-salt}
PY=${PY:-$ROOT/.venv/bin/python}
INVENTORY=$ROOT/examples/inventory.yml
base=$DEMO_DIR/salt
rm -rf "$base"
"$PY" "$ROOT/hack/salt_minion.py" "$base" drover-demo >/dev/null

salt_call() { "$SALT_VENV/bin/salt-call" --local -c "$base/conf" --log-level=quiet "$@"; }
# Prints one line per state of a state.apply (JSON on stdin); fails unless the changes are as `want` says
# (none: no state changes anything; some: at least one does) and every result is True (or None in test mode).
summary() {
  "$PY" -c '
import json, sys
want = sys.argv[1]
states = json.load(sys.stdin)["local"]
changed = 0
for sid, ret in sorted(states.items(), key=lambda kv: kv[1].get("__run_num__", 0)):
    first = (ret.get("comment") or "").splitlines()[0] if ret.get("comment") else ""
    print("  %-14s result=%-5s changes=%-3d %s" % (ret.get("__id__", sid), ret.get("result"), len(ret.get("changes") or {}), first[:150]))
    changed += bool(ret.get("changes"))
    if ret.get("result") is False:
        sys.exit("salt: %s failed" % ret.get("__id__", sid))
if want == "none" and changed:
    sys.exit("salt: expected no changes")
if want == "some" and not changed:
    sys.exit("salt: expected a change")
' "$1"
}

echo '--- Salt: the pillar of this host, written from examples/inventory.yml (examples/salt/pillar.yml) ---'
# The host's options and policy go into the minion's own configuration, never its pillar (salt/examples/drover).
mkdir -p "$base/conf/minion.d"
ansible-playbook -i "$INVENTORY" "$ROOT/examples/salt/pillar.yml" -e "drover_salt_pillar=$base/pillar/drover.sls" \
  -e "drover_salt_minion_conf=$base/conf/minion.d/drover.conf" >"$base/pillar.log"
"$PY" -c '
import sys, yaml
drover = yaml.safe_load(open(sys.argv[1]))["drover"]
print("  %s: %d tasks (cluster %s), %d runner pool(s)" % (sys.argv[1], len(drover["tasks"]["tasks"]), drover["tasks"]["cluster"],
      len(drover["pools"]["pools"])))' "$base/pillar/drover.sls"
echo '--- Salt after Ansible: salt-call --local state.apply drover test=True (nothing would change) ---'
salt_call --out=json state.apply drover test=True | summary none
echo '--- salt-call --local state.apply drover: nothing to change ---'
salt_call --out=json state.apply drover | summary none
echo '--- the web task dies; Salt restarts it ---'
docker kill demo-web-httpd >/dev/null
salt_call --out=json state.apply drover | summary some
docker ps --filter name=demo-web-httpd --format '{{.Names}}: {{.Status}}' | sed 's/^/  /'
echo '--- Ansible after Salt: drover.fleet.converge changes nothing ---'
ansible-playbook -i "$INVENTORY" drover.fleet.converge >"$base/converge.log"
grep -E '^localhost +:' "$base/converge.log" | sed 's/^/  /'
grep -qE '^localhost +:.* changed=0 .* failed=0 ' "$base/converge.log" || { echo 'ansible: expected changed=0' >&2; exit 1; }
echo '--- salt-call --local drover.tasks cluster=demo / drover.pools: the fleet as Salt sees it ---'
salt_call --out=json drover.tasks cluster=demo store_path=/var/lib/drover/store.db | "$PY" -c '
import json, sys
for t in json.load(sys.stdin)["local"]["tasks"]:
    print("  task %-14s %-8s %s" % (t["name"], t.get("last_status"), ", ".join(c["name"] for c in t.get("containers") or [])))'
salt_call --out=json drover.pools store_path=/var/lib/drover/store.db | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["local"]["pools"]:
    slots = ["%s %s" % (s.get("index"), "busy" if s.get("busy") else "idle") for s in p.get("slots") or []]
    print("  pool %-14s %s, slots: %s" % (p.get("name"), p.get("owner"), ", ".join(slots) or "none"))'
rm -f "$base/pillar/drover.sls"
