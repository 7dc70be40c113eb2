// The lock contract through the Node API, on every backend and kind.
import { describe, test, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { backendKinds, uniqueName, sleep, rejection } from './helpers.mjs'

for (const { backend, kind, skip } of await backendKinds()) {
  describe(`${backend.name} ${kind}`, { skip: skip ?? false }, () => {
    let url
    let client
    before(async () => {
      url = backend.url()
      client = await polylock.connect(url)
    })
    after(async () => {
      await client?.close()
    })
    const lockOf = (name = uniqueName()) => client.lock(name, { kind })

    test('acquire and release; fencing tokens increase; the guard is a bigint carrier', async () => {
      const lock = lockOf()
      let previous = -1n
      for (let i = 0; i < 3; i++) {
        const guard = await lock.acquire()
        assert.equal(typeof guard.fencingToken, 'bigint')
        assert.ok(guard.fencingToken > previous, `${guard.fencingToken} > ${previous}`)
        previous = guard.fencingToken
        assert.equal(guard.isLost, false)
        assert.equal(guard.released, false)
        await guard.release()
        assert.equal(guard.released, true)
      }
      assert.equal(lock.kind, kind)
    })

    test('isLocked() tells whether anyone holds the lock in the store, from any client', async () => {
      const name = uniqueName()
      const lock = lockOf(name)
      const other = await polylock.connect(url)
      try {
        const seen = other.lock(name, { kind })
        assert.equal(await lock.isLocked(), false)
        assert.equal(await seen.isLocked(), false)
        const guard = await lock.acquire()
        assert.equal(await lock.isLocked(), true)
        assert.equal(await seen.isLocked(), true)
        const again = await guard.reenter()
        await again.release()
        assert.equal(await seen.isLocked(), true, 'one of two holds given back')
        await guard.release()
        assert.equal(await lock.isLocked(), false)
        assert.equal(await seen.isLocked(), false)
      } finally {
        await other.close()
      }
    })

    test('two guards in one process are two owners: the second waits for the first', async () => {
      const lock = lockOf()
      const first = await lock.acquire()
      assert.equal(await lock.tryAcquire(), null)
      const timedOut = await rejection(lock.acquire({ waitMs: 150 }))
      assert.ok(timedOut instanceof polylock.PolylockError)
      assert.equal(timedOut.code, 'POLYLOCK_TIMEOUT')
      const waiting = lock.acquire({ waitMs: 10_000 })
      await sleep(50)
      await first.release()
      const second = await waiting
      assert.ok(second.fencingToken > first.fencingToken)
      await second.release()
    })

    test('concurrent acquirers on two clients keep a fencing ledger without overlaps', async () => {
      const name = uniqueName()
      const other = await polylock.connect(url)
      try {
        const ledger = []
        const worker = async (c) => {
          const lock = c.lock(name, { kind })
          for (let round = 0; round < 5; round++) {
            const guard = await lock.acquire({ waitMs: 30_000 })
            const start = performance.now()
            await sleep(2)
            ledger.push({ start, end: performance.now(), token: guard.fencingToken })
            await guard.release()
          }
        }
        await Promise.all([client, other, client, other, client, other].map(worker))
        assert.equal(ledger.length, 30)
        ledger.sort((a, b) => a.start - b.start)
        for (let i = 1; i < ledger.length; i++) {
          assert.ok(ledger[i].start >= ledger[i - 1].end, `hold ${i} began before hold ${i - 1} ended`)
          assert.ok(ledger[i].token > ledger[i - 1].token, `token ${ledger[i].token} after ${ledger[i - 1].token}`)
        }
      } finally {
        await other.close()
      }
    })

    test('an AbortSignal stops a wait, rejects with its reason and leaves nothing held', async () => {
      const lock = lockOf()
      const holder = await lock.acquire()
      const controller = new AbortController()
      const waiting = lock.acquire({ signal: controller.signal })
      await sleep(50)
      controller.abort(new Error('shutting down'))
      const err = await rejection(waiting)
      assert.equal(err.message, 'shutting down')
      const already = await rejection(lock.acquire({ signal: AbortSignal.abort() }))
      assert.equal(already.name, 'AbortError')
      const timed = await rejection(lock.acquire({ signal: AbortSignal.timeout(100) }))
      assert.equal(timed.name, 'TimeoutError')
      await holder.release()
      // The aborted waiters hold nothing: a fresh owner gets the lock. Their cleanup runs on
      // after the rejection (a server-side wait is interrupted, a won lock given back), so
      // allow it a moment rather than a single try.
      const next = await lock.tryAcquire({ waitMs: 2000 })
      assert.ok(next, 'the lock is free after the aborted waits')
      await next.release()
    })

    test('a signal that never fires does not change an acquisition', async () => {
      const lock = lockOf()
      const controller = new AbortController()
      const guard = await lock.acquire({ signal: controller.signal, waitMs: 1000 })
      controller.abort() // after the fact: nothing to stop
      assert.equal(guard.isLost, false)
      await guard.release()
    })

    test('lost: an explicit lease that runs out makes the guard lost, loudly', async () => {
      const lock = lockOf()
      const guard = await lock.acquire({ leaseMs: 300 })
      const lost = await guard.lost
      assert.ok(lost instanceof polylock.PolylockError)
      assert.equal(lost.code, 'POLYLOCK_LOST')
      assert.equal(guard.isLost, true)
      assert.match(guard.lostReason, /lease expired/)
      const next = await lock.acquire({ waitMs: 5000 })
      assert.ok(next.fencingToken > guard.fencingToken)
      const err = await rejection(guard.release())
      assert.equal(err.code, 'POLYLOCK_LOST')
      await next.release()
    })

    test('reentrancy is explicit: guard.reenter() joins the hold as the same owner', async () => {
      const lock = lockOf()
      const outer = await lock.acquire()
      const inner = await outer.reenter()
      assert.equal(inner.fencingToken, outer.fencingToken)
      await inner.release()
      assert.equal(await lock.tryAcquire(), null, 'still held by the outer guard')
      await outer.release()
      const next = await lock.tryAcquire()
      assert.ok(next)
      await next.release()
      const err = await rejection(outer.reenter())
      assert.equal(err.code, 'POLYLOCK_NOT_OWNER')
    })

    test('releasing twice is an error that says so', async () => {
      const guard = await lockOf().acquire()
      await guard.release()
      const err = await rejection(guard.release())
      assert.ok(err instanceof polylock.PolylockError)
      assert.equal(err.code, 'POLYLOCK_NOT_OWNER')
    })

    test('withLock releases when the callback throws, and returns what it returns', async () => {
      const lock = lockOf()
      const boom = new Error('boom')
      let token
      const err = await rejection(
        lock.withLock(async (guard) => {
          token = guard.fencingToken
          throw boom
        }),
      )
      assert.equal(err, boom)
      assert.equal(typeof token, 'bigint')
      assert.equal(await lock.withLock(async () => 42, { waitMs: 1000 }), 42)
    })

    test('Symbol.asyncDispose releases, and is a no-op on a released guard', async () => {
      const lock = lockOf()
      const guard = await lock.acquire()
      await guard[Symbol.asyncDispose]()
      assert.equal(guard.released, true)
      await guard[Symbol.asyncDispose]()
      const next = await lock.tryAcquire()
      assert.ok(next)
      await next.release()
    })

    test('closing the client marks its guards lost and fails later calls', async () => {
      const own = await polylock.connect(url)
      const guard = await own.lock(uniqueName(), { kind }).acquire()
      const lost = guard.lost
      await own.close()
      assert.equal(own.closed, true)
      assert.equal((await lost).code, 'POLYLOCK_LOST')
      assert.equal(guard.isLost, true)
      const err = await rejection(own.lock(uniqueName()).acquire())
      assert.equal(err.code, 'POLYLOCK_CONNECTION')
    })
  })
}
