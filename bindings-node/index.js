// polylock for Node: distributed locks and snowflake IDs from polylock's Rust core.
//
// The classes are the native ones (polylock.node, built by napi-rs). This file only adds what
// is idiomatic in JavaScript and translates: native errors become PolylockError with a
// `code`, an AbortSignal becomes a native cancellation, a guard's loss becomes the `lost`
// Promise, and guards and clients get Symbol.asyncDispose. No lock logic lives here.
'use strict'

const native = require('./polylock.node')

const {
  Client,
  Lock,
  Guard,
  AcquireCancel,
  RwLock,
  Semaphore,
  Segment,
  LeasedSnowflake,
  Value,
  Idempotency,
  Ticket,
  MultiLock,
  MultiGuard,
  Election,
  Leadership,
  LeaderChanges,
  Latch,
  ValueChanges,
} = native

/** A snowflake generator on a worker id you assign; bad options throw a PolylockError. */
class Snowflake extends native.Snowflake {
  constructor(options) {
    try {
      super(options)
    } catch (err) {
      throw translate(err)
    }
  }
}

/** The error of every polylock call; `code` says what went wrong. */
class PolylockError extends Error {
  constructor(code, message, options) {
    super(message, options)
    this.name = 'PolylockError'
    this.code = code
  }
}

// Facts some errors carry for callers that act on them (src/errors.rs sets them on the
// native error): a conflict's current value and version, the winning fencing token, how long
// to wait before retrying.
const DETAILS = ['current', 'currentVersion', 'winningToken', 'retryAfterMs']

function withDetails(polylockError, nativeError) {
  for (const name of DETAILS) {
    if (Object.hasOwn(nativeError, name)) polylockError[name] = nativeError[name]
  }
  return polylockError
}

// The codes, from the core's one table of error kinds (src/errors.rs).
const CODES = new Set(native.errorCodes())
// An acquisition stopped by its AbortSignal: rejected with the signal's own reason instead.
const CANCELLED = 'POLYLOCK_CANCELLED'
// The native side prefixes each message with its code (src/errors.rs).
const CODED_MESSAGE = /^(POLYLOCK_[A-Z_]+): ([\s\S]*)$/
// napi-rs rejects arguments of the wrong JavaScript type before our code sees them; its
// status names them. They are bad input like any other.
const NAPI_ARGUMENT_STATUSES = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'FunctionExpected',
  'BigintExpected',
])

function translate(err, signal) {
  if (err instanceof PolylockError || !(err instanceof Error)) {
    return err
  }
  const coded = CODED_MESSAGE.exec(err.message)
  if (coded && coded[1] === CANCELLED && signal) {
    return signal.reason
  }
  if (coded && CODES.has(coded[1])) {
    return withDetails(new PolylockError(coded[1], coded[2]), err)
  }
  if (NAPI_ARGUMENT_STATUSES.has(err.code) || err instanceof TypeError) {
    return new PolylockError('POLYLOCK_INVALID_ARGUMENT', err.message, { cause: err })
  }
  return new PolylockError('POLYLOCK_BACKEND', err.message, { cause: err })
}

/** Call the synchronous `fn`, translating what it throws. */
function translated(fn) {
  try {
    return fn()
  } catch (err) {
    throw translate(err)
  }
}

/** Call `fn`, which returns a Promise; what it throws or rejects with becomes a translated rejection. */
function translatedAsync(fn, signal) {
  let promise
  try {
    promise = fn()
  } catch (err) {
    return Promise.reject(translate(err, signal))
  }
  return promise.catch((err) => {
    throw translate(err, signal)
  })
}

function defineMethod(prototype, name, value) {
  Object.defineProperty(prototype, name, { value, writable: true, configurable: true })
}

// Synchronous methods (at most two arguments) translate what they throw. Written out, not
// through a closure, because nextId() is called millions of times a second.
function wrapSync(prototype, names) {
  for (const name of names) {
    const call = prototype[name]
    defineMethod(prototype, name, function (a, b) {
      try {
        return call.call(this, a, b)
      } catch (err) {
        throw translate(err)
      }
    })
  }
}

// Promise-returning methods: what they throw or reject with becomes a translated rejection.
function wrapAsync(prototype, names) {
  for (const name of names) {
    const call = prototype[name]
    defineMethod(prototype, name, function (...args) {
      return translatedAsync(() => call.apply(this, args))
    })
  }
}

wrapSync(Client.prototype, ['lock', 'rwLock', 'semaphore', 'segment', 'value', 'idempotency', 'multiLock', 'election', 'latch'])
wrapAsync(Client.prototype, ['close', 'snowflake'])
wrapAsync(Lock.prototype, ['isLocked'])
wrapAsync(Guard.prototype, ['release', 'reenter'])
wrapAsync(MultiGuard.prototype, ['release'])
wrapSync(Snowflake.prototype, ['nextId', 'nextIdString', 'nextIds', 'parse'])
wrapAsync(Segment.prototype, ['nextId', 'nextIdString', 'nextIds', 'nextIdStrings'])
wrapAsync(LeasedSnowflake.prototype, ['nextId', 'nextIdString', 'nextIds', 'workerId', 'epoch', 'close'])
wrapSync(LeasedSnowflake.prototype, ['parse'])
wrapAsync(Value.prototype, ['get', 'create', 'compareAndSet', 'delete', 'writeFenced'])
wrapAsync(Ticket.prototype, ['complete', 'abandon', 'extend'])
wrapAsync(Election.prototype, ['leader'])
wrapAsync(Leadership.prototype, ['proclaim', 'resign'])
wrapAsync(Latch.prototype, ['trySetCount', 'countDown', 'count'])

// acquire and tryAcquire take an AbortSignal: it becomes a native cancellation, and an abort
// rejects with the signal's reason, as Node's own APIs do.
// Election.campaign/tryCampaign(value, options), Latch.awaitZero(options) and
// Latch.await(timeoutMs or options, options) the same way: the native call takes its leading
// arguments as given, then the cancellation.
function withSignal(call, self, leading, options) {
  if (options != null && typeof options !== 'object') {
    // napi-rs would read a bare number as an empty options object: no bound at all.
    return Promise.reject(
      new PolylockError('POLYLOCK_INVALID_ARGUMENT', `options must be an object such as { waitMs: 500 }, got ${typeof options}`),
    )
  }
  const signal = options == null ? undefined : options.signal
  if (signal == null) {
    return translatedAsync(() => call.call(self, ...leading))
  }
  if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    return Promise.reject(new PolylockError('POLYLOCK_INVALID_ARGUMENT', 'signal must be an AbortSignal'))
  }
  if (signal.aborted) {
    return Promise.reject(signal.reason)
  }
  const cancel = new AcquireCancel()
  const onAbort = () => cancel.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  return translatedAsync(() => call.call(self, ...leading, cancel), signal).finally(() =>
    signal.removeEventListener('abort', onAbort),
  )
}
for (const [prototype, name] of [
  [Lock.prototype, 'acquire'],
  [Lock.prototype, 'tryAcquire'],
  [Semaphore.prototype, 'acquire'],
  [Semaphore.prototype, 'tryAcquire'],
  [MultiLock.prototype, 'acquire'],
  [MultiLock.prototype, 'tryAcquire'],
]) {
  const call = prototype[name]
  defineMethod(prototype, name, function (options) {
    return withSignal(call, this, [options], options)
  })
}
{
  const campaign = Election.prototype.campaign
  defineMethod(Election.prototype, 'campaign', function (value, options) {
    return withSignal(campaign, this, [value, options], options)
  })
  const tryCampaign = Election.prototype.tryCampaign
  defineMethod(Election.prototype, 'tryCampaign', function (value, options) {
    return withSignal(tryCampaign, this, [value, options], options)
  })
  const awaitZero = Latch.prototype.awaitZero
  defineMethod(Latch.prototype, 'awaitZero', function (options) {
    return withSignal(awaitZero, this, [options], options)
  })
  const tryAwait = Latch.prototype.await
  defineMethod(Latch.prototype, 'await', function (timeoutMsOrOptions, options) {
    // The native call takes (timeoutMs or { waitMs }, cancel). The signal comes from the
    // options object given first (`await({ waitMs, signal })`) or after a bare number.
    const isOptions = timeoutMsOrOptions !== null && typeof timeoutMsOrOptions === 'object'
    return withSignal(tryAwait, this, [timeoutMsOrOptions], isOptions ? timeoutMsOrOptions : options)
  })
}

/** Acquire, run `fn(guard)`, and release even when `fn` throws; resolves to what `fn` returns. */
async function withLock(fn, options) {
  if (typeof fn !== 'function') {
    throw new PolylockError('POLYLOCK_INVALID_ARGUMENT', 'withLock needs a function to run under the lock')
  }
  const guard = await this.acquire(options)
  let result
  try {
    result = await fn(guard)
  } catch (err) {
    // The callback's error is the one to report; the release still happens.
    await guard.release().catch(() => {})
    throw err
  }
  await guard.release()
  return result
}
for (const prototype of [Lock.prototype, MultiLock.prototype]) {
  defineMethod(prototype, 'withLock', withLock)
}

// client.withLock(name, fn, options): the lock `name` (of `options.kind`), held around
// `fn(guard)`; the other options (waitMs, leaseMs, signal) are the acquisition's.
defineMethod(Client.prototype, 'withLock', async function withClientLock(name, fn, options) {
  if (options != null && typeof options !== 'object') {
    throw new PolylockError('POLYLOCK_INVALID_ARGUMENT', `options must be an object such as { waitMs: 500 }, got ${typeof options}`)
  }
  const { kind, ...acquire } = options ?? {}
  return this.lock(name, kind === undefined ? undefined : { kind }).withLock(fn, acquire)
})

// The guard's loss as a Promise, made on first use. It resolves (never rejects, so nobody
// has to handle it) with a PolylockError of code POLYLOCK_LOST. It stays pending if the
// guard is released first; the native side then lets go of it, so it keeps the process
// alive only while the guard is held.
const lostPromises = new WeakMap()
const lostGetter = {
  get() {
    let promise = lostPromises.get(this)
    if (promise === undefined) {
      promise = new Promise((resolve) => {
        const settle = (reason) => resolve(new PolylockError('POLYLOCK_LOST', `'${this.name}' was lost: ${reason}`))
        if (this.isLost) {
          settle(this.lostReason)
        } else {
          this.onLost(settle)
        }
      })
      lostPromises.set(this, promise)
    }
    return promise
  },
  configurable: true,
}
Object.defineProperty(Guard.prototype, 'lost', lostGetter)
Object.defineProperty(MultiGuard.prototype, 'lost', lostGetter)
Object.defineProperty(Leadership.prototype, 'lost', lostGetter)

// observe(): the native stream of leader changes as an async iterator. `for await` ends when
// the stream does (the client closed); `break` (return()) or close() stops the watch.
defineMethod(Election.prototype, 'observe', function observe() {
  const changes = translated(() => this.observeNative())
  const close = () => {
    changes.close()
    return Promise.resolve({ done: true, value: undefined })
  }
  return {
    next: () =>
      translatedAsync(() => changes.next()).then((change) =>
        change.ended ? { done: true, value: undefined } : { done: false, value: change.leader ?? null },
      ),
    return: close,
    close: () => {
      changes.close()
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
})

// watch(): the value's next states as an async iterator, following the core's Value::watch
// from the call on (it starts at once, so a write after watch() returns is seen). Each step
// is the new `VersionedValue`, or `null` once deleted. `break` (return()) or close() stops
// it; an error (POLYLOCK_CONNECTION once the client closed) rejects next() and ends it.
defineMethod(Value.prototype, 'watch', function watch() {
  const started = translatedAsync(() => this.watchNative())
  started.catch(() => {}) // reported by next(); a watch never iterated must not be unhandled
  let closed = false
  const close = () => {
    closed = true
    started.then((changes) => changes.close(), () => {})
  }
  return {
    next: () =>
      started
        .then((changes) => (closed ? { ended: true } : translatedAsync(() => changes.next())))
        .then((change) => (change.ended ? { done: true, value: undefined } : { done: false, value: change.value ?? null })),
    return: () => {
      close()
      return Promise.resolve({ done: true, value: undefined })
    },
    close,
    [Symbol.asyncIterator]() {
      return this
    },
  }
})

// Idempotency keys. A fingerprint is bytes (a Buffer, Uint8Array or string, as given) or,
// for any other payload, its JSON; the core's codec turns either into what is stored
// (src/idempotency.rs), the same rule as every other language's.
function fingerprintArgs(fingerprint) {
  if (fingerprint == null || typeof fingerprint === 'string' || fingerprint instanceof Uint8Array) {
    return [fingerprint ?? undefined, undefined]
  }
  return [undefined, JSON.stringify(fingerprint)]
}

defineMethod(Idempotency.prototype, 'begin', function begin(key, fingerprint) {
  return translatedAsync(() => this.beginNative(key, ...fingerprintArgs(fingerprint)))
})

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// run(): the core's Idempotency::run step by step (it cannot call a JavaScript function):
// claim the key, do the work, store its result, or replay the stored one; with `waitMs`,
// poll an attempt under way (20 ms doubling to 1 s, at most its retry-after) and replay it.
// Results are stored in the core's codec: a Buffer as bytes, anything else as JSON.
defineMethod(Idempotency.prototype, 'run', async function run(key, fingerprint, fn, options) {
  if (typeof fn !== 'function') {
    throw new PolylockError('POLYLOCK_INVALID_ARGUMENT', 'run needs a function to run once per key')
  }
  const waitMs = options == null ? undefined : options.waitMs
  const deadline = waitMs == null ? undefined : performance.now() + waitMs
  let poll = 20
  for (;;) {
    const begun = await this.begin(key, fingerprint)
    if (begun.outcome === 'acquired') {
      const ticket = begun.ticket
      let result
      try {
        result = await fn(ticket)
      } catch (err) {
        // The work's error is the one to report; the key is given up so a retry runs.
        await ticket.abandon().catch(() => {})
        throw err
      }
      const stored = result instanceof Uint8Array ? result : JSON.stringify(result === undefined ? null : result)
      await translatedAsync(() => ticket.completeRun(stored))
      return result
    }
    if (begun.outcome === 'replay') {
      const stored = translated(() => native.decodeRunResponse(begun.response))
      return stored.bytes !== undefined && stored.bytes !== null ? stored.bytes : JSON.parse(stored.json)
    }
    const remaining = deadline === undefined ? 0 : deadline - performance.now()
    if (begun.outcome === 'mismatch' || remaining <= 0) {
      translated(() => native.throwRunError(key, begun.outcome === 'mismatch' ? undefined : begun.retryAfterMs))
    }
    await sleep(Math.max(1, Math.min(poll, begun.retryAfterMs, remaining)))
    poll = Math.min(poll * 2, 1000)
  }
})

// Node 20 defines Symbol.asyncDispose; older runtimes use the well-known name TypeScript's
// helpers look for.
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')

// `await using guard = await lock.acquire()` releases at the end of the scope; a guard
// released by hand already is left alone.
for (const prototype of [Guard.prototype, MultiGuard.prototype]) {
  Object.defineProperty(prototype, asyncDispose, {
    value: async function () {
      if (!this.released) {
        await this.release()
      }
    },
    writable: true,
    configurable: true,
  })
}

// `await using leadership = await election.campaign(value)` resigns at the end of the scope
// (resigning twice is harmless).
Object.defineProperty(Leadership.prototype, asyncDispose, {
  value: function () {
    return this.resign()
  },
  writable: true,
  configurable: true,
})

Object.defineProperty(Client.prototype, asyncDispose, {
  value: function () {
    return this.close()
  },
  writable: true,
  configurable: true,
})

/** Connect to `url`, else `$POLYLOCK_URL`, else `sqlite://polylock.db`. */
function connect(url) {
  return translatedAsync(() => native.connect(url))
}

/** The `redlock://` URL of independent Redis servers (`host:port` or `redis://host:port`). */
function redlockUrl(urls) {
  return translated(() => native.redlockUrl(urls))
}

/**
 * A RedLock lock `name` over the independent Redis servers `urls` (a majority must grant it),
 * on a client of its own: `close()` it (or `await using`) when done. Its guards have no
 * fencing token (`null`).
 */
async function redlock(urls, name) {
  const client = await connect(redlockUrl(urls))
  let lock
  try {
    lock = client.lock(name)
  } catch (err) {
    await client.close()
    throw err
  }
  const close = () => client.close()
  Object.defineProperty(lock, 'client', { value: client, enumerable: false })
  Object.defineProperty(lock, 'close', { value: close, writable: true, configurable: true })
  Object.defineProperty(lock, asyncDispose, { value: close, writable: true, configurable: true })
  return lock
}

// The Idempotency-Key middleware's rules (src/http_idempotency.rs), for polylock/express,
// polylock/fastify and any other framework's adapter.
class HttpIdempotencyRules extends native.HttpIdempotencyRules {
  constructor(options) {
    if (options != null && typeof options !== 'object') {
      throw new PolylockError('POLYLOCK_INVALID_ARGUMENT', `options must be an object such as { header: 'Idempotency-Key' }, got ${typeof options}`)
    }
    try {
      super(options)
    } catch (err) {
      throw translate(err)
    }
  }
}
const httpFunctions = {}
for (const name of [
  'httpIdempotencyKeyOf',
  'httpIdempotencyKeyProblem',
  'httpIdempotencyFingerprint',
  'httpIdempotencyStores',
  'encodeHttpResponse',
  'decodeHttpResponse',
  'httpRefusalResponse',
]) {
  const call = native[name]
  httpFunctions[name] = (...args) => translated(() => call(...args))
}

function parseSnowflake(id, epochMs) {
  return translated(() => native.parseSnowflake(id, epochMs))
}

// UUIDv7 and ULID: the core's generators, as text; errors as PolylockError like the rest.
const idFunctions = {}
for (const name of ['uuid7', 'uuid7Batch', 'ulid', 'ulidBatch', 'uuid7TimestampMs', 'ulidTimestampMs', 'ulidToUuid', 'uuidToUlid']) {
  idFunctions[name] = (...args) => translated(() => native[name](...args))
}

// Logs and metrics (src/observe.rs). A bad POLYLOCK_LOG leaves logging off and is reported
// once, here, as a process warning: a misspelt variable must not stop a service.
{
  const warning = native.takeEnvLogWarning()
  if (warning) {
    const coded = CODED_MESSAGE.exec(warning)
    process.emitWarning(coded ? coded[2] : warning, { type: 'PolylockWarning', code: coded ? coded[1] : undefined })
  }
}

/**
 * Hand polylock's log records to `logger(record)` on the JavaScript thread (`null` stops
 * them). A logger that throws loses that record; the first such throw of each logger is
 * reported as a process warning, never to the code that caused the record.
 */
function setLogger(logger, level) {
  if (logger !== null && logger !== undefined && typeof logger !== 'function') {
    throw new PolylockError('POLYLOCK_INVALID_ARGUMENT', 'setLogger needs a function, or null to stop logging')
  }
  let call = logger ?? null
  if (call !== null) {
    let warned = false
    call = (record) => {
      try {
        logger(record)
      } catch (err) {
        if (!warned) {
          warned = true
          process.emitWarning(`the polylock logger threw, its records are lost: ${err?.stack ?? err}`, {
            type: 'PolylockWarning',
          })
        }
      }
    }
  }
  translated(() => native.setLogger(call, level))
}

function setLogLevel(level) {
  translated(() => native.setLogLevel(level))
}

const { logLevel, logRecordsDropped, prometheusText, metricsEnabled } = native

/** The process's metrics, every client summed by (backend, kind): the core's one JSON shape. */
function metrics() {
  return JSON.parse(native.metricsJson())
}

function setMetricsEnabled(enabled) {
  translated(() => native.setMetricsEnabled(enabled))
}

// Admin (the CLI's `status`, `list` and `unlock --force`): the core's one JSON shape
// (polylock::kit::inspect_json) parsed, with the two tokens as BigInts like every token.
defineMethod(Client.prototype, 'status', function status(name, options) {
  return translatedAsync(() => this.statusNative(name, options)).then(({ json, fencingToken, tokenCounter }) => {
    const found = JSON.parse(json)
    found.fencing_token = fencingToken ?? null
    found.token_counter = tokenCounter ?? null
    return found
  })
})

defineMethod(Client.prototype, 'list', function list(prefix) {
  return translatedAsync(() => this.listJson(prefix)).then((json) => JSON.parse(json))
})

wrapAsync(Client.prototype, ['forceUnlock'])

/** This client's own metrics, in the same shape as `metrics()`. */
defineMethod(Client.prototype, 'metrics', function () {
  return JSON.parse(this.metricsJson())
})

const { MAX_NAME_LEN, DEFAULT_URL, VERSION } = native

// Shorthand names only: Node's ESM loader finds a CommonJS module's named exports by scanning
// this literal (cjs-module-lexer), and stops at the first value that is not a plain name.
const { uuid7, uuid7Batch, ulid, ulidBatch, uuid7TimestampMs, ulidTimestampMs, ulidToUuid, uuidToUlid } = idFunctions
const {
  httpIdempotencyKeyOf,
  httpIdempotencyKeyProblem,
  httpIdempotencyFingerprint,
  httpIdempotencyStores,
  encodeHttpResponse,
  decodeHttpResponse,
  httpRefusalResponse,
} = httpFunctions
const { HTTP_REPLAYED_HEADER } = native
const errorCodes = native.errorCodes
const version = VERSION

module.exports = {
  connect,
  redlock,
  redlockUrl,
  parseSnowflake,
  uuid7,
  uuid7Batch,
  ulid,
  ulidBatch,
  uuid7TimestampMs,
  ulidTimestampMs,
  ulidToUuid,
  uuidToUlid,
  PolylockError,
  Client,
  Lock,
  RwLock,
  Semaphore,
  Guard,
  Snowflake,
  LeasedSnowflake,
  Segment,
  Value,
  Idempotency,
  Ticket,
  MultiLock,
  MultiGuard,
  Election,
  Leadership,
  LeaderChanges,
  Latch,
  ValueChanges,
  AcquireCancel,
  HttpIdempotencyRules,
  httpIdempotencyKeyOf,
  httpIdempotencyKeyProblem,
  httpIdempotencyFingerprint,
  httpIdempotencyStores,
  encodeHttpResponse,
  decodeHttpResponse,
  httpRefusalResponse,
  HTTP_REPLAYED_HEADER,
  errorCodes,
  setLogger,
  setLogLevel,
  logLevel,
  logRecordsDropped,
  metrics,
  prometheusText,
  setMetricsEnabled,
  metricsEnabled,
  MAX_NAME_LEN,
  DEFAULT_URL,
  VERSION,
  version,
}
