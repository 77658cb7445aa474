#!/bin/sh
# drover.fleet.host: build IMAGE, the runner pools' registry mirror (drover.fleet.gh_runner_slot's `mirror`), with
# no registry: the files of BASE (the collection's busybox image, which the role builds first), Debian's
# docker-registry (distribution v2) and the C library it links, and the host's CA bundle (an upstream over TLS),
# imported with `docker import`.
# Usage: registry_image.sh IMAGE BASE [DOCKER_REGISTRY_BINARY]
# Without a binary, Debian's docker-registry package is downloaded and unpacked here (apt-get download): it is
# never installed, so no registry service starts on the host.
set -eu
image=$1
base=$2
binary=${3:-}
work=$(mktemp -d)
base_container=
cleanup() {
  [ -z "$base_container" ] || docker rm -f "$base_container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
if [ -z "$binary" ]; then
  chmod 0755 "$work"    # apt-get download runs as _apt
  (cd "$work" && apt-get download docker-registry >/dev/null)
  dpkg-deb -x "$work"/docker-registry_*.deb "$work/pkg"
  binary=$work/pkg/usr/bin/docker-registry
fi
[ -x "$binary" ] || { echo "registry_image.sh: $binary is not an executable" >&2; exit 1; }
root=$work/rootfs
mkdir -p "$root"
base_container=$(docker create "$base")
docker export "$base_container" | tar -C "$root" -x
for dir in usr/bin etc/docker/registry etc/ssl/certs var/lib/registry; do
  mkdir -p "$root/$dir"
done
cp "$binary" "$root/usr/bin/docker-registry"
# The shared libraries it links (libc and the loader), at the paths the binary names.
for lib in $(ldd "$binary" | awk '/=>/ { print $3 } /^[[:space:]]*\// { print $1 }'); do
  [ -f "$lib" ] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
tar -C "$root" -cf "$work/rootfs.tar" .
docker import -c 'ENTRYPOINT ["/usr/bin/docker-registry"]' -c 'CMD ["serve", "/etc/docker/registry/config.yml"]' \
  -c 'ENV PATH=/usr/bin:/bin' "$work/rootfs.tar" "$image" >/dev/null
echo "built $image"
