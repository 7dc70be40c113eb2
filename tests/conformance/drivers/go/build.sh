#!/usr/bin/env bash
# Builds the Go conformance driver as bindings-go/run-tests.sh builds the binding: bindings-c's
# static library (cargo, release, the shared target dir; a no-op when CI built it already),
# then this main package (its go.mod replaces the module with ../../../../bindings-go) with
# cgo pointed at libpolylock.a and the header, into
# $CARGO_TARGET_DIR/conformance-drivers/go-driver, rebuilt only when a source or the library
# changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export CARGO_TARGET_DIR="$target"
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go is not installed (Go 1.24 or later; /usr/local/go/bin is searched)" >&2; exit 1; }

cargo build --release --locked -p polylock-c --manifest-path "$repo/bindings-c/Cargo.toml" >&2
[[ -f $target/release/libpolylock.a ]] || { echo "no $target/release/libpolylock.a after the build" >&2; exit 1; }

out="$target/conformance-drivers/go-driver"
mkdir -p "$(dirname "$out")"
stale=0
[[ -x $out ]] || stale=1
for input in "$here"/*.go "$here/go.mod" "$here/go.sum" "$repo"/bindings-go/*.go "$repo/bindings-go/go.mod" \
             "$repo/bindings-c/include/polylock.h" "$target/release/libpolylock.a"; do
    [[ $input -nt $out ]] && stale=1
done
if ((stale)); then
    echo "== go build $out" >&2
    export CGO_ENABLED=1
    export CGO_LDFLAGS="-L$target/release${CGO_LDFLAGS:+ $CGO_LDFLAGS}"
    export CGO_CFLAGS="-I$repo/bindings-c/include${CGO_CFLAGS:+ $CGO_CFLAGS}"
    (cd "$here" && go build -o "$out.tmp" .)
    mv "$out.tmp" "$out"
fi
