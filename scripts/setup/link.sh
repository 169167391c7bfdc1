#!/usr/bin/env bash
# iperf3 and tc for the link test's check (tests/integration/link-test.test.ts): the console's "Test the
# tether" against iperf3 through a rate-limited veth (tc tbf) between two network namespaces of the
# test's own. iperf3's packaged service is never started (apt.sh's policy-rc.d); the test runs it as its
# own process, inside its namespaces, and stops it by pid.
set -euo pipefail

source "$(dirname "$0")/apt.sh"
apt_install_missing "link setup" iperf3 iproute2

command -v iperf3 >/dev/null || { echo "link setup: iperf3 missing after install" >&2; exit 1; }
command -v tc >/dev/null || [ -x /usr/sbin/tc ] || { echo "link setup: tc missing after install" >&2; exit 1; }
echo "link setup: ok ($(iperf3 --version | head -1))"
