#!/usr/bin/env bash
# Build the Ruby surface as bindings-uniffi/run-tests.sh does (Debian's ruby and ruby-ffi, the
# uniffi library with cargo, the gem bindings-uniffi/pkg/polylock-<version>.gem with the
# library inside) and install that gem into .build/gems for run.sh. Idempotent and
# near-instant when nothing changed: cargo is a no-op then, the gem is packed only when it is
# missing or older than the library or the gem's Ruby, and installed only when it changed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
uniffi="$root/bindings-uniffi"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
build="$here/.build"
mkdir -p "$build"

missing=()
for package in ruby ruby-ffi binutils; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "ruby/build.sh: apt-get install ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The library, by the command run-tests.sh runs (same features: no rebuild).
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-uniffi --features bindgen
library="$CARGO_TARGET_DIR/release/libpolylock_uniffi.so"

version=$(ruby -I"$uniffi/ruby/lib" -e 'require "polylock/version"; print Polylock::VERSION')
gem_file="$uniffi/pkg/polylock-$version.gem"
if [[ ! -f "$gem_file" ]] || [[ -n "$(find "$library" "$uniffi/ruby/lib" "$uniffi/ruby/polylock.gemspec" \
  -newer "$gem_file" -type f -print -quit)" ]]; then
  echo "ruby/build.sh: packing $gem_file (as bindings-uniffi/run-tests.sh does)" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$uniffi/ruby" "$work/gem"
  strip --strip-debug -o "$work/gem/lib/libpolylock_uniffi.so" "$library"
  (cd "$work/gem" && gem build --quiet polylock.gemspec >/dev/null)
  mkdir -p "$uniffi/pkg"
  cp "$work/gem/polylock-$version.gem" "$gem_file"
fi

stamp=$(sha256sum "$gem_file" | cut -d' ' -f1)
if [[ "$(cat "$build/installed" 2>/dev/null)" != "$stamp" ]]; then
  rm -rf "$build/gems"
  GEM_HOME="$build/gems" gem install --local --no-document --quiet "$gem_file" >/dev/null
  printf '%s\n' "$stamp" >"$build/installed"
fi
