#!/usr/bin/env bash
# The WebAssembly package's test suite, from a fresh machine: install what is missing
# (Debian's chromium, the npm dev dependencies from package-lock.json, the exact wasm-bindgen
# CLI), build both builds with the size budget and the committed TypeScript declarations
# checked (build.sh), type-check a user's code against them, run the Rust unit tests of the
# shared vectors, the node:test suite (Node build, web build in headless Chromium, cross-checks
# with Rust, Python and the napi binding), then pack the package and install the tarball into
# a scratch project, as a user would. Quick when everything is already installed.
#
#   bindings-wasm/run-tests.sh [NODE_TEST_ARGS...]
#
# Environment:
#   CARGO_TARGET_DIR            cargo target dir (default $POLYLOCK_CARGO_TARGET, else
#                               ~/.cache/polylock/target)
#   POLYLOCK_TOOLS              where the wasm-bindgen CLI goes (default ~/.cache/polylock/tools)
#   POLYLOCK_CLI                the polylock CLI for the Rust cross-check (default: built here)
#   POLYLOCK_CHROMIUM           the browser (default /usr/bin/chromium, apt-installed if missing)
#   POLYLOCK_TEST_POSTGRES_URL  when set, PostgreSQL computes the advisory keys too
#   POLYLOCK_WASM_CROSS_CHECK   `all`: fail instead of skipping when the Python or napi
#                               binding is not built (tests/run-all.sh builds them first)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
step() { printf '\n==> %s\n' "$*"; }
cd "$here"

step "chromium (Debian package) for the browser test"
chromium="${POLYLOCK_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  # The package lists may be absent on a fresh image: update only if apt does not know it.
  apt-cache show chromium >/dev/null 2>&1 || $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
export POLYLOCK_CHROMIUM="$chromium"
"$chromium" --version 2>/dev/null  # (Debian's wrapper script prints a shell warning on stderr)

step "npm dev dependencies (npm ci from package-lock.json, skipped when unchanged)"
# npm ci empties node_modules first (binaryen alone is 23 MB), so it runs only when the lock
# file differs from the one the last install used. No browser download: chromium is Debian's.
export PUPPETEER_SKIP_DOWNLOAD=1
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ "$(cat node_modules/.polylock-lock-sha256 2>/dev/null)" != "$lock_sum" ]]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" >node_modules/.polylock-lock-sha256
else
  echo "node_modules matches package-lock.json"
fi

step "build (cargo, wasm-bindgen, wasm-opt), size budget, committed types/*.d.ts"
"$here/build.sh"

step "type-check a user's TypeScript against types/*.d.ts (tsc --noEmit)"
node_modules/.bin/tsc --noEmit -p test/typed/tsconfig.json

step "clippy for wasm32, and the Rust unit tests (shared vectors against polylock-id)"
cargo clippy --quiet --release --locked --manifest-path "$root/Cargo.toml" -p polylock-wasm \
  --target wasm32-unknown-unknown -- -D warnings
cargo test --quiet --release --locked --manifest-path "$root/Cargo.toml" -p polylock-wasm

step "the polylock CLI (Rust side of the cross-check)"
if [[ -z "${POLYLOCK_CLI:-}" ]]; then
  cargo build --release --quiet --locked --manifest-path "$root/Cargo.toml" -p polylock-cli
  export POLYLOCK_CLI="$CARGO_TARGET_DIR/release/polylock"
fi

step "node --test"
node --test "$@" test/*.test.mjs

step "npm pack, then install the tarball into a scratch project"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tarball=$(npm pack --silent --pack-destination "$scratch")
tar -tzf "$scratch/$tarball" | sort
mkdir "$scratch/app"
cd "$scratch/app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "$scratch/$tarball"
cat >smoke.cjs <<'JS'
const { Snowflake, parseSnowflake, uuid7, timestampOf } = require('polylock-wasm')
const id = new Snowflake({ workerId: 5 }).nextId()
if (typeof id !== 'bigint' || parseSnowflake(id).workerId !== 5) throw new Error('snowflake round trip failed')
if (Math.abs(timestampOf(uuid7()) - Date.now()) > 5000) throw new Error('uuid7 is not of now')
console.log('installed package (CommonJS, Node build): ok')
JS
cat >smoke.mjs <<'JS'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { postgresAdvisoryKey, ulid } from 'polylock-wasm'
import init, { initSync, postgresAdvisoryKey as webKey } from 'polylock-wasm/web'
if (postgresAdvisoryKey('orders:42') !== -8476019149258318077n) throw new Error('advisory key differs')
// The web build in Node: hand it the module's bytes (browsers let `await init()` fetch them).
const wasm = readFileSync(createRequire(import.meta.url).resolve('polylock-wasm/polylock_wasm_bg.wasm'))
initSync({ module: wasm })
if (typeof init !== 'function' || webKey('orders:42') !== -8476019149258318077n) throw new Error('web build differs')
if (ulid().length !== 26) throw new Error('ulid')
console.log('installed package (ES module, Node and web builds): ok')
JS
node smoke.cjs
node smoke.mjs
