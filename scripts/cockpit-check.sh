#!/bin/sh
# Cockpit's own video code (bluerobotics/cockpit: src/composables/webRTC.ts, src/libs/webrtc/) plays a
# simulated Periscope camera in Chromium (scripts/cockpit-check.ts). Not a test tier: it needs Cockpit's
# source beside the project and Vue from the npm registry, which CI does not fetch.
#   scripts/cockpit-check.sh [--faults] [<cockpit source dir>] [<dir with node_modules/vue>]
# --faults: Cockpit's manager through a stream restart, an unplug and a kill -9 of the service, in place of the whole app.
# Cockpit's source: a checkout of bluerobotics/cockpit (its submodules are not needed)
# (by default ../cockpit-src and ../cockpit-deps, beside the project)
# Vue: npm install --prefix ../cockpit-deps vue@<the version in Cockpit's yarn.lock>
set -eu
cd "$(dirname "$0")/.."
exec node_modules/.bin/bun scripts/cockpit-check.ts "$@"
