#!/usr/bin/env bash
# The collection as users get it: `ansible-galaxy collection build` makes the tarball, `ansible-galaxy
# collection install` takes it into an empty collections path, and the installed collection's playbooks run by
# their FQCN from there (not from this tree): drover.fleet.converge, drover.fleet.pools and drover.fleet.reconcile on this host,
# with a cluster and a store of their own and nothing declared, twice each (the second changes nothing).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${VENV:-$root/.venv}
work=$(mktemp -d /tmp/drover-galaxy.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$venv/bin/ansible-galaxy" collection build --output-path "$work/dist" "$root" >/dev/null
tarball=$(ls "$work"/dist/drover-fleet-*.tar.gz)
size=$(stat -c %s "$tarball")
[ "$size" -lt 5000000 ] || { echo "galaxy: $tarball is $size bytes: build_ignore misses something" >&2; exit 1; }
ANSIBLE_COLLECTIONS_PATH=$work/collections "$venv/bin/ansible-galaxy" collection install --offline -p "$work/collections" "$tarball" >/dev/null
installed=$work/collections/ansible_collections/drover/fleet
test -f "$installed/MANIFEST.json" && test -f "$installed/playbooks/reconcile.yml" && test -f "$installed/playbooks/pools.yml"
test -f "$installed/extensions/eda/rulebooks/pools_webhook.yml"
test -f "$installed/LICENSE" || { echo "galaxy: the tarball has no LICENSE" >&2; exit 1; }
echo "galaxy: built $(basename "$tarball") ($size bytes), installed into $work/collections"

cat > "$work/inventory.yml" <<INV
all:
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: $venv/bin/python
      drover_store_path: $work/state/store.db
      drover_tasks_cluster: galaxycheck
      drover_pools_drain: false
INV
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_LOCALHOST_WARNING=false
# Only the installed copy is on the collections path (this tree is not, nor next to the playbooks).
where=$("$venv/bin/ansible-galaxy" collection list drover.fleet 2>/dev/null | awk '/^# /{print $2}')
[ "$where" = "$work/collections/ansible_collections" ] || { echo "galaxy: drover.fleet found in '$where'" >&2; exit 1; }
for book in drover.fleet.converge drover.fleet.converge drover.fleet.pools drover.fleet.reconcile drover.fleet.reconcile; do
  out=$("$venv/bin/ansible-playbook" -i "$work/inventory.yml" "$book" 2>&1) || { echo "$out" >&2; exit 1; }
  recap=$(grep -E '^localhost +:' <<<"$out")
  echo "galaxy: $book -> $recap" | tr -s ' '
done
changed=$(grep -oE 'changed=[0-9]+' <<<"$recap")
[ "$changed" = changed=0 ] || { echo "galaxy: the second reconcile changed something ($changed)" >&2; exit 1; }
echo 'galaxy: the installed collection runs by its FQCN'
