// polylock's token kind and node-redlock exclude each other on the same name (both are the
// plain `SET key token NX PX` lock with a compare-and-delete release).
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'

import Redis from 'ioredis'
import Redlock from 'redlock'

import polylock from '../index.js'
import { uniqueName, sleep, REDIS_URL } from './helpers.mjs'

describe('interop with node-redlock on the token kind', { skip: REDIS_URL ? false : 'POLYLOCK_TEST_REDIS_URL is not set' }, () => {
  let client, redis, redlock
  before(async () => {
    client = await polylock.connect(REDIS_URL)
    redis = new Redis(REDIS_URL)
    // retryCount 0: one attempt, so a held lock fails at once.
    redlock = new Redlock([redis], { retryCount: 0 })
    redlock.on('error', () => {})
  })
  after(async () => {
    await client.close()
    redis.disconnect()
  })

  test('a polylock hold keeps redlock out, and its release lets redlock in', async () => {
    const name = uniqueName('node-redlock')
    const guard = await client.lock(name, { kind: 'token' }).acquire({ leaseMs: 10_000 })
    await assert.rejects(redlock.acquire([name], 5000), /quorum|locked|attempts/i)
    await guard.release()
    const held = await redlock.acquire([name], 5000)
    await held.release()
  })

  test('a redlock hold keeps polylock out, and polylock gets it once redlock releases', async () => {
    const name = uniqueName('node-redlock')
    const lock = client.lock(name, { kind: 'token' })
    const held = await redlock.acquire([name], 10_000)
    assert.equal(await lock.tryAcquire(), null)
    const started = performance.now()
    const waiting = lock.acquire({ waitMs: 10_000 })
    await sleep(300)
    await held.release()
    const guard = await waiting
    assert.ok(performance.now() - started >= 300, 'polylock got the lock while redlock held it')
    assert.equal(await redis.get(name) !== null, true, 'polylock holds the same key redlock used')
    await guard.release()
    assert.equal(await redis.get(name), null)
  })

  test('the reentrant kind is a different layout (a hash): redlock does not see it as free', async () => {
    // Not interop, but the same name must still not be taken twice: redlock's SET fails on
    // the hash key only because it exists; redlock's script checks EXISTS first.
    const name = uniqueName('node-redlock')
    const guard = await client.lock(name).acquire()
    await assert.rejects(redlock.acquire([name], 5000))
    await guard.release()
  })
})
