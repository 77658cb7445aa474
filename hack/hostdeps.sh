#!/usr/bin/env bash
# Debian packages the tests use on the host besides the engine: busybox (udhcpc for DHCP in a task
# netns, and the test image's root filesystem), dnsmasq (a real DHCP server in a test namespace),
# iproute2 (ip netns, for the tests' own peers), systemd (systemd-analyze verify of the timer units).
# Installs only what is missing.
set -euo pipefail
need=()
command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  echo "hostdeps: installed ${need[*]}"
else
  echo "hostdeps: busybox, dnsmasq and ip present"
fi
