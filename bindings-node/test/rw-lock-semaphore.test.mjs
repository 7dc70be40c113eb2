// Read-write locks and semaphores on every backend (the embedded ones and each server of
// tests/services, in its incumbent's layout). And the error codes follow the core's one table.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'

import polylock from '../index.js'
import { BACKENDS, uniqueName, rejection } from './helpers.mjs'

for (const backend of BACKENDS) {
  test(`${backend.name}: readers share, a writer excludes, tokens grow`, async () => {
    const client = await polylock.connect(backend.url())
    try {
      const rw = client.rwLock(uniqueName())
      assert.equal(rw.read.kind, 'read')
      assert.equal(rw.write.kind, 'write')
      const first = await rw.read.acquire()
      const second = await rw.read.acquire({ waitMs: 1000 })
      assert.ok(second.fencingToken > first.fencingToken)
      assert.equal(await rw.write.tryAcquire({ waitMs: 50 }), null)
      await first.release()
      await second.release()
      const writer = await rw.write.acquire({ waitMs: 1000 })
      assert.ok(writer.fencingToken > second.fencingToken)
      assert.equal(await rw.read.tryAcquire(), null)
      // Re-entry as the writer; the writer may also read (a downgrade).
      const again = await writer.reenter()
      assert.equal(again.fencingToken, writer.fencingToken)
      await again.release()
      await writer.release()
      assert.notEqual(await rw.write.tryAcquire(), null)
    } finally {
      await client.close()
    }
  })

  test(`${backend.name}: isLocked() on a side tells whether anyone holds that side`, async () => {
    const url = backend.url()
    const client = await polylock.connect(url)
    try {
      const rw = client.rwLock(uniqueName())
      if (/^(postgres|postgresql|mysql|mariadb):/.test(url)) {
        // The SQL servers' read-write tables cannot answer it yet (the core's SqlRwLocks has
        // no is_locked): refused with a typed error, not a guess.
        assert.equal((await rejection(rw.read.isLocked())).code, 'POLYLOCK_UNSUPPORTED')
        return
      }
      assert.equal(await rw.read.isLocked(), false)
      assert.equal(await rw.write.isLocked(), false)
      const reader = await rw.read.acquire({ waitMs: 1000 })
      assert.equal(await rw.read.isLocked(), true)
      assert.equal(await rw.write.isLocked(), false, 'the write side while only a reader holds')
      await reader.release()
      assert.equal(await rw.read.isLocked(), false)
      const writer = await rw.write.acquire({ waitMs: 1000 })
      assert.equal(await rw.write.isLocked(), true)
      await writer.release()
      assert.equal(await rw.write.isLocked(), false)
    } finally {
      await client.close()
    }
  })

  test(`${backend.name}: a semaphore hands out N owned permits`, async () => {
    const client = await polylock.connect(backend.url())
    try {
      const name = uniqueName()
      const pool = client.semaphore(name, { permits: 2 })
      assert.equal(pool.permits, 2)
      const a = await pool.acquire()
      const b = await pool.acquire({ waitMs: 1000 })
      assert.ok(b.fencingToken > a.fencingToken)
      assert.equal(await pool.tryAcquire({ waitMs: 50 }), null)
      await a.release()
      const err = await rejection(a.release())
      assert.equal(err.code, 'POLYLOCK_NOT_OWNER')
      assert.equal((await rejection(b.reenter().then(() => null))).code, 'POLYLOCK_INVALID_ARGUMENT')
      // A permit whose lease runs out comes back.
      const short = await pool.acquire({ leaseMs: 150 })
      const later = await pool.acquire({ waitMs: 5000 })
      assert.ok(short.isLost)
      assert.equal((await rejection(short.release())).code, 'POLYLOCK_LOST')
      await later.release()
      await b.release()
      // The count is fixed by the first use; an abort stops the wait and takes nothing.
      const other = client.semaphore(name, { permits: 3 })
      assert.equal((await rejection(other.acquire({ waitMs: 0 }))).code, 'POLYLOCK_INVALID_ARGUMENT')
      const one = client.semaphore(uniqueName(), { permits: 1 })
      const held = await one.acquire()
      const controller = new AbortController()
      const waiting = one.acquire({ signal: controller.signal })
      setTimeout(() => controller.abort(new Error('gave up')), 30)
      assert.equal((await rejection(waiting)).message, 'gave up')
      await held.release()
      const free = await one.tryAcquire({ waitMs: 2000 })
      assert.notEqual(free, null, 'the aborted wait left no permit taken')
      await free.release()
    } finally {
      await client.close()
    }
  })
}

test('sqlite: a writer waits for the readers and gets in once they leave', async () => {
  const client = await polylock.connect(BACKENDS[0].url())
  try {
    // Every Node acquisition is an owner of its own, so re-entering a read guard stays a
    // read: an upgrade cannot be asked for here (the core refuses it for thread owners).
    const rw = client.rwLock(uniqueName())
    const reader = await rw.read.acquire()
    assert.equal(await rw.write.tryAcquire({ waitMs: 50 }), null)
    await reader.release()
    const writer = await rw.write.acquire({ waitMs: 1000 })
    await writer.release()
  } finally {
    await client.close()
  }
})

test('error codes are the core table, POLYLOCK_ + each kind name, and index.d.ts lists them all', () => {
  const codes = polylock.errorCodes()
  assert.deepEqual(codes, [
    'POLYLOCK_TIMEOUT',
    'POLYLOCK_NOT_OWNER',
    'POLYLOCK_LOST',
    'POLYLOCK_CONNECTION',
    'POLYLOCK_INVALID_ARGUMENT',
    'POLYLOCK_BACKEND',
    'POLYLOCK_INTERNAL',
    'POLYLOCK_UNSUPPORTED',
    'POLYLOCK_CANCELLED',
    'POLYLOCK_CONFLICT',
    'POLYLOCK_FENCED',
    'POLYLOCK_EXHAUSTED',
    'POLYLOCK_IN_PROGRESS',
    'POLYLOCK_MISMATCH',
  ])
  const dts = fs.readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
  const declared = /export type PolylockErrorCode =([^;]*?)\n\n/.exec(dts)[1].match(/POLYLOCK_[A-Z_]+/g)
  assert.deepEqual(new Set(declared), new Set(codes))
})
