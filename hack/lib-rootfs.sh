# shellcheck shell=bash
# Sourced by hack/images.sh and hack/runner-image.sh: a root filesystem from Debian's busybox-static, for
# images built with `docker import` (no registry is reachable).

# busybox_rootfs DIR [EXTRA_DIR...]: fill DIR with busybox, its applets, a root user and a sticky /tmp.
busybox_rootfs() {
  local root=$1 applet
  shift
  if [ ! -x /bin/busybox ] || ! /bin/busybox --list >/dev/null 2>&1 || ! dpkg -s busybox-static >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq busybox-static >/dev/null
  fi
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,proc,sys,dev,root,var/run}
  for extra in "$@"; do mkdir -p "$root/$extra"; done
  cp /bin/busybox "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
  echo 'root:x:0:' > "$root/etc/group"
  chmod 1777 "$root/tmp"
}
