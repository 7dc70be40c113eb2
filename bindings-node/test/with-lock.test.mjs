// client.withLock(name, fn, options) and `await using` on guards (issue 38's Node part).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { tempDir, uniqueName, rejection } from './helpers.mjs'

let client, other
before(async () => {
  const url = `sqlite://${tempDir()}/locks.db`
  client = await polylock.connect(url)
  other = await polylock.connect(url)
})
after(async () => {
  await client?.close()
  await other?.close()
})

test("client.withLock holds the lock around fn and resolves to fn's result", async () => {
  const name = uniqueName('node-withlock')
  const result = await client.withLock(name, async (guard) => {
    assert.equal(typeof guard.fencingToken, 'bigint')
    assert.equal(await other.lock(name).isLocked(), true)
    assert.equal(await other.lock(name).tryAcquire(), null, 'another client cannot take it meanwhile')
    return 'done'
  }, { waitMs: 1000, leaseMs: 10_000 })
  assert.equal(result, 'done')
  assert.equal(await other.lock(name).isLocked(), false)
})

test('client.withLock releases when fn throws, and the error is the one fn threw', async () => {
  const name = uniqueName('node-withlock')
  const boom = new Error('boom')
  const err = await rejection(client.withLock(name, async () => {
    throw boom
  }))
  assert.equal(err, boom)
  const guard = await other.lock(name).tryAcquire()
  assert.ok(guard, 'released after the throw')
  await guard.release()
})

test('client.withLock refuses bad input with POLYLOCK_INVALID_ARGUMENT', async () => {
  for (const attempt of [
    client.withLock(uniqueName('node-withlock'), 'not a function'),
    client.withLock(uniqueName('node-withlock'), async () => {}, 5),
    client.withLock(uniqueName('node-withlock'), async () => {}, { waitMs: -5 }),
  ]) {
    const err = await rejection(attempt)
    assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT', err.message)
  }
})

test('await using releases a guard at the end of its scope, also on a throw', async () => {
  const name = uniqueName('node-using')
  assert.equal(typeof polylock.Guard.prototype[Symbol.asyncDispose], 'function')
  await assert.rejects(async () => {
    // What `await using guard = await client.lock(name).acquire()` compiles to.
    const guard = await client.lock(name).acquire({ waitMs: 1000 })
    try {
      assert.equal(await other.lock(name).isLocked(), true)
      throw new Error('inside the scope')
    } finally {
      await guard[Symbol.asyncDispose]()
    }
  }, /inside the scope/)
  assert.equal(await other.lock(name).isLocked(), false)
})
