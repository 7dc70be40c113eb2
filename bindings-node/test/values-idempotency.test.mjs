// Issue 22 from Node: versioned values (compare-and-set, fenced writes, watch) and idempotency keys,
// on every backend the suite knows, with each failure's details as properties of the error.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import polylock from '../index.js'
import { BACKENDS, uniqueName, rejection, sleep } from './helpers.mjs'

const run = promisify(execFile)

/** Settles to `{ settled: false }` if `promise` is still pending after `ms`. */
async function settledWithin(promise, ms) {
  let timer
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), ms)
  })
  const settled = promise.then(
    (value) => ({ settled: true, value }),
    (error) => ({ settled: true, error }),
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}

function isCode(code) {
  return (err) => err instanceof polylock.PolylockError && err.code === code
}

for (const backend of BACKENDS) {
  describe(`values and idempotency on ${backend.name}`, () => {
    let url, client, other
    before(async () => {
      url = backend.url()
      client = await polylock.connect(url)
      other = await polylock.connect(url)
    })
    after(async () => {
      await client?.close()
      await other?.close()
    })

    test('value: create, get, compareAndSet, delete; a conflict carries the current value and version', async () => {
      const value = client.value(uniqueName('node-value'))
      assert.equal(await value.get(), null)
      const v1 = await value.create(Buffer.from('one'))
      assert.equal(typeof v1, 'bigint')
      assert.deepEqual(await value.get(), { value: Buffer.from('one'), version: v1, fencingToken: null })

      const exists = await rejection(other.value(value.name).create('again'))
      assert.ok(isCode('POLYLOCK_CONFLICT')(exists), exists.message)
      assert.deepEqual(exists.current, Buffer.from('one'))
      assert.equal(exists.currentVersion, v1)

      const v2 = await value.compareAndSet(v1, 'two')
      assert.notEqual(v2, v1)
      const stale = await rejection(other.value(value.name).compareAndSet(v1, new Uint8Array([0, 255])))
      assert.ok(isCode('POLYLOCK_CONFLICT')(stale), stale.message)
      assert.deepEqual(stale.current, Buffer.from('two'))
      assert.equal(stale.currentVersion, v2)

      const notAt = await rejection(value.delete(v1))
      assert.equal(notAt.code, 'POLYLOCK_CONFLICT')
      await value.delete(v2)
      assert.equal(await value.get(), null)
      const gone = await rejection(value.compareAndSet(v2, 'three'))
      assert.equal(gone.code, 'POLYLOCK_CONFLICT')
      assert.equal(gone.current, null)
      assert.equal(gone.currentVersion, null)
      // The version keeps growing across a delete and re-create.
      const v3 = await value.create('three')
      assert.ok(v3 > v2, `${v3} > ${v2}`)
    })

    test('value: concurrent compare-and-set increments from two clients end exact', async () => {
      const name = uniqueName('node-counter')
      await client.value(name).create('0')
      let retries = 0
      const increment = async (handle) => {
        for (;;) {
          const found = await handle.get()
          if (found === null) {
            // A ZooKeeper ensemble's follower may not have seen the create yet (reads are
            // sequentially consistent per session, not across clients): read again.
            await sleep(10)
            continue
          }
          const { value, version } = found
          try {
            return await handle.compareAndSet(version, String(Number(value.toString()) + 1))
          } catch (err) {
            if (err.code !== 'POLYLOCK_CONFLICT') throw err
            retries++
          }
        }
      }
      const worker = async (handle) => {
        for (let i = 0; i < 25; i++) await increment(handle)
      }
      await Promise.all([worker(client.value(name)), worker(other.value(name)), worker(client.value(name))])
      assert.equal((await client.value(name).get()).value.toString(), '75', `${retries} retries`)
    })

    test("value: fenced writes never accept a lower token; a lock's token fences them", async () => {
      const name = uniqueName('node-fenced')
      const value = client.value(name)
      const lock = client.lock(name)
      const first = await lock.acquire({ leaseMs: 10_000 })
      const staleToken = first.fencingToken
      await first.release()
      const second = await other.lock(name).acquire({ leaseMs: 10_000 })
      await other.value(name).writeFenced(second.fencingToken, 'from the second holder')
      const refused = await rejection(value.writeFenced(staleToken, 'from the paused first holder'))
      assert.ok(isCode('POLYLOCK_FENCED')(refused), refused.message)
      assert.equal(refused.winningToken, second.fencingToken)
      const found = await value.get()
      assert.deepEqual(found.value, Buffer.from('from the second holder'))
      assert.equal(found.fencingToken, second.fencingToken)
      // The same token again is accepted (the holder writes more than once).
      await value.writeFenced(second.fencingToken, 'again')
      await second.release()
    })

    test('value: watch() sees each new state from another client, deletion as null; close() ends it', async () => {
      const name = uniqueName('node-value')
      const watcher = other.value(name).watch()
      // Nothing written yet: no step within 200 ms.
      const first = watcher.next()
      assert.equal((await settledWithin(first, 200)).settled, false)

      const value = client.value(name)
      const v1 = await value.create('one')
      const created = await settledWithin(first, 10_000)
      assert.equal(created.settled, true, 'the watch did not see the create')
      assert.equal(created.error, undefined, String(created.error))
      assert.deepEqual(created.value, { done: false, value: { value: Buffer.from('one'), version: v1, fencingToken: null } })

      const v2 = await value.compareAndSet(v1, 'two')
      assert.deepEqual(await watcher.next(), { done: false, value: { value: Buffer.from('two'), version: v2, fencingToken: null } })
      await value.delete(v2)
      assert.deepEqual(await watcher.next(), { done: false, value: null })

      // Stopping: a pending next() ends, and so does every later one.
      const pending = watcher.next()
      assert.deepEqual(await watcher.return(), { done: true, value: undefined })
      assert.deepEqual(await settledWithin(pending, 10_000), { settled: true, value: { done: true, value: undefined } })
      assert.deepEqual(await watcher.next(), { done: true, value: undefined })
    })

    test('value: for await over watch(); break stops it; a closed client rejects with POLYLOCK_CONNECTION', async () => {
      const name = uniqueName('node-value')
      const seen = []
      const watching = (async () => {
        for await (const state of other.value(name).watch()) {
          seen.push(state === null ? null : state.value.toString())
          if (seen.length === 2) break
        }
      })()
      await sleep(300)
      const value = client.value(name)
      const v1 = await value.create('a')
      const done = settledWithin(watching, 10_000)
      // Close writes may show as one state: write the second once the first was seen.
      for (let i = 0; seen.length === 0 && i < 100; i++) await sleep(50)
      await value.delete(v1)
      const finished = await done
      assert.equal(finished.settled, true, `the watch saw only ${JSON.stringify(seen)}`)
      assert.equal(finished.error, undefined, String(finished.error))
      assert.deepEqual(seen, ['a', null])

      const own = await polylock.connect(url)
      const ownWatch = own.value(name).watch()
      const ending = rejection(ownWatch.next()) // handled at once: it may reject while close() runs
      await sleep(200)
      await own.close()
      const err = await settledWithin(ending, 10_000)
      assert.equal(err.settled, true, 'the watch outlived its client')
      assert.equal(err.value.code, 'POLYLOCK_CONNECTION', err.value.message)
      // Watching on a closed client fails at the first next().
      assert.equal((await rejection(own.value(name).watch().next())).code, 'POLYLOCK_CONNECTION')
    })

    test('idempotency: run once per key, replay bytes and JSON, refuse another payload', async () => {
      const idem = client.idempotency(uniqueName('node-idem'))
      let calls = 0
      const key = 'order-1'
      const result = await idem.run(key, { amount: 10, card: 'x' }, async (ticket) => {
        calls++
        assert.equal(typeof ticket.token, 'bigint')
        return { charged: 10, id: 'ch_1' }
      })
      assert.deepEqual(result, { charged: 10, id: 'ch_1' })
      // Another client, the same payload with its keys in another order: a replay.
      const replay = await other.idempotency(idem.namespace).run(key, { card: 'x', amount: 10 }, () => {
        calls++
      })
      assert.deepEqual(replay, { charged: 10, id: 'ch_1' })
      assert.equal(calls, 1)
      const mismatch = await rejection(idem.run(key, { amount: 11, card: 'x' }, () => calls++))
      assert.ok(isCode('POLYLOCK_MISMATCH')(mismatch), mismatch.message)

      const bytes = await idem.run('bytes', 'payload', () => Buffer.from([1, 2, 3]))
      assert.deepEqual(bytes, Buffer.from([1, 2, 3]))
      assert.deepEqual(await idem.run('bytes', 'payload', () => Buffer.from([9])), Buffer.from([1, 2, 3]))
      assert.equal(await idem.run('nothing', null, () => undefined), undefined)
      assert.equal(await idem.run('nothing', undefined, () => 5), null)
    })

    test('idempotency: a failing run abandons the key and the retry runs', async () => {
      const idem = client.idempotency(uniqueName('node-idem'))
      const boom = new Error('card declined')
      await assert.rejects(idem.run('k', 'p', async () => { throw boom }), (err) => err === boom)
      assert.equal(await idem.run('k', 'p', () => 'second try'), 'second try')
    })

    test('idempotency: begin step by step; in progress carries retryAfterMs; run waits and replays', async () => {
      const idem = client.idempotency(uniqueName('node-idem'), { inProgressTtlMs: 30_000 })
      const begun = await idem.begin('k', Buffer.from('fp'))
      assert.equal(begun.outcome, 'acquired')
      const ticket = begun.ticket
      assert.equal(ticket.key, 'k')
      const busy = await other.idempotency(idem.namespace).begin('k', 'fp')
      assert.equal(busy.outcome, 'inProgress')
      assert.ok(busy.retryAfterMs > 0 && busy.retryAfterMs <= 30_000, `${busy.retryAfterMs}`)
      const inProgress = await rejection(idem.run('k', 'fp', () => 'never'))
      assert.ok(isCode('POLYLOCK_IN_PROGRESS')(inProgress), inProgress.message)
      assert.ok(inProgress.retryAfterMs > 0)
      assert.equal((await idem.begin('k', 'other')).outcome, 'mismatch')

      await ticket.extend()
      const waiting = other.idempotency(idem.namespace).run('k', 'fp', () => 'never', { waitMs: 10_000 })
      await sleep(100)
      await ticket.complete(Buffer.from('j"done by begin"'))
      assert.equal(await waiting, 'done by begin')
      const replayed = await idem.begin('k', 'fp')
      assert.equal(replayed.outcome, 'replay')
      assert.deepEqual(replayed.response, Buffer.from('j"done by begin"'))
    })

    test('idempotency: a crashed attempt is taken over after its TTL, and its late complete is LOST', async () => {
      const idem = client.idempotency(uniqueName('node-idem'), { inProgressTtlMs: 300 })
      const crashed = await idem.begin('k', 'fp')
      assert.equal(crashed.outcome, 'acquired')
      await sleep(600)
      const takeover = await other.idempotency(idem.namespace, { inProgressTtlMs: 300 }).begin('k', 'fp')
      assert.equal(takeover.outcome, 'acquired')
      assert.ok(takeover.ticket.token > crashed.ticket.token)
      const late = await rejection(crashed.ticket.complete('late'))
      assert.ok(isCode('POLYLOCK_LOST')(late), late.message)
      await takeover.ticket.complete('j1')
      assert.equal(await idem.run('k', 'fp', () => 2), 1)
    })

    test('idempotency: unstored responses and bad options are INVALID_ARGUMENT', async () => {
      const idem = client.idempotency(uniqueName('node-idem'))
      const begun = await idem.begin('raw', 'fp')
      await begun.ticket.complete('no tag byte here')
      const err = await rejection(idem.run('raw', 'fp', () => 1))
      assert.ok(isCode('POLYLOCK_INVALID_ARGUMENT')(err), err.message)
      assert.throws(() => client.idempotency('ns', { retentionMs: 0 }), isCode('POLYLOCK_INVALID_ARGUMENT'))
      assert.throws(() => client.idempotency('ns', { inProgressTtlMs: -1 }), isCode('POLYLOCK_INVALID_ARGUMENT'))
      await assert.rejects(idem.begin('', 'fp'), isCode('POLYLOCK_INVALID_ARGUMENT'))
      await assert.rejects(idem.run('k', 'fp', 'not a function'), isCode('POLYLOCK_INVALID_ARGUMENT'))
      await assert.rejects(idem.begin('k', { big: 1n }), isCode('POLYLOCK_INVALID_ARGUMENT'))
    })

    test('value: bad versions and tokens are INVALID_ARGUMENT', async () => {
      const value = client.value(uniqueName('node-value'))
      for (const bad of [-1, 1.5, Number.NaN, -1n, 2n ** 64n]) {
        await assert.rejects(value.compareAndSet(bad, 'x'), isCode('POLYLOCK_INVALID_ARGUMENT'), String(bad))
        await assert.rejects(value.writeFenced(bad, 'x'), isCode('POLYLOCK_INVALID_ARGUMENT'), String(bad))
      }
      await assert.rejects(value.create(42), isCode('POLYLOCK_INVALID_ARGUMENT'))
      assert.throws(() => client.value(''), isCode('POLYLOCK_INVALID_ARGUMENT'))
    })
  })
}

// A Python service and a Node service sharing a namespace replay each other's responses and
// agree on fingerprints (both through the core's codec). Runs when the Python package is
// importable (tests/run-all.sh installs it before the Node suite); SQLite, one file for both.
// The Python binding's venv, where bindings-python/run-tests.sh (run before this suite by
// tests/run-all.sh) installs it; skipped only when that venv does not exist.
const python =
  process.env.POLYLOCK_TEST_PYTHON_BINDING ??
  path.join(process.env.POLYLOCK_PY_VENV ?? path.join(os.homedir(), '.cache', 'polylock', 'py-venv'), 'bin', 'python')
const pythonMissing = fs.existsSync(python) ? false : `no Python with the polylock package at ${python}`

describe('idempotency across languages (Python and Node)', { skip: pythonMissing }, () => {
  test('each replays what the other stored, and a payload given in either language matches', async () => {
    const url = BACKENDS[0].url()
    const namespace = uniqueName('node-python')
    const client = await polylock.connect(url)
    try {
      const idem = client.idempotency(namespace)
      assert.deepEqual(await idem.run('from-node', { amount: 10, tags: ['a', 'b'] }, () => ({ id: 'n1', ok: true })), {
        id: 'n1',
        ok: true,
      })
      await idem.run('bytes-from-node', 'raw payload', () => Buffer.from([0, 1, 2]))
      const script = `
import json, sys, polylock
client = polylock.connect(sys.argv[1])
idem = client.idempotency(sys.argv[2])
out = {}
out["node_json"] = idem.run("from-node", {"tags": ["a", "b"], "amount": 10}, lambda: "python ran")
out["node_bytes"] = list(idem.run("bytes-from-node", b"raw payload", lambda: b"python ran"))
out["python"] = idem.run("from-python", {"amount": 7}, lambda: {"id": "p1", "list": [1, 2]})
idem.run("bytes-from-python", "p", lambda: b"\\x00py")
try:
    idem.run("from-node", {"amount": 11, "tags": ["a", "b"]}, lambda: "python ran")
    out["mismatch"] = None
except polylock.PolylockError as err:
    out["mismatch"] = type(err).__name__
client.close()
print(json.dumps(out))
`
      const { stdout } = await run(python, ['-c', script, url, namespace])
      const fromPython = JSON.parse(stdout)
      assert.deepEqual(fromPython.node_json, { id: 'n1', ok: true })
      assert.deepEqual(fromPython.node_bytes, [0, 1, 2])
      assert.deepEqual(fromPython.python, { id: 'p1', list: [1, 2] })
      assert.equal(fromPython.mismatch, 'MismatchError')
      assert.deepEqual(await idem.run('from-python', { amount: 7 }, () => 'node ran'), { id: 'p1', list: [1, 2] })
      assert.deepEqual(await idem.run('bytes-from-python', 'p', () => 'node ran'), Buffer.from('\x00py', 'latin1'))
    } finally {
      await client.close()
    }
  })
})
