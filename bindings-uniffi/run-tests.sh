#!/usr/bin/env bash
# The Ruby binding's test suite: build the uniffi library (release), check that the committed
# generated Ruby is what uniffi-bindgen generates from it, build the gem
# bindings-uniffi/pkg/polylock-<version>.gem with the library inside, install it with
# `gem install --local` into a temporary GEM_HOME, smoke-test the installed gem, then run the
# minitest suite against it (SQLite, and every server of tests/services that is exported).
#
#   bindings-uniffi/run-tests.sh [-n /test_name_pattern/]     (arguments go to minitest)
#
# Environment:
#   CARGO_TARGET_DIR          cargo target dir (default $POLYLOCK_CARGO_TARGET, else ~/.cache/polylock/target)
#   POLYLOCK_TEST_*_URL       the servers to test against, as `tests/services/services.sh env`
#                             exports them (tests/run-all.sh does). When POLYLOCK_TEST_REDIS_URL
#                             is unset, this script starts tests/services' servers itself.
#   POLYLOCK_CLI              the polylock CLI binary for the cross-process test (default: built here)
#   POLYLOCK_TEST_PYTHON      a Python with the polylock wheel installed, for the Ruby/Python
#                             exclusion test (default: ~/.cache/polylock/py-venv/bin/python if it
#                             imports polylock; the test is skipped, saying so, without one)
#   POLYLOCK_TEST_REDISSON_CLASSPATH  Redisson's jars for the real-Redisson interop test (default:
#                             fetched here with Maven from ruby/test/redisson/pom.xml when mvn and
#                             java exist; the test is skipped, saying so, without them)
#   POLYLOCK_REGENERATE=1     write the regenerated Ruby over the committed file instead of failing
#   POLYLOCK_RB_BENCH=0       skip the benchmark after the tests (bench/bench_redis.rb)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
step() { printf '\n==> %s\n' "$*"; }

step "Debian packages: ruby ruby-ffi ruby-minitest ruby-redis ruby-rack ruby-activejob binutils (only those missing)"
missing=()
for package in ruby ruby-ffi ruby-minitest ruby-redis ruby-rack ruby-activejob binutils; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "cargo build --release -p polylock-uniffi (the library and its uniffi-bindgen)"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-uniffi --features bindgen
library="$CARGO_TARGET_DIR/release/libpolylock_uniffi.so"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "regenerate the Ruby bindings and compare with the committed ruby/lib/polylock_uniffi.rb"
"$CARGO_TARGET_DIR/release/uniffi-bindgen" generate --language ruby --no-format \
  --config "$here/ruby-bindgen.toml" --out-dir "$work/generated" "$library" >/dev/null
committed="$here/ruby/lib/polylock_uniffi.rb"
if ! diff -u "$committed" "$work/generated/polylock_uniffi.rb" >"$work/generated.diff"; then
  if [[ "${POLYLOCK_REGENERATE:-0}" == 1 ]]; then
    cp "$work/generated/polylock_uniffi.rb" "$committed"
    echo "rewrote $committed"
  else
    head -n 60 "$work/generated.diff" >&2
    echo "run-tests.sh: the committed generated Ruby is stale; rerun with POLYLOCK_REGENERATE=1 and commit it" >&2
    exit 1
  fi
fi

step "the gem: pkg/polylock-<version>.gem with the library inside"
version=$(ruby -I"$here/ruby/lib" -e 'require "polylock/version"; print Polylock::VERSION')
cargo_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
if [[ "$version" != "$cargo_version" ]]; then
  echo "run-tests.sh: Polylock::VERSION $version differs from the workspace version $cargo_version" >&2
  exit 1
fi
cp -r "$here/ruby" "$work/gem"
# Without its debug sections: the release profile keeps line tables (~100 MB), a gem need not.
strip --strip-debug -o "$work/gem/lib/libpolylock_uniffi.so" "$library"
(cd "$work/gem" && gem build --quiet polylock.gemspec >/dev/null)
mkdir -p "$here/pkg"
cp "$work/gem/polylock-$version.gem" "$here/pkg/"
gem_file="$here/pkg/polylock-$version.gem"
echo "$gem_file"

step "gem install --local into a temporary GEM_HOME, and a smoke test of the installed gem"
export GEM_HOME="$work/gems"
gem install --local --no-document --quiet "$gem_file" >/dev/null
# Nothing but the installed gem: no development library, no -I of the source tree.
(cd "$work" && env -u POLYLOCK_NATIVE_LIB ruby "$here/ruby/smoke.rb" "$GEM_HOME")

step "the polylock CLI (for the cross-process test)"
if [[ -z "${POLYLOCK_CLI:-}" ]]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-cli
  export POLYLOCK_CLI="$CARGO_TARGET_DIR/release/polylock"
fi
if [[ -z "${POLYLOCK_TEST_PYTHON:-}" ]] && [[ -x "$HOME/.cache/polylock/py-venv/bin/python" ]] &&
  "$HOME/.cache/polylock/py-venv/bin/python" -c 'import polylock' 2>/dev/null; then
  export POLYLOCK_TEST_PYTHON="$HOME/.cache/polylock/py-venv/bin/python"
fi

step "real Redisson for the interop test (Maven, cached in ~/.m2)"
if [[ -z "${POLYLOCK_TEST_REDISSON_CLASSPATH:-}" ]]; then
  if command -v mvn >/dev/null && command -v java >/dev/null &&
    mvn -B -q -f "$here/ruby/test/redisson/pom.xml" dependency:copy-dependencies -DoutputDirectory="$work/redisson"; then
    export POLYLOCK_TEST_REDISSON_CLASSPATH="$work/redisson/*"
  else
    echo "no Maven or JDK, or the fetch failed: the real-Redisson test will be skipped (Redisson's scripts are still tested)" >&2
  fi
fi

if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" ]]; then
  step "servers (tests/services)"
  "$root/tests/services/services.sh" start >/dev/null
  eval "$("$root/tests/services/services.sh" env)"
fi
export POLYLOCK_RB_REQUIRE_SERVERS=1

step "minitest (against the installed gem)"
cd "$here/ruby/test"
env -u POLYLOCK_NATIVE_LIB ruby -e 'Dir["*_test.rb"].sort.each { |test| require File.expand_path(test) }' -- "$@"

if [[ "${POLYLOCK_RB_BENCH:-1}" != 0 ]]; then
  step "bench (figures only, never a failure): bindings-uniffi/bench/bench_redis.rb"
  ruby "$here/bench/bench_redis.rb" --url "$POLYLOCK_TEST_REDIS_URL" --seconds 1 ||
    echo "the bench did not finish; figures above are partial" >&2
fi
