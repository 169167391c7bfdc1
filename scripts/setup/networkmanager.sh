#!/usr/bin/env bash
# System packages for the network integration tier (tests/integration/network*.test.ts): a real
# NetworkManager 1.42, systemd-udevd (NM leaves devices unmanaged without udev), dbus-daemon for the
# private system bus, iproute2 for the namespace. Idempotent; Debian 12, run as root.
set -euo pipefail

die() { echo "setup/networkmanager: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"

need=(network-manager udev dbus-daemon dbus-bin iproute2)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  # The packages' maintainer scripts must not start NetworkManager or udevd on this machine: the tests
  # start their own, inside a network namespace. policy-rc.d exit 101 = "do not start services".
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  trap '[ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}"; then
    apt-get -o DPkg::Lock::Timeout=600 update || die "apt-get update failed"
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" || die "could not install ${missing[*]}"
  fi
fi

for bin in /usr/sbin/NetworkManager /usr/bin/nmcli /lib/systemd/systemd-udevd /usr/bin/udevadm /usr/bin/dbus-daemon /usr/sbin/ip; do
  [ -x "$bin" ] || die "$bin is missing after install"
done
ver=$(/usr/sbin/NetworkManager --version)
echo "setup/networkmanager: NetworkManager $ver, systemd-udevd, dbus-daemon and iproute2 are installed"
