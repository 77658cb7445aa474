#!/usr/bin/env bash
# The collection's docs as a site: antsibull-docs checks the plugins' and roles' documentation
# (lint-collection-docs) and writes their pages; the long pages of docs/ join them; Sphinx builds HTML into
# $DOCSITE_DIR (build/docsite: html/index.html). Offline; a warning fails the build.
#
#   VENV=.venv hack/docsite.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
VENV=${VENV:-$ROOT/.venv}
OUT=${DOCSITE_DIR:-$ROOT/build/docsite}
COLLECTIONS=${ANSIBLE_COLLECTIONS_PATH:-$ROOT/collection/dev}
export ANSIBLE_COLLECTIONS_PATH=$COLLECTIONS
export PATH=$VENV/bin:$PATH

cd "$COLLECTIONS/ansible_collections/drover/fleet"
antsibull-docs lint-collection-docs --plugin-docs .

rm -rf "$OUT"
mkdir -p "$OUT"
mkdir -m 700 "$OUT/rst"                      # (antsibull-docs writes only into a folder of its user's alone)
antsibull-docs collection --use-current --dest-dir "$OUT/rst" drover.fleet >/dev/null

# the long pages, the labels of Ansible's own docs the pages refer to, the playbooks' page and the site's index
mkdir "$OUT/rst/docs"
cp "$ROOT"/docs/*.md "$OUT/rst/docs/"
cp "$ROOT/hack/docsite/ansible.rst" "$OUT/rst/"
"$VENV/bin/python" "$ROOT/hack/docsite/pages.py" playbooks "$ROOT" > "$OUT/rst/playbooks.rst"
"$VENV/bin/python" "$ROOT/hack/docsite/pages.py" index "$ROOT" > "$OUT/rst/index.rst"

sphinx-build -q -b html -c "$ROOT/hack/docsite" -W --keep-going "$OUT/rst" "$OUT/html"
echo "docsite: $OUT/html/index.html"
