#!/usr/bin/env bash
# The C binding's benchmark: lock+unlock pairs/s through libpolylock (bench/bench_pairs.c)
# beside the Rust core's own figure for the same workload in the same run
# (bench/rust_pairs.rs), and the C/Rust ratio. Figures only: timing never fails the run.
#
# Workload: acquire (wait forever, fixed lease) + release, 1 thread on one name and 8
# threads on a name each, one shared client. Backends: sqlite (a fresh temp file per run)
# and, if POLYLOCK_TEST_REDIS_URL is set, that Redis.
#
#   POLYLOCK_CARGO_TARGET     cargo target dir (default ~/.cache/polylock/target)
#   POLYLOCK_BENCH_SECONDS    measured seconds per program and round (default 1)
#   POLYLOCK_BENCH_ROUNDS     rounds, the three programs interleaved; best kept (default 2)
#   POLYLOCK_BENCH_LEASE_MS   lease per acquire (default 30000; 0 = watchdog)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}"
export CARGO_TARGET_DIR="$target"
seconds="${POLYLOCK_BENCH_SECONDS:-1}"
rounds="${POLYLOCK_BENCH_ROUNDS:-2}"
lease_ms="${POLYLOCK_BENCH_LEASE_MS:-30000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --release -p polylock-c --manifest-path "$here/Cargo.toml" --lib --example rust_pairs
"$here/soname-link.sh" "$target/release" >/dev/null
cc -O2 -Wall -Wextra -Werror -I"$here/include" -o "$work/bench_pairs" "$here/bench/bench_pairs.c" \
    -L"$target/release" -lpolylock -Wl,-rpath,"$target/release" -pthread
rust="$target/release/examples/rust_pairs"

backends=("sqlite")
[[ -n "${POLYLOCK_TEST_REDIS_URL:-}" ]] && backends+=("redis")
rate() { sed -n 's/^pairs_per_sec=\([0-9.]*\).*/\1/p'; }
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

echo "lock+unlock pairs/s, best of ${rounds} interleaved rounds of ${seconds}s, lease ${lease_ms} ms, $(nproc) cores"
printf '%-7s %-23s %12s %12s %9s %16s %15s\n' backend workload "C" "Rust" "C/Rust" "Rust block_on" "C/Rust block_on"
for backend in "${backends[@]}"; do
    for threads in 1 8; do
        url() { [[ $backend == sqlite ]] && echo "sqlite://$work/bench-$1.db" || echo "$POLYLOCK_TEST_REDIS_URL"; }
        c=0 r=0 b=0
        for ((round = 0; round < rounds; round++)); do
            c=$(best "$c" "$("$work/bench_pairs" "$(url c$threads-$round)" "$threads" "$seconds" "$lease_ms" | rate)")
            r=$(best "$r" "$("$rust" "$(url rust$threads-$round)" "$threads" "$seconds" "$lease_ms" task | rate)")
            b=$(best "$b" "$("$rust" "$(url block$threads-$round)" "$threads" "$seconds" "$lease_ms" block_on | rate)")
        done
        if ((threads == 1)); then workload="1 thread, one name"; else workload="$threads threads, a name each"; fi
        printf '%-7s %-23s %12.0f %12.0f %9s %16.0f %15s\n' "$backend" "$workload" "$c" "$r" \
            "$(awk -v c="$c" -v r="$r" 'BEGIN { printf "%.2f", c / r }')" "$b" \
            "$(awk -v c="$c" -v r="$b" 'BEGIN { printf "%.2f", c / r }')"
    done
done
echo "C/Rust: C through libpolylock over the core in tokio tasks (target >= 0.95);"
echo "C/Rust block_on: over the core driven from plain threads with Runtime::block_on, as the binding does."
