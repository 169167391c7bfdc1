#!/usr/bin/env bash
# System packages for the network integration tier (tests/integration/network*.test.ts): a real
# NetworkManager 1.42, systemd-udevd (NM leaves devices unmanaged without udev), dbus-daemon for the
# private system bus, iproute2 for the namespace. Idempotent; Debian 12, run as root.
set -euo pipefail

die() { echo "setup/networkmanager: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"

need=(network-manager udev dbus-daemon dbus-bin iproute2)
# apt_install_missing keeps the packages' maintainer scripts from starting NetworkManager or udevd on
# this machine: the tests start their own, inside a network namespace.
source "$(dirname "$0")/apt.sh"
apt_install_missing "setup/networkmanager" "${need[@]}" || die "could not install ${need[*]}"

for bin in /usr/sbin/NetworkManager /usr/bin/nmcli /lib/systemd/systemd-udevd /usr/bin/udevadm /usr/bin/dbus-daemon /usr/sbin/ip; do
  [ -x "$bin" ] || die "$bin is missing after install"
done
ver=$(/usr/sbin/NetworkManager --version)
echo "setup/networkmanager: NetworkManager $ver, systemd-udevd, dbus-daemon and iproute2 are installed"
