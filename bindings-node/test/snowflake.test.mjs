// Snowflake IDs: BigInt and string only, increasing, parseable.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'

import polylock from '../index.js'
import { tempDir } from './helpers.mjs'

let client
before(async () => {
  client = await polylock.connect(`sqlite://${tempDir()}/ids.db`)
})
after(async () => {
  await client.close()
})

test('nextId is a bigint, increasing, with the worker id inside', () => {
  const ids = new polylock.Snowflake({ workerId: 7 })
  assert.equal(ids.workerId, 7)
  let previous = 0n
  for (let i = 0; i < 10_000; i++) {
    const id = ids.nextId()
    assert.equal(typeof id, 'bigint')
    assert.ok(id > previous)
    previous = id
  }
  const parts = polylock.parseSnowflake(previous)
  assert.equal(parts.worker, 7)
  assert.ok(Math.abs(parts.timestampMs - Date.now()) < 10_000, `timestamp ${parts.timestampMs}`)
  assert.deepEqual(ids.parse(previous), parts)
})

test('nextIdString is the same number as a decimal string, beyond Number precision', () => {
  const ids = new polylock.Snowflake({ workerId: 1023n })
  const text = ids.nextIdString()
  assert.match(text, /^\d+$/)
  const id = BigInt(text)
  assert.ok(id > BigInt(Number.MAX_SAFE_INTEGER), 'a snowflake of today does not fit a Number')
  assert.ok(ids.nextId() > id)
  assert.deepEqual(polylock.parseSnowflake(text), polylock.parseSnowflake(id))
  assert.equal(polylock.parseSnowflake(text).worker, 1023)
})

test('nextIds returns a BigUint64Array in increasing order', () => {
  const ids = new polylock.Snowflake({ workerId: 3 })
  const batch = ids.nextIds(5000)
  assert.ok(batch instanceof BigUint64Array)
  assert.equal(batch.length, 5000)
  for (let i = 1; i < batch.length; i++) assert.ok(batch[i] > batch[i - 1])
  assert.ok(ids.nextId() > batch[batch.length - 1])
})

test('a custom epoch is used for generating and parsing', () => {
  const epochMs = Date.UTC(2024, 0, 1)
  const ids = new polylock.Snowflake({ workerId: 2, epochMs })
  assert.equal(ids.epochMs, epochMs)
  const id = ids.nextId()
  const parts = polylock.parseSnowflake(id, epochMs)
  assert.equal(parts.worker, 2)
  assert.ok(Math.abs(parts.timestampMs - Date.now()) < 10_000)
  assert.deepEqual(ids.parse(id), parts)
})
