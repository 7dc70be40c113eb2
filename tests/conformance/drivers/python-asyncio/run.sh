#!/usr/bin/env bash
# The python-asyncio surface's conformance driver (PROTOCOL.md on stdin/stdout), in the venv
# ../python/build.sh installs the binding into; it shares ../python/protocol.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}"
exec "$venv/bin/python" -u "$here/driver.py" "$@"
