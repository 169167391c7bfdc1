#!/usr/bin/env bash
# TypeScript strict over the whole tree: the contract tier fails on a type error.
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/tsc -p . && echo "typecheck: ok"
