#!/usr/bin/env bash
# Builds Periscope's container image (the Dockerfile) with Debian's podman, with no container registry:
# the base image is made here from Debian's packages by mmdebstrap (the machine's apt sources), imported
# into podman, and given to the Dockerfile as BASE_IMAGE.
#
#   scripts/container/build.sh [amd64|arm64] [--fresh]
#
# The base is a Debian 12 minbase; the Dockerfile's RUN steps install GStreamer into it (buildah's chroot
# isolation: no OCI runtime is needed to build). arm64 on an amd64 machine: mmdebstrap makes the arm64
# base without emulation (chrootless mode), the npm stage runs on amd64 and picks Bun's aarch64 build,
# but the RUN steps of the arm64 stage execute arm64 programs (apt, dpkg): that needs qemu-user-static
# registered with binfmt_misc, which the script checks first and does not do itself (it is the kernel's,
# shared by everything on the machine).
#
# The base tarballs are kept under .tmp/container/ (delete them, or pass --fresh, to make them anew);
# podman keeps its layer cache. Prints how long each part took and the image's size; the image is
# localhost/periscope:<version>-<arch>. Needs root (podman, mmdebstrap) and scripts/setup/container.sh's
# packages.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

ARCH=amd64
FRESH=0
for arg in "$@"; do
  case "$arg" in
    amd64 | arm64) ARCH=$arg ;;
    --fresh) FRESH=1 ;;
    *) echo "usage: $0 [amd64|arm64] [--fresh]" >&2; exit 2 ;;
  esac
done
die() { echo "container build: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (rootful podman and mmdebstrap)"
for tool in podman mmdebstrap runc; do command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup/container.sh"; done

export CONTAINERS_CONF="$ROOT/scripts/container/containers.conf"
SUITE=bookworm
NATIVE=$(dpkg --print-architecture)
VERSION=$(sed -n "s/^export const VERSION = '\(.*\)'.*/\1/p" core/version.ts)
[ -n "$VERSION" ] || die "cannot read VERSION from core/version.ts"
IMAGE="localhost/periscope:$VERSION-$ARCH"
CACHE="$ROOT/.tmp/container"
mkdir -p "$CACHE"
# Where apt finds Debian here: the machine's own sources (a mirror, a proxy or deb.debian.org).
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
[ -f "$SOURCES" ] || die "no apt sources found in /etc/apt"
# As Debian's slim images: no manuals, documentation or translations.
SLIM=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*')
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# debian_image NAME ARCH: a Debian minbase as a podman image, made by mmdebstrap into
# .tmp/container/NAME.tar unless that tarball is already there.
debian_image() {
  local name=$1 arch=$2
  local tar="$CACHE/$name.tar" image="localhost/periscope-base:$name" mode=root
  [ "$FRESH" = 1 ] && rm -f "$tar"
  [ "$arch" = "$NATIVE" ] || mode=chrootless # runs no foreign program: needs no emulation
  if [ ! -s "$tar" ]; then
    local started
    started=$(now)
    echo "container build: mmdebstrap $SUITE $arch ($mode) into $tar" >&2
    mmdebstrap --quiet --mode="$mode" --variant=minbase --arch="$arch" --format=tar \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${SLIM[@]}" \
      "$SUITE" "$tar.part" "$SOURCES" || die "mmdebstrap failed for $arch"
    mv "$tar.part" "$tar"
    echo "container build: base $name made in $(seconds "$started" "$(now)") s ($(du -m "$tar" | cut -f1) MB)" >&2
  else
    echo "container build: base $name reused from $tar" >&2
  fi
  # (Re-)import when the tarball is newer than the image made from it.
  local stamp="$CACHE/$name.imported"
  if ! podman image exists "$image" || [ ! -e "$stamp" ] || [ "$tar" -nt "$stamp" ]; then
    podman import --quiet --arch "$arch" --os linux "$tar" "$image" >/dev/null || die "podman import of $tar failed"
    touch "$stamp"
  fi
  echo "$image"
}

if [ "$ARCH" != "$NATIVE" ] && [ ! -e "/proc/sys/fs/binfmt_misc/qemu-${ARCH/arm64/aarch64}" ]; then
  die "building for $ARCH on $NATIVE runs $ARCH programs in the image (apt): register qemu-user-static with binfmt_misc first (Debian: apt-get install qemu-user-static binfmt-support), or build on an $ARCH machine"
fi

started=$(now)
BUILD_ARGS=(--build-arg "BASE_IMAGE=$(debian_image "$SUITE-$ARCH" "$ARCH")")
[ "$ARCH" = "$NATIVE" ] || BUILD_ARGS+=(--build-arg "BUILD_BASE_IMAGE=$(debian_image "$SUITE-$NATIVE" "$NATIVE")")
based=$(now)

# The npm stage fetches from the npm registry over TLS: lend it the machine's CA bundle (a proxy that
# re-signs TLS is trusted there), for the build only; nothing of it is kept in the image.
MOUNTS=()
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  printf 'cafile=/run/host-certs/ca-certificates.crt\n' > "$CACHE/npmrc"
  MOUNTS+=(--volume /etc/ssl/certs:/run/host-certs:ro --volume "$CACHE/npmrc:/root/.npmrc:ro")
fi

echo "container build: podman build $IMAGE (linux/$ARCH)" >&2
podman build --isolation chroot --platform "linux/$ARCH" --network host "${MOUNTS[@]}" "${BUILD_ARGS[@]}" \
  --tag "$IMAGE" --file Dockerfile . || die "podman build failed"
built=$(now)

size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "container build: $IMAGE built; base $(seconds "$started" "$based") s, image $(seconds "$based" "$built") s, total $(seconds "$started" "$built") s; size $((size / 1000000)) MB"
