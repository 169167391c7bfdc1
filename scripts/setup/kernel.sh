#!/usr/bin/env bash
# Kernel tier prerequisites: QEMU (TCG), busybox for the initramfs, v4l-utils (the second opinion inside
# the VM), C compilers and the kernel's UAPI headers for x86-64 and aarch64 (the struct-layout test), a Debian kernel
# unpacked (not installed) under tests/kernel/.cache/ with its vivid module, and GStreamer (the VM sees the
# host's root, so the stream test inside it runs the host's gst-launch-1.0), and the RTSP helper's packages
# and ffprobe (scripts/setup/rtsp.sh: the RTSP test inside the VM runs the host's /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=tests/kernel/.cache
PKGS=(qemu-system-x86 busybox-static v4l-utils gcc libc6-dev linux-libc-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross cpio kmod)

source scripts/setup/apt.sh
apt_install_missing "kernel.sh" "${PKGS[@]}"

# The guest kernel: Debian 12's 6.1 image (vivid is a module there), unpacked with dpkg -x.
mkdir -p "$CACHE"
if ! ls "$CACHE"/root/boot/vmlinuz-* >/dev/null 2>&1; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$pkg" ]; then apt_locked apt-get update >/dev/null; pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); fi
  [ -n "$pkg" ] || { echo "kernel.sh: cannot find the Debian kernel package behind linux-image-amd64" >&2; exit 1; }
  (cd "$CACHE" && rm -f linux-image-*.deb && apt-get download "$pkg") || { echo "kernel.sh: apt-get download $pkg failed" >&2; exit 1; }
  rm -rf "$CACHE/root" && dpkg -x "$CACHE"/linux-image-*.deb "$CACHE/root" && rm -f "$CACHE"/linux-image-*.deb
fi
ls "$CACHE"/root/boot/vmlinuz-* >/dev/null || { echo "kernel.sh: no vmlinuz after unpacking" >&2; exit 1; }
# The package's postinst (not run by dpkg -x) is what writes modules.dep; modprobe in the guest needs it.
ver=$(basename "$(ls -d "$CACHE"/root/lib/modules/*/ | head -1)")
[ -f "$CACHE/root/lib/modules/$ver/modules.dep" ] || depmod -b "$CACHE/root" "$ver" || { echo "kernel.sh: depmod failed" >&2; exit 1; }
bash scripts/setup/gstreamer.sh || { echo "kernel.sh: scripts/setup/gstreamer.sh failed (the VM stream test needs GStreamer)" >&2; exit 1; }
bash scripts/setup/rtsp.sh || { echo "kernel.sh: scripts/setup/rtsp.sh failed (the VM RTSP test needs the RTSP helper's packages and ffprobe)" >&2; exit 1; }
echo "kernel.sh: ready ($(basename "$(ls "$CACHE"/root/boot/vmlinuz-* | head -1)"))"
