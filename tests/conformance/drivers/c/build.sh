#!/usr/bin/env bash
# Builds the C conformance driver: libpolylock as bindings-c/run-tests.sh builds it (cargo,
# release, the shared target dir; a no-op when CI built it already), its SONAME link, then
# driver.c linked against libpolylock.so with an rpath, into
# $CARGO_TARGET_DIR/conformance-drivers/c-driver, recompiled only when a source or the
# library changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export CARGO_TARGET_DIR="$target"

if ! command -v cc >/dev/null; then
    sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
    $sudo apt-get install -y gcc
fi

cargo build --release --locked -p polylock-c --manifest-path "$repo/bindings-c/Cargo.toml" >&2
"$repo/bindings-c/soname-link.sh" "$target/release" >/dev/null

out="$target/conformance-drivers/c-driver"
mkdir -p "$(dirname "$out")"
if [[ ! -x $out || $here/driver.c -nt $out || $here/json.h -nt $out \
      || $repo/bindings-c/include/polylock.h -nt $out || $target/release/libpolylock.so -nt $out ]]; then
    echo "== cc $out" >&2
    cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$repo/bindings-c/include" \
        "$here/driver.c" -o "$out.tmp" -L"$target/release" -lpolylock -lm -Wl,-rpath,"$target/release"
    mv "$out.tmp" "$out"
fi
