#!/usr/bin/env bash
# Build every release artifact of polylock into dist/, from a clean checkout or after the
# bindings' suites (tests/run-all.sh runs it after them, so nothing is compiled twice: every
# step goes through the binding's own build and the one cargo target dir, and cargo finds the
# outputs up to date).
#
#   release/build.sh [ARTIFACT...]     artifacts: python node c java wasm ruby go (default: all)
#
# dist/ (gitignored) then holds, for version V of the workspace (Cargo.toml) and this platform:
#   python/  polylock-V-cp39-abi3-<platform tag auditwheel reports>.whl, polylock-V.tar.gz (sdist)
#   node/    polylock-V.tgz (prebuilt addon polylock.<platform>.node inside, index.d.ts) and
#            polylock-<platform>-V.tgz (napi-rs's per-platform package of the same addon)
#   c/       polylock-V-<os>-<arch>.tar.gz: lib/libpolylock.so(.V), lib/libpolylock.a,
#            include/polylock.h(pp), lib/pkgconfig/polylock.pc, lib/cmake/polylock/ (relocatable)
#   java/    polylock-V.jar (native library inside), -sources.jar, -javadoc.jar, .pom; also
#            installed into the local Maven repository (mvn install)
#   wasm/    polylock-wasm-V.tgz
#   ruby/    polylock-V.gem (native library inside)
#   go/      the module's source archive vV.zip in a GOPROXY directory layout (file:// proxy)
#   SHA256SUMS
#
# Environment:
#   CARGO_TARGET_DIR / POLYLOCK_CARGO_TARGET  cargo target dir (default ~/.cache/polylock/target)
#   POLYLOCK_DIST           output directory (default dist/ in the checkout)
#   POLYLOCK_PY_VENV        the Python binding's venv with maturin (default ~/.cache/polylock/py-venv;
#                           made from bindings-python/requirements-dev.txt when missing)
#   POLYLOCK_RELEASE_VENV   venv for auditwheel (default ~/.cache/polylock/release-venv)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
release="$CARGO_TARGET_DIR/release"
dist="${POLYLOCK_DIST:-$root/dist}"
step() { printf '\n==> release: %s\n' "$*"; }

all=(python node c java wasm ruby go)
wanted=("$@")
((${#wanted[@]})) || wanted=("${all[@]}")
for artifact in "${wanted[@]}"; do
  [[ " ${all[*]} " == *" $artifact "* ]] || { echo "build.sh: unknown artifact '$artifact' (${all[*]})" >&2; exit 64; }
done

step "one version everywhere (tests/release/check_versions.py)"
python3 "$root/tests/release/check_versions.py" "$root" | grep -v "^ok "
version=$("$here/version.sh")

# napi-rs's and Go's names for this platform.
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) napi_platform=linux-x64-gnu; os_arch=linux-x86_64 ;;
  Linux-aarch64) napi_platform=linux-arm64-gnu; os_arch=linux-aarch64 ;;
  *) echo "build.sh: no release layout for $(uname -s)-$(uname -m) yet" >&2; exit 1 ;;
esac
if ldd --version 2>&1 | grep -qi musl; then napi_platform=${napi_platform%-gnu}-musl; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dist"

build_python() {
  step "Python: abi3 wheel (maturin, the binding's venv) + auditwheel, and the sdist"
  local venv="${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}"
  local tools="${POLYLOCK_RELEASE_VENV:-$HOME/.cache/polylock/release-venv}"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  [[ -x "$venv/bin/maturin" ]] ||
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$root/bindings-python/requirements-dev.txt"
  [[ -x "$tools/bin/python" ]] || python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  local out="$dist/python"
  rm -rf "$out" && mkdir -p "$out"
  # The same command and interpreter as bindings-python/run-tests.sh: cargo finds it built.
  "$venv/bin/maturin" build --release --quiet --manifest-path "$root/bindings-python/Cargo.toml" \
    --interpreter "$venv/bin/python" --out "$work/wheel"
  local wheel
  wheel=$(ls "$work"/wheel/polylock-"$version"-cp39-abi3-*.whl)
  # Debug line tables stay in the cargo build; the wheel carries a stripped library (what
  # pip unpacks is then a tenth of the size). Unpack, strip, pack again (RECORD rewritten).
  "$tools/bin/python" -m wheel unpack --dest "$work/unpacked" "$wheel" >/dev/null
  strip --strip-debug "$work"/unpacked/polylock-"$version"/polylock/_polylock*.so
  rm "$wheel"
  "$tools/bin/python" -m wheel pack --dest-dir "$work/wheel" "$work/unpacked/polylock-$version" >/dev/null
  wheel=$(ls "$work"/wheel/polylock-"$version"-cp39-abi3-*.whl)
  local tag
  tag=$("$tools/bin/auditwheel" show "$wheel" | tr -s '\n ' '  ' |
    sed -n 's/.*consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
  [[ -n "$tag" ]] || { "$tools/bin/auditwheel" show "$wheel" >&2; echo "auditwheel reports no platform tag" >&2; exit 1; }
  echo "auditwheel show: $tag"
  if [[ "$(basename "$wheel")" == *"-$tag.whl" ]]; then
    cp "$wheel" "$out/"
  else
    # Tagged otherwise (e.g. plain linux_x86_64): auditwheel grafts any outside libraries in
    # and retags it.
    "$tools/bin/auditwheel" repair --plat "$tag" --wheel-dir "$out" "$wheel"
  fi
  "$venv/bin/maturin" sdist --manifest-path "$root/bindings-python/Cargo.toml" --out "$out"
}

build_node() {
  step "Node: npm tarball with the prebuilt addon ($napi_platform) and index.d.ts"
  cd "$root/bindings-node"
  [[ -d node_modules/@napi-rs/cli ]] || npm install --ignore-scripts --no-audit --no-fund --loglevel=error
  # The binding's own build, with the environment its test run uses (napi-build makes the
  # type-definition folder part of cargo's fingerprint): up to date after run-tests.sh, and a
  # check that the committed index.d.ts is what the sources declare.
  ./check-dts.sh
  local out="$dist/node" package="$work/node/polylock" platform="$work/node/$napi_platform"
  rm -rf "$out" && mkdir -p "$out" "$package" "$platform"
  local addon="polylock.$napi_platform.node"
  strip --strip-debug -o "$package/$addon" polylock.node
  cp "$package/$addon" "$platform/$addon"
  cp index.d.ts README.md "$package/"
  cp "$here/node/native.js" "$package/native.js"
  # index.js loads './polylock.node'; the release package loads through native.js, napi-rs's
  # lookup (the addon beside it, else the per-platform package).
  sed "s#require('./polylock.node')#require('./native.js')#" index.js >"$package/index.js"
  grep -q "require('./native.js')" "$package/index.js" ||
    { echo "build.sh: bindings-node/index.js no longer loads ./polylock.node; update release/build.sh" >&2; exit 1; }
  node "$here/node/package-json.js" package package.json "$napi_platform" >"$package/package.json"
  node "$here/node/package-json.js" platform package.json "$napi_platform" >"$platform/package.json"
  printf '# polylock-%s\n\nThe prebuilt native addon of the npm package `polylock` for %s.\n' \
    "$napi_platform" "$napi_platform" >"$platform/README.md"
  (cd "$package" && npm pack --silent --pack-destination "$out" >/dev/null)
  (cd "$platform" && npm pack --silent --pack-destination "$out" >/dev/null)
  cd "$root"
}

build_c() {
  step "C/C++: libpolylock.so/.a, headers, pkg-config and CMake files in one tarball"
  cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" -p polylock-c
  local name="polylock-$version-$os_arch"
  local prefix="$work/c/$name" out="$dist/c"
  rm -rf "$out" && mkdir -p "$out"
  "$root/bindings-c/install.sh" "$prefix" >/dev/null
  # Relocatable: install.sh writes the prefix it was given; pkg-config can find it from the
  # .pc file's own place instead (the CMake files already do the same).
  sed -i 's#^prefix=.*#prefix=${pcfiledir}/../..#' "$prefix/lib/pkgconfig/polylock.pc"
  strip --strip-debug "$prefix/lib/libpolylock.so.$version" "$prefix/lib/libpolylock.a"
  cp "$root/README.md" "$prefix/README.md"
  tar -C "$work/c" -czf "$out/$name.tar.gz" --owner=0 --group=0 "$name"
}

build_java() {
  step "Java: jar (native library inside), sources and javadoc jars; mvn install"
  cd "$root/bindings-jvm"
  local out="$dist/java"
  rm -rf "$out" && mkdir -p "$out"
  # build-native.sh (Maven's generate-resources) runs cargo: up to date after run-tests.sh.
  # Tests are the JVM suite's job; here they are not even compiled.
  mvn -B -q -Dmaven.test.skip=true \
    org.apache.maven.plugins:maven-source-plugin:3.3.1:jar-no-fork \
    org.apache.maven.plugins:maven-javadoc-plugin:3.11.2:jar -Ddoclint=none -Dquiet=true \
    install
  local jar
  for jar in "polylock-$version.jar" "polylock-$version-sources.jar" "polylock-$version-javadoc.jar"; do
    cp "target/$jar" "$out/"
  done
  cp pom.xml "$out/polylock-$version.pom"
  unzip -l "$out/polylock-$version.jar" | grep -c 'native/.*/libpolylock_jvm.so' >/dev/null ||
    { echo "build.sh: the jar has no native library" >&2; exit 1; }
  cd "$root"
}

build_wasm() {
  step "WebAssembly: the polylock-wasm npm tarball"
  cd "$root/bindings-wasm"
  [[ -x node_modules/.bin/wasm-opt ]] || npm install --ignore-scripts --no-audit --no-fund --loglevel=error
  ./build.sh
  local out="$dist/wasm"
  rm -rf "$out" && mkdir -p "$out"
  npm pack --silent --pack-destination "$out" >/dev/null
  cd "$root"
}

build_ruby() {
  step "Ruby: the gem, native library inside"
  # The same features as bindings-uniffi/run-tests.sh, so cargo finds it built.
  cargo build --release --locked --quiet --manifest-path "$root/Cargo.toml" -p polylock-uniffi --features bindgen
  local out="$dist/ruby"
  rm -rf "$out" && mkdir -p "$out"
  cp -r "$root/bindings-uniffi/ruby" "$work/gem"
  rm -f "$work"/gem/lib/libpolylock_uniffi.*
  strip --strip-debug -o "$work/gem/lib/libpolylock_uniffi.so" "$release/libpolylock_uniffi.so"
  (cd "$work/gem" && gem build --quiet polylock.gemspec >/dev/null && cp "polylock-$version.gem" "$out/")
}

build_go() {
  step "Go: the module's source archive, in a GOPROXY layout"
  local module
  module=$(sed -n 's/^module //p' "$root/bindings-go/go.mod")
  local out="$dist/go" at="$dist/go/$module/@v"
  rm -rf "$out" && mkdir -p "$at"
  # The tracked files only (what a tag of the repository would hold), under module@version/.
  git -C "$root" ls-files -z bindings-go | python3 "$here/go-module-zip.py" "$root" bindings-go \
    "$module@v$version" "$at/v$version.zip"
  cp "$root/bindings-go/go.mod" "$at/v$version.mod"
  printf '{"Version":"v%s","Time":"%s"}\n' "$version" \
    "$(git -C "$root" log -1 --format=%cI | xargs -I{} date -u -d {} +%Y-%m-%dT%H:%M:%SZ)" >"$at/v$version.info"
  echo "v$version" >"$at/list"
}

for artifact in "${wanted[@]}"; do
  started=$(date +%s)
  "build_$artifact"
  echo "($artifact: $(($(date +%s) - started)) s)"
done

step "dist/ ($dist)"
cd "$dist"
find . -type f ! -name SHA256SUMS | sort | xargs sha256sum >SHA256SUMS
find . -type f ! -name SHA256SUMS ! -path './go/*/@v/list' ! -name '*.info' ! -name '*.mod' -printf '%s\t%p\n' | sort -k2 |
  awk -F'\t' '{ printf "%8.1f MB  %s\n", $1 / 1048576, $2 }'
