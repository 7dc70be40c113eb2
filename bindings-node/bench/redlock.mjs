// The `redlock` section of bench.mjs (issue 18): RedLock lock+unlock pairs/s over three
// local redis-servers this section starts on ports above 30000 and kills at the end,
// polylock's redlock() against node-redlock 5 on the same three servers, in one run,
// interleaved in slices, printed as figures and a ratio. Both sides ask every server in
// parallel and need a majority; both use a 30 s lease and no retries while uncontended.
//
//   node bench/redlock.mjs [--quick]      (bench.mjs runs it as its last section)

import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'

import Redis from 'ioredis'
import Redlock from 'redlock'

import polylock from '../index.js'

const LEASE_MS = 30_000

/** A redis-server of our own on `port` (no persistence); null if it does not come up. */
async function startRedis(port) {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  server.on('error', () => {})
  const exited = new Promise((resolve) => server.once('exit', resolve))
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  for (let i = 0; i < 100 && server.exitCode === null; i++) {
    try {
      await probe.connect()
      await probe.ping()
      probe.disconnect()
      return { url: `redis://127.0.0.1:${port}`, server, exited }
    } catch {
      probe.disconnect()
      await sleep(50)
    }
  }
  server.kill('SIGKILL')
  return null
}

/**
 * Runs the section. `tools` are bench.mjs's: `interleaved(workers, seconds, rounds, sides)`,
 * `line(section, text)`, `fmt`, `ratio`.
 */
export async function redlockSection({ quick, interleaved, line, fmt, ratio }) {
  const budget = quick ? { seconds: 0.6, rounds: 2 } : { seconds: 4, rounds: 6 }
  const workers = quick ? 8 : 16
  const nodes = []
  let port = 30000 + ((process.pid * 13) % 20000)
  while (nodes.length < 3 && port < 65000) {
    const node = await startRedis(port++)
    if (node) nodes.push(node)
  }
  if (nodes.length < 3) {
    line('redlock', 'skipped: could not start three redis-servers (is redis-server on PATH?)')
    for (const node of nodes) node.server.kill('SIGKILL')
    return
  }
  const urls = nodes.map((node) => node.url)
  const clients = urls.map((url) => new Redis(url))
  const redlock = new Redlock(clients, { retryCount: 0 })
  redlock.on('error', () => {})
  const prefix = `polylock-node-bench-redlock:${process.pid}:`
  const locks = []
  try {
    for (let i = 0; i < workers; i++) locks.push(await polylock.redlock(urls, `${prefix}polylock:${i}`))
    const theirs = Array.from({ length: workers }, (_, i) => `${prefix}redlock:${i}`)
    const [ours, redlockRate] = await interleaved(workers, budget.seconds, budget.rounds, [
      async (i) => {
        const guard = await locks[i].acquire({ leaseMs: LEASE_MS })
        await guard.release()
      },
      async (i) => {
        const lock = await redlock.acquire([theirs[i]], LEASE_MS)
        await lock.release()
      },
    ])
    line('redlock', `3 local redis-servers, ${workers} workers, a name each, lock+unlock pairs/s (lease 30 s):`)
    line('redlock', `  polylock redlock()   ${fmt(ours).padStart(9)}  ${ratio(ours, redlockRate)} node-redlock`)
    line('redlock', `  node-redlock         ${fmt(redlockRate).padStart(9)}`)
  } finally {
    await Promise.all(locks.map((lock) => lock.close()))
    for (const client of clients) client.disconnect()
    for (const node of nodes) {
      node.server.kill('SIGKILL')
      await node.exited
    }
  }
}

// Standalone: the same section with simple tools of its own.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false } } })
  const line = (section, text) => console.log(`${section.padEnd(12)} ${text}`)
  const fmt = (n) => Math.round(n).toLocaleString('en-US')
  const ratio = (a, b) => `${(a / b).toFixed(2)}x`
  const interleaved = async (workers, seconds, rounds, sides) => {
    const totals = sides.map(() => ({ pairs: 0, ms: 0 }))
    for (let round = 0; round < rounds; round++) {
      const order = sides.map((_, i) => i)
      if (round % 2) order.reverse()
      for (const i of order) {
        const start = performance.now()
        const deadline = start + (seconds / rounds) * 1000
        const counts = await Promise.all(
          Array.from({ length: workers }, async (_, w) => {
            let n = 0
            while (performance.now() < deadline) {
              await sides[i](w)
              n++
            }
            return n
          }),
        )
        totals[i].pairs += counts.reduce((a, b) => a + b, 0)
        totals[i].ms += performance.now() - start
      }
    }
    return totals.map(({ pairs, ms }) => pairs / (ms / 1000))
  }
  await redlockSection({ quick: values.quick, interleaved, line, fmt, ratio })
}
