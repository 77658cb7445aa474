#!/usr/bin/env bash
# Build the test runner image drover.local/runner:1: a stand-in for the GitHub Actions runner started with
# a JIT config (see tests/fixtures/runner_image/README.md). No registry is reachable, so the image is made
# here like hack/images.sh does: a root filesystem from Debian's busybox-static plus the entrypoint
# tests/fixtures/runner_image/run.sh at /runner/run.sh, imported with `docker import`.
#
# Idempotent: the image carries the label drover.runner.sha256 (sha256 of the entrypoint and of this
# script); it is rebuilt only when that changed, or with --force / DROVER_RUNNER_IMAGE_FORCE=1.
set -euo pipefail
IMAGE=${DROVER_RUNNER_IMAGE:-drover.local/runner:1}
LABEL=drover.runner.sha256
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
entrypoint="$here/../tests/fixtures/runner_image/run.sh"
force=${DROVER_RUNNER_IMAGE_FORCE:-0}
[ "${1:-}" = --force ] && force=1

[ -f "$entrypoint" ] || { echo "runner-image: $entrypoint is missing" >&2; exit 1; }
want=$(cat "$entrypoint" "${BASH_SOURCE[0]}" "$here/lib-rootfs.sh" | sha256sum | cut -d' ' -f1)
old_id=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
if [ -n "$old_id" ] && [ "$force" != 1 ]; then
  have=$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)
  if [ "$have" = "$want" ]; then
    echo "runner-image: $IMAGE present"
    exit 0
  fi
fi

# shellcheck source=hack/lib-rootfs.sh
. "$here/lib-rootfs.sh"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
busybox_rootfs "$root" runner
install -m 0755 "$entrypoint" "$root/runner/run.sh"
# The runner's externals folder (the real runner's holds node and the tools it mounts read-only at /__e in a
# `container:` job's containers): here one file a job container can read.
install -d -m 0755 "$root/runner/externals"
printf 'drover runner externals\n' > "$root/runner/externals/drover.txt"
chmod 0644 "$root/runner/externals/drover.txt"
# A docker client for jobs whose profile has an engine of the slot's own (profile.docker): Debian's, with the
# C library it links.
if [ -x /usr/bin/docker ]; then
  install -D -m 0755 /usr/bin/docker "$root/usr/bin/docker"
  for lib in $(ldd /usr/bin/docker | awk '$(NF-1) ~ /^\// {print $(NF-1)} $1 ~ /^\// {print $1}' | sort -u); do
    install -D -m 0755 "$lib" "$root$lib"
  done
fi
tar -C "$root" --owner=0 --group=0 --numeric-owner -c . |
  docker import \
    -c 'ENTRYPOINT ["/runner/run.sh"]' \
    -c 'ENV PATH=/bin:/usr/bin' \
    -c 'WORKDIR /runner' \
    -c "LABEL $LABEL=$want" \
    - "$IMAGE" >/dev/null
# drop the image this one replaces, unless something still uses it
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect -f '{{.Id}}' "$IMAGE")" ]; then
  docker rmi "$old_id" >/dev/null 2>&1 || true
fi
echo "runner-image: built $IMAGE"
