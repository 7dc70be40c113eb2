#!/usr/bin/env bash
# The C binding's test run: builds libpolylock (release, shared target dir), checks the
# committed header, builds the C/C++ tests and the example with CMake twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer), runs every ctest entry on the sanitized
# build, and the valgrind set (ctest -L valgrind) on the plain one.
#
#   CARGO_TARGET_DIR / POLYLOCK_CARGO_TARGET   cargo target dir (default ~/.cache/polylock/target)
#   POLYLOCK_TEST_<NAME>_URL  also run every test against that server, one ctest entry per
#                       test and backend: tests/services/services.sh env exports one per
#                       running server (Redis, Cluster, Sentinel, TLS, etcd, ZooKeeper,
#                       PostgreSQL, MariaDB), so a backend that lands is covered here too
#   POLYLOCK_C_VALGRIND=0    skip the valgrind pass; =all runs every entry under valgrind
#                            (the pass before issue 41: 257 runs, ~4.5 min on 2 cores)
#   POLYLOCK_C_SANITIZE=0    run ctest on the plain build instead of the sanitized one
#   POLYLOCK_C_BENCH=0       skip the benchmark (bench.sh; figures only, never a failure)
#
# Then installs into a temp prefix with install.sh and builds consumers the way users do:
# pkg-config (shared), find_package(polylock) (shared and static), and a test linked
# against libpolylock.a.
#
# Memory checks, and why valgrind runs on a subset (issue 41: valgrind over all 257 entries
# was 4.5 of the C stage's 12 minutes):
# - Every entry runs under AddressSanitizer + LeakSanitizer + UBSan (the test programs are
#   built with -fsanitize=address,undefined). LeakSanitizer takes over malloc for the whole
#   process, libpolylock's Rust allocations included, so a block nobody can reach at exit
#   fails the test on every backend, as valgrind's definite leaks did; ASan checks the C/C++
#   side's accesses and the libc calls made on its memory (strlen, memcpy... also from Rust).
# - What only valgrind sees is an invalid access or an uninitialised read inside libpolylock
#   itself (uninstrumented Rust). The unsafe code there is bindings-c/src (every extern "C"
#   function: pointers in and out, handles freed, callbacks from runtime threads) and core's
#   SQLite lock files (backend/sqlite/name_files.rs); core has no other unsafe. Those paths do
#   not depend on the backend, so valgrind runs every entry on SQLite (all of them, and the
#   five outside the matrix: IDs, POLYLOCK_LOG, RedLock), and on each server the entries where
#   ownership crosses threads and processes (other_thread, hold, fork): 26 + 3 per server.
# - What valgrind found so far (git log --grep=valgrind; tests/valgrind.supp): no defect in
#   polylock. It reported false positives in ring's AES-GCM assembly and rustls's sealed
#   records on every TLS connection (suppressed, scoped; still exercised: rediss, etcds,
#   PostgreSQL and MariaDB are servers of the set), and it shaped c_fork (the child ends by
#   SIGKILL, and kit::fork::abandon keeps a child's client reachable, so neither valgrind nor
#   LeakSanitizer counts the parent's memory as lost there). The leak of runtimes and
#   connections in forked children was found by the c_api fuzz target, not by valgrind.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export CARGO_TARGET_DIR="$target"
# CMake pins a build tree to one source path, and the target dir is shared by every clone
# (CI builds a fresh clone elsewhere), so each checkout gets its own build tree.
build="$target/bindings-c-tests/$(printf '%s' "$here" | sha1sum | cut -c1-12)"

missing=()
for tool in cmake:cmake pkg-config:pkg-config valgrind:valgrind cc:gcc c++:g++; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if ((${#missing[@]})); then
    echo "== installing ${missing[*]}"
    sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
    $sudo apt-get install -y "${missing[@]}"
fi

echo "== cargo build -p polylock-c --release"
cargo build --release -p polylock-c --manifest-path "$here/Cargo.toml"

echo "== header up to date"
# Every build of polylock-c regenerates include/polylock.h in place (build.rs, cbindgen), and the
# Rust suites and the build above have built it since this checkout: in a git work tree the
# header is up to date when git sees no change to it. check-header.sh (elsewhere) builds again
# with POLYLOCK_HEADER_OUT set, and that variable is the build script's input: polylock-c was
# compiled twice more per run for it (once for the check, once more for the next build
# without it), ~2.5 of the C stage's minutes on 2 cores.
if git -C "$here" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    if ! git -C "$here" diff --exit-code -- include/polylock.h; then
        echo "bindings-c/include/polylock.h is out of date (the build regenerated it: diff above): commit it" >&2
        exit 1
    fi
    echo "bindings-c/include/polylock.h is up to date"
else
    "$here/check-header.sh"
fi
soname="$("$here/soname-link.sh" "$target/release")"
echo "== SONAME $soname"

# label=url for every exported test server, e.g. postgres=postgres://..., as a CMake list.
server_urls=()
while IFS='=' read -r variable value; do
    label="${variable#POLYLOCK_TEST_}"
    label="${label%_URL}"
    [[ -n $value ]] && server_urls+=("${label,,}=$value")
done < <(env | grep -E '^POLYLOCK_TEST_[A-Z0-9_]+_URL=' | sort)
backends="$(IFS=';'; echo "${server_urls[*]}")"
echo "== servers: ${#server_urls[@]} (${backends//;/ })"

# Two build trees of the same CMakeLists: plain (valgrind, and POLYLOCK_C_SANITIZE=0) and
# sanitized (ctest). Each has its own SQLite database file.
sanitized="$build-asan"
sanitize=1; [[ "${POLYLOCK_C_SANITIZE:-1}" == 0 ]] && sanitize=0
echo "== cmake build ($build, and $sanitized with -fsanitize=address,undefined)"
cmake -S "$here/tests" -B "$build" -DPOLYLOCK_LIB_DIR="$target/release" \
    -DPOLYLOCK_SERVER_URLS="$backends" -DCMAKE_BUILD_TYPE=Debug -DPOLYLOCK_SANITIZE= >/dev/null
cmake --build "$build" -j 2
if ((sanitize)); then
    cmake -S "$here/tests" -B "$sanitized" -DPOLYLOCK_LIB_DIR="$target/release" \
        -DPOLYLOCK_SERVER_URLS="$backends" -DCMAKE_BUILD_TYPE=Debug -DPOLYLOCK_SANITIZE=address,undefined >/dev/null
    cmake --build "$sanitized" -j 2
fi

# Fresh sqlite database per run; its stale locks would only slow the tests down.
rm -rf "$build"/c-tests.db* "$sanitized"/c-tests.db*   # the database, its WAL and its -locks folder

if ((sanitize)); then
    echo "== ctest, every entry, AddressSanitizer + LeakSanitizer + UBSan"
    # Any report fails the test (exit 1; UBSan aborts at its first finding). LeakSanitizer
    # reports only blocks nothing points to any more: tokio's workers and thread-locals stay
    # reachable until exit, as they were "still reachable" for valgrind.
    # Two at a time: no test depends on another (80 s -> ~45 s before the sanitizers).
    ASAN_OPTIONS="detect_leaks=1:exitcode=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        ctest --test-dir "$sanitized" --output-on-failure -j 2
else
    echo "== ctest, every entry (plain build)"
    ctest --test-dir "$build" --output-on-failure -j 2
fi

valgrind_mode="${POLYLOCK_C_VALGRIND:-1}"
if [[ "$valgrind_mode" != 0 ]]; then
    valgrind_set=(-L valgrind); [[ "$valgrind_mode" == all ]] && valgrind_set=()
    echo "== ctest under valgrind (${valgrind_set[*]:-every entry}: see the top of this script)"
    # Only definite leaks and invalid accesses fail the run: tokio's worker threads and
    # thread-locals are "possibly lost"/"still reachable" by design until process exit.
    rm -f "$build"/Testing/Temporary/MemoryChecker.*.log
    # Two at a time: valgrind's cost is mostly its own CPU, and no test depends on another.
    # --read-inline-info=no: reading the inlining records of libpolylock's debug info cost
    # every run about 1.2 s of its 2 to 4 (257 runs); reports keep file:line per frame and
    # lose only the inlined frames between them (rerun one test without it to see those).
    # A TLS handshake under valgrind on a busy machine took more than the 5 s a Redis or etcd
    # URL waits by default (the verification run of 2026-11-29 on a loaded box): helpers.h
    # gives those URLs this long instead.
    POLYLOCK_TEST_SLOW_TIMEOUT=30s \
    ctest --test-dir "$build" --output-on-failure --timeout 600 -j 2 ${valgrind_set[@]+"${valgrind_set[@]}"} \
        --overwrite MemoryCheckCommand="$(command -v valgrind)" -T memcheck \
        --overwrite MemoryCheckCommandOptions="--error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --read-inline-info=no --suppressions=$here/tests/valgrind.supp" \
        >"$build/memcheck.log" 2>&1 || { cat "$build/memcheck.log"; exit 1; }
    # ctest does not fail on valgrind's exit code, so read every log's error summary.
    if grep -l "ERROR SUMMARY: [1-9]" "$build"/Testing/Temporary/MemoryChecker.*.log; then
        echo "valgrind found defects in the logs listed above" >&2
        exit 1
    fi
    echo "valgrind: no errors, no definite leaks in $(ls "$build"/Testing/Temporary/MemoryChecker.*.log | wc -l) runs"
fi
echo "== install.sh into a temp prefix; consumers via pkg-config, CMake, static"
prefix="$build/install"
consumers="$build/consumers"
rm -rf "$prefix" "$consumers"
mkdir -p "$consumers"
"$here/install.sh" "$prefix"
consumer_url="sqlite://$consumers/consumers.db"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists --print-errors polylock
# (a) pkg-config, shared: the example, run with LD_LIBRARY_PATH (no rpath).
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -Wall -Wextra -Werror -o "$consumers/critical_section" "$here/examples/critical_section.c" \
    $(pkg-config --cflags --libs polylock)
LD_LIBRARY_PATH="$prefix/lib" "$consumers/critical_section" "$consumer_url"
# (b) find_package(polylock), shared then POLYLOCK_USE_STATIC=ON.
for linkage in shared static; do
    use_static=OFF; [[ $linkage == static ]] && use_static=ON
    cmake -S "$here/tests/find_package" -B "$consumers/cmake-$linkage" -DCMAKE_PREFIX_PATH="$prefix" \
        -DPOLYLOCK_USE_STATIC="$use_static" >/dev/null
    cmake --build "$consumers/cmake-$linkage" -j 2 >/dev/null
    "$consumers/cmake-$linkage/consumer" "$consumer_url"
done
# Shared consumers record the versioned SONAME, never the development name.
if ! readelf -d "$consumers/cmake-shared/consumer" | grep -qF "[$soname]"; then
    echo "the shared find_package consumer does not record libpolylock's SONAME $soname" >&2
    exit 1
fi
if readelf -d "$consumers/cmake-static/consumer" | grep -q 'NEEDED.*libpolylock'; then
    echo "the static find_package consumer links libpolylock.so" >&2
    exit 1
fi
# (c) The C test suite's contract test linked against libpolylock.a.
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -std=gnu11 -pthread -I"$here/tests" -o "$consumers/test_polylock_static" \
    "$here/tests/test_polylock.c" $(pkg-config --cflags polylock) "$prefix/lib/libpolylock.a" \
    $(pkg-config --static --libs-only-l polylock | sed 's/-lpolylock//')
if readelf -d "$consumers/test_polylock_static" | grep -q 'NEEDED.*libpolylock'; then
    echo "test_polylock_static links libpolylock.so" >&2
    exit 1
fi
for url in "$consumer_url" "${server_urls[@]#*=}"; do
    "$consumers/test_polylock_static" contract "$url"
done
unset PKG_CONFIG_PATH

if [[ "${POLYLOCK_C_BENCH:-1}" != 0 ]]; then
    echo "== bench (figures only)"
    "$here/bench.sh"
fi
echo "== bindings-c: all tests passed"
