// Bad input gets a PolylockError with code POLYLOCK_INVALID_ARGUMENT (or CONNECTION for a
// server that is not there), never a crash or an untyped error.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { tempDir, uniqueName, rejection } from './helpers.mjs'

let client
before(async () => {
  client = await polylock.connect(`sqlite://${tempDir()}/bad-input.db`)
})
after(async () => {
  await client.close()
})

function assertInvalid(err, pattern) {
  assert.ok(err instanceof polylock.PolylockError, `not a PolylockError: ${err}`)
  assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT', err.message)
  if (pattern) assert.match(err.message, pattern)
}

function thrown(fn) {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected a throw')
}

test('lock names: not a string, empty, too long', () => {
  for (const name of [42, null, undefined, {}, Symbol('x')]) {
    assertInvalid(thrown(() => client.lock(name)))
  }
  assertInvalid(thrown(() => client.lock('')))
  assertInvalid(thrown(() => client.lock('x'.repeat(polylock.MAX_NAME_LEN + 1))))
})

test('lock kinds: unknown, or not offered by the backend', async () => {
  assertInvalid(thrown(() => client.lock(uniqueName(), { kind: 'mutex' })), /unknown lock kind/)
  assertInvalid(thrown(() => client.lock(uniqueName(), { kind: 7 })))
  // Refused when the handle is made, before anything is written.
  const refused = thrown(() => client.lock(uniqueName(), { kind: 'fair' }))
  assert.ok(refused instanceof polylock.PolylockError, String(refused))
  assert.equal(refused.code, 'POLYLOCK_UNSUPPORTED')
  assert.match(refused.message, /does not offer fair locks/)
})

const ONE_YEAR_MS = 365 * 24 * 3600 * 1000

test('waits and leases: negative, NaN, infinite, out of range, wrong types', async () => {
  const lock = client.lock(uniqueName())
  for (const options of [
    { waitMs: -1 },
    { waitMs: Number.NaN },
    { waitMs: Number.POSITIVE_INFINITY },
    { waitMs: '10' },
    { leaseMs: 0 },
    { leaseMs: -5 },
    { leaseMs: Number.NaN },
    { leaseMs: 'long' },
    // Outside 10 ms .. 365 days, the range every backend honours.
    { waitMs: 1e300 },
    { waitMs: 2 ** 64 },
    { waitMs: ONE_YEAR_MS + 1000 },
    { leaseMs: 1e300 },
    { leaseMs: 2 ** 64 },
    { leaseMs: 1e-9 },
    { leaseMs: 5 },
    { leaseMs: ONE_YEAR_MS + 1000 },
    { leaseMs: 10n },
    { waitMs: 10n },
  ]) {
    assertInvalid(await rejection(lock.acquire(options)))
    assertInvalid(await rejection(lock.tryAcquire(options)))
  }
  assertInvalid(await rejection(lock.acquire({ signal: 'stop' })), /AbortSignal/)
  // A bare number is not an options object: refused, not read as "no bound".
  for (const bare of [10, '10', true]) {
    assertInvalid(await rejection(lock.acquire(bare)), /options must be an object/)
    assertInvalid(await rejection(lock.tryAcquire(bare)), /options must be an object/)
    assertInvalid(await rejection(client.election(uniqueName()).campaign('v', bare)), /options must be an object/)
    assertInvalid(await rejection(client.latch(uniqueName()).awaitZero(bare)), /options must be an object/)
  }
  assertInvalid(await rejection(lock.withLock('not a function')))
  // The lock is untouched by all of that.
  const guard = await lock.tryAcquire()
  assert.ok(guard)
  await guard.release()
  // The longest lease and wait are honoured.
  const longest = await lock.acquire({ waitMs: ONE_YEAR_MS, leaseMs: ONE_YEAR_MS })
  await longest.release()
})

test('URLs: unknown scheme, not a URL, unknown option, wrong type', async () => {
  assertInvalid(await rejection(polylock.connect('nosuch://x')), /unknown URL scheme/)
  assertInvalid(await rejection(polylock.connect('just text')))
  assertInvalid(await rejection(polylock.connect(`sqlite://${tempDir()}/x.db?colour=blue`)))
  assertInvalid(await rejection(polylock.connect(5)))
})

test('a server that is not there is a connection error, and the password is not in it', async () => {
  // Port 1 on loopback: nothing listens there.
  const err = await rejection(polylock.connect('redis://:hunter2secret@127.0.0.1:1?timeout=1s'))
  assert.ok(err instanceof polylock.PolylockError)
  assert.equal(err.code, 'POLYLOCK_CONNECTION', err.message)
  assert.doesNotMatch(err.message, /hunter2secret/)
})

test('snowflake ids: worker ids and ids that are not BigInts or decimal strings', () => {
  for (const workerId of [-1, 1024, 1.5, Number.NaN, '3', -1n, 2n ** 64n]) {
    assertInvalid(thrown(() => new polylock.Snowflake({ workerId })), undefined)
  }
  assertInvalid(thrown(() => new polylock.Snowflake({})))
  const ids = new polylock.Snowflake({ workerId: 1 })
  for (const id of [12345, 'abc', '-1', -1n, '18446744073709551616']) {
    assertInvalid(thrown(() => ids.parse(id)))
    assertInvalid(thrown(() => polylock.parseSnowflake(id)))
  }
  assertInvalid(thrown(() => ids.nextIds(-1)))
})
