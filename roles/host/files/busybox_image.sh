#!/bin/sh
# drover.fleet.host: build IMAGE from Debian's busybox-static with `docker import` (no registry needed).
# The root filesystem: /bin/busybox and a link per applet, a root user, a sticky /tmp.
# Usage: busybox_image.sh IMAGE [BUSYBOX]
set -eu
image=$1
busybox=${2:-/bin/busybox}
"$busybox" --list >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/rootfs
for dir in bin sbin usr/bin usr/sbin etc tmp proc sys dev root var/run; do
  mkdir -p "$root/$dir"
done
cp "$busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
chmod 1777 "$root/tmp"
tar -C "$root" -cf "$work/rootfs.tar" .
docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' "$work/rootfs.tar" "$image" >/dev/null
echo "built $image"
