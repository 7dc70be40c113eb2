// Snowflake IDs: BigInt in and out (strings accepted, Numbers refused), increasing, any
// layout, the shared vectors, and honest failures.
import test from 'node:test'
import assert from 'node:assert/strict'

import { Snowflake, parseSnowflake, timestampOf } from 'polylock-wasm'
import { checkVectors } from './vector-checks.mjs'
import { isPolylockError, vectorsText, withClock } from './helpers.mjs'

const INVALID = isPolylockError('POLYLOCK_INVALID_ARGUMENT')

test('the shared vectors (Snowflake, UUIDv7, ULID, SQL names) hold on the Node build', async () => {
  const { failures, checks } = checkVectors(await import('polylock-wasm'), vectorsText)
  assert.deepEqual(failures, [])
  assert.ok(checks > 80, `only ${checks} checks ran`)
})

test('nextId is a bigint, increasing, with the worker id and the time inside', () => {
  const ids = new Snowflake({ workerId: 7 })
  assert.equal(ids.workerId, 7)
  assert.equal(ids.epochMs, 1288834974657)
  assert.deepEqual(ids.layout, { timestampBits: 41, workerBits: 10, sequenceBits: 12 })
  let previous = 0n
  for (let i = 0; i < 100_000; i++) {
    const id = ids.nextId()
    assert.equal(typeof id, 'bigint')
    assert.ok(id > previous, `${id} after ${previous}`)
    previous = id
  }
  const parts = ids.parse(previous)
  assert.equal(parts.workerId, 7)
  assert.ok(Math.abs(parts.timestampMs - Date.now()) < 5000, `timestamp ${parts.timestampMs}`)
  assert.deepEqual(parseSnowflake(previous), parts)
  assert.equal(timestampOf(previous), parts.timestampMs)
  ids.free()
})

test('nextIdString is the same sequence as decimal text, beyond Number precision', () => {
  const ids = new Snowflake({ workerId: 1023n })
  const text = ids.nextIdString()
  assert.match(text, /^\d+$/)
  assert.ok(BigInt(text) > BigInt(Number.MAX_SAFE_INTEGER), 'a Snowflake of today does not fit a Number')
  assert.ok(ids.nextId() > BigInt(text))
  assert.deepEqual(parseSnowflake(text), parseSnowflake(BigInt(text)))
  assert.equal(parseSnowflake(` ${text} `).workerId, 1023)
})

test('nextIds returns a BigUint64Array in increasing order, then nextId goes on from it', () => {
  const ids = new Snowflake({ workerId: 3 })
  const batch = ids.nextIds(50_000)
  assert.ok(batch instanceof BigUint64Array)
  assert.equal(batch.length, 50_000)
  for (let i = 1; i < batch.length; i++) assert.ok(batch[i] > batch[i - 1])
  assert.ok(ids.nextId() > batch.at(-1))
  assert.equal(ids.nextIds(0).length, 0)
})

test('a used-up sequence waits for the next millisecond instead of repeating', () => {
  // One sequence bit: two IDs per millisecond, so 2000 IDs span at least 1000 ms of clock
  // readings; with a fake clock that moves 1 ms every 5 reads, this runs in no real time.
  let reads = 0
  const start = Date.now()
  const ids = new Snowflake({ workerId: 1, layout: { sequenceBits: 1 } })
  const made = withClock(() => start + Math.floor(reads++ / 5), () => Array.from({ length: 2000 }, () => ids.nextId()))
  assert.equal(new Set(made).size, 2000)
  for (let i = 1; i < made.length; i++) assert.ok(made[i] > made[i - 1])
  const sequences = new Set(made.map((id) => ids.parse(id).sequence))
  assert.deepEqual([...sequences].sort(), [0, 1])
  assert.ok(ids.parse(made.at(-1)).timestampMs - ids.parse(made[0]).timestampMs >= 999)
})

test('a clock set back far is an error, never a repeated or smaller ID', () => {
  const now = Date.now()
  const ids = new Snowflake({ workerId: 9 })
  const before = withClock(() => now, () => ids.nextId())
  assert.throws(() => withClock(() => now - 3_600_000, () => ids.nextId()), isPolylockError('POLYLOCK_BACKEND'))
  const after = withClock(() => now + 1, () => ids.nextId())
  assert.ok(after > before)
})

test('layouts: named, custom widths, custom epoch; idFromTimestamp bounds a millisecond', () => {
  const discord = new Snowflake({ workerId: 32, layout: 'discord' })
  assert.equal(discord.epochMs, 1420070400000)
  const id = discord.nextId()
  assert.deepEqual(parseSnowflake(id, { layout: 'discord' }), discord.parse(id))
  assert.equal(discord.parse(id).workerId, 32)

  const epochMs = Date.UTC(2024, 0, 1)
  const custom = new Snowflake({ workerId: 200, epochMs, layout: { timestampBits: 40, workerBits: 8, sequenceBits: 15 } })
  assert.deepEqual(custom.layout, { timestampBits: 40, workerBits: 8, sequenceBits: 15 })
  assert.equal(custom.epochMs, epochMs)
  const options = { epochMs, layout: custom.layout }
  const made = custom.nextId()
  const parts = parseSnowflake(made, options)
  assert.equal(parts.workerId, 200)
  assert.ok(Math.abs(parts.timestampMs - Date.now()) < 5000)
  assert.ok(custom.idFromTimestamp(parts.timestampMs) <= made)
  assert.ok(made < custom.idFromTimestamp(parts.timestampMs + 1))
  assert.deepEqual(custom.parse(custom.idFromTimestamp(parts.timestampMs)), { ...parts, workerId: 0, sequence: 0 })
  assert.equal(custom.idFromTimestamp(epochMs), 0n)
  assert.throws(() => custom.idFromTimestamp(epochMs - 1), INVALID)
})

test('bad options are InvalidArgument errors that say what is wrong', () => {
  const cases = [
    [undefined, /options object/],
    [{}, /workerId/],
    [{ workerId: 1024 }, /1024 does not fit/],
    [{ workerId: -1 }, /non-negative integer/],
    [{ workerId: 1.5 }, /got 1\.5/],
    [{ workerId: '7' }, /non-negative integer/],
    [{ workerId: 32, layout: { workerBits: 5 } }, /does not fit/],
    [{ workerId: 1, layout: 'sonyflake' }, /'twitter', 'discord'/],
    [{ workerId: 1, layout: 7 }, /'twitter', 'discord'/],
    [{ workerId: 1, layout: { timestampBits: 41, workerBits: 10, sequenceBits: 13 } }, /at most 63 bits/],
    [{ workerId: 1, layout: { timestampBits: 30 } }, /at least 31 timestamp bits/],
    [{ workerId: 1, layout: { sequenceBits: 0 } }, /1 sequence bit/],
    [{ workerId: 1, layout: { sequenceBits: 2.5 } }, /sequenceBits/],
    [{ workerId: 1, epochMs: -5 }, /epochMs/],
    [{ workerId: 1, epochMs: Date.now() + 86_400_000 }, null],
  ]
  for (const [options, message] of cases) {
    if (message === null) {
      // An epoch in the future builds, but the clock is before it: a clock error, not an ID.
      const ids = new Snowflake(options)
      assert.throws(() => ids.nextId(), isPolylockError('POLYLOCK_BACKEND'))
      continue
    }
    assert.throws(
      () => new Snowflake(options),
      (err) => INVALID(err) && message.test(err.message),
      `new Snowflake(${JSON.stringify(options)})`,
    )
  }
})

test('an ID is a BigInt or a decimal string, never a Number', () => {
  const ids = new Snowflake({ workerId: 1 })
  for (const bad of [5, 1.5, null, undefined, {}, -1n, 2n ** 64n, '', 'abc', '-1', '0x10', '1e3', '18446744073709551616']) {
    assert.throws(() => ids.parse(bad), INVALID, `parse(${String(bad)})`)
    assert.throws(() => parseSnowflake(bad), INVALID, `parseSnowflake(${String(bad)})`)
  }
  // 2^63 and above: more bits than the layout has.
  assert.throws(() => parseSnowflake(2n ** 63n), (err) => INVALID(err) && /too many bits/.test(err.message))
  assert.throws(() => ids.nextIds(-1), INVALID)
  assert.throws(() => ids.nextIds(2 ** 24 + 1), (err) => INVALID(err) && /at most/.test(err.message))
  assert.throws(() => parseSnowflake(1n, 'twitter'), INVALID)
})
