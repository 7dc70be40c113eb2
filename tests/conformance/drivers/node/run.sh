#!/usr/bin/env bash
# The node conformance driver: JSON lines on stdin and stdout (tests/conformance/PROTOCOL.md).
set -euo pipefail
exec node "$(dirname "$0")/driver.js"
