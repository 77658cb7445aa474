#!/usr/bin/env bash
# Build the local images the demo and the tests use. No registry is reachable, so every image is made
# here: a root filesystem from Debian's busybox-static, imported with `docker import`. Idempotent.
set -euo pipefail
IMAGE=${DROVER_BUSYBOX_IMAGE:-drover.local/busybox:1}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "images: $IMAGE present"
  exit 0
fi
# shellcheck source=hack/lib-rootfs.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-rootfs.sh"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
busybox_rootfs "$root"
tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - "$IMAGE" >/dev/null
echo "images: built $IMAGE"
