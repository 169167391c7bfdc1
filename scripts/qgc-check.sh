#!/bin/sh
# QGroundControl's camera sequence from a ground station on the official MAVLink C headers
# (scripts/qgc-check.ts). Not a test tier: it needs mavlink/c_library_v2 beside the project
# (git clone https://github.com/mavlink/c_library_v2), which CI does not fetch.
#   scripts/qgc-check.sh <c_library_v2 checkout>
set -eu
cd "$(dirname "$0")/.."
exec node_modules/.bin/bun scripts/qgc-check.ts "$@"
