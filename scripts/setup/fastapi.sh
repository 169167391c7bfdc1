#!/usr/bin/env bash
# Contract tier: FastAPI + pydantic v2 + uvicorn in a venv (.tmp/fastapi-venv), the reference the 422
# parity test compares Periscope against. Versions are pinned exactly in tests/contract/fastapi/requirements.txt.
# Idempotent: does nothing when the venv already holds exactly those versions.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.tmp/fastapi-venv"
REQUIREMENTS="$ROOT/tests/contract/fastapi/requirements.txt"
wanted() { grep -v '^\s*#' "$REQUIREMENTS" | grep -v '^\s*$' | tr 'A-Z_' 'a-z-' | sort; }
installed() { "$VENV/bin/python" -m pip freeze --all 2>/dev/null | grep -v -E '^(pip|setuptools|wheel)==' | tr 'A-Z_' 'a-z-' | sort; }

if [ -x "$VENV/bin/python" ] && [ "$(installed)" = "$(wanted)" ]; then
  echo "fastapi setup: ok (already installed)"
  exit 0
fi

source "$(dirname "$0")/apt.sh"
# A fresh Debian has python3 without venv/pip (ensurepip); install them only when missing.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  apt_install_missing "fastapi setup" python3 python3-venv python3-pip
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
python3 -m venv "$VENV"
# One retry, not five with backoff: a machine whose only index is a local mirror waits minutes otherwise.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --retries "${PIP_RETRIES:-1}" -r "$REQUIREMENTS"
if [ "$(installed)" != "$(wanted)" ]; then
  echo "fastapi setup: the venv does not hold exactly the pinned versions:" >&2
  diff <(wanted) <(installed) >&2 || true
  exit 1
fi
"$VENV/bin/python" -c 'import fastapi, pydantic, uvicorn; assert pydantic.VERSION.startswith("2.")' || { echo "fastapi setup: imports fail" >&2; exit 1; }
echo "fastapi setup: ok"
