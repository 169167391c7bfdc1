#!/usr/bin/env bash
# arm64 tier: Debian's qemu-user (qemu-aarch64-static) and the aarch64 loader and libraries it runs the
# aarch64 Bun with (-L /usr/aarch64-linux-gnu), the C compilers and kernel headers of the layout checks
# (x86-64 and aarch64), and Bun's own aarch64 build, the npm package @oven/bun-linux-aarch64, unpacked
# into .tmp/arm64/bun-linux-aarch64.
#
# That package is pinned by the committed package-lock.json: npm locks every optional platform package of
# `bun` with its version and sha512, whether or not it installs it here. So the version is the one of the
# locked `bun` (check-deps holds it equal to package.json's pin), and the tarball `npm pack` fetches must
# have the locked sha512, or nothing is unpacked. No new dependency is declared for it.
# Idempotent: fetches only when the unpacked build is missing or was verified against another sha512.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$ROOT/.tmp/arm64"
PACKAGE=@oven/bun-linux-aarch64
die() { echo "arm64 setup: $*" >&2; exit 1; }

PKGS=(
  qemu-user-static                                   # qemu-aarch64-static: user-mode emulation, no binfmt needed
  libc6-arm64-cross libstdc++6-arm64-cross           # /usr/aarch64-linux-gnu: ld-linux-aarch64.so.1, libc, libstdc++
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross linux-libc-dev-arm64-cross # the aarch64 compiler's view of videodev2.h
  gcc libc6-dev linux-libc-dev                       # the x86-64 one (tests/kernel/host/layout.test.ts checks both)
)
source "$ROOT/scripts/setup/apt.sh"
apt_install_missing "arm64 setup" "${PKGS[@]}"
for tool in qemu-aarch64-static aarch64-linux-gnu-gcc gcc; do
  command -v "$tool" >/dev/null || die "$tool missing after install"
done
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || die "no aarch64 loader in /usr/aarch64-linux-gnu/lib"
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || die "no aarch64 libc in /usr/aarch64-linux-gnu/lib"

# "<version> <sha512 integrity>" of the aarch64 build, from the lock; fails naming what does not agree.
read -r VERSION INTEGRITY < <(node -e '
  const lock = require(process.argv[1]).packages ?? {}
  const bun = lock["node_modules/bun"], arm = lock["node_modules/" + process.argv[2]]
  const fail = (m) => { console.error("arm64 setup: " + m); process.exit(1) }
  if (!bun?.version) fail("package-lock.json holds no bun")
  if (bun.optionalDependencies?.[process.argv[2]] !== bun.version) fail(`the locked bun@${bun.version} does not name ${process.argv[2]}@${bun.version}`)
  if (arm?.version !== bun.version || !/^sha512-/.test(arm?.integrity ?? "")) fail(`package-lock.json holds no sha512 for ${process.argv[2]}@${bun.version}`)
  console.log(bun.version, arm.integrity)
' "$ROOT/package-lock.json" "$PACKAGE") || die "cannot read the pin from package-lock.json"
[ -n "${INTEGRITY:-}" ] || die "cannot read the pin from package-lock.json"

UNPACKED="$DEST/bun-linux-aarch64"
if [ -x "$UNPACKED/bin/bun" ] && [ "$(cat "$UNPACKED/.integrity" 2>/dev/null)" = "$INTEGRITY" ]; then
  echo "arm64 setup: $PACKAGE@$VERSION already unpacked (sha512 as locked)"
else
  mkdir -p "$DEST"
  rm -rf "$UNPACKED" "$DEST"/oven-bun-linux-aarch64-*.tgz
  (cd "$DEST" && npm pack "$PACKAGE@$VERSION" --silent --no-audit --no-fund >/dev/null) || die "npm pack $PACKAGE@$VERSION failed"
  tarball="$DEST/oven-bun-linux-aarch64-$VERSION.tgz"
  [ -f "$tarball" ] || die "npm pack wrote no $tarball"
  got="sha512-$(node -e 'process.stdout.write(require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tarball")"
  if [ "$got" != "$INTEGRITY" ]; then
    rm -f "$tarball"
    die "$PACKAGE@$VERSION from the registry has $got, package-lock.json says $INTEGRITY: refused"
  fi
  mkdir -p "$UNPACKED"
  tar -xzf "$tarball" -C "$UNPACKED" --strip-components=1 && rm -f "$tarball"
  [ -x "$UNPACKED/bin/bun" ] || die "the package holds no executable bin/bun"
  echo "$INTEGRITY" > "$UNPACKED/.integrity"
  echo "arm64 setup: $PACKAGE@$VERSION fetched, sha512 as locked, unpacked in ${UNPACKED#"$ROOT"/}"
fi

# It runs, as arm64, and is the locked version.
probe=$("$ROOT/tests/arm64/bun" -e 'console.log(process.arch, Bun.version)') || die "the aarch64 Bun does not start under qemu-aarch64-static"
[ "$probe" = "arm64 $VERSION" ] || die "the aarch64 Bun reports '$probe', expected 'arm64 $VERSION'"
echo "arm64 setup: ok (qemu-aarch64-static $(qemu-aarch64-static --version | awk 'NR==1{print $3}'), Bun $VERSION for arm64)"
