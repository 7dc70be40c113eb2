#!/usr/bin/env bash
# polylock's fault-injection suite (issue #23): real `polylock run` processes against real
# servers, checked against a ledger of critical sections and fenced writes. See README.md here.
#
#   tests/faults/run.sh [--only SUBSTRING ...] [--list] [--keep]
#
# Environment:
#   POLYLOCK_CLI          the polylock binary (default $CARGO_TARGET_DIR/release/polylock);
#                         this script builds nothing
#   POLYLOCK_TEST_*_URL   the shared servers (tests/services/services.sh env); read from
#                         services.sh when unset. Cases that stop, restart or partition a
#                         server start private ones on their own ports.
#   FAULTS_PROCS, FAULTS_HOLDS, FAULTS_HOLDS_NET   the many-holders case's sizes (32, 20, 10)
#   FAULTS_TIMEOUT        hard limit for the whole suite in seconds (default 900)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export POLYLOCK_CLI="${POLYLOCK_CLI:-${CARGO_TARGET_DIR:-$root/target}/release/polylock}"
if [[ ! -x $POLYLOCK_CLI ]]; then
  echo "faults: no polylock CLI at $POLYLOCK_CLI: cargo build --release -p polylock-cli first" >&2
  exit 2
fi
if [[ -z ${POLYLOCK_TEST_REDIS_URL:-} ]]; then
  eval "$("$root/tests/services/services.sh" env)"
fi
# The partition cases need iptables (Debian package iptables) and root; without them they SKIP.
# The harness removes its own chain at the end, and its `timeout` sends SIGTERM first so it can.
exec timeout -k 30 "${FAULTS_TIMEOUT:-900}" python3 "$here/faults.py" "$@"
