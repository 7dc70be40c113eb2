// Issue 18 from Node: client.multiLock([...]) on every backend the suite knows: several locks
// taken as one, in one canonical order (no deadlock whatever order they are listed in), under
// one deadline, with nothing left held on failure and a fencing token per part.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { BACKENDS, uniqueName, rejection, sleep } from './helpers.mjs'

for (const backend of BACKENDS) {
  describe(`multi-lock on ${backend.name}`, () => {
    let client, other
    before(async () => {
      const url = backend.url()
      client = await polylock.connect(url)
      other = await polylock.connect(url)
    })
    after(async () => {
      await client?.close()
      await other?.close()
    })

    test('holds every part, one token per part, in key order; the parts exclude plain locks', async () => {
      const [a, b, c] = ['a', 'b', 'c'].map((part) => uniqueName(`node-multi-${part}`))
      const multi = client.multiLock([c, a, b])
      assert.deepEqual(multi.names, [a, b, c].sort())
      const guard = await multi.acquire({ waitMs: 5000 })
      assert.deepEqual(guard.names, multi.names)
      assert.equal(guard.fencingTokens.length, 3)
      for (const { name, token } of guard.fencingTokens) {
        assert.ok(multi.names.includes(name))
        assert.equal(typeof token, 'bigint')
      }
      assert.equal(guard.isLost, false)
      assert.equal(await other.lock(b).tryAcquire(), null)
      assert.equal(await other.multiLock([a]).tryAcquire(), null)
      await guard.release()
      assert.equal(guard.released, true)
      assert.equal((await rejection(guard.release())).code, 'POLYLOCK_NOT_OWNER')
      const single = await other.lock(b).tryAcquire()
      assert.ok(single)
      const next = await other.lock(b).tryAcquire()
      assert.equal(next, null)
      await single.release()
      // The part's counter went on: a later hold of the name has a greater token.
      const again = await client.multiLock([b]).acquire()
      assert.ok(again.fencingTokens[0].token > guard.fencingTokens.find((t) => t.name === b).token)
      await again.release()
    })

    test('two multi-locks listing the same names in opposite orders both finish (no deadlock)', async () => {
      const names = ['x', 'y', 'z'].map((part) => uniqueName(`node-multi-${part}`))
      const reversed = [...names].reverse()
      const held = []
      const worker = async (c, order) => {
        for (let i = 0; i < 5; i++) {
          const guard = await c.multiLock(order).acquire({ waitMs: 20_000 })
          held.push({ start: performance.now(), tokens: guard.fencingTokens })
          await sleep(2)
          held.at(-1).end = performance.now()
          await guard.release()
        }
      }
      await Promise.all([worker(client, names), worker(other, reversed), worker(client, reversed)])
      assert.equal(held.length, 15)
      held.sort((p, q) => p.start - q.start)
      for (let i = 1; i < held.length; i++) {
        assert.ok(held[i].start >= held[i - 1].end, 'two multi-locks over the same names overlapped')
      }
    })

    test('a part that stays taken: TIMEOUT within one deadline, and nothing else left held', async () => {
      const [a, b] = ['a', 'b'].map((part) => uniqueName(`node-multi-${part}`))
      const blocker = await other.lock(b).acquire()
      const started = performance.now()
      const err = await rejection(client.multiLock([a, b]).acquire({ waitMs: 300 }))
      assert.equal(err.code, 'POLYLOCK_TIMEOUT', err.message)
      assert.ok(performance.now() - started < 10_000)
      assert.equal(await client.multiLock([a, b]).tryAcquire(), null)
      const free = await other.lock(a).tryAcquire()
      assert.ok(free, `part '${a}' was left held after the failed multi-lock`)
      await free.release()
      await blocker.release()
    })

    test('an AbortSignal stops the wait with its reason, and nothing stays held', async () => {
      const [a, b] = ['a', 'b'].map((part) => uniqueName(`node-multi-${part}`))
      const blocker = await other.lock(b).acquire()
      const controller = new AbortController()
      const waiting = client.multiLock([a, b]).acquire({ signal: controller.signal })
      await sleep(100)
      controller.abort(new Error('gave up'))
      assert.equal((await rejection(waiting)).message, 'gave up')
      const free = await other.lock(a).tryAcquire({ waitMs: 2000 })
      assert.ok(free)
      await free.release()
      await blocker.release()
    })

    test('withLock and read/write sides of read-write locks as parts', async () => {
      const [rw, plain] = ['rw', 'plain'].map((part) => uniqueName(`node-multi-${part}`))
      const readers = client.multiLock([{ name: rw, side: 'read' }, plain])
      const result = await readers.withLock(async (guard) => {
        // Another reader of the rw lock gets in; its writer does not.
        const reader = await other.rwLock(rw).read.tryAcquire()
        assert.ok(reader)
        await reader.release()
        assert.equal(await other.rwLock(rw).write.tryAcquire(), null)
        return guard.names.length
      })
      assert.equal(result, 2)
      const writer = await client.multiLock([{ name: rw, side: 'write' }]).acquire()
      assert.equal(await other.rwLock(rw).read.tryAcquire(), null)
      await writer.release()
    })

    test('bad parts are INVALID_ARGUMENT', () => {
      for (const parts of [[''], [{ name: 'x', side: 'sideways' }], [{ name: 'x', side: 'read', kind: 'fair' }], [{ name: 'x', kind: 'nope' }], 'x']) {
        assert.throws(
          () => client.multiLock(parts),
          (err) => err instanceof polylock.PolylockError && err.code === 'POLYLOCK_INVALID_ARGUMENT',
          JSON.stringify(parts),
        )
      }
    })
  })
}
