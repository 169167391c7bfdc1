#!/usr/bin/env bash
# Debian's nginx for the console-behind-a-proxy test (tests/integration/console-proxy.test.ts): the test
# runs it as its own process (a temporary config, `daemon off`, a free loopback port) as a reverse proxy
# that strips a path prefix, as BlueOS's does for an extension's page. Its packaged service is never
# started (apt.sh's policy-rc.d).
set -euo pipefail

source "$(dirname "$0")/apt.sh"
apt_install_missing "nginx setup" nginx

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx setup: nginx missing after install" >&2; exit 1; }
echo "nginx setup: ok ($(/usr/sbin/nginx -v 2>&1 | head -1))"
