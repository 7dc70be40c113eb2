// Issue 19 from Node: Leaf-style segment IDs and Snowflake generators on leased worker ids,
// on every backend the suite knows (helpers.mjs), as BigInts or strings, never Numbers; and
// the shared snowflake vectors (bindings-wasm/test/vectors.tsv) parsed by leased generators
// of each layout.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'

import polylock from '../index.js'
import { BACKENDS, uniqueName, rejection } from './helpers.mjs'

const VECTORS = fs.readFileSync(new URL('../../bindings-wasm/test/vectors.tsv', import.meta.url), 'utf8')
const DISCORD_EPOCH_MS = 1_420_070_400_000

function vectorRows(kind) {
  const rows = VECTORS.split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split('\t'))
    .filter((fields) => fields[0] === kind)
    .map((fields) => fields.slice(1))
  assert.ok(rows.length > 0, `vectors.tsv has no ${kind} rows`)
  return rows
}

/** The `layout` option of a vectors.tsv layout column. */
function layoutOf(spec) {
  if (spec === 'twitter') return undefined
  if (spec === 'discord') return { epochMs: DISCORD_EPOCH_MS }
  const [epochMs, timestampBits, workerBits, sequenceBits] = spec.split('/').map(Number)
  return { epochMs, timestampBits, workerBits, sequenceBits }
}

for (const backend of BACKENDS) {
  describe(`segment IDs and leased snowflakes on ${backend.name}`, () => {
    let url, client, other
    before(async () => {
      url = backend.url()
      client = await polylock.connect(url)
      // A second client on the same store: another process, as far as the store can tell.
      other = await polylock.connect(url)
    })
    after(async () => {
      await client?.close()
      await other?.close()
    })

    test('segment: BigInts from 1 up, never repeated across two clients, strings on request', async () => {
      const tag = uniqueName('node-segment')
      const ours = client.segment(tag, { step: 50 })
      const theirs = other.segment(tag, { step: 50 })
      assert.equal(ours.tag, tag)
      const first = await ours.nextId()
      assert.equal(typeof first, 'bigint')
      assert.ok(first >= 1n)
      const seen = new Set([first])
      const add = (id) => {
        assert.equal(typeof id, 'bigint')
        assert.ok(!seen.has(id), `${id} was handed out twice`)
        seen.add(id)
      }
      // Batches larger than a range make both generators load ranges while the other does.
      for (let round = 0; round < 4; round++) {
        const [a, b] = await Promise.all([ours.nextIds(120), theirs.nextIds(120)])
        assert.ok(a instanceof BigUint64Array && b instanceof BigUint64Array)
        assert.equal(a.length, 120)
        for (const id of a) add(id)
        for (const id of b) add(id)
        add(await theirs.nextId())
      }
      const text = await ours.nextIdString()
      assert.match(text, /^[1-9]\d*$/)
      add(BigInt(text))
      const texts = await theirs.nextIdStrings(3)
      assert.equal(texts.length, 3)
      for (const t of texts) add(BigInt(t))
      assert.equal(seen.size, 1 + 4 * 241 + 4)
      assert.ok(ours.step >= 50)
    })

    test('segment: bad options are INVALID_ARGUMENT', () => {
      for (const options of [{ step: 0 }, { step: 10, maxStep: 5 }, { loadAt: 2 }, { waitMs: -1 }]) {
        assert.throws(
          () => client.segment(uniqueName('node-segment'), options),
          (err) => err instanceof polylock.PolylockError && err.code === 'POLYLOCK_INVALID_ARGUMENT',
          JSON.stringify(options),
        )
      }
      assert.throws(() => client.segment(''), (err) => err.code === 'POLYLOCK_INVALID_ARGUMENT')
    })

    test('leased snowflake: two generators of one store hold two worker ids; a held id is refused', async () => {
      const a = await client.snowflake()
      const b = await other.snowflake()
      try {
        const [workerA, workerB] = [await a.workerId(), await b.workerId()]
        assert.equal(typeof workerA, 'number')
        assert.notEqual(workerA, workerB)
        assert.equal(typeof (await a.epoch()), 'bigint')
        const err = await rejection(other.snowflake({ workerId: workerA }))
        assert.equal(err.code, 'POLYLOCK_TIMEOUT', err.message)
        const ids = [await a.nextId(), ...(await a.nextIds(500)), await b.nextId(), ...(await b.nextIds(500))]
        assert.equal(new Set(ids).size, ids.length)
        for (const id of ids.slice(0, 501)) assert.equal(a.parse(id).worker, workerA)
        assert.equal(b.parse(ids.at(-1)).worker, workerB)
        assert.match(await a.nextIdString(), /^\d+$/)
      } finally {
        await a.close()
        await b.close()
      }
    })

    test('leased snowflake: a worker id closed is free at once, and its next holder issues above it', async () => {
      const first = await client.snowflake()
      const worker = await first.workerId()
      const last = (await first.nextIds(2000)).at(-1)
      await first.close()
      const next = await other.snowflake({ workerId: worker, maxWaitMs: 5000 })
      try {
        assert.equal(await next.workerId(), worker)
        const id = await next.nextId()
        assert.ok(id > last, `${id} > ${last}: the new holder never goes below the mark`)
        assert.ok(next.parse(id).timestampMs > first.parse(last).timestampMs)
      } finally {
        await next.close()
      }
    })
  })
}

test('leased snowflake: bad worker ids and layouts are INVALID_ARGUMENT', async () => {
  const client = await polylock.connect(BACKENDS[0].url())
  try {
    for (const options of [
      { workerId: 1024 },
      { workerId: -1 },
      { workerId: 1.5 },
      { workerId: 2n ** 64n },
      { layout: { workerBits: 40 } },
      { layout: { epochMs: -5 } },
      { maxWaitMs: Number.NaN },
    ]) {
      const err = await rejection(client.snowflake(options))
      assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT', `${String(options.workerId)}: ${err.message}`)
    }
  } finally {
    await client.close()
  }
})

test('shared vectors: leased generators of each layout parse every snowflake vector', async () => {
  const client = await polylock.connect(`mem://${uniqueName('node-vectors')}`)
  try {
    let checked = 0
    for (const [id, spec, timestampMs, workerId, sequence] of vectorRows('snowflake')) {
      const layout = layoutOf(spec)
      const generator = await client.snowflake({ layout })
      try {
        for (const input of [BigInt(id), id]) {
          assert.deepEqual(
            generator.parse(input),
            { timestampMs: Number(timestampMs), worker: Number(workerId), sequence: Number(sequence) },
            `${id} in ${spec}`,
          )
        }
        if (layout === undefined || (layout.timestampBits === undefined && layout.epochMs !== undefined)) {
          // Twitter's widths: the plain parser and a fixed-worker generator agree.
          assert.deepEqual(polylock.parseSnowflake(id, layout?.epochMs), generator.parse(id))
          assert.deepEqual(new polylock.Snowflake({ workerId: 0, epochMs: layout?.epochMs }).parse(id), generator.parse(id))
        }
        const fresh = await generator.nextId()
        assert.equal(generator.parse(fresh).worker, await generator.workerId())
        checked++
      } finally {
        await generator.close()
      }
    }
    assert.equal(checked, vectorRows('snowflake').length)
  } finally {
    await client.close()
  }
})
