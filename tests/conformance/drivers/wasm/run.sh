#!/usr/bin/env bash
# The wasm conformance driver: JSON lines on stdin and stdout (tests/conformance/PROTOCOL.md).
set -euo pipefail
exec node "$(dirname "$0")/driver.js"
