// The runtime: a finished process exits by itself, a pending wait keeps it alive, and
// waiting never blocks the event loop.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import polylock from '../index.js'
import { tempDir, uniqueName, sleep, REDIS_URL } from './helpers.mjs'

const CHILD = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url))
const EXIT_LIMIT_MS = 5000

/** Run the child scenario; resolves to { code, stdout, ms } or fails if it does not exit. */
function runChild(scenario, url) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [CHILD, scenario, url, uniqueName('node-child')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let stdout = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    const killer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${scenario}: the child did not exit within ${EXIT_LIMIT_MS} ms (stdout: ${stdout})`))
    }, EXIT_LIMIT_MS)
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, stdout: stdout.trim().split('\n'), ms: performance.now() - started })
    })
  })
}

const urls = [['sqlite', () => `sqlite://${tempDir()}/child.db`]]
if (REDIS_URL) urls.push(['redis', () => REDIS_URL])

for (const [backend, url] of urls) {
  describe(`a child process on ${backend} exits by itself`, () => {
    test('after acquire, release, close', async () => {
      const { code, stdout } = await runChild('release-close', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['done'])
    })

    test('with an unsettled lost promise after release and close', async () => {
      const { code, stdout } = await runChild('lost-watched-release-close', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['done'])
    })

    test('after closing while a guard is held: lost settles', async () => {
      const { code, stdout } = await runChild('lost-watched-close-while-held', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['POLYLOCK_LOST', 'done'])
    })

    test('with an idle client that was never closed', async () => {
      const { code, stdout } = await runChild('lost-watched-no-close', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['done'])
    })

    test('after 1,920 calls from 64 loops at once, some rejecting, without close', async () => {
      const { code, stdout } = await runChild('many-at-once', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['640 timeouts', 'done'])
    })

    test('only once a pending acquisition has finished', async () => {
      const { code, stdout } = await runChild('pending-acquire-keeps-alive', url())
      assert.equal(code, 0)
      assert.deepEqual(stdout, ['acquired bigint', 'done'])
    })
  })
}

test('waiting for a lock does not block the event loop', async () => {
  const client = await polylock.connect(`sqlite://${tempDir()}/loop.db`)
  try {
    const lock = client.lock(uniqueName())
    const holder = await lock.acquire()
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    const err = await lock.acquire({ waitMs: 500 }).catch((e) => e)
    clearInterval(timer)
    assert.equal(err.code, 'POLYLOCK_TIMEOUT')
    assert.ok(ticks >= 20, `only ${ticks} timer ticks ran during a 500 ms wait`)
    await holder.release()
  } finally {
    await client.close()
  }
})

test('a release handed to a waiting acquire of the same client settles it before the release returns', {
  skip: !REDIS_URL && 'needs POLYLOCK_TEST_REDIS_URL',
}, async () => {
  // Redis hands the lock over with a token set aside, so the waiter needs no round trip: the
  // binding polls it on this thread as the release hands it over (src/settle.rs), and its
  // Promise is settled by the time release() returns, not after a trip through the runtime.
  const client = await polylock.connect(REDIS_URL)
  try {
    const lock = client.lock(uniqueName('handoff-here'))
    const holder = await lock.acquire()
    let waiter = null
    const waiting = lock.acquire().then((guard) => (waiter = guard))
    await sleep(200) // queued behind the holder
    const released = holder.release()
    // Microtask turns only (index.js chains a reaction or two): no event-loop turn, so a
    // settlement queued from the runtime's threads cannot have arrived yet.
    for (let turn = 0; turn < 10; turn++) await Promise.resolve()
    assert.ok(waiter, 'the waiting acquire settled within the release call')
    assert.equal(waiter.fencingToken, holder.fencingToken + 1n, 'the token the holder set aside')
    await released
    await waiting
    await waiter.release()
  } finally {
    await client.close()
  }
})
