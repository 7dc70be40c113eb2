// UUIDv7 and ULID from the core, checked against the npm packages users would pick instead
// (uuid, ulid) and against the vectors every binding shares (id/src/uuid7.rs, id/src/ulid.rs).
import test from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import * as uuidPackage from 'uuid'
import * as ulidPackage from 'ulid'
import polylock from '../index.js'

const ULID_VECTOR = '01ARYZ6S4104HMASW9NF6YY093'
const ULID_VECTOR_AS_UUID = '01563df3-6481-0123-4567-89abcdef0123'
const UUID7_VECTOR = '01895f4c-4d2a-7aaa-aaaa-aaaa12345678'

test('uuid7: version 7 by the uuid package, of now, increasing', () => {
  const value = polylock.uuid7()
  assert.ok(uuidPackage.validate(value), value)
  assert.equal(uuidPackage.version(value), 7)
  assert.ok(Math.abs(polylock.uuid7TimestampMs(value) - Date.now()) < 5000)
  assert.equal(polylock.uuid7TimestampMs(UUID7_VECTOR), 0x01895f4c4d2a)
  const batch = polylock.uuid7Batch(100_000)
  assert.equal(new Set(batch).size, 100_000)
  for (let i = 1; i < batch.length; i++) assert.ok(batch[i - 1] < batch[i], `${batch[i - 1]} then ${batch[i]}`)
  assert.ok(polylock.uuid7() > batch.at(-1))
})

test('ulid: valid and decoded alike by the ulid package, increasing', () => {
  const value = polylock.ulid()
  assert.ok(ulidPackage.isValid(value), value)
  assert.equal(ulidPackage.decodeTime(value), polylock.ulidTimestampMs(value))
  assert.ok(Math.abs(polylock.ulidTimestampMs(value) - Date.now()) < 5000)
  const batch = polylock.ulidBatch(100_000)
  assert.equal(new Set(batch).size, 100_000)
  for (let i = 1; i < batch.length; i++) assert.ok(batch[i - 1] < batch[i])
})

test('conversions agree with the ulid package and the shared vectors', () => {
  assert.equal(polylock.ulidToUuid(ULID_VECTOR), ULID_VECTOR_AS_UUID)
  assert.equal(polylock.ulidToUuid(ULID_VECTOR), ulidPackage.ulidToUUID(ULID_VECTOR).toLowerCase())
  assert.equal(polylock.uuidToUlid(ULID_VECTOR_AS_UUID), ULID_VECTOR)
  assert.equal(polylock.ulidTimestampMs(ULID_VECTOR), 1469918176385)
  const mine = polylock.ulid()
  assert.equal(polylock.uuidToUlid(polylock.ulidToUuid(mine)), mine)
  // A UUIDv7 and its ULID name the same millisecond.
  const stamp = polylock.uuid7()
  assert.equal(polylock.ulidTimestampMs(polylock.uuidToUlid(stamp)), polylock.uuid7TimestampMs(stamp))
})

test('worker threads share the process generators: no repeats', async () => {
  const source = `
    const { parentPort } = require('node:worker_threads')
    const polylock = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)})
    parentPort.postMessage(polylock.uuid7Batch(20000).concat(polylock.ulidBatch(20000)))
  `
  const results = await Promise.all(
    [1, 2, 3].map(
      () =>
        new Promise((resolve, reject) => {
          const worker = new Worker(source, { eval: true })
          worker.once('message', resolve)
          worker.once('error', reject)
        }),
    ),
  )
  const all = results.flat().concat(polylock.uuid7Batch(20000))
  assert.equal(new Set(all).size, all.length)
})

test('bad input is an InvalidArgument PolylockError', () => {
  for (const call of [
    () => polylock.uuid7TimestampMs('not a uuid'),
    () => polylock.uuid7TimestampMs(uuidPackage.v4()),
    () => polylock.ulidTimestampMs('8ZZZZZZZZZZZZZZZZZZZZZZZZZ'),
    () => polylock.ulidToUuid('short'),
    () => polylock.uuid7Batch(1 << 21),
  ]) {
    assert.throws(call, (err) => err instanceof polylock.PolylockError && err.code === 'POLYLOCK_INVALID_ARGUMENT')
  }
})
