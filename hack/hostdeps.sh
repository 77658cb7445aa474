#!/usr/bin/env bash
# Debian packages the tests use on the host besides the engine: busybox (udhcpc for DHCP in a task
# netns, and the test image's root filesystem), dnsmasq (a real DHCP server in a test namespace),
# iproute2 (ip netns, for the tests' own peers), systemd (systemd-analyze verify of the timer units), a Java
# runtime of version 17 or later (ansible-rulebook's rule engine, for the rulebook drover.fleet.pools_webhook:
# Debian's default-jre-headless). Installs only what is missing.
set -euo pipefail
need=()
command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
# The Java runtime's major version (java.specification.version: 17, 21...), empty without one.
java_version=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' || true)
[ "${java_version:-0}" -ge 17 ] 2>/dev/null || need+=(default-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  echo "hostdeps: installed ${need[*]}"
else
  echo "hostdeps: busybox, dnsmasq, ip, systemd-analyze and Java ${java_version} present"
fi
