#!/usr/bin/env bash
# The Rust surface's conformance driver: JSON lines on stdin and stdout (../../PROTOCOL.md).
set -euo pipefail
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
exec "$target/release/polylock-conformance-rust"
