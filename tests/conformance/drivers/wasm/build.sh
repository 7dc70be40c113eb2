#!/usr/bin/env bash
# Builds the WebAssembly package (bindings-wasm/pkg/node) for the wasm conformance driver,
# the way bindings-wasm/run-tests.sh does: its npm dev dependencies (for wasm-opt; npm ci only
# when package-lock.json changed since the last install), then bindings-wasm/build.sh (the
# wasm32 target and the exact wasm-bindgen CLI, installed once, then cargo, wasm-bindgen and
# wasm-opt). Skipped when pkg/node is newer than every source it is built from.
set -euo pipefail

root=$(cd "$(dirname "$0")/../../../.." && pwd)
wasm="$root/bindings-wasm"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
built="$wasm/pkg/node/polylock_wasm_bg.wasm"

if [[ -f "$built" ]] && [[ -z "$(find "$wasm/src" "$wasm/Cargo.toml" "$root/id" "$root/Cargo.lock" \
  -newer "$built" -type f -print -quit)" ]]; then
  echo "bindings-wasm/pkg/node is up to date" >&2
  exit 0
fi

cd "$wasm"
export PUPPETEER_SKIP_DOWNLOAD=1
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ "$(cat node_modules/.polylock-lock-sha256 2>/dev/null)" != "$lock_sum" ]]; then
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$lock_sum" >node_modules/.polylock-lock-sha256
fi
./build.sh >&2
