#!/usr/bin/env bash
# Runs before `npm start` and `npm test` (npm's pre-hooks): installs the npm dependencies (Bun among
# them) when they are missing or older than the lockfile. System packages are the tiers' business
# (scripts/setup/*.sh) and, for the service, GStreamer below.
set -euo pipefail
cd "$(dirname "$0")/.."
# Exact pins and a lock in sync, checked first: a loose pin is how a moving registry breaks a fresh install.
node scripts/check-deps.mjs >/dev/null
if [ ! -x node_modules/.bin/bun ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "periscope: installing npm dependencies (npm ci)…" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
