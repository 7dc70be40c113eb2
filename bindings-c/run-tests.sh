#!/usr/bin/env bash
# The C binding's test run: builds libpolylock (release, shared target dir), checks the
# committed header, builds the C/C++ tests and the example with CMake, runs them with
# ctest, then runs them once more under valgrind.
#
#   CARGO_TARGET_DIR / POLYLOCK_CARGO_TARGET   cargo target dir (default ~/.cache/polylock/target)
#   POLYLOCK_TEST_<NAME>_URL  also run every test against that server, one ctest entry per
#                       test and backend: tests/services/services.sh env exports one per
#                       running server (Redis, Cluster, Sentinel, TLS, etcd, ZooKeeper,
#                       PostgreSQL, MariaDB), so a backend that lands is covered here too
#   POLYLOCK_C_VALGRIND=0   skip the valgrind pass
#   POLYLOCK_C_BENCH=0      skip the benchmark (bench.sh; figures only, never a failure)
#
# Then installs into a temp prefix with install.sh and builds consumers the way users do:
# pkg-config (shared), find_package(polylock) (shared and static), and a test linked
# against libpolylock.a.
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

echo "== header up to date"
"$here/check-header.sh"

echo "== cargo build -p polylock-c --release"
cargo build --release -p polylock-c --manifest-path "$here/Cargo.toml"
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

echo "== cmake build ($build)"
cmake -S "$here/tests" -B "$build" -DPOLYLOCK_LIB_DIR="$target/release" \
    -DPOLYLOCK_SERVER_URLS="$backends" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j 2

# Fresh sqlite database per run; its stale locks would only slow the tests down.
rm -rf "$build"/c-tests.db*   # the database, its WAL and its -locks folder (SQLite mutex files)

echo "== ctest"
# Two at a time, as under valgrind below: no test depends on another (80 s -> ~45 s).
ctest --test-dir "$build" --output-on-failure -j 2

if [[ "${POLYLOCK_C_VALGRIND:-1}" != 0 ]]; then
    echo "== ctest under valgrind"
    # Only definite leaks and invalid accesses fail the run: tokio's worker threads and
    # thread-locals are "possibly lost"/"still reachable" by design until process exit.
    rm -f "$build"/Testing/Temporary/MemoryChecker.*.log
    # Two at a time: valgrind's cost is mostly its own CPU, and no test depends on another.
    # --read-inline-info=no: reading the inlining records of libpolylock's debug info cost
    # every run about 1.2 s of its 2 to 4 (257 runs); reports keep file:line per frame and
    # lose only the inlined frames between them (rerun one test without it to see those).
    ctest --test-dir "$build" --output-on-failure --timeout 600 -j 2 \
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
