#!/usr/bin/env bash
# Builds the C++ conformance driver: libpolylock as bindings-c/run-tests.sh builds it (cargo,
# release, the shared target dir; a no-op when CI built it already), its SONAME link, then
# driver.cpp (the header-only wrapper polylock.hpp; the JSON reader is ../c/json.h) linked
# against libpolylock.so with an rpath, into $CARGO_TARGET_DIR/conformance-drivers/cpp-driver,
# recompiled only when a source or the library changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export CARGO_TARGET_DIR="$target"

if ! command -v c++ >/dev/null; then
    sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
    $sudo apt-get install -y g++
fi

cargo build --release --locked -p polylock-c --manifest-path "$repo/bindings-c/Cargo.toml" >&2
"$repo/bindings-c/soname-link.sh" "$target/release" >/dev/null

out="$target/conformance-drivers/cpp-driver"
mkdir -p "$(dirname "$out")"
stale=0
[[ -x $out ]] || stale=1
for input in "$here/driver.cpp" "$here/../c/json.h" "$repo/bindings-c/include/polylock.h" \
             "$repo/bindings-c/include/polylock.hpp" "$target/release/libpolylock.so"; do
    [[ $input -nt $out ]] && stale=1
done
if ((stale)); then
    echo "== c++ $out" >&2
    c++ -std=c++17 -O2 -Wall -Wextra -Werror -I"$repo/bindings-c/include" \
        "$here/driver.cpp" -o "$out.tmp" -L"$target/release" -lpolylock -Wl,-rpath,"$target/release"
    mv "$out.tmp" "$out"
fi
