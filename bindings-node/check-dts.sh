#!/usr/bin/env bash
# Builds the addon (release, polylock.node) and fails when the TypeScript declarations
# napi-rs derives from the Rust sources differ from the committed index.d.ts.
#
# Needs `npm ci` done in bindings-node/ (@napi-rs/cli makes the declarations). CARGO_TARGET_DIR
# is honoured.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
fresh="$(mktemp --suffix=.d.ts)"
trap 'rm -f "$fresh"' EXIT
node "$here/scripts/build-native.js" --dts "$fresh"
if ! diff -u "$here/index.d.ts" "$fresh"; then
    echo "bindings-node/index.d.ts is out of date: run 'npm run build' in bindings-node/ and commit it" >&2
    exit 1
fi
echo "bindings-node/index.d.ts is up to date"
