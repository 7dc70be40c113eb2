#!/usr/bin/env bash
# Go lock+unlock pairs/s beside redsync (Redis, single node) and etcd's concurrency.Mutex,
# same run, printed as ratios. Needs POLYLOCK_TEST_REDIS_URL and/or POLYLOCK_TEST_ETCD_URL
# (tests/services/services.sh env) and the static library (run-tests.sh builds it).
#
#   POLYLOCK_BENCH_SECONDS (default 1), POLYLOCK_BENCH_ROUNDS (default 2)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
if [[ -z ${POLYLOCK_TEST_REDIS_URL:-} && -z ${POLYLOCK_TEST_ETCD_URL:-} ]]; then
    echo "bench: neither POLYLOCK_TEST_REDIS_URL nor POLYLOCK_TEST_ETCD_URL is set; nothing to compare"
    exit 0
fi
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$target/release${CGO_LDFLAGS:+ $CGO_LDFLAGS}"
cd "$here"
go run ./bench
