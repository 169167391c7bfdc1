#!/usr/bin/env bash
# Benchmark tools from Debian: wrk (load), FastAPI + uvicorn (the baseline app, Debian's own python3).
set -euo pipefail
PKGS=(wrk python3-fastapi python3-uvicorn)
missing=()
for p in "${PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" || { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
