// UUIDv7 and ULID: valid by the npm packages users would otherwise pick (uuid, ulid),
// monotonic across a million calls and across a clock set back, and not from a fixed seed.
import test from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import * as uuidPackage from 'uuid'
import * as ulidPackage from 'ulid'

import { UlidGenerator, timestampOf, ulid, ulidBatch, ulidToUuid, uuid7, uuid7Batch, uuidToUlid } from 'polylock-wasm'
import { isPolylockError, packageDir, withClock } from './helpers.mjs'

const INVALID = isPolylockError('POLYLOCK_INVALID_ARGUMENT')

function assertIncreasing(values, what) {
  for (let i = 1; i < values.length; i++) {
    if (!(values[i - 1] < values[i])) assert.fail(`${what}: ${values[i - 1]} then ${values[i]} at ${i}`)
  }
}

test('uuid7: version 7 and valid by the uuid package, of now', () => {
  const value = uuid7()
  assert.ok(uuidPackage.validate(value), value)
  assert.equal(uuidPackage.version(value), 7)
  assert.match(value, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.ok(Math.abs(timestampOf(value) - Date.now()) < 5000)
  assert.equal(timestampOf(value), ulidPackage.decodeTime(uuidToUlid(value)))
})

test('ulid: valid and decoded alike by the ulid package, and the same bits as a UUID', () => {
  const value = ulid()
  assert.ok(ulidPackage.isValid(value), value)
  assert.equal(timestampOf(value), ulidPackage.decodeTime(value))
  assert.ok(Math.abs(timestampOf(value) - Date.now()) < 5000)
  assert.equal(ulidToUuid(value), ulidPackage.ulidToUUID(value).toLowerCase())
  assert.equal(uuidToUlid(ulidToUuid(value)), value)
  const generator = new UlidGenerator({ overflow: 'error' })
  assert.ok(ulidPackage.isValid(generator.next()))
})

test('a million UUIDv7s and a million ULIDs, each in increasing order with no repeats', () => {
  const uuids = uuid7Batch(1_000_000)
  assert.equal(uuids.length, 1_000_000)
  assertIncreasing(uuids, 'uuid7Batch')
  assert.ok(uuid7() > uuids.at(-1))
  const ulids = ulidBatch(1_000_000)
  assertIncreasing(ulids, 'ulidBatch')
  assert.ok(ulid() > ulids.at(-1))
  // One call at a time too, interleaved with batches.
  const singles = []
  for (let i = 0; i < 100_000; i++) singles.push(i % 1000 === 0 ? uuid7Batch(3)[2] : uuid7())
  assertIncreasing(singles, 'uuid7 one by one')
})

test('a clock set back keeps UUIDv7 and ULID increasing, at the last timestamp', () => {
  const now = Date.now() + 10_000 // ahead of everything made so far
  const readings = [now, now, now - 60_000, now - 60_000, now - 3_600_000, now + 1, now + 1]
  const generator = new UlidGenerator()
  for (const [make, what] of [
    [uuid7, 'uuid7'],
    [ulid, 'ulid'],
    [() => generator.next(), 'UlidGenerator'],
  ]) {
    const made = readings.map((reading) => withClock(() => reading, make))
    assertIncreasing(made, what)
    const stamps = made.map((value) => timestampOf(value))
    assert.deepEqual(stamps, [now, now, now, now, now, now + 1, now + 1], what)
  }
})

test('randomness comes from crypto.getRandomValues, not a fixed seed', () => {
  // Two processes at the same (faked) millisecond: every random bit must differ somewhere.
  const script = `
    Date.now = () => 1700000000000
    const p = require('polylock-wasm')
    console.log(JSON.stringify([p.uuid7(), p.ulid(), p.uuid7Batch(2)[1]]))`
  const run = () => JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: packageDir, encoding: 'utf8' }))
  const [a, b] = [run(), run()]
  for (let i = 0; i < a.length; i++) {
    assert.equal(timestampOf(a[i]), 1700000000000)
    assert.notEqual(a[i], b[i], 'two processes made the same ID: a fixed seed?')
  }
  // And when the host has no crypto, the error says so instead of falling back to something weak.
  const noCrypto = `
    Object.defineProperty(globalThis, 'crypto', { value: undefined })
    const p = require('polylock-wasm')
    try { p.uuid7(); console.log('made one') } catch (e) { console.log(e.code, e.message) }`
  const out = execFileSync(process.execPath, ['-e', noCrypto], { cwd: packageDir, encoding: 'utf8' })
  assert.match(out, /^POLYLOCK_INTERNAL crypto.getRandomValues/)
})

test('bad input is an InvalidArgument error', () => {
  for (const call of [
    () => timestampOf('not an id'),
    () => timestampOf(uuidPackage.v4()),
    () => timestampOf('8ZZZZZZZZZZZZZZZZZZZZZZZZZ'),
    () => timestampOf(1700000000000),
    () => ulidToUuid('short'),
    () => ulidToUuid(5),
    () => uuidToUlid('01895f4c_4d2a_7aaa_aaaa_aaaa12345678'),
    () => uuid7Batch(1 << 21),
    () => uuid7Batch(-1),
    () => ulidBatch(2.5),
    () => new UlidGenerator({ overflow: 'wrap' }),
  ]) {
    assert.throws(call, INVALID, String(call))
  }
})
