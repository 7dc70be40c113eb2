#!/usr/bin/env bash
# Build the npm package's two WebAssembly builds into pkg/ (never committed):
#   pkg/node/  wasm-bindgen --target nodejs  (CommonJS, loads the .wasm synchronously)
#   pkg/web/   wasm-bindgen --target web     (ES module; `await init()` fetches the .wasm)
# from `cargo build --profile wasm-release` (the root Cargo.toml's size profile), shrunk by
# wasm-opt from the npm `binaryen` package. No wasm-pack, nothing downloaded at build time
# except, once, the wasm-bindgen CLI (`cargo install --locked`, outside the clone).
#
#   bindings-wasm/build.sh [--write-types]
#
# The TypeScript declarations wasm-bindgen writes are committed as types/node.d.ts and
# types/web.d.mts (package.json's exports point at them): this script fails when a build
# would change them, unless --write-types is given (then it updates them; commit the result).
#
# Environment:
#   CARGO_TARGET_DIR      cargo target dir (default $POLYLOCK_CARGO_TARGET, else
#                         ~/.cache/polylock/target)
#   POLYLOCK_TOOLS        where the wasm-bindgen CLI is installed (default ~/.cache/polylock/tools)
#   POLYLOCK_WASM_MAX_BYTES, POLYLOCK_WASM_MAX_GZIP_BYTES   the size budget (100 KB, 45 KB)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
tools="${POLYLOCK_TOOLS:-$HOME/.cache/polylock/tools}"
max_bytes="${POLYLOCK_WASM_MAX_BYTES:-102400}"
max_gzip_bytes="${POLYLOCK_WASM_MAX_GZIP_BYTES:-46080}"
write_types=0
[[ "${1:-}" == "--write-types" ]] && write_types=1
step() { printf '\n==> %s\n' "$*"; }
cd "$here"

step "rust target wasm32-unknown-unknown"
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

# The CLI must be exactly the version of the wasm-bindgen crate in Cargo.lock: it refuses a
# module of another schema, and neighbouring versions that share a schema fail later.
wanted=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$root/Cargo.lock")
[[ -n "$wanted" ]] || { echo "Cargo.lock has no wasm-bindgen: run cargo build -p polylock-wasm first" >&2; exit 1; }
wasm_bindgen="$tools/bin/wasm-bindgen"
have=$("$wasm_bindgen" --version 2>/dev/null | awk '{ print $2 }' || true)
if [[ "$have" != "$wanted" ]]; then
  step "wasm-bindgen CLI $wanted (have: ${have:-none}): cargo install --locked into $tools (minutes, once)"
  # A target dir of its own: the CLI's dependencies have nothing to share with the workspace.
  CARGO_TARGET_DIR="$tools/build" cargo install wasm-bindgen-cli --version "$wanted" --locked --root "$tools" --force
  rm -rf "$tools/build"
fi
echo "wasm-bindgen $("$wasm_bindgen" --version | awk '{ print $2 }') (Cargo.lock: $wanted)"

step "cargo build -p polylock-wasm --target wasm32-unknown-unknown --profile wasm-release"
cargo build --quiet --locked --manifest-path "$root/Cargo.toml" -p polylock-wasm \
  --target wasm32-unknown-unknown --profile wasm-release
module="$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/polylock_wasm.wasm"

[[ -x node_modules/.bin/wasm-opt ]] || { echo "node_modules/.bin/wasm-opt is missing: run npm ci first" >&2; exit 1; }

# The features rustc >= 1.87 emits for wasm32 by default; wasm-opt must accept them.
wasm_opt_features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue)
failed=0
for target in nodejs web; do
  out="pkg/${target%js}"
  step "wasm-bindgen --target $target -> $out, wasm-opt -Oz"
  rm -rf "$out"
  "$wasm_bindgen" --target "$target" --out-dir "$out" --out-name polylock_wasm --remove-producers-section "$module"
  # wasm-bindgen drops a .gitignore of `*` into its output, which would keep npm pack from
  # shipping the build.
  rm -f "$out/.gitignore"
  node_modules/.bin/wasm-opt -Oz "${wasm_opt_features[@]}" --strip-debug --strip-producers \
    "$out/polylock_wasm_bg.wasm" -o "$out/polylock_wasm_bg.wasm"
  bytes=$(wc -c <"$out/polylock_wasm_bg.wasm")
  gzip_bytes=$(gzip -9 -c "$out/polylock_wasm_bg.wasm" | wc -c)
  printf 'size of %s: %d bytes (budget %d), gzipped %d bytes (budget %d)\n' \
    "$out/polylock_wasm_bg.wasm" "$bytes" "$max_bytes" "$gzip_bytes" "$max_gzip_bytes"
  if ((bytes > max_bytes || gzip_bytes > max_gzip_bytes)); then
    echo "OVER BUDGET: $out/polylock_wasm_bg.wasm" >&2
    failed=1
  fi
  # The web build is an ES module: a package.json of its own says so to Node and TypeScript
  # (the package's root stays CommonJS for the Node build), and its types are .d.mts.
  types="types/node.d.ts"
  if [[ $target == web ]]; then
    echo '{ "type": "module" }' >"$out/package.json"
    types="types/web.d.mts"
  fi
  if ((write_types)); then
    cp "$out/polylock_wasm.d.ts" "$types"
    echo "wrote $types"
  elif ! diff -u "$types" "$out/polylock_wasm.d.ts"; then
    echo "$types is out of date with the Rust sources: run bindings-wasm/build.sh --write-types and commit it" >&2
    failed=1
  fi
done
exit "$failed"
