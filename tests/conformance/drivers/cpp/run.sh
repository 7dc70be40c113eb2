#!/usr/bin/env bash
# Runs the C++ conformance driver (build.sh builds it): the protocol on stdin/stdout.
set -euo pipefail
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
exec "$target/conformance-drivers/cpp-driver" "$@"
