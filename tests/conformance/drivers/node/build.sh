#!/usr/bin/env bash
# Builds the Node package (bindings-node/polylock.node) for the node conformance driver the
# way bindings-node/run-tests.sh does (through check-dts.sh): its npm dev dependencies, then
# scripts/build-native.js --dts, whose cargo build (release, the workspace's target dir, the
# same environment as CI's) is a no-op when the addon is up to date. The declarations it
# writes go to a scratch file: checking them is the binding's suite's job.
set -euo pipefail

root=$(cd "$(dirname "$0")/../../../.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
cd "$root/bindings-node"

if [[ ! -d node_modules/@napi-rs/cli || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm install --ignore-scripts --no-audit --no-fund --loglevel=error >&2
fi
dts=$(mktemp --suffix=.d.ts)
trap 'rm -f "$dts"' EXIT
node scripts/build-native.js --dts "$dts" >&2
