#!/usr/bin/env bash
# The CLI's conformance driver: each request becomes `polylock` commands (../../PROTOCOL.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export POLYLOCK_BIN="${POLYLOCK_BIN:-$target/release/polylock}"
exec python3 -u "$here/driver.py"
