#!/usr/bin/env bash
# Builds the `polylock` binary the CLI driver runs, as tests/run-all.sh does (near-instant
# when it is built already). The driver itself is Python with the standard library only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
cd "$root"
cargo build --release --locked -q -p polylock-cli
