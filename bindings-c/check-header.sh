#!/usr/bin/env bash
# Fails when a fresh cbindgen run would change the committed include/polylock.h.
# Regenerates into a temporary file (build.rs honours POLYLOCK_HEADER_OUT) and diffs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
fresh="$(mktemp --suffix=.h)"
trap 'rm -f "$fresh"' EXIT
POLYLOCK_HEADER_OUT="$fresh" cargo build --quiet --release -p polylock-c --manifest-path "$here/Cargo.toml"
if ! diff -u "$here/include/polylock.h" "$fresh"; then
    echo "bindings-c/include/polylock.h is out of date: run 'cargo build -p polylock-c' and commit the header" >&2
    exit 1
fi
echo "bindings-c/include/polylock.h is up to date"
