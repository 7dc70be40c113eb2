#!/usr/bin/env bash
# Every test polylock has, on a fresh machine: install what is missing, start the real
# servers on loopback, build everything once, run every suite, smoke-run the benchmarks.
#
#   tests/run-all.sh
#
# Environment:
#   POLYLOCK_CARGO_TARGET   cargo target directory, kept outside the clone so later runs
#                           reuse the build (default: ~/.cache/polylock/target)
#   POLYLOCK_KEEP_SERVICES  1 to leave the servers running afterwards
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

export CARGO_TARGET_DIR="${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}"
export CARGO_TERM_COLOR=never
# Two cores: build with both, but keep test binaries from starving each other's timers.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
mkdir -p "$CARGO_TARGET_DIR"

# Each stage's minutes, printed at the end (and on failure, up to the stage that failed).
started=$(date +%s)
stage_name=""
stage_started=$started
stage_times=()
end_stage() {
  if [[ -n "$stage_name" ]]; then
    stage_times+=("$(awk -v s="$(( $(date +%s) - stage_started ))" -v n="$stage_name" \
      'BEGIN { printf "%6.1f min  %s", s / 60, n }')")
  fi
  stage_started=$(date +%s)
}
step() {
  end_stage
  stage_name="$*"
  printf '\n==> %s\n' "$*"
}
print_stage_times() {
  end_stage
  stage_name=""
  printf '\n==> minutes per stage\n'
  printf '%s\n' "${stage_times[@]}"
}

step "tools"
command -v cargo >/dev/null || { echo "cargo is missing: install Rust (rustup) first" >&2; exit 1; }
cargo --version
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy

step "Python for interop tests (redis-py), in a venv outside the clone"
venv="${POLYLOCK_VENV:-$HOME/.cache/polylock/venv}"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/interop/requirements.txt
export POLYLOCK_TEST_PYTHON="$venv/bin/python"

step "servers (tests/services)"
on_exit() {
  local status=$?
  if [[ $status != 0 ]]; then
    local failed="$stage_name"
    print_stage_times
    printf '\nFAILED (exit %s) during: %s\n' "$status" "$failed"
  fi
  # A fault suite still running in the background stops and cleans up its servers and rules.
  if [[ -n "${faults_pid:-}" ]]; then
    kill "$faults_pid" 2>/dev/null || true
    wait "$faults_pid" 2>/dev/null || true
    cat "$faults_log" 2>/dev/null || true
  fi
  if [[ "${POLYLOCK_KEEP_SERVICES:-0}" != 1 ]]; then
    tests/services/services.sh stop >/dev/null 2>&1 || true
  fi
}
trap on_exit EXIT
tests/services/services.sh start
eval "$(tests/services/services.sh env)"

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked --release -- -D warnings
# Every build below (tests, maturin, napi, Maven, the C and Ruby builds) must resolve core's
# dependencies to one feature set, or core compiles again for each of them.
python3 tools/feature-union/generate.py --check

step "polylock-id for WebAssembly, and the embedded-only (sqlite) build of polylock"
rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
cargo build -p polylock-id --target wasm32-unknown-unknown --locked --release
cargo clippy -p polylock-id --target wasm32-unknown-unknown --locked --release -- -D warnings
cargo build -p polylock --no-default-features --features sqlite --locked --release
# Its dependency tree must hold no network client: that is what the feature split is for.
if cargo tree -p polylock --no-default-features --features sqlite -e normal --locked \
    | grep -E '(^|[ ─])(redis|etcd-client|tonic|zookeeper-client|sqlx|sqlx-core|sqlx-postgres|sqlx-mysql|rustls) v'; then
  echo "the sqlite-only build of polylock pulls in a network client (above)" >&2
  exit 1
fi

step "node-redlock for the RedLock interop test (core/tests/redlock.rs)"
npm ci --prefix tests/interop/redlock --no-audit --no-fund

step "Rust suites (core, id, cli, bench), against every server"
cargo test --workspace --locked --release

step "fault-injection suite, started in the background (tests/faults; joined before the benchmarks)"
# Real `polylock run` processes against real servers, checked by a ledger: paused and killed
# holders, 32x20 holds, private servers restarted, partitioned (iptables on 127.0.0.2) and
# 3-member clusters with the leader killed. It mostly waits out leases, and its private
# servers use ports of their own, so it runs beside the binding suites instead of adding its
# ~9 minutes to the run. The CLI it drives was built by the Rust suites above.
command -v iptables >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends install iptables >/dev/null
cargo build --release --locked -q -p polylock-cli
faults_log="${TMPDIR:-/tmp}/polylock-faults.$$.log"
faults_started=$(date +%s)
POLYLOCK_CLI="$CARGO_TARGET_DIR/release/polylock" tests/faults/run.sh >"$faults_log" 2>&1 &
faults_pid=$!

step "Python binding (pytest, every landed backend)"
bindings-python/run-tests.sh

step "Node binding (node:test, every landed backend, npm pack + install)"
bindings-node/run-tests.sh

step "WebAssembly package (build, size budget, node:test, headless Chromium, npm pack)"
POLYLOCK_WASM_CROSS_CHECK=all bindings-wasm/run-tests.sh

step "C binding (header check, ctest, valgrind)"
bindings-c/run-tests.sh

step "fuzz targets, bounded (URL parser, durations, C API argument handling; fuzz/run.sh --quick)"
# fuzz/ is a workspace of its own: format and lint it here. The stable runner replays the
# committed crash cases and seeds, then deterministic mutations, ~25 s a target; the long
# coverage-guided run (cargo fuzz) is local: fuzz/README.md.
(cd fuzz && cargo fmt -p polylock-fuzz -- --check)
(cd fuzz && CARGO_TARGET_DIR="$HOME/.cache/polylock/target-fuzz" \
  cargo clippy -p polylock-fuzz --all-targets --no-default-features --locked --release -- -D warnings)
fuzz/run.sh --quick

step "JVM binding (JUnit via Maven, every landed backend, real Redisson)"
bindings-jvm/run-tests.sh

step "Ruby gem (uniffi: generated Ruby checked, gem built and installed, minitest on every backend, real Redisson)"
# The Ruby/Python interop test needs the Python binding's venv (polylock installed), not the
# redis-py one exported above. Its quick bench (pairs beside a plain SET NX PX loop) ends it.
POLYLOCK_TEST_PYTHON="${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}/bin/python" bindings-uniffi/run-tests.sh

step "Go binding (go vet, go test -race on every backend, etcdctl and redsync interop)"
POLYLOCK_GO_BENCH=0 bindings-go/run-tests.sh

step "release artifacts (release/build.sh into dist/, reusing the builds above; then each installed on a PATH without cargo)"
# Every suite above built its binding into the one target dir: cargo finds it all up to date,
# so this stage only packs, and installs each artifact as a user would (tests/release).
release/build.sh
tests/release/run-tests.sh

step "fault-injection suite (joined; it ran beside the stages since the Rust suites)"
faults_status=0
wait "$faults_pid" || faults_status=$?
faults_pid=""
cat "$faults_log"
printf 'fault-injection suite: %.1f min beside the other stages, exit %s\n' \
  "$(awk -v s="$(( $(date +%s) - faults_started ))" 'BEGIN { print s / 60 }')" "$faults_status"
[[ $faults_status == 0 ]] || { echo "the fault-injection suite failed (above)" >&2; exit 1; }

step "benchmarks, quick smoke run (figures, not assertions)"
cargo run --release --locked -q -p polylock-bench -- all --quick
# Python read locks beside Rust's (issue 17: within 2x), the Rust figure from the bench above.
"${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}/bin/python" bench/python/bench_rw_redis.py --seconds 1 \
  --rust-binary "${CARGO_TARGET_DIR:-target}/release/polylock-bench"
# Python UUIDv7 and ULID beside the ecosystem's own (issue 19), peers pinned beside the script.
"${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}/bin/pip" install --quiet --disable-pip-version-check \
  -r bench/python/requirements-ids.txt
"${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}/bin/python" bench/python/bench_ids.py --seconds 0.3
node bindings-node/bench/bench.mjs --quick
node bindings-wasm/bench/bench.mjs --quick
bindings-jvm/bench/bench.sh --quick
bindings-go/bench.sh --quick

print_stage_times
printf '\n==> done in %ss\n' "$(( $(date +%s) - started ))"
