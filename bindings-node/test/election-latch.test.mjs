// Issue 18 from Node: client.election(name) and client.latch(name) on every backend the suite
// knows (SQLite, mem, and every POLYLOCK_TEST_*_URL exported). One leader among candidates,
// resign hands over with a greater term, leader() and observe() follow, a campaign that runs
// out or is aborted leaves no candidacy (tryCampaign resolves null), proclaim; a latch
// releases its waiters at zero, awaitZero rejects with POLYLOCK_TIMEOUT when its wait runs
// out and await resolves false, trySetCount refuses a latch still counting. RedLock has
// neither.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { BACKENDS, REDIS_URL, uniqueName, rejection, sleep } from './helpers.mjs'

/** Settles to `{ settled: false }` if `promise` is still pending after `ms`. */
async function within(promise, ms) {
  let timer
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), ms)
  })
  const settled = promise.then(
    (value) => ({ settled: true, value }),
    (error) => ({ settled: true, error }),
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}

const leaderOf = (value, term) => ({ value: Buffer.from(value), term })

function thrown(fn) {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected a throw')
}

for (const backend of BACKENDS) {
  describe(`election on ${backend.name}`, () => {
    let url, clients
    before(async () => {
      url = backend.url()
      clients = await Promise.all([0, 1, 2].map(() => polylock.connect(url)))
    })
    after(async () => {
      await Promise.all((clients ?? []).map((client) => client.close()))
    })

    test('one leader among three candidates; resign hands over with growing terms; leader() follows', async () => {
      const name = uniqueName('node-election')
      const [a, b, c] = clients
      const first = await a.election(name).campaign('node-0', { waitMs: 10_000 })
      assert.ok(first instanceof polylock.Leadership)
      assert.equal(typeof first.term, 'bigint')
      assert.equal(first.isLeader, true)
      assert.equal(first.isLost, false)
      assert.deepEqual(first.value, Buffer.from('node-0'))
      assert.equal(first.name, name)
      assert.deepEqual(await b.election(name).leader(), leaderOf('node-0', first.term))

      const won = []
      const remaining = new Map()
      for (const [i, client] of [b, c].entries()) {
        const campaigning = client
          .election(name)
          .campaign(Buffer.from(`node-${i + 1}`))
          .then((leadership) => {
            won.push(leadership)
            return [i, leadership]
          })
        remaining.set(i, campaigning)
      }
      await sleep(500)
      assert.equal(won.length, 0, 'a second leader while the first leads')

      await first.resign()
      assert.equal(first.isLeader, false)
      assert.equal(first.isLost, false)
      await first.resign() // harmless twice
      let previous = first.term
      for (let round = 1; round <= 2; round++) {
        const [i, next] = await Promise.race(remaining.values())
        remaining.delete(i)
        await sleep(300)
        assert.equal(won.length, round, 'one leader at a time')
        assert.equal(next.isLeader, true)
        assert.deepEqual(next.value, Buffer.from(`node-${i + 1}`))
        assert.ok(next.term > previous, `term ${next.term} after ${previous}`)
        assert.deepEqual(await a.election(name).leader(), leaderOf(`node-${i + 1}`, next.term))
        previous = next.term
        await next.resign()
      }
      assert.equal(await a.election(name).leader(), null)
    })

    test('observe() sees each change; proclaim; a campaign that runs out leaves no candidacy', async () => {
      const name = uniqueName('node-election')
      const [watcher, candidate] = clients
      const changes = watcher.election(name).observe()
      assert.deepEqual(await changes.next(), { done: false, value: null })

      const leadership = await candidate.election(name).campaign(Buffer.from('a'), { waitMs: 10_000 })
      assert.deepEqual((await changes.next()).value, leaderOf('a', leadership.term))
      await leadership.proclaim('a-2')
      assert.deepEqual(leadership.value, Buffer.from('a-2'))
      assert.deepEqual((await changes.next()).value, leaderOf('a-2', leadership.term))
      assert.equal(leadership.term, (await watcher.election(name).leader()).term, 'proclaim keeps the term')

      const started = performance.now()
      const timedOut = await rejection(watcher.election(name).campaign('b', { waitMs: 200 }))
      assert.ok(timedOut instanceof polylock.PolylockError, String(timedOut))
      assert.equal(timedOut.code, 'POLYLOCK_TIMEOUT', timedOut.message)
      assert.ok(performance.now() - started >= 150)

      await leadership[Symbol.asyncDispose]() // resigns, as `await using` does
      assert.equal(leadership.isLeader, false)
      assert.deepEqual((await changes.next()).value, null)
      assert.equal((await rejection(leadership.proclaim('late'))).code, 'POLYLOCK_NOT_OWNER')

      // The timed-out candidate left nothing behind: a try-once campaign wins at once.
      const second = await watcher.election(name).campaign('b', { waitMs: 0 })
      assert.ok(second.term > leadership.term)
      assert.deepEqual((await changes.next()).value, leaderOf('b', second.term))
      await second.resign()
      assert.deepEqual((await changes.next()).value, null)

      // Stopping the iterator: a pending next() ends, and so does every later one.
      const pending = changes.next()
      assert.deepEqual(await changes.return(), { done: true, value: undefined })
      assert.deepEqual(await pending, { done: true, value: undefined })
      assert.deepEqual(await changes.next(), { done: true, value: undefined })
    })

    test('for await over observe(); break stops it', async () => {
      const name = uniqueName('node-election')
      const [watcher, candidate] = clients
      const seen = []
      const watching = (async () => {
        for await (const leader of watcher.election(name).observe()) {
          seen.push(leader === null ? null : leader.value.toString())
          if (seen.length === 3) break
        }
      })()
      await sleep(300)
      const leadership = await candidate.election(name).campaign('x')
      await sleep(400)
      await leadership.proclaim('y')
      const done = await within(watching, 10_000)
      assert.equal(done.settled, true, `observe saw only ${JSON.stringify(seen)}`)
      assert.equal(done.error, undefined)
      assert.deepEqual(seen, [null, 'x', 'y'])
      await leadership.resign()
    })

    test('tryCampaign resolves null while another leads (no candidacy left), the leadership once free', async () => {
      const name = uniqueName('node-election')
      const [a, b] = clients
      const held = await a.election(name).tryCampaign('a', { waitMs: 10_000 })
      assert.ok(held instanceof polylock.Leadership)
      const started = performance.now()
      assert.equal(await b.election(name).tryCampaign('b', { waitMs: 300 }), null)
      assert.ok(performance.now() - started >= 250, 'resolved null before its wait ran out')
      assert.equal(await b.election(name).tryCampaign('b', { waitMs: 0 }), null)
      assert.deepEqual(await b.election(name).leader(), leaderOf('a', held.term))
      await held.resign()
      // The candidates that ran out left nothing behind: nobody leads until b tries again.
      await sleep(300)
      assert.equal(await a.election(name).leader(), null)
      const next = await b.election(name).tryCampaign(Buffer.from('b'), { waitMs: 10_000 })
      assert.ok(next instanceof polylock.Leadership)
      assert.ok(next.term > held.term)
      assert.deepEqual(next.value, Buffer.from('b'))
      // An abort still rejects with the reason, not null.
      const reason = new Error('stop trying')
      const controller = new AbortController()
      const trying = a.election(name).tryCampaign('aborted', { signal: controller.signal })
      await sleep(100)
      controller.abort(reason)
      assert.equal(await rejection(trying), reason)
      assert.equal(await rejection(a.election(name).tryCampaign('x', { signal: AbortSignal.abort(reason) })), reason)
      await next.resign()
    })

    test('an aborted campaign rejects with the reason and leaves no candidacy', async () => {
      const name = uniqueName('node-election')
      const [a, b] = clients
      const leader = await a.election(name).campaign('held')
      const controller = new AbortController()
      const campaigning = b.election(name).campaign('aborted', { signal: controller.signal })
      await sleep(200)
      const reason = new Error('stop campaigning')
      controller.abort(reason)
      assert.equal(await rejection(campaigning), reason)
      await leader.resign()
      // Nobody else campaigns: the aborted candidate must not have become the leader.
      await sleep(500)
      assert.equal(await a.election(name).leader(), null)
      const next = await b.election(name).campaign('next', { waitMs: 0 })
      assert.ok(next.term > leader.term)
      await next.resign()
      // An already aborted signal rejects before anything is sent.
      assert.equal(await rejection(b.election(name).campaign('x', { signal: AbortSignal.abort(reason) })), reason)
    })

    test('closing the client loses its leadership: lost resolves with POLYLOCK_LOST', async () => {
      const name = uniqueName('node-election')
      const own = await polylock.connect(url)
      const leadership = await own.election(name).campaign('doomed', { waitMs: 10_000 })
      const lost = leadership.lost
      assert.equal((await within(lost, 100)).settled, false)
      await own.close()
      const settled = await within(lost, 10_000)
      assert.equal(settled.settled, true, 'lost did not resolve after close')
      assert.ok(settled.value instanceof polylock.PolylockError)
      assert.equal(settled.value.code, 'POLYLOCK_LOST')
      assert.equal(leadership.isLost, true)
      assert.equal(leadership.isLeader, false)
      assert.equal(typeof leadership.lostReason, 'string')
      assert.equal((await rejection(leadership.proclaim('late'))).code, 'POLYLOCK_LOST')
    })

    // Issue 35: on ZooKeeper the closed client's leader node used to outlive close() (the
    // next candidate was not elected within 20 s, the session timeout being 30 s). Closing
    // must end the session, and with it the node, at once: the next candidate leads well
    // within a session timeout, on every backend.
    test('after the leader\'s client closes, the next candidate leads at once with a greater term', async () => {
      const name = uniqueName('node-election')
      const own = await polylock.connect(url)
      const leadership = await own.election(name).campaign('doomed', { waitMs: 10_000 })
      await own.close()
      const started = performance.now()
      const next = await clients[0].election(name).campaign('next', { waitMs: 20_000 })
      const waited = performance.now() - started
      assert.ok(waited < 5_000, `the next candidate led only after ${Math.round(waited)} ms`)
      assert.ok(next.term > leadership.term)
      await next.resign()
    })
  })

  describe(`latch on ${backend.name}`, () => {
    let url, client, other
    before(async () => {
      url = backend.url()
      client = await polylock.connect(url)
      other = await polylock.connect(url)
    })
    after(async () => {
      await client?.close()
      await other?.close()
    })

    test('counting down to zero releases every waiter; trySetCount refuses a latch still counting', async () => {
      const name = uniqueName('node-latch')
      const latch = client.latch(name)
      assert.ok(latch instanceof polylock.Latch)
      assert.equal(latch.name, name)
      assert.equal(await latch.count(), 0)
      assert.equal(await latch.trySetCount(2), true)
      assert.equal(await other.latch(name).trySetCount(5n), false)
      assert.equal(await other.latch(name).count(), 2)

      const waiters = [latch.await(), other.latch(name).await(20_000), other.latch(name).await(null)]
      await other.latch(name).countDown()
      assert.equal(await latch.count(), 1)
      for (const waiter of waiters) assert.equal((await within(waiter, 300)).settled, false)
      await latch.countDown()
      for (const waiter of waiters) {
        const done = await within(waiter, 10_000)
        assert.deepEqual(done, { settled: true, value: true })
      }
      assert.equal(await latch.count(), 0)
      await latch.countDown() // never below zero
      assert.equal(await latch.count(), 0)
      assert.equal(await latch.await(0), true)
      // Open again: it can be set again.
      assert.equal(await other.latch(name).trySetCount(1), true)
      await other.latch(name).countDown()
    })

    test('a wait that runs out resolves false', async () => {
      const name = uniqueName('node-latch')
      const latch = client.latch(name)
      assert.equal(await latch.trySetCount(1), true)
      const started = performance.now()
      assert.equal(await other.latch(name).await(300), false)
      assert.ok(performance.now() - started >= 250, 'returned before its timeout')
      assert.equal(await latch.await(0), false)
      assert.equal(await latch.count(), 1)
      await latch.countDown()
    })

    test('awaitZero rejects with POLYLOCK_TIMEOUT when the wait runs out, resolves at zero', async () => {
      const name = uniqueName('node-latch')
      const latch = client.latch(name)
      assert.equal(await latch.trySetCount(1), true)
      const started = performance.now()
      const err = await rejection(other.latch(name).awaitZero({ waitMs: 300 }))
      assert.ok(err instanceof polylock.PolylockError, String(err))
      assert.equal(err.code, 'POLYLOCK_TIMEOUT', err.message)
      assert.ok(performance.now() - started >= 250, 'rejected before its wait ran out')
      assert.equal((await rejection(latch.awaitZero({ waitMs: 0 }))).code, 'POLYLOCK_TIMEOUT')
      assert.equal(await latch.count(), 1)

      const waiters = [other.latch(name).awaitZero(), other.latch(name).awaitZero({ waitMs: 20_000 })]
      for (const waiter of waiters) assert.equal((await within(waiter, 300)).settled, false)
      await latch.countDown()
      for (const waiter of waiters) assert.deepEqual(await within(waiter, 10_000), { settled: true, value: undefined })
      assert.equal(await latch.awaitZero({ waitMs: 0 }), undefined)

      // Aborted: rejects with the reason, not POLYLOCK_TIMEOUT.
      assert.equal(await latch.trySetCount(1), true)
      const controller = new AbortController()
      const waiting = other.latch(name).awaitZero({ waitMs: 20_000, signal: controller.signal })
      await sleep(100)
      const reason = new Error('no more waiting')
      controller.abort(reason)
      assert.equal(await rejection(waiting), reason)
      await latch.countDown()
    })

    test('await takes { waitMs } as locks do (the try form: false when it runs out)', async () => {
      const name = uniqueName('node-latch')
      const latch = client.latch(name)
      assert.equal(await latch.trySetCount(1), true)
      const started = performance.now()
      assert.equal(await other.latch(name).await({ waitMs: 300 }), false)
      assert.ok(performance.now() - started >= 250, 'returned before its wait ran out')
      assert.equal(await latch.await({ waitMs: 0 }), false)
      const controller = new AbortController()
      const waiting = other.latch(name).await({ signal: controller.signal })
      await sleep(100)
      const reason = new Error('no more waiting')
      controller.abort(reason)
      assert.equal(await rejection(waiting), reason)
      await latch.countDown()
      assert.equal(await other.latch(name).await({ waitMs: 10_000 }), true)
      assert.equal(await other.latch(name).await({}), true)
    })

    test('an aborted wait rejects with the reason; closing the client ends a wait with POLYLOCK_CONNECTION', async () => {
      const name = uniqueName('node-latch')
      assert.equal(await client.latch(name).trySetCount(1), true)
      const controller = new AbortController()
      const waiting = other.latch(name).await(undefined, { signal: controller.signal })
      await sleep(100)
      const reason = new Error('no more waiting')
      controller.abort(reason)
      assert.equal(await rejection(waiting), reason)

      const own = await polylock.connect(url)
      const ownLatch = own.latch(name)
      const closing = rejection(ownLatch.await()) // handled at once: it may reject while close() runs
      await sleep(100)
      await own.close()
      const err = await closing
      assert.equal(err.code, 'POLYLOCK_CONNECTION', err.message)
      assert.equal((await rejection(ownLatch.count())).code, 'POLYLOCK_CONNECTION')
      assert.equal(thrown(() => own.latch(name)).code, 'POLYLOCK_CONNECTION')
      await client.latch(name).countDown()
    })
  })
}

describe('election and latch: bad input gets typed errors', () => {
  let client
  before(async () => {
    client = await polylock.connect(BACKENDS[0].url())
  })
  after(async () => {
    await client?.close()
  })

  const invalid = (err) => {
    assert.ok(err instanceof polylock.PolylockError, String(err))
    assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT', err.message)
  }

  test('names', () => {
    for (const name of ['', 'x'.repeat(polylock.MAX_NAME_LEN + 1), 42, null]) {
      invalid(thrown(() => client.election(name)))
      invalid(thrown(() => client.latch(name)))
    }
  })

  test('campaign values and waits, proclaim values', async () => {
    const election = client.election(uniqueName('node-election'))
    for (const value of [42, null, undefined, { a: 1 }]) invalid(await rejection(election.campaign(value)))
    for (const waitMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '10']) {
      invalid(await rejection(election.campaign('v', { waitMs })))
    }
    invalid(await rejection(election.campaign('v', { signal: 'not a signal' })))
    for (const value of [42, null, undefined, { a: 1 }]) invalid(await rejection(election.tryCampaign(value)))
    for (const waitMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '10']) {
      invalid(await rejection(election.tryCampaign('v', { waitMs })))
    }
    invalid(await rejection(election.tryCampaign('v', { signal: 'not a signal' })))
    const leadership = await election.campaign(new Uint8Array([1, 2, 3]), { waitMs: 1000 })
    assert.deepEqual(leadership.value, Buffer.from([1, 2, 3]))
    invalid(await rejection(leadership.proclaim(7)))
    await leadership.resign()
  })

  test('latch counts and timeouts', async () => {
    const latch = client.latch(uniqueName('node-latch'))
    for (const count of [0, -1, 1.5, Number.NaN, '3', -1n, 2n ** 64n, 2n ** 63n]) {
      invalid(await rejection(latch.trySetCount(count)))
    }
    for (const timeoutMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '10']) {
      invalid(await rejection(latch.await(timeoutMs)))
    }
    invalid(await rejection(latch.await(10, { signal: {} })))
    for (const waitMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '10']) {
      invalid(await rejection(latch.await({ waitMs })))
      invalid(await rejection(latch.awaitZero({ waitMs })))
    }
    invalid(await rejection(latch.awaitZero({ signal: {} })))
    invalid(await rejection(latch.await({ waitMs: 10, signal: 'not a signal' })))
    invalid(await rejection(latch.awaitZero(10)))
    assert.equal(await latch.count(), 0)
  })
})

describe('RedLock has no elections and no latches', { skip: REDIS_URL ? false : 'POLYLOCK_TEST_REDIS_URL is not set' }, () => {
  test('POLYLOCK_UNSUPPORTED', async () => {
    const server = new URL(REDIS_URL).host
    // One server: a list naming it three times is refused (issue 35).
    const client = await polylock.connect(polylock.redlockUrl([server]))
    try {
      for (const make of [() => client.election('x'), () => client.latch('x')]) {
        let err
        try {
          make()
        } catch (caught) {
          err = caught
        }
        assert.ok(err instanceof polylock.PolylockError, String(err))
        assert.equal(err.code, 'POLYLOCK_UNSUPPORTED', err.message)
      }
    } finally {
      await client.close()
    }
  })
})
