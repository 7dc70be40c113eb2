// polylock-wasm's IDs per second in Node beside the npm packages a user would pick instead,
// in one run, printed as figures and ratios (polylock-wasm / peer). No thresholds: it exits 0
// whatever the numbers are, non-zero only when something fails (an ID out of order).
//
//   node bench/bench.mjs [--quick]      (after build.sh or run-tests.sh: it loads pkg/node)
//
// Each side makes IDs one call at a time in a loop; the sides take turns in short slices
// (round-robin, several rounds) so that each sees the same machine load, and each figure is
// the median of its rounds.
//   snowflake  Snowflake#nextId() (BigInt, Twitter layout) against nodejs-snowflake's
//              getUniqueID() (Rust→wasm too) and @sapphire/snowflake's generate(). A worker
//              of this layout can make at most 4096 IDs per ms (4,096,000/s): polylock-wasm
//              and nodejs-snowflake wait for the next millisecond there; @sapphire/snowflake
//              does not (its increment wraps at 4095 and IDs repeat), so above the ceiling
//              its figure is of IDs that are not unique. Also nextIds(10000) batches.
//   uuid7      uuid7() (monotonic, RFC 9562 method 1) against uuid's v7() (monotonic too).
//   ulid       ulid() (monotonic) against ulid's monotonicFactory() and its plain ulid().
import { parseArgs } from 'node:util'
import { createRequire } from 'node:module'

import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake'
import { Snowflake as NodejsSnowflake } from 'nodejs-snowflake'
import { v7 as uuidV7 } from 'uuid'
import { monotonicFactory, ulid as ulidPlain } from 'ulid'

const require = createRequire(import.meta.url)
const polylock = require('../pkg/node/polylock_wasm.js')

const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false } } })
const budget = args.quick ? { sliceS: 0.1, rounds: 2 } : { sliceS: 0.5, rounds: 6 }
const TWITTER_EPOCH_MS = 1288834974657
const CEILING_PER_S = 4_096_000

const fmt = (n) => Math.round(n).toLocaleString('en-US')
const ratio = (a, b) => `${(a / b).toFixed(2)}x`
const line = (section, text) => console.log(`${section.padEnd(10)} ${text}`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** IDs/s of `next()` (which returns how many IDs it made) for `seconds`, `calls` calls between clock reads. */
function rate(seconds, next, calls = 1000) {
  const start = performance.now()
  const deadline = start + seconds * 1000
  let count = 0
  while (performance.now() < deadline) {
    for (let i = 0; i < calls; i++) count += next()
  }
  return count / ((performance.now() - start) / 1000)
}

/** Each side `rounds` times, in turns; the median IDs/s of each. */
function interleaved(sides) {
  const rates = sides.map(() => [])
  const calls = (side) => (side.batch ? 1 : 1000)
  for (const side of sides) rate(0.05, side.next, calls(side)) // warm up (JIT, wasm tier-up)
  for (let round = 0; round < budget.rounds; round++) {
    sides.forEach((side, i) => rates[i].push(rate(budget.sliceS, side.next, calls(side))))
  }
  return rates.map(median)
}

/** Checks that `make` gives increasing values (by `<`), so no side is timed doing less. */
function assertIncreasing(what, make) {
  let last = make()
  for (let i = 0; i < 100_000; i++) {
    const next = make()
    if (!(next > last)) throw new Error(`${what}: ${next} after ${last}`)
    last = next
  }
}

function report(section, title, sides, rates, peers) {
  line(section, title)
  const self = rates[0]
  sides.forEach((side, i) => {
    const against = i === 0 ? peers.map((p) => `${ratio(self, rates[p])} ${sides[p].name}`).join(', ') : ''
    line(section, `  ${side.name.padEnd(38)} ${fmt(rates[i]).padStart(11)}  ${against}`)
  })
  for (const p of peers) line('ratio', `${section}: polylock-wasm / ${sides[p].name} = ${ratio(self, rates[p])}`)
}

function main() {
  const version = (name) => require(`../node_modules/${name}/package.json`).version
  line('settings', `node ${process.version}; polylock-wasm ${require('../package.json').version}; ` +
    `nodejs-snowflake ${version('nodejs-snowflake')}; @sapphire/snowflake ${version('@sapphire/snowflake')}; ` +
    `uuid ${version('uuid')}; ulid ${version('ulid')}; ${args.quick ? 'quick' : 'full'} budgets ` +
    `(${budget.rounds} rounds of ${budget.sliceS} s a side)`)

  // Snowflake.
  const ours = new polylock.Snowflake({ workerId: 1 })
  const theirs = new NodejsSnowflake({ custom_epoch: TWITTER_EPOCH_MS, instance_id: 1 })
  const sapphire = new SapphireSnowflake(TWITTER_EPOCH_MS)
  assertIncreasing('polylock-wasm nextId', () => ours.nextId())
  assertIncreasing('nodejs-snowflake getUniqueID', () => theirs.getUniqueID())
  const snowflakeSides = [
    { name: 'polylock-wasm nextId()', next: () => (ours.nextId(), 1) },
    { name: 'nodejs-snowflake getUniqueID()', next: () => (theirs.getUniqueID(), 1) },
    { name: '@sapphire/snowflake generate()', next: () => (sapphire.generate({ workerId: 1n }), 1) },
    { name: 'polylock-wasm nextIds(10000) per ID', next: () => ours.nextIds(10_000).length, batch: 10_000 },
  ]
  report('snowflake', `IDs/s, one loop (a worker's ceiling is 4096/ms = ${fmt(CEILING_PER_S)}/s):`,
    snowflakeSides, interleaved(snowflakeSides), [1, 2])
  const repeats = (make) => {
    const made = Array.from({ length: 200_000 }, make)
    return made.length - new Set(made).size
  }
  line('snowflake', `repeated IDs in 200,000 made in a row: polylock-wasm ${repeats(() => ours.nextId())}, ` +
    `nodejs-snowflake ${repeats(() => theirs.getUniqueID())}, @sapphire/snowflake ${repeats(() => sapphire.generate({ workerId: 1n }))}`)

  // UUIDv7.
  assertIncreasing('polylock-wasm uuid7', polylock.uuid7)
  assertIncreasing('uuid v7', uuidV7)
  const uuidSides = [
    { name: 'polylock-wasm uuid7()', next: () => (polylock.uuid7(), 1) },
    { name: 'uuid v7()', next: () => (uuidV7(), 1) },
    { name: 'polylock-wasm uuid7Batch(10000) per ID', next: () => polylock.uuid7Batch(10_000).length, batch: 10_000 },
  ]
  report('uuid7', 'UUIDv7 strings/s, one loop:', uuidSides, interleaved(uuidSides), [1])

  // ULID.
  const monotonic = monotonicFactory()
  assertIncreasing('polylock-wasm ulid', polylock.ulid)
  assertIncreasing('ulid monotonicFactory', () => monotonic())
  const ulidSides = [
    { name: 'polylock-wasm ulid() (monotonic)', next: () => (polylock.ulid(), 1) },
    { name: 'ulid monotonicFactory()()', next: () => (monotonic(), 1) },
    { name: 'ulid ulid() (not monotonic)', next: () => (ulidPlain(), 1) },
    { name: 'polylock-wasm ulidBatch(10000) per ID', next: () => polylock.ulidBatch(10_000).length, batch: 10_000 },
  ]
  report('ulid', 'ULID strings/s, one loop:', ulidSides, interleaved(ulidSides), [1, 2])
  ours.free()
}

main()
