#!/usr/bin/env bash
# Container tier (tests/container): Debian's podman to build and run the image, mmdebstrap to make its base
# from Debian's packages (no container registry needed), runc (crun refuses hybrid cgroups), arch-test
# (mmdebstrap's check for a foreign architecture, scripts/container/build.sh arm64). The test also uses
# the NetworkManager lab (scripts/setup/networkmanager.sh) to reach NetworkManager through the D-Bus bind.
# Idempotent: installs only what is missing.
set -euo pipefail

PACKAGES=(podman mmdebstrap runc arch-test)
source "$(dirname "$0")/apt.sh"
apt_install_missing "container setup" "${PACKAGES[@]}"
bash "$(dirname "$0")/networkmanager.sh" >/dev/null

for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || { echo "container setup: $tool missing after install" >&2; exit 1; }
done
echo "container setup: ok (podman $(podman --version | awk '{print $3}'), mmdebstrap $(mmdebstrap --version | awk '{print $2}'), runc $(runc --version | awk 'NR==1{print $3}'))"
