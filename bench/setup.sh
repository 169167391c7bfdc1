#!/usr/bin/env bash
# Benchmark tools from Debian: wrk (load), FastAPI + uvicorn (the baseline app, Debian's own python3),
# tcpdump (the WHEP bench times packets in the kernel).
set -euo pipefail
PKGS=(wrk python3-fastapi python3-uvicorn tcpdump)
source "$(dirname "$0")/../scripts/setup/apt.sh"
apt_install_missing "bench setup" "${PKGS[@]}"
bash "$(dirname "$0")/../scripts/setup/chromium.sh" # WHEP bench: headless Chromium
