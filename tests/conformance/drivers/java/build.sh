#!/usr/bin/env bash
# Build the Java surface (bindings-jvm: cargo's libpolylock_jvm + Maven's jar, as its run-tests.sh
# does) and compile the conformance driver against the jar and its runtime classpath. Idempotent
# and near-instant when nothing changed: cargo is a no-op then, Maven runs only when the jar is
# missing or older than the native library or the Java sources, javac only when the driver or
# the jar changed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
jvm="$root/bindings-jvm"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
build="$here/.build"
mkdir -p "$build"

command -v mvn >/dev/null || { echo "java/build.sh: Maven (mvn) is required" >&2; exit 1; }
command -v javac >/dev/null || { echo "java/build.sh: a JDK (javac) is required" >&2; exit 1; }

# The native library, by the command bindings-jvm/build-native.sh runs (same features: no rebuild).
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-jvm
library="$CARGO_TARGET_DIR/release/libpolylock_jvm.so"

version=$(sed -n 's:^  <version>\(.*\)</version>:\1:p' "$jvm/pom.xml" | head -n 1)
jar="$jvm/target/polylock-$version.jar"
stale() { # stale TARGET SOURCE... : TARGET is missing or older than a source file
  local target=$1; shift
  [[ ! -f "$target" ]] || [[ -n "$(find "$@" -newer "$target" -type f -print -quit)" ]]
}
if stale "$jar" "$library" "$jvm/pom.xml" "$jvm/src/main"; then
  echo "java/build.sh: mvn package (the jar of bindings-jvm, with the library cargo just built)" >&2
  (cd "$jvm" && POLYLOCK_SKIP_CARGO=1 mvn -B -q -Dmaven.test.skip=true package)
fi

if stale "$build/runtime-classpath" "$jvm/pom.xml"; then
  (cd "$jvm" && mvn -B -q dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$build/runtime-classpath.tmp" >&2)
  mv "$build/runtime-classpath.tmp" "$build/runtime-classpath"
fi
classpath="$jar:$(cat "$build/runtime-classpath")"

if stale "$build/classes/ConformanceDriver.class" "$here/ConformanceDriver.java" "$jar"; then
  rm -rf "$build/classes"
  javac -encoding UTF-8 -Xlint:unchecked -d "$build/classes" -cp "$classpath" "$here/ConformanceDriver.java"
fi
printf '%s\n' "$build/classes:$classpath" >"$build/classpath"
