#!/usr/bin/env bash
# The Go binding's test run: builds bindings-c's static library (release, shared target
# dir), then `go vet` and `go test -race` against SQLite and every server whose
# POLYLOCK_TEST_<NAME>_URL is set (tests/services/services.sh env exports them), checks that
# a program links libpolylock.a (no shared library needed at run time), and runs the bench.
#
#   CARGO_TARGET_DIR / POLYLOCK_CARGO_TARGET   cargo target dir (default ~/.cache/polylock/target)
#   POLYLOCK_GO_BENCH=0                       skip the benchmark (figures only, never a failure)
#   GOFLAGS, GOCACHE, GOMODCACHE              as usual (their defaults live outside the clone)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
export CARGO_TARGET_DIR="$target"
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go is not installed (Go 1.24 or later; /usr/local/go/bin is searched)" >&2; exit 1; }
echo "== $(go version)"

echo "== cargo build --release --locked -p polylock-c"
cargo build --release --locked -p polylock-c --manifest-path "$here/../bindings-c/Cargo.toml"
[[ -f $target/release/libpolylock.a ]] || { echo "no $target/release/libpolylock.a after the build" >&2; exit 1; }

# The package names the archive (-l:libpolylock.a) and finds the header in ../bindings-c;
# the folder holding the archive is outside the clone, so it comes from here.
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$target/release${CGO_LDFLAGS:+ $CGO_LDFLAGS}"
export CGO_CFLAGS="-I$here/../bindings-c/include${CGO_CFLAGS:+ $CGO_CFLAGS}"
cd "$here"

echo "== gofmt"
unformatted="$(gofmt -l .)"
[[ -z $unformatted ]] || { echo "not gofmt-formatted: $unformatted" >&2; exit 1; }

echo "== go vet ./..."
go vet ./...

servers="$(env | grep -cE '^POLYLOCK_TEST_[A-Z0-9_]+_URL=.' || true)"
echo "== go test -race ./... (sqlite and $servers servers)"
go test -race -count=1 -timeout 20m ./...

echo "== static link: a program built from this module needs no libpolylock.so"
binary="$(mktemp -d)/polylock-go-bench"
go build -o "$binary" ./bench
if readelf -d "$binary" | grep -q 'NEEDED.*libpolylock'; then
    echo "the Go program links libpolylock.so, not libpolylock.a" >&2
    exit 1
fi
rm -rf "$(dirname "$binary")"

if [[ "${POLYLOCK_GO_BENCH:-1}" != 0 ]]; then
    echo "== bench (figures only)"
    "$here/bench.sh"
fi
echo "== bindings-go: all tests passed"
