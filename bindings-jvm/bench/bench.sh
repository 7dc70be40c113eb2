#!/usr/bin/env bash
# polylock-java against Redisson on the same redis-server, in one run, ratios printed.
#
#   bindings-jvm/bench/bench.sh [--quick]
#
# Uses POLYLOCK_TEST_REDIS_URL, else starts tests/services' redis. --quick measures 0.3 s per
# round instead of 5 s (CI's smoke run, ~15 s with Maven's start; figures are noisier).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
seconds=5
[[ "${1:-}" == --quick ]] && seconds=0.3

url="${POLYLOCK_TEST_REDIS_URL:-}"
if [[ -z "$url" ]]; then
  "$root/tests/services/services.sh" start redis >/dev/null
  url=$("$root/tests/services/services.sh" url redis)
fi

cd "$here"
POLYLOCK_BENCH_URL="$url" POLYLOCK_BENCH_SECONDS="$seconds" \
  mvn -B -q test-compile exec:java -Dexec.classpathScope=test -Dexec.mainClass=io.polylock.bench.RedissonBench \
  -Dexec.cleanupDaemonThreads=false
