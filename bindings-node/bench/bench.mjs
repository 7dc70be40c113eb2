// polylock's Node binding side by side with what a Node service uses today, in one run on
// one redis-server, printed as figures and ratios (polylock / peer). No thresholds: it exits
// 0 whatever the numbers are, non-zero only when something fails.
//
//   node bench/bench.mjs [--url redis://127.0.0.1:16379] [--quick]
//
// Sections (every line starts with its section name):
//   uncontended  64 async loops, each on its own name: lock+unlock pairs/s, the sides
//                interleaved in short slices so that each sees the same machine load.
//                polylock (reentrant kind, 30 s lease; and with the watchdog; and the token
//                kind) against node-redlock 5 (30 s lease) on one ioredis client.
//   contended    8 async loops on ONE name: acquire (waiting as long as it takes), hold 1 ms,
//                release, 1 ms outside. Utilisation = time somebody held the lock / wall time.
//   cpu          the Node process's own CPU (process.cpuUsage(): user + system, every thread,
//                so polylock's runtime threads count) per lock+unlock pair, polylock and
//                node-redlock each paced to the same pairs/s (64 loops, 60% of the slower
//                side's unpaced rate), and the ratio polylock/node-redlock.
//   native       what one Promise-returning native call costs: a no-op (close() on a closed
//                client) settled Promises/s, one caller and 64 at once. No peer: it is the
//                binding's floor under every lock call (a lock+unlock pair makes two).
//   ids          snowflake IDs/s in one loop: polylock nextId() (a bigint each), nextIds()
//                batches, against @sapphire/snowflake generate() (a bigint each).
//   redlock      RedLock over three local redis-servers started for it (bench/redlock.mjs):
//                polylock's redlock() against node-redlock, lock+unlock pairs/s and ratio.
// Keys live under polylock-node-bench:<pid>: and are deleted at the end; nothing is flushed.
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'

import Redis from 'ioredis'
import Redlock, { ResourceLockedError } from 'redlock'
import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake'
import { v7 as uuidV7 } from 'uuid'
import { monotonicFactory } from 'ulid'

import polylock from '../index.js'
import { redlockSection } from './redlock.mjs'

const require = createRequire(import.meta.url)
const { values: args } = parseArgs({
  options: { url: { type: 'string' }, quick: { type: 'boolean', default: false } },
})
const url = args.url ?? process.env.POLYLOCK_TEST_REDIS_URL ?? 'redis://127.0.0.1:16379'
const budget = args.quick
  ? { uncontendedS: 0.5, rounds: 2, contendedS: 1, idsS: 0.3, nativeS: 0.3, cpuS: 1 }
  : { uncontendedS: 3, rounds: 6, contendedS: 5, idsS: 1, nativeS: 1, cpuS: 3 }
const LEASE_MS = 30_000
const WARM_UP_S = 0.2
const UNCONTENDED_WORKERS = 64
const CONTENDED_WORKERS = 8
const HOLD_MS = 1
const OUTSIDE_MS = 1
const prefix = `polylock-node-bench:${process.pid}:`

const fmt = (n) => Math.round(n).toLocaleString('en-US')
const pct = (x) => `${(x * 100).toFixed(1)}%`
const ratio = (a, b) => `${(a / b).toFixed(2)}x`
const line = (section, text) => console.log(`${section.padEnd(12)} ${text}`)

/** Runs `workers` loops of `pair(i)` for `seconds`; returns pairs/s over the group's wall time. */
async function pairsPerSecond(workers, seconds, pair) {
  const start = performance.now()
  const deadline = start + seconds * 1000
  const counts = await Promise.all(
    Array.from({ length: workers }, async (_, i) => {
      let n = 0
      while (performance.now() < deadline) {
        await pair(i)
        n++
      }
      return n
    }),
  )
  const total = counts.reduce((a, b) => a + b, 0)
  return total / ((performance.now() - start) / 1000)
}

/**
 * `pairsPerSecond` for every side, interleaved: `rounds` rounds of a `seconds / rounds` slice
 * each after a short warm-up, the order reversed every round. On a shared machine the load changes from one second
 * to the next; interleaving gives every side the same mix of it. Returns pairs/s per side.
 */
async function interleaved(workers, seconds, rounds, sides) {
  // Untimed warm-up: JIT, script loading (EVALSHA), connection pools.
  for (const side of sides) await pairsPerSecond(workers, WARM_UP_S, side)
  const totals = sides.map(() => ({ pairs: 0, ms: 0 }))
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, i) => i)
    if (round % 2) order.reverse()
    for (const i of order) {
      const start = performance.now()
      const rate = await pairsPerSecond(workers, seconds / rounds, sides[i])
      const ms = performance.now() - start
      totals[i].pairs += (rate * ms) / 1000
      totals[i].ms += ms
    }
  }
  return totals.map(({ pairs, ms }) => pairs / (ms / 1000))
}

/**
 * `workers` loops of `pair(i)` for `seconds`, together paced to `rate` pairs/s (each loop
 * keeps its own schedule, so a late pair does not slow the ones after it). Returns the
 * pairs done, their rate and the process's CPU (user + system) per pair in microseconds.
 */
async function cpuPerPair(workers, seconds, rate, pair) {
  const interval = (workers / rate) * 1000
  const jsBefore = jsThreadCpuMs()
  const cpuBefore = process.cpuUsage()
  const start = performance.now()
  const deadline = start + seconds * 1000
  const counts = await Promise.all(
    Array.from({ length: workers }, async (_, i) => {
      let n = 0
      let next = start + (interval * i) / workers
      while (performance.now() < deadline) {
        const delay = next - performance.now()
        if (delay > 0) await sleep(delay)
        next += interval
        await pair(i)
        n++
      }
      return n
    }),
  )
  const cpu = process.cpuUsage(cpuBefore)
  const jsUs = (jsThreadCpuMs() - jsBefore) * 1000
  const pairs = counts.reduce((a, b) => a + b, 0)
  return { pairs, rate: pairs / ((performance.now() - start) / 1000), cpuUs: (cpu.user + cpu.system) / pairs, jsUs: jsUs / pairs }
}

/** The JavaScript (main) thread's own CPU so far in ms, from /proc (Linux; NaN elsewhere). */
function jsThreadCpuMs() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return NaN
  }
}
const CLOCK_TICKS = 100

/**
 * 8 loops on one name: acquire, hold 1 ms, release, 1 ms outside. `acquire()` resolves to
 * a release function. Returns utilisation, holds/s, handoff p50/p99 and per-worker shares,
 * computed the same way for every side.
 */
async function contended(seconds, acquire) {
  const start = performance.now()
  const deadline = start + seconds * 1000
  const holds = []
  const perWorker = await Promise.all(
    Array.from({ length: CONTENDED_WORKERS }, async () => {
      let n = 0
      while (performance.now() < deadline) {
        const release = await acquire()
        const acquired = performance.now()
        await sleep(HOLD_MS)
        const released = performance.now()
        await release()
        holds.push([acquired, released])
        n++
        await sleep(OUTSIDE_MS)
      }
      return n
    }),
  )
  const wall = performance.now() - start
  holds.sort((a, b) => a[0] - b[0])
  let held = 0
  let overlaps = 0
  const handoffs = []
  for (let i = 0; i < holds.length; i++) {
    held += holds[i][1] - holds[i][0]
    if (i > 0) {
      if (holds[i][0] < holds[i - 1][1]) overlaps++
      handoffs.push(holds[i][0] - holds[i - 1][1])
    }
  }
  handoffs.sort((a, b) => a - b)
  const rank = (p) => handoffs[Math.min(handoffs.length - 1, Math.ceil(p * handoffs.length) - 1)] ?? 0
  const total = holds.length
  return {
    utilisation: held / wall,
    holdsPerSecond: total / (wall / 1000),
    p50: rank(0.5),
    p99: rank(0.99),
    shareMin: Math.min(...perWorker) / total,
    shareMax: Math.max(...perWorker) / total,
    overlaps,
  }
}

const describeContended = (s) =>
  `utilisation ${pct(s.utilisation)}, handoff p50 ${s.p50.toFixed(2)} ms / p99 ${s.p99.toFixed(2)} ms, ` +
  `shares ${pct(s.shareMin)}-${pct(s.shareMax)}, ${fmt(s.holdsPerSecond)} holds/s` +
  (s.overlaps ? `, ${s.overlaps} OVERLAPPING HOLDS` : '')

/** IDs/s of `next()` in one loop, checking order; returns the rate. */
function idsPerSecond(seconds, next) {
  const start = performance.now()
  const deadline = start + seconds * 1000
  let count = 0
  while (performance.now() < deadline) {
    for (let i = 0; i < 1000; i++) next()
    count += 1000
  }
  return count / ((performance.now() - start) / 1000)
}

async function main() {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
    await redis.ping()
  } catch (err) {
    line('bench', `skipped: no redis answers at ${url} (${err.message})`)
    redis.disconnect()
    return
  }
  const client = await polylock.connect(url)
  const redlock = new Redlock([redis], { retryCount: -1 })
  redlock.on('error', (err) => {
    if (!(err instanceof ResourceLockedError)) console.error(err)
  })
  const versions = Object.fromEntries(
    Object.entries({
      polylock: '../package.json',
      redlock: '../node_modules/redlock/package.json',
      ioredis: '../node_modules/ioredis/package.json',
      sapphire: '../node_modules/@sapphire/snowflake/package.json',
      uuid: '../node_modules/uuid/package.json',
      ulid: '../node_modules/ulid/package.json',
    }).map(([side, file]) => [side, require(file).version]),
  )
  line('settings', `node ${process.version}; url ${client.url}; polylock ${versions.polylock}; redlock ${versions.redlock} ` +
    `(retryCount -1, retryDelay 200 ms ± 100 ms jitter: its defaults otherwise) on ioredis ${versions.ioredis}; ` +
    `@sapphire/snowflake ${versions.sapphire}; uuid ${versions.uuid}; ulid ${versions.ulid}; ` +
    `${args.quick ? 'quick' : 'full'} budgets`)

  try {
    // Uncontended.
    const names = (side) => Array.from({ length: UNCONTENDED_WORKERS }, (_, i) => `${prefix}${side}:${i}`)
    const locks = (kind, side) => names(side).map((name) => client.lock(name, { kind }))
    const leased = locks('reentrant', 'lease')
    const watched = locks('reentrant', 'watchdog')
    const tokens = locks('token', 'token')
    const redlockNames = names('redlock')
    const [polylockLease, polylockWatchdog, polylockToken, redlockRate] = await interleaved(
      UNCONTENDED_WORKERS,
      budget.uncontendedS,
      budget.rounds,
      [
        async (i) => {
          const guard = await leased[i].acquire({ leaseMs: LEASE_MS })
          await guard.release()
        },
        async (i) => {
          const guard = await watched[i].acquire()
          await guard.release()
        },
        async (i) => {
          const guard = await tokens[i].acquire({ leaseMs: LEASE_MS })
          await guard.release()
        },
        async (i) => {
          const lock = await redlock.acquire([redlockNames[i]], LEASE_MS)
          await lock.release()
        },
      ],
    )
    line('uncontended', `${UNCONTENDED_WORKERS} workers, a name each, lock+unlock pairs/s:`)
    line('uncontended', `  polylock reentrant, lease 30 s   ${fmt(polylockLease).padStart(9)}  ${ratio(polylockLease, redlockRate)} node-redlock`)
    line('uncontended', `  polylock reentrant, watchdog     ${fmt(polylockWatchdog).padStart(9)}  ${ratio(polylockWatchdog, redlockRate)} node-redlock`)
    line('uncontended', `  polylock token, lease 30 s       ${fmt(polylockToken).padStart(9)}  ${ratio(polylockToken, redlockRate)} node-redlock`)
    line('uncontended', `  node-redlock, lease 30 s         ${fmt(redlockRate).padStart(9)}`)

    // Contended.
    const contendedLock = client.lock(`${prefix}contended:polylock`)
    const polylockContended = await contended(budget.contendedS, async () => {
      const guard = await contendedLock.acquire()
      return () => guard.release()
    })
    const redlockResource = `${prefix}contended:redlock`
    const redlockContended = await contended(budget.contendedS, async () => {
      const lock = await redlock.acquire([redlockResource], LEASE_MS)
      return () => lock.release()
    })
    line('contended', `${CONTENDED_WORKERS} workers, one name, hold ${HOLD_MS} ms, ${OUTSIDE_MS} ms outside (fair share 12.5%):`)
    line('contended', `  polylock       ${describeContended(polylockContended)}`)
    line('contended', `  node-redlock   ${describeContended(redlockContended)}`)
    line('contended', `  polylock/node-redlock: utilisation ${ratio(polylockContended.utilisation, redlockContended.utilisation)}, ` +
      `holds/s ${ratio(polylockContended.holdsPerSecond, redlockContended.holdsPerSecond)}`)

    // CPU per pair at one rate both sides reach, and what it is made of: the pacing alone
    // (an empty pair), and polylock on mem:// (the binding, the engine and the hops to the
    // runtime and back, with no I/O).
    const pace = Math.round(Math.min(polylockLease, redlockRate) * 0.6)
    const memClient = await polylock.connect(`mem://${prefix}cpu`)
    const memLocks = names('mem').map((name) => memClient.lock(name))
    const cpuSides = [
      ['polylock reentrant, lease 30 s', async (i) => {
        const guard = await leased[i].acquire({ leaseMs: LEASE_MS })
        await guard.release()
      }],
      ['node-redlock, lease 30 s', async (i) => {
        const lock = await redlock.acquire([redlockNames[i]], LEASE_MS)
        await lock.release()
      }],
      ['  pacing alone (an empty pair)', async () => {}],
      ['  polylock on mem:// (no I/O)', async (i) => {
        const guard = await memLocks[i].acquire({ leaseMs: LEASE_MS })
        await guard.release()
      }],
    ]
    const cpuFigures = []
    for (const [, pair] of cpuSides) {
      await pairsPerSecond(UNCONTENDED_WORKERS, WARM_UP_S, pair)
      cpuFigures.push(await cpuPerPair(UNCONTENDED_WORKERS, budget.cpuS, pace, pair))
    }
    await memClient.close()
    line('cpu', `${UNCONTENDED_WORKERS} workers paced to ${fmt(pace)} pairs/s, this process's CPU (user + system, all threads) per pair:`)
    cpuSides.forEach(([label], i) => {
      const f = cpuFigures[i]
      line('cpu', `  ${label.padEnd(31)} ${fmt(f.rate).padStart(7)} pairs/s  ${f.cpuUs.toFixed(1).padStart(7)} us CPU/pair` +
        (i === 0 ? `  ${ratio(f.cpuUs, cpuFigures[1].cpuUs)} node-redlock` : '') +
        `   (JavaScript thread ${f.jsUs.toFixed(1)} us` + (i === 0 ? `, ${ratio(f.jsUs, cpuFigures[1].jsUs)} node-redlock's)` : ')'))
    })
    const [ours, theirs, pacing] = cpuFigures.map((f) => f.cpuUs)
    line('cpu', `  without the pacing: polylock ${(ours - pacing).toFixed(1)} us, node-redlock ${(theirs - pacing).toFixed(1)} us, ` +
      `${ratio(ours - pacing, theirs - pacing)} node-redlock`)

    // Native call floor.
    const closed = await polylock.connect(`mem://${prefix}closed`)
    await closed.close()
    const oneCaller = await pairsPerSecond(1, budget.nativeS, () => closed.close())
    const manyCallers = await pairsPerSecond(UNCONTENDED_WORKERS, budget.nativeS, () => closed.close())
    line('native', `a no-op native call (close() on a closed client), settled Promises/s:`)
    line('native', `  1 caller       ${fmt(oneCaller).padStart(9)}`)
    line('native', `  ${UNCONTENDED_WORKERS} callers      ${fmt(manyCallers).padStart(9)}`)

    // IDs.
    const ids = new polylock.Snowflake({ workerId: 1 })
    const sapphire = new SapphireSnowflake(ids.epochMs)
    const CEILING = 4_096_000
    let last = 0n
    const polylockIds = idsPerSecond(budget.idsS, () => {
      last = ids.nextId()
    })
    const polylockBatches = idsPerSecond(budget.idsS / 1000, () => ids.nextIds(10_000)) * 10_000
    let lastSapphire = 0n
    const sapphireIds = idsPerSecond(budget.idsS, () => {
      lastSapphire = sapphire.generate({ workerId: 1n })
    })
    const ahead = (id, parse) => Number(parse(id)) - Date.now()
    const sapphireAheadMs = ahead(lastSapphire, (id) => SapphireSnowflake.prototype.timestampFrom.call(sapphire, id))
    line('ids', `one loop, IDs/s (a worker's ceiling is 4096/ms = ${fmt(CEILING)}/s):`)
    line('ids', `  polylock nextId()             ${fmt(polylockIds).padStart(11)}  (${ratio(polylockIds, CEILING)} ceiling) ${ratio(polylockIds, sapphireIds)} @sapphire/snowflake`)
    line('ids', `  polylock nextIds(10000)       ${fmt(polylockBatches).padStart(11)}  (${ratio(polylockBatches, CEILING)} ceiling) ${ratio(polylockBatches, sapphireIds)} @sapphire/snowflake`)
    line('ids', `  @sapphire/snowflake generate  ${fmt(sapphireIds).padStart(11)}  (${ratio(sapphireIds, CEILING)} ceiling)` +
      (sapphireIds > CEILING * 1.01 ? `, ABOVE THE CEILING: its 12-bit increment wraps within a millisecond, so IDs repeat (newest dated ${sapphireAheadMs} ms from now)` : ''))
    void last

    // UUIDv7 and ULID, as text, against the npm packages a Node user would pick (both
    // monotonic: uuid's v7 keeps a sequence within a millisecond, ulid's monotonicFactory
    // counts the random part up).
    const polylockUuid7 = idsPerSecond(budget.idsS, () => polylock.uuid7())
    const polylockUuid7Batches = idsPerSecond(budget.idsS / 1000, () => polylock.uuid7Batch(1000)) * 1000
    const npmUuid7 = idsPerSecond(budget.idsS, () => uuidV7())
    const polylockUlid = idsPerSecond(budget.idsS, () => polylock.ulid())
    const polylockUlidBatches = idsPerSecond(budget.idsS / 1000, () => polylock.ulidBatch(1000)) * 1000
    const npmUlid = monotonicFactory()
    const npmUlids = idsPerSecond(budget.idsS, () => npmUlid())
    line('ids', `one loop, UUIDv7 and ULID as text, IDs/s:`)
    line('ids', `  polylock uuid7()              ${fmt(polylockUuid7).padStart(11)}  ${ratio(polylockUuid7, npmUuid7)} uuid v7()`)
    line('ids', `  polylock uuid7Batch(1000)     ${fmt(polylockUuid7Batches).padStart(11)}  ${ratio(polylockUuid7Batches, npmUuid7)} uuid v7()`)
    line('ids', `  uuid v7()                     ${fmt(npmUuid7).padStart(11)}`)
    line('ids', `  polylock ulid()               ${fmt(polylockUlid).padStart(11)}  ${ratio(polylockUlid, npmUlids)} ulid monotonicFactory()`)
    line('ids', `  polylock ulidBatch(1000)      ${fmt(polylockUlidBatches).padStart(11)}  ${ratio(polylockUlidBatches, npmUlids)} ulid monotonicFactory()`)
    line('ids', `  ulid monotonicFactory()()     ${fmt(npmUlids).padStart(11)}`)

    await redlockSection({ quick: args.quick, interleaved, line, fmt, ratio })
  } finally {
    await client.close()
    // SCAN, not KEYS: the server is shared with other suites. The fencing counters are
    // `redisson_lock_token:{<name>}`, hence the leading wildcard.
    for await (const keys of redis.scanStream({ match: `*${prefix}*`, count: 1000 })) {
      if (keys.length) await redis.unlink(...keys)
    }
    redis.disconnect()
  }
}

await main()
