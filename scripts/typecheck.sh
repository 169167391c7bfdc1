#!/usr/bin/env bash
# TypeScript strict over the whole tree, the web console's ui/ under its own config (browser types, JSX): the contract tier fails on a type error.
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/tsc -p . && node_modules/.bin/tsc -p plugins/console/ui && echo "typecheck: ok"
