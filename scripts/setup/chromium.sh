#!/usr/bin/env bash
# Debian's Chromium for the WHEP (and MJPEG <img>) tests: puppeteer-core drives /usr/bin/chromium
# headless; no browser is downloaded. Its H.264 decoder works in WebRTC (FIELD-NOTES §5).
set -euo pipefail

source "$(dirname "$0")/apt.sh"
apt_install_missing "chromium setup" chromium

command -v chromium >/dev/null || { echo "chromium setup: chromium missing after install" >&2; exit 1; }
echo "chromium setup: ok ($(chromium --version 2>/dev/null | head -1))"
