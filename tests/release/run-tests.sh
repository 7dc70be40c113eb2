#!/usr/bin/env bash
# Install every release artifact in dist/ (release/build.sh) the way a user without Rust would,
# on a PATH that has no cargo or rustc, and take a lock on SQLite and on Redis through each:
#
#   python  a fresh venv, `pip install` of the wheel alone (--no-index), on the oldest CPython
#           found (3.9 if there is one: the wheel is abi3 for >= 3.9)
#   node    a fresh npm project, `npm install` of the tarball
#   c       the tarball unpacked, a C program built with `pkg-config --cflags --libs polylock`
#           (shared, run through the .pc's libdir) and once against libpolylock.a
#   java    a Maven project whose one dependency is io.polylock:polylock from the local
#           repository, where release/build.sh's `mvn install` put it
#   ruby    `gem install --local` of the gem into a fresh GEM_HOME
#   wasm    a fresh npm project, `npm install` of the polylock-wasm tarball (IDs only: no backends)
#   go      a fresh module requiring the polylock module from dist/go as its GOPROXY, linked
#           against the C tarball's libpolylock.a
#
# Each checks the version it reports against the workspace's; tests/release/check_versions.py
# checks every version field in the sources first. The wheel's and the npm tarball's install
# times are printed (figures, never a failure: the goal is under 10 s each).
#
#   tests/release/run-tests.sh [ARTIFACT...]      (default: all of the above)
#
# Environment:
#   POLYLOCK_DIST            where the artifacts are (default dist/ in the checkout)
#   POLYLOCK_CLI             the polylock CLI whose --version is checked (default: the cargo
#                            target dir's release build)
#   POLYLOCK_TEST_REDIS_URL  the Redis to lock on (default: tests/services' redis, which must be
#                            running: this test fails, never skips, without it)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist="${POLYLOCK_DIST:-$root/dist}"
step() { printf '\n==> release test: %s\n' "$*"; }

all=(python node c java ruby wasm go)
wanted=("$@")
((${#wanted[@]})) || wanted=("${all[@]}")

step "one version everywhere"
python3 "$here/check_versions.py" "$root"
version=$("$root/release/version.sh")
# The CLI reports it too (built by the Rust stage; not one of the artifacts).
cli="${POLYLOCK_CLI:-${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}/release/polylock}"
[[ -x "$cli" ]] || { echo "no polylock CLI at $cli: cargo build --release -p polylock-cli (or set POLYLOCK_CLI)" >&2; exit 1; }
[[ "$("$cli" --version)" == "polylock $version" ]] || { echo "$cli --version says '$("$cli" --version)', expected 'polylock $version'" >&2; exit 1; }
echo "$("$cli" --version): ok"
[[ -f "$dist/SHA256SUMS" ]] || { echo "no $dist/SHA256SUMS: run release/build.sh first" >&2; exit 1; }
(cd "$dist" && sha256sum --quiet -c SHA256SUMS)

redis_url="${POLYLOCK_TEST_REDIS_URL:-$("$root/tests/services/services.sh" url redis)}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
name="release-test-$$-$(date +%s)"
sqlite_url="sqlite://$work/release-test.db"

# The PATH a user without Rust has: this one less every folder holding cargo, rustc or rustup.
user_path=""
IFS=: read -ra folders <<<"$PATH"
for folder in "${folders[@]}"; do
  [[ -n "$folder" && ! -e "$folder/cargo" && ! -e "$folder/rustc" && ! -e "$folder/rustup" ]] || continue
  user_path="${user_path:+$user_path:}$folder"
done
# No cargo target dir or Rust home to find a build in either.
as_user() { env -u CARGO_TARGET_DIR -u POLYLOCK_CARGO_TARGET -u RUSTUP_HOME -u CARGO_HOME PATH="$user_path" "$@"; }
if as_user bash -c 'command -v cargo || command -v rustc'; then
  echo "the user PATH still finds cargo or rustc (above)" >&2
  exit 1
fi
echo "PATH for the installs has no cargo and no rustc"

elapsed_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }'; }
# One line per timed install, written from the tests' subshells.
timings="$work/install-times.txt"
: >"$timings"

test_python() {
  local wheel python=""
  wheel=$(ls "$dist"/python/polylock-"$version"-cp39-abi3-*.whl)
  # The oldest CPython here that the wheel supports; 3.9 proves the abi3 floor.
  local candidate
  for candidate in python3.9 "$HOME"/.pyenv/versions/3.9*/bin/python python3; do
    if as_user "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
      python=$candidate
      break
    fi
  done
  [[ -n "$python" ]] || { echo "no CPython >= 3.9 on the PATH" >&2; return 1; }
  as_user "$python" -m venv "$work/venv"
  local started
  started=$(date +%s.%N)
  as_user "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
  echo "python wheel: pip install $(elapsed_since "$started") s ($(basename "$wheel"), $(as_user "$work/venv/bin/python" -V))" >>"$timings"
  (cd "$work" && as_user "$work/venv/bin/python" "$here/python/lock_smoke.py" "$version" "$name" "$sqlite_url" "$redis_url")
  # The sdist names the version too (maturin takes it from the workspace).
  tar -tzf "$dist/python/polylock-$version.tar.gz" | grep -c "^polylock-$version/pyproject.toml$" >/dev/null
}

test_node() {
  mkdir -p "$work/node-app"
  cd "$work/node-app"
  as_user npm init -y >/dev/null
  local started
  started=$(date +%s.%N)
  as_user npm install --no-audit --no-fund --loglevel=error "$dist/node/polylock-$version.tgz"
  echo "node tarball: npm install $(elapsed_since "$started") s (polylock-$version.tgz)" >>"$timings"
  # The platform package of napi-rs's layout carries the same addon.
  tar -tzf "$dist"/node/polylock-linux-*-"$version".tgz | grep -c '^package/polylock\..*\.node$' >/dev/null
  cp "$here/node/lock_smoke.mjs" .
  as_user node lock_smoke.mjs "$version" "$name" "$sqlite_url" "$redis_url"
  cd "$root"
}

test_c() {
  tar -C "$work" -xzf "$dist"/c/polylock-"$version"-*.tar.gz
  local prefix
  prefix=$(echo "$work"/polylock-"$version"-*/)
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  [[ "$(pkg-config --modversion polylock)" == "$version" ]] || { echo "polylock.pc has another version" >&2; return 1; }
  local libdir
  libdir=$(pkg-config --variable=libdir polylock)
  # shellcheck disable=SC2046 # pkg-config's flags are words
  as_user cc -Wall -Wextra -Werror -o "$work/lock_smoke_c" "$here/c/lock_smoke.c" $(pkg-config --cflags --libs polylock)
  LD_LIBRARY_PATH="$libdir" as_user "$work/lock_smoke_c" "$version" "$name" "$sqlite_url" "$redis_url"
  # shellcheck disable=SC2046
  as_user cc -Wall -Wextra -Werror -o "$work/lock_smoke_c_static" "$here/c/lock_smoke.c" $(pkg-config --cflags polylock) \
    "$libdir/libpolylock.a" $(pkg-config --static --libs-only-l polylock | sed 's/-lpolylock//')
  if readelf -d "$work/lock_smoke_c_static" | grep -q 'NEEDED.*libpolylock'; then
    echo "the static build links libpolylock.so" >&2
    return 1
  fi
  as_user "$work/lock_smoke_c_static" "$version" "$name" "$sqlite_url"
  # The CMake package is there for find_package(polylock).
  [[ -f "$libdir/cmake/polylock/polylockConfig.cmake" && -f "$libdir/cmake/polylock/polylockConfigVersion.cmake" ]]
  unset PKG_CONFIG_PATH
}

test_java() {
  local installed="$HOME/.m2/repository/io/polylock/polylock/$version"
  cmp "$installed/polylock-$version.jar" "$dist/java/polylock-$version.jar" ||
    { echo "the jar in the local Maven repository is not dist/'s: run release/build.sh java" >&2; return 1; }
  for jar in sources javadoc; do
    cmp "$installed/polylock-$version-$jar.jar" "$dist/java/polylock-$version-$jar.jar"
  done
  cp -r "$here/java" "$work/java-app"
  (cd "$work/java-app" && as_user mvn -B -q -Dpolylock.version="$version" compile exec:java \
    -Dexec.mainClass=release.LockSmoke -Dexec.args="$version $name $sqlite_url $redis_url")
}

test_ruby() {
  export GEM_HOME="$work/gems"
  as_user gem install --local --no-document --quiet "$dist/ruby/polylock-$version.gem" >/dev/null
  (cd "$work" && as_user ruby "$here/ruby/lock_smoke.rb" "$version" "$name" "$sqlite_url" "$redis_url")
  unset GEM_HOME
}

test_wasm() {
  mkdir -p "$work/wasm-app"
  cd "$work/wasm-app"
  as_user npm init -y >/dev/null
  as_user npm install --no-audit --no-fund --loglevel=error "$dist/wasm/polylock-wasm-$version.tgz"
  cp "$here/wasm/smoke.cjs" .
  as_user node smoke.cjs "$version"
  cd "$root"
}

test_go() {
  local module prefix
  module=$(sed -n 's/^module //p' "$root/bindings-go/go.mod")
  [[ -f "$dist/go/$module/@v/v$version.zip" ]] || { echo "no Go module archive in $dist/go" >&2; return 1; }
  # The C tarball gives the header and libpolylock.a that cgo links.
  [[ -d "$work"/polylock-"$version"-*/ ]] || tar -C "$work" -xzf "$dist"/c/polylock-"$version"-*.tar.gz
  prefix=$(echo "$work"/polylock-"$version"-*/)
  mkdir -p "$work/go-app"
  cp "$here/go/main.go" "$work/go-app/"
  cd "$work/go-app"
  # The released module from dist/go; its own dependencies from the module cache or the proxy.
  export GOPROXY="file://$dist/go,https://proxy.golang.org" GONOSUMDB=example.invalid GOFLAGS=-mod=mod
  export CGO_ENABLED=1 CGO_CFLAGS="-I$prefix/include" CGO_LDFLAGS="-L$prefix/lib"
  as_user go mod init example.invalid/release-test >/dev/null 2>&1
  as_user go get "$module@v$version" >/dev/null 2>&1 || as_user go get "$module@v$version"
  as_user go build -o "$work/lock_smoke_go" .
  as_user "$work/lock_smoke_go" "$version" "$name" "$sqlite_url" "$redis_url"
  unset GOPROXY GONOSUMDB GOFLAGS CGO_CFLAGS CGO_LDFLAGS
  cd "$root"
}

failed=()
for artifact in "${wanted[@]}"; do
  step "$artifact"
  # Not in an `if`: bash would ignore errexit inside the subshell there.
  set +e
  (set -e; "test_$artifact")
  status=$?
  set -e
  if ((status == 0)); then
    echo "release test $artifact: ok"
  else
    failed+=("$artifact")
    echo "release test $artifact: FAILED (status $status)" >&2
  fi
done

step "install times (goal: under 10 s each; figures, not assertions)"
cat "$timings"
echo "release: $((${#wanted[@]} - ${#failed[@]})) passed, ${#failed[@]} failed${failed:+ (${failed[*]})}"
((${#failed[@]} == 0))
