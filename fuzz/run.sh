#!/usr/bin/env bash
# Run every fuzz target, bounded; exit non-zero on a crash. One line per target.
#
#   fuzz/run.sh [--quick] [TARGET...]        CI: the stable runner (a fixed count a target with --quick)
#   fuzz/run.sh --long SECONDS [TARGET...]   local: cargo fuzz (libFuzzer), SECONDS a target
#
# --quick (and no option) uses the stable runner (src/bin/stable.rs) on stable Rust: the
# committed crash cases, the seed corpus, then deterministic mutations (a fixed sequence:
# with --quick a fixed number of them a target, so every machine runs the same inputs;
# with no option as many as 120 s a target allow). It is built in the main workspace's target dir from the
# dependency builds every other member uses (polylock-fuzz is a workspace member; one feature
# set, tools/feature-union), so after `cargo test --workspace --release` only polylock-c-abi
# and polylock-fuzz themselves compile.
# --long builds and runs each target with cargo-fuzz (installed under $POLYLOCK_TOOLS) on the
# same stable toolchain through RUSTC_BOOTSTRAP=1, with AddressSanitizer and --features
# libfuzzer, and the seed corpus copied to a working corpus under its target dir (the
# committed one stays small).
# Environment: POLYLOCK_TOOLS (default ~/.cache/polylock/tools), CARGO_TARGET_DIR or
# POLYLOCK_CARGO_TARGET (the stable runner's cargo target dir, the workspace's; default
# ~/.cache/polylock/target), POLYLOCK_FUZZ_TARGET_DIR (cargo fuzz's: its instrumented build
# shares nothing with the others; default ~/.cache/polylock/target-fuzz), POLYLOCK_FUZZ_SECONDS
# (stable runner: seconds a target instead of --quick's counts; else 120), POLYLOCK_FUZZ_EXECS (stable
# runner: a number of inputs a target instead of --quick's own counts), POLYLOCK_FUZZ_SANITIZER
# (cargo fuzz --sanitizer: address, the default, or none).
#
# The targets run in a network namespace of their own with loopback only (`unshare -rn`)
# where the kernel allows it: then URLs of network backends are connected to as well, and
# nothing the fuzzer writes can reach beyond the machine. Elsewhere those URLs are checked
# without connecting (the targets see the namespace for themselves).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="${POLYLOCK_TOOLS:-$HOME/.cache/polylock/tools}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"

mode=stable quick=0 long_seconds=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --long) mode=cargo-fuzz; long_seconds="${2:?--long needs SECONDS}"; shift ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1") ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=(url duration c_api)

# c-abi/Cargo.toml compiles bindings-c's sources: it must have the same dependencies, with
# the same features. polylock-feature-union is compared apart from them (both must have it):
# it has no code, and only aligns the workspace's builds with each other (tools/feature-union).
deps() {
    sed -n '/^\[dependencies\]/,/^\[/p' "$1" | grep -E '^[a-z0-9_-]+ *=' | grep -v '^polylock-feature-union *=' \
        | sed -E 's/^([a-z0-9_-]+) *=.*features *= *\[([^]]*)\].*/\1 [\2]/; t; s/^([a-z0-9_-]+) *=.*/\1/' \
        | sort | tr '\n' ' '
}
if [ "$(deps "$here/../bindings-c/Cargo.toml")" != "$(deps "$here/c-abi/Cargo.toml")" ]; then
    echo "run.sh: bindings-c/Cargo.toml's [dependencies] ($(deps "$here/../bindings-c/Cargo.toml")) differ from" \
         "fuzz/c-abi/Cargo.toml's ($(deps "$here/c-abi/Cargo.toml")): copy them over" >&2
    exit 1
fi
for manifest in "$here/Cargo.toml" "$here/c-abi/Cargo.toml"; do
    if ! grep -q '^polylock-feature-union *= *{ *workspace *= *true *}' "$manifest"; then
        echo "run.sh: $manifest must depend on polylock-feature-union (workspace = true), as every" \
             "member linking core does, or its build resolves core's dependencies apart" >&2
        exit 1
    fi
done

# Loopback only, if this kernel lets an unprivileged user make a network namespace.
isolate=()
if unshare -rn true 2>/dev/null; then
    isolate=(unshare -rn sh -c 'ip link set lo up 2>/dev/null || true; exec "$@"' isolated)
fi

cd "$here"
if [ "$mode" = stable ]; then
    # The workspace's release profile and features: every dependency is already built by
    # `cargo test --workspace --release` (tests/run-all.sh builds this runner in its Rust build).
    cargo build --release --locked -p polylock-fuzz --bin stable
    run() { ${isolate[@]+"${isolate[@]}"} "$CARGO_TARGET_DIR/release/stable" --dir "$here" "$@"; }
    if [ -n "${POLYLOCK_FUZZ_EXECS:-}" ]; then
        run --execs "$POLYLOCK_FUZZ_EXECS" --seconds 1000000 "${targets[@]}"; exit $?
    elif [ -n "${POLYLOCK_FUZZ_SECONDS:-}" ] || [ $quick = 0 ]; then
        run --execs 1000000000 --seconds "${POLYLOCK_FUZZ_SECONDS:-120}" "${targets[@]}"; exit $?
    fi
    # --quick, in CI: the crash cases, the seeds, then a fixed number of deterministic
    # mutations a target (about 10 s each on 2 cores), so that CI runs exactly the inputs a
    # local `fuzz/run.sh --quick` of the same commit ran, however fast the machine. A time
    # budget made each machine run a different prefix of the sequence, and CI found what the
    # local run had not reached. Longer searches are --long's (or POLYLOCK_FUZZ_SECONDS').
    status=0
    for t in "${targets[@]}"; do
        case "$t" in url) n=800 ;; duration) n=600000 ;; c_api) n=3000 ;; *) n=2000 ;; esac
        run --execs "$n" --seconds 1000000 "$t" || status=1
    done
    exit $status
fi

# --long: cargo fuzz, from fuzz/ (it finds the workspace above and builds with its Cargo.lock).
if [ ! -x "$tools/bin/cargo-fuzz" ]; then
    cargo install cargo-fuzz --locked --root "$tools"
fi
# Its own target dir: the instrumented build shares no unit with the workspace's, and the two
# can then be built at once.
export CARGO_TARGET_DIR="${POLYLOCK_FUZZ_TARGET_DIR:-$HOME/.cache/polylock/target-fuzz}/libfuzzer"
export PATH="$tools/bin:$PATH" RUSTC_BOOTSTRAP=1
sanitizer="${POLYLOCK_FUZZ_SANITIZER:-address}"
fuzz_opts=(--sanitizer "$sanitizer" --release --features libfuzzer)
status=0
for t in "${targets[@]}"; do
    cargo fuzz build "${fuzz_opts[@]}" "$t"
    work="$CARGO_TARGET_DIR/corpus/$t"
    mkdir -p "$work" "$here/artifacts/$t"
    cp -n "$here/corpus/$t"/* "$work"/ 2>/dev/null || true
    log="$CARGO_TARGET_DIR/fuzz-$t.log"
    started=$(date +%s)
    set +e
    # The committed crash cases first (libFuzzer runs files given by name once each): each
    # must pass now. Then the fuzzing proper, from the seeds and what earlier runs found.
    crashes=("$here/crashes/$t"/*)
    rc=0
    if [ -e "${crashes[0]}" ]; then
        ${isolate[@]+"${isolate[@]}"} cargo fuzz run "${fuzz_opts[@]}" "$t" "${crashes[@]}" >"$log" 2>&1
        rc=$?
    fi
    if [ $rc = 0 ]; then
        ${isolate[@]+"${isolate[@]}"} cargo fuzz run "${fuzz_opts[@]}" "$t" "$work" "$here/corpus/$t" -- \
            -max_total_time="$long_seconds" -timeout=10 -rss_limit_mb=3072 \
            -artifact_prefix="$here/artifacts/$t/" >>"$log" 2>&1
        rc=$?
    fi
    set -e
    execs=$(grep -oE '#[0-9]+' "$log" | tail -1 | tr -d '#')
    if [ $rc = 0 ]; then outcome=ok; else outcome="CRASH (exit $rc; see $log and fuzz/artifacts/$t/)"; status=1; fi
    echo "fuzz $t: ${execs:-0} execs in $(( $(date +%s) - started ))s (cargo fuzz, $sanitizer): $outcome"
done
exit $status
