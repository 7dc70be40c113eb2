#!/usr/bin/env bash
# The Node binding's test suite: install the dev dependencies, build the addon (release) and
# check the committed TypeScript declarations, run the node:test suite against real servers,
# then pack the package and install the tarball into a scratch project, as a user would.
#
#   bindings-node/run-tests.sh [NODE_TEST_ARGS...]
#
# Environment:
#   CARGO_TARGET_DIR          cargo target dir (default $POLYLOCK_CARGO_TARGET, else
#                             ~/.cache/polylock/target)
#   POLYLOCK_TEST_REDIS_URL   the Redis to test against (default: tests/services' redis,
#                             started here if it is not running)
#   POLYLOCK_TEST_*_URL       every other exported backend URL is tested too (as
#                             `tests/services/services.sh env` exports them)
#   POLYLOCK_CLI              the polylock CLI binary (default: built here, release)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
step() { printf '\n==> %s\n' "$*"; }
cd "$here"

step "npm install (dev dependencies, exact versions; the addon is built below)"
# Not `npm ci`: npm leaves the other platforms' optional packages of @napi-rs/cli's own
# dependencies out of the lock file, and `npm ci` then refuses the lock as out of sync.
# `npm install` follows the same lock and leaves it unchanged.
npm install --ignore-scripts --no-audit --no-fund --loglevel=error

step "build the addon (release) and check index.d.ts"
"$here/check-dts.sh"

step "the polylock CLI (for the CLI contention test)"
if [[ -z "${POLYLOCK_CLI:-}" ]]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-cli
  export POLYLOCK_CLI="$CARGO_TARGET_DIR/release/polylock"
fi

if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" ]]; then
  step "redis (tests/services)"
  "$root/tests/services/services.sh" start redis >/dev/null
  POLYLOCK_TEST_REDIS_URL=$("$root/tests/services/services.sh" url redis)
  export POLYLOCK_TEST_REDIS_URL
fi

step "node --test"
node --test "$@" test/*.test.mjs

step "npm pack, then install the tarball into a scratch project"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# --ignore-scripts: the addon was built above; prepack would build it again.
tarball=$(npm pack --ignore-scripts --silent --pack-destination "$scratch")
mkdir "$scratch/app"
cd "$scratch/app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "$scratch/$tarball"
cat >smoke.cjs <<'JS'
const polylock = require('polylock')
;(async () => {
  const client = await polylock.connect(`sqlite://${__dirname}/smoke.db`)
  const guard = await client.lock('smoke').acquire({ waitMs: 1000 })
  if (typeof guard.fencingToken !== 'bigint') throw new Error('fencingToken is not a bigint')
  await guard.release()
  const err = await client.lock('smoke').acquire({ waitMs: -1 }).catch((e) => e)
  if (!(err instanceof polylock.PolylockError) || err.code !== 'POLYLOCK_INVALID_ARGUMENT') throw err
  await client.close()
  console.log('installed package (CommonJS): ok')
})()
JS
cat >smoke.mjs <<'JS'
import { connect, parseSnowflake, Snowflake } from 'polylock'
const client = await connect(`sqlite://${import.meta.dirname ?? '.'}/smoke-esm.db`)
const id = new Snowflake({ workerId: 5 }).nextId()
if (parseSnowflake(id).worker !== 5) throw new Error('snowflake round trip failed')
await client.close()
console.log('installed package (ES module): ok')
JS
node smoke.cjs
node smoke.mjs
