#!/usr/bin/env bash
# Build libpolylock_jvm with cargo (release) and copy it to the jar's native folder.
# Run by Maven (exec-maven-plugin, generate-resources):  build-native.sh OUTPUT_DIR
# Honours CARGO_TARGET_DIR; set POLYLOCK_SKIP_CARGO=1 to package a library built beforehand.
set -euo pipefail

out=${1:?usage: build-native.sh OUTPUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}"

if [[ "${POLYLOCK_SKIP_CARGO:-}" != 1 ]]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-jvm
fi
library="$target/release/libpolylock_jvm.so"
[[ -f "$library" ]] || { echo "build-native.sh: $library is missing" >&2; exit 1; }
mkdir -p "$out"
# Debug line tables stay in the cargo build; the jar carries the stripped library.
if command -v objcopy >/dev/null; then
  objcopy --strip-debug "$library" "$out/libpolylock_jvm.so.tmp"
else
  cp "$library" "$out/libpolylock_jvm.so.tmp"
fi
mv "$out/libpolylock_jvm.so.tmp" "$out/libpolylock_jvm.so"
