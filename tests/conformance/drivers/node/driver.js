// The conformance driver of the Node surface: the npm package `polylock` (bindings-node),
// used through its public API only. One JSON request per stdin line, one answer per stdout
// line, strictly one at a time (tests/conformance/PROTOCOL.md). It translates; it decides
// nothing: no retries, no defaults the request did not give, every error reported as the
// surface raised it (its `code`).
'use strict'

const path = require('node:path')

const { parseRequest, serve } = require('../js-common/jsonl.js')

const polylock = require(path.resolve(__dirname, '../../../../bindings-node'))


// ---- arguments and results -----------------------------------------------------------------

class NotOffered extends Error {}
class DriverError extends Error {}
/** An outcome the surface resolves with that the protocol writes as an error kind. */
class Outcome extends Error {
  constructor(kind, message, details) {
    super(message)
    this.kind = kind
    this.details = details
  }
}

/** A protocol duration as the milliseconds Node's options take: a JS number, as given. */
function ms(value) {
  if (value === undefined || value === null) return undefined
  if (value === 'NaN') return NaN
  if (value === 'inf') return Infinity
  if (value === '-inf') return -Infinity
  if (typeof value === 'bigint') return Number(value) // what the same JavaScript literal gives
  return value
}

/** An options object holding only the keys the request gave. */
function options(pairs) {
  const out = {}
  for (const [key, value] of Object.entries(pairs)) if (value !== undefined) out[key] = value
  return Object.keys(out).length ? out : undefined
}

/** An ID for APIs that take `bigint | string` (a Number is refused there). */
const id = (value) => (typeof value === 'number' ? BigInt(value) : value)
const text = (buffer) => (buffer == null ? buffer : Buffer.from(buffer).toString('utf8'))
const record = (leader) => (leader == null ? null : { value: text(leader.value), term: leader.term })

const objects = new Map() // label -> object
const meta = new WeakMap() // multi-lock handles and guards -> the names as the request gave them
const observers = new WeakMap() // election -> { changes, pending }
const watchers = new WeakMap() // value -> { changes, pending }
const rwLocks = new Map() // `${client}\0${name}\0${pair}` -> RwLock

function get(label) {
  if (!objects.has(label)) throw new DriverError(`no object labelled ${JSON.stringify(label)}`)
  return objects.get(label)
}
function keep(label, object) {
  objects.set(label, object)
  return object
}

function tokenOf(guard) {
  const names = meta.get(guard)
  if (names === undefined) return guard.fencingToken
  const byName = new Map(guard.fencingTokens.map((part) => [part.name, part.token]))
  return names.map((name) => byName.get(name))
}

/** Settles with `promise`'s value, or with `timedOut` if `waitMs` passes first. */
function within(promise, waitMs, timedOut) {
  // The driver's own timer (the surface takes no wait here): setTimeout fires at once past 2^31-1 ms.
  if (!(waitMs >= 0 && waitMs <= 2 ** 31 - 1)) throw new DriverError(`wait_ms ${waitMs} is not a timer the driver can set`)
  let timer
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(timedOut), waitMs)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

async function hold(req, form) {
  const handle = get(req.handle)
  const guard = await handle[form](options({ waitMs: ms(req.wait_ms), leaseMs: ms(req.lease_ms) }))
  if (guard === null) return null
  if (meta.has(handle)) meta.set(guard, meta.get(handle))
  keep(req.as, guard)
  return { token: tokenOf(guard) }
}

async function campaign(req) {
  const leadership = await get(req.election).campaign(req.value, options({ waitMs: ms(req.wait_ms) }))
  keep(req.as, leadership)
  return { term: leadership.term }
}

// ---- the ops -------------------------------------------------------------------------------
const ops = {
  async reset() {
    const all = [...objects.values()]
    const settle = (calls) => Promise.allSettled(calls.map((call) => Promise.resolve().then(call)))
    await settle(all.filter((o) => o instanceof polylock.Guard || o instanceof polylock.MultiGuard).map((g) => () => g.release()))
    await settle(all.filter((o) => o instanceof polylock.Leadership).map((l) => () => l.resign()))
    await settle(all.filter((o) => o instanceof polylock.Election && observers.has(o)).map((e) => () => observers.get(e).changes.close()))
    await settle(all.filter((o) => o instanceof polylock.Value && watchers.has(o)).map((v) => () => watchers.get(v).changes.close()))
    await settle(all.filter((o) => o instanceof polylock.LeasedSnowflake).map((s) => () => s.close()))
    await settle(all.filter((o) => o instanceof polylock.Client).map((c) => () => c.close()))
    objects.clear()
    rwLocks.clear()
    return null
  },
  async connect(req) {
    keep(req.as, await polylock.connect(req.url))
    return null
  },
  async close(req) {
    await get(req.client).close()
    return null
  },
  error_table() {
    return polylock.errorCodes().map((code, i) => [code.replace(/^POLYLOCK_/, ''), i + 1])
  },

  // handles
  lock(req) {
    keep(req.as, get(req.client).lock(req.name, options({ kind: req.kind })))
    return null
  },
  rw_lock(req) {
    const key = `${req.client}\0${req.name}\0${req.pair ?? ''}`
    if (!rwLocks.has(key)) rwLocks.set(key, get(req.client).rwLock(req.name))
    const rw = rwLocks.get(key)
    if (req.side !== 'read' && req.side !== 'write') throw new DriverError(`unknown side ${JSON.stringify(req.side)}`)
    keep(req.as, rw[req.side])
    return null
  },
  semaphore(req) {
    keep(req.as, get(req.client).semaphore(req.name, { permits: req.permits }))
    return null
  },
  multi_lock(req) {
    const multi = get(req.client).multiLock(req.names)
    meta.set(multi, req.names)
    keep(req.as, multi)
    return null
  },

  // holds
  acquire: (req) => hold(req, 'acquire'),
  try_acquire: (req) => hold(req, 'tryAcquire'),
  async release(req) {
    await get(req.guard).release()
    return null
  },
  release_handle() {
    throw new NotOffered("a Node Lock has no release(): only the guard an acquire() returned releases it")
  },
  token: (req) => tokenOf(get(req.guard)),
  is_lost: (req) => get(req.guard).isLost,
  wait_lost: (req) =>
    within(
      get(req.guard).lost.then(() => true),
      ms(req.wait_ms),
      false,
    ),
  hold_count() {
    throw new NotOffered('a Node Lock has no hold count: each acquire() is an owner of its own (reentrancy is guard.reenter())')
  },
  is_locked(req) {
    const handle = get(req.handle)
    if (!(handle instanceof polylock.Lock)) throw new NotOffered('only a Node Lock (a mutex or a read-write side) has isLocked()')
    return handle.isLocked()
  },

  // admin
  async status(req) {
    const found = await get(req.client).status(req.name)
    return { held: found.held, holders: found.held ? 1 : 0 }
  },
  async list(req) {
    const entries = await get(req.client).list(req.prefix)
    return entries
      .filter((entry) => entry.held)
      .map((entry) => entry.name)
      .sort()
  },
  force_unlock: (req) => get(req.client).forceUnlock(req.name),

  // election
  election(req) {
    keep(req.as, get(req.client).election(req.name))
    return null
  },
  campaign,
  async try_campaign(req) {
    const leadership = await get(req.election).tryCampaign(req.value, options({ waitMs: ms(req.wait_ms) }))
    if (leadership === null) return null
    keep(req.as, leadership)
    return { term: leadership.term }
  },
  leader: async (req) => record(await get(req.election).leader()),
  async resign(req) {
    await get(req.leadership).resign()
    return null
  },
  is_leader: (req) => get(req.leadership).isLeader,
  async observe_next(req) {
    const election = get(req.election)
    if (!observers.has(election)) observers.set(election, { changes: election.observe(), pending: null })
    const observer = observers.get(election)
    observer.pending ??= observer.changes.next()
    const NO_CHANGE = {}
    const step = await within(observer.pending, ms(req.wait_ms), NO_CHANGE)
    if (step === NO_CHANGE) return 'no change'
    observer.pending = null
    if (step.done) throw new DriverError("the observer's stream ended (its client closed)")
    return record(step.value)
  },

  // latch
  latch(req) {
    keep(req.as, get(req.client).latch(req.name))
    return null
  },
  latch_set: (req) => get(req.latch).trySetCount(req.count),
  async count_down(req) {
    await get(req.latch).countDown()
    return null
  },
  latch_count: (req) => get(req.latch).count(),
  async latch_wait(req) {
    // The waiting form: resolves once the count is zero, rejects with POLYLOCK_TIMEOUT.
    await get(req.latch).awaitZero(options({ waitMs: ms(req.wait_ms) }))
    return true
  },

  // values
  value(req) {
    keep(req.as, get(req.client).value(req.name))
    return null
  },
  async value_get(req) {
    const found = await get(req.value).get()
    return found === null ? null : { value: text(found.value), version: found.version }
  },
  value_create: (req) => get(req.value).create(req.data),
  value_cas: (req) => get(req.value).compareAndSet(req.version, req.data),
  async value_delete(req) {
    await get(req.value).delete(req.version)
    return null
  },
  value_write_fenced: (req) => get(req.value).writeFenced(req.token, req.data),
  async value_watch(req) {
    const value = get(req.value)
    if (!watchers.has(value)) watchers.set(value, { changes: value.watch(), pending: null })
    const watcher = watchers.get(value)
    watcher.pending ??= watcher.changes.next()
    const NO_CHANGE = {}
    const step = await within(watcher.pending, ms(req.wait_ms), NO_CHANGE)
    if (step === NO_CHANGE) return 'no change'
    watcher.pending = null
    if (step.done) throw new DriverError("the value's watch ended")
    return step.value === null ? null : { value: text(step.value.value), version: step.value.version }
  },

  // idempotency
  idempotency(req) {
    keep(req.as, get(req.client).idempotency(req.namespace))
    return null
  },
  async idem_begin(req) {
    const begun = await get(req.idempotency).begin(req.key, req.payload)
    switch (begun.outcome) {
      case 'acquired':
        keep(req.as, begun.ticket)
        return { acquired: { token: begun.ticket.token } }
      case 'replay':
        return { replay: text(begun.response) }
      // begin() resolves these two outcomes rather than rejecting; the protocol writes them as errors.
      case 'inProgress':
        throw new Outcome('IN_PROGRESS', "begin() resolved { outcome: 'inProgress' }", { retry_after_ms: begun.retryAfterMs })
      case 'mismatch':
        throw new Outcome('MISMATCH', "begin() resolved { outcome: 'mismatch' }")
      default:
        throw new DriverError(`begin() resolved an unknown outcome ${JSON.stringify(begun.outcome)}`)
    }
  },
  async idem_complete(req) {
    await get(req.ticket).complete(req.response)
    return null
  },
  async idem_abandon(req) {
    await get(req.ticket).abandon()
    return null
  },
  async idem_run(req) {
    const result = await get(req.idempotency).run(req.key, req.payload, () => req.response, options({ waitMs: ms(req.wait_ms) }))
    // A response another language stored as bytes (Rust's run) replays as a Buffer: the
    // protocol's answer is its text.
    return result instanceof Uint8Array ? Buffer.from(result).toString('utf8') : result
  },

  // IDs
  segment(req) {
    keep(req.as, get(req.client).segment(req.tag, options({ step: req.step })))
    return null
  },
  next_id: (req) => get(req.segment).nextId(),
  next_ids: async (req) => Array.from(await get(req.segment).nextIds(req.count)),
  async snowflake(req) {
    const snowflake = keep(req.as, await get(req.client).snowflake(options({ workerId: req.worker_id })))
    return { worker_id: await snowflake.workerId() }
  },
  snowflake_next: (req) => get(req.snowflake).nextId(),
  async snowflake_close(req) {
    await get(req.snowflake).close()
    return null
  },
  uuid7: () => polylock.uuid7(),
  ulid: () => polylock.ulid(),
  uuid7_timestamp: (req) => polylock.uuid7TimestampMs(req.of),
  ulid_timestamp: (req) => polylock.ulidTimestampMs(req.of),
  ulid_to_uuid: (req) => polylock.ulidToUuid(req.of),
  uuid_to_ulid: (req) => polylock.uuidToUlid(req.of),
  snowflake_parse(req) {
    const parts = req.epoch_ms === undefined ? polylock.parseSnowflake(id(req.of)) : polylock.parseSnowflake(id(req.of), req.epoch_ms)
    return { timestamp_ms: parts.timestampMs, worker_id: parts.worker, sequence: parts.sequence }
  },
}

// ---- framing -------------------------------------------------------------------------------

/** What a PolylockError exposes, under the protocol's names. */
function details(err) {
  const out = {}
  if (Object.hasOwn(err, 'current')) out.current_value = text(err.current)
  if (Object.hasOwn(err, 'currentVersion')) out.current_version = err.currentVersion
  if (Object.hasOwn(err, 'winningToken')) out.token = err.winningToken
  if (Object.hasOwn(err, 'retryAfterMs')) out.retry_after_ms = err.retryAfterMs
  return Object.keys(out).length ? out : undefined
}

async function answer(line) {
  let req
  try {
    req = parseRequest(line)
  } catch (err) {
    return { id: null, ok: false, error: 'DRIVER', message: `unreadable request: ${err.message}` }
  }
  const reply = { id: req.id }
  try {
    const op = Object.hasOwn(ops, req.op) ? ops[req.op] : undefined
    if (op === undefined) throw new NotOffered(`the Node driver does not know the op ${JSON.stringify(req.op)}`)
    const value = await op(req)
    return { ...reply, ok: true, value: value === undefined ? null : value }
  } catch (err) {
    if (err instanceof NotOffered) return { ...reply, ok: false, not_offered: err.message }
    if (err instanceof Outcome) return { ...reply, ok: false, error: err.kind, message: err.message, details: err.details }
    if (err instanceof polylock.PolylockError) {
      return { ...reply, ok: false, error: err.code.replace(/^POLYLOCK_/, ''), message: err.message, details: details(err) }
    }
    const message = err instanceof DriverError ? err.message : String(err && err.stack ? err.stack : err)
    return { ...reply, ok: false, error: 'DRIVER', message }
  }
}

serve('node', answer, () => ops.reset()).catch((err) => {
  console.error(err)
  process.exit(1)
})
