#!/usr/bin/env bash
# Metrics: Prometheus's own `promtool check metrics` parses and lints what GET /metrics serves (the
# integration tier's tests/integration/metrics.test.ts). Debian's `prometheus` package ships promtool;
# its server is never started here (apt.sh keeps package services from starting). Idempotent.
set -euo pipefail

source "$(dirname "$0")/apt.sh"
apt_install_missing "metrics setup" prometheus

command -v promtool >/dev/null || { echo "metrics setup: promtool missing after installing prometheus" >&2; exit 1; }
echo "metrics setup: ok ($(promtool --version 2>&1 | head -1))"
