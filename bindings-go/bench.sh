#!/usr/bin/env bash
# Go lock+unlock pairs/s beside redsync (Redis, single node; and RedLock over three private
# redis-servers it starts) and etcd's concurrency.Mutex, same run, printed as ratios. The
# single-server rows need POLYLOCK_TEST_REDIS_URL and/or POLYLOCK_TEST_ETCD_URL
# (tests/services/services.sh env); all need the static library (run-tests.sh builds it).
#
#   bindings-go/bench.sh [--quick]     --quick: one round of 0.3 s per program
#   POLYLOCK_BENCH_SECONDS (default 1), POLYLOCK_BENCH_ROUNDS (default 2)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
if [[ ${1:-} == --quick ]]; then
    export POLYLOCK_BENCH_SECONDS="${POLYLOCK_BENCH_SECONDS:-0.3}" POLYLOCK_BENCH_ROUNDS="${POLYLOCK_BENCH_ROUNDS:-1}"
fi
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$target/release${CGO_LDFLAGS:+ $CGO_LDFLAGS}"
cd "$here"
go run ./bench
