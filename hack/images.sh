#!/usr/bin/env bash
# Build the local images the demo and the tests use. No registry is reachable, so every image is made
# here: a root filesystem from Debian's busybox-static, imported with `docker import`. Idempotent.
set -euo pipefail
IMAGE=${DROVER_BUSYBOX_IMAGE:-drover.local/busybox:1}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "images: $IMAGE present"
  exit 0
fi
if [ ! -x /bin/busybox ] || ! /bin/busybox --list >/dev/null 2>&1 || ! dpkg -s busybox-static >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq busybox-static >/dev/null
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,proc,sys,dev,root,var/run}
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
chmod 1777 "$root/tmp"
tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - "$IMAGE" >/dev/null
echo "images: built $IMAGE"
