#!/usr/bin/env bash
# Recordings tier: independent zip readers that validate every archive the service writes (Info-ZIP
# unzip -t and zipinfo, Python's zipfile), Info-ZIP zip for the benchmark, curl as the HTTP client.
# coreutils (truncate, dd, sha256sum) ship with Debian. Idempotent: installs only what is missing and
# runs apt-get update only when a package cannot be found.
set -euo pipefail

PACKAGES=(
  unzip    # unzip -t, zipinfo
  zip      # zip -0 (the benchmark's reference)
  python3  # zipfile: a third reader, and testzip() checks every CRC
  curl     # the HTTP client of the tests (--path-as-is keeps hostile paths intact)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}"; then
    apt-get -o DPkg::Lock::Timeout=600 update
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" || { echo "recordings setup: could not install ${missing[*]}" >&2; exit 1; }
  fi
fi

for tool in unzip zipinfo zip python3 curl truncate dd sha256sum; do
  command -v "$tool" >/dev/null || { echo "recordings setup: $tool missing after install" >&2; exit 1; }
done
python3 -c 'import zipfile, zlib' || { echo "recordings setup: python3 lacks zipfile/zlib" >&2; exit 1; }
echo "recordings setup: ok"
