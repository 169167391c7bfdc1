#!/usr/bin/env bash
# Recordings tier: independent zip readers that validate every archive the service writes (Info-ZIP
# unzip -t and zipinfo, Python's zipfile), Info-ZIP zip for the benchmark, curl as the HTTP client,
# ffmpeg and mpv as independent readers of the recordings' telemetry track.
# coreutils (truncate, dd, sha256sum) ship with Debian. Idempotent: installs only what is missing and
# runs apt-get update only when a package cannot be found.
set -euo pipefail

PACKAGES=(
  unzip    # unzip -t, zipinfo
  zip      # zip -0 (the benchmark's reference)
  python3  # zipfile: a third reader, and testzip() checks every CRC
  curl     # the HTTP client of the tests (--path-as-is keeps hostile paths intact)
  ffmpeg   # ffprobe and ffmpeg read the recordings' telemetry subtitle track
  mpv      # a player that shows it (its subtitle text, frame by frame, with --vo=null)
)

source "$(dirname "$0")/apt.sh"
apt_install_missing "recordings setup" "${PACKAGES[@]}"

for tool in unzip zipinfo zip python3 curl truncate dd sha256sum ffmpeg ffprobe mpv; do
  command -v "$tool" >/dev/null || { echo "recordings setup: $tool missing after install" >&2; exit 1; }
done
python3 -c 'import zipfile, zlib' || { echo "recordings setup: python3 lacks zipfile/zlib" >&2; exit 1; }
echo "recordings setup: ok"
