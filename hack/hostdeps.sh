#!/usr/bin/env bash
# Debian packages the tests use on the host besides the engine: busybox (udhcpc for DHCP in a task
# netns, and the test image's root filesystem), dnsmasq (a real DHCP server in a test namespace),
# iproute2 (ip netns, for the tests' own peers), systemd (systemd-analyze verify of the timer units), a Java
# runtime of version 17 or later (ansible-rulebook's rule engine, for the rulebook drover.fleet.pools_webhook:
# Debian's default-jre-headless), and what slot engines need (rootlesskit, slirp4netns, uidmap; /dev/net/tun
# usable by any user). Installs only what is missing.
set -euo pipefail
need=()
command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
# Slot engines (gh_runner_slot profile.docker rootless): rootlesskit, slirp4netns, newuidmap/newgidmap.
command -v rootlesskit >/dev/null 2>&1 || need+=(rootlesskit)
command -v slirp4netns >/dev/null 2>&1 || need+=(slirp4netns)
command -v newuidmap >/dev/null 2>&1 || need+=(uidmap)
# The Java runtime's major version (java.specification.version: 17, 21...), empty without one.
java_version=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' || true)
[ "${java_version:-0}" -ge 17 ] 2>/dev/null || need+=(default-jre-headless)
# A slot engine's slirp4netns opens /dev/net/tun as the slot's user: mode 0666, as Debian makes it.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  chmod 0666 /dev/net/tun
  echo "hostdeps: /dev/net/tun made 0666"
fi
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  echo "hostdeps: installed ${need[*]}"
else
  echo "hostdeps: busybox, dnsmasq, ip, systemd-analyze and Java ${java_version} present"
fi
