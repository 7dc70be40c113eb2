#!/usr/bin/env bash
# The python-asyncio driver runs on the same installed binding as the python driver: its
# build (the venv of bindings-python/run-tests.sh, rebuilt only when missing or stale).
set -euo pipefail
exec "$(cd "$(dirname "$0")" && pwd)/../python/build.sh" "$@"
