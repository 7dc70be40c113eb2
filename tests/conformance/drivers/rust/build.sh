#!/usr/bin/env bash
# Builds the Rust surface's conformance driver: a member of the workspace, so core is the one
# `cargo test --workspace` already compiled (near-instant when nothing changed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
cd "$root"
cargo build --release --locked -q -p polylock-conformance-rust
