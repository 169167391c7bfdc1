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
# A re-run reuses what did not change: the base image while its inputs are the same (--fresh makes it
# anew), then podman's layer cache. Prints how long each part took, the image's size and what was reused;
# the image is localhost/periscope:<version>-<arch>. Needs root (podman, mmdebstrap) and
# scripts/setup/container.sh's packages.
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

# debian_image NAME ARCH: a Debian minbase as a podman image, tagged by a hash of what makes it (the
# mmdebstrap command, mmdebstrap's version, the apt sources): when that tag exists it is used as it is,
# so its image ID, and with it podman's cache of every layer built on it, holds from one run to the next
# (a base made anew differs in its timestamps, so every layer would be rebuilt). Debian's updates since
# are not in it until the inputs change or --fresh; the tarball is dropped once imported.
debian_image() {
  local name=$1 arch=$2 mode=root
  [ "$arch" = "$NATIVE" ] || mode=chrootless # runs no foreign program: needs no emulation
  local command=(mmdebstrap --quiet --mode="$mode" --variant=minbase --arch="$arch" --format=tar
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${SLIM[@]}" "$SUITE")
  local hash
  hash=$({ printf '%s\n' "${command[@]}"; mmdebstrap --version; cat "$SOURCES"; } | sha256sum | cut -c1-12)
  local image="localhost/periscope-base:$name-$hash"
  if [ "$FRESH" = 0 ] && podman image exists "$image"; then
    echo "container build: base $image reused" >&2
    REUSED_BASES=$((REUSED_BASES + 1))
  else
    local tar="$CACHE/$name-$hash.tar" started
    started=$(now)
    echo "container build: mmdebstrap $SUITE $arch ($mode) for $image" >&2
    rm -f "$tar"
    "${command[@]}" "$tar" "$SOURCES" || die "mmdebstrap failed for $arch"
    podman import --quiet --arch "$arch" --os linux "$tar" "$image" >/dev/null || die "podman import of $tar failed"
    echo "container build: base $image made in $(seconds "$started" "$(now)") s ($(du -m "$tar" | cut -f1) MB)" >&2
    rm -f "$tar"
  fi
  BASES+=("$image")
}

if [ "$ARCH" != "$NATIVE" ] && [ ! -e "/proc/sys/fs/binfmt_misc/qemu-${ARCH/arm64/aarch64}" ]; then
  die "building for $ARCH on $NATIVE runs $ARCH programs in the image (apt): register qemu-user-static with binfmt_misc first (Debian: apt-get install qemu-user-static binfmt-support), or build on an $ARCH machine"
fi

started=$(now)
BASES=()
REUSED_BASES=0
debian_image "$SUITE-$ARCH" "$ARCH"
BUILD_ARGS=(--build-arg "BASE_IMAGE=${BASES[0]}")
if [ "$ARCH" != "$NATIVE" ]; then
  debian_image "$SUITE-$NATIVE" "$NATIVE"
  BUILD_ARGS+=(--build-arg "BUILD_BASE_IMAGE=${BASES[1]}")
fi
based=$(now)

# The npm stage fetches from the npm registry over TLS: lend it the machine's CA bundle (a proxy that
# re-signs TLS is trusted there), for the build only; nothing of it is kept in the image.
MOUNTS=()
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  printf 'cafile=/run/host-certs/ca-certificates.crt\n' > "$CACHE/npmrc"
  MOUNTS+=(--volume /etc/ssl/certs:/run/host-certs:ro --volume "$CACHE/npmrc:/root/.npmrc:ro")
fi

# podman's layer cache (on by default, --layers) reuses each step whose parent and inputs are unchanged:
# the Dockerfile puts the slow ones (apt, npm ci, slim.sh) before the service's own files. Its output is
# kept to count the steps it reused.
echo "container build: podman build $IMAGE (linux/$ARCH)" >&2
steps_log="$CACHE/podman-build.$$.log"
# The image's id goes on the closing line: a suite beside this one (another clone) may tag its own build
# $IMAGE after this one, so a caller runs this build by its id, not by the tag.
id_file="$CACHE/image.$$.id"
podman build --isolation chroot --platform "linux/$ARCH" --network host "${MOUNTS[@]}" "${BUILD_ARGS[@]}" \
  --iidfile "$id_file" --tag "$IMAGE" --file Dockerfile . 2>&1 | tee "$steps_log" >&2 || { rm -f "$steps_log" "$id_file"; die "podman build failed"; }
id=$(cat "$id_file") && rm -f "$id_file"
id=${id#sha256:}
built=$(now)
# Its lines: "[2/3] STEP 4/14: RUN …" (the stage's prefix in a multi-stage build), "--> Using cache <id>".
step='^(\[[0-9]+/[0-9]+\] )?STEP [0-9]+/[0-9]+: '
steps=$(grep -E "$step" "$steps_log" | grep -Evc "${step}FROM " || true) # a FROM makes no layer
cached=$(grep -c '^--> Using cache ' "$steps_log" || true)
rm -f "$steps_log"

size=$(podman image inspect --format '{{.Size}}' "$id")
# The closing line, read by tests/container and scripts/test.ts: the figures, then what was reused.
echo "container build: $IMAGE built; base $(seconds "$started" "$based") s, image $(seconds "$based" "$built") s, total $(seconds "$started" "$built") s; size $((size / 1000000)) MB; reused: base $REUSED_BASES of ${#BASES[@]}, image steps $cached of $steps; id $id"
