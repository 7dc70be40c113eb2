/* polylock: TypeScript declarations of the npm package.
 *
 * Generated: `npm run build` (scripts/build-native.js) writes this file from dts-header.d.ts (the part
 * below, for what index.js adds in JavaScript) followed by the declarations napi-rs derives
 * from the Rust sources in src/. Do not edit index.d.ts by hand; check-dts.sh fails when a
 * rebuild would change it. */

/// <reference lib="esnext.disposable" />

/** What went wrong, in terms a caller can act on. */
export type PolylockErrorCode =
  | 'POLYLOCK_NOT_OWNER'
  | 'POLYLOCK_TIMEOUT'
  | 'POLYLOCK_LOST'
  | 'POLYLOCK_CONNECTION'
  | 'POLYLOCK_INVALID_ARGUMENT'
  | 'POLYLOCK_BACKEND'
  | 'POLYLOCK_INTERNAL'
  | 'POLYLOCK_UNSUPPORTED'
  | 'POLYLOCK_CANCELLED'
  | 'POLYLOCK_CONFLICT'
  | 'POLYLOCK_FENCED'
  | 'POLYLOCK_EXHAUSTED'
  | 'POLYLOCK_IN_PROGRESS'
  | 'POLYLOCK_MISMATCH'

/** The error every polylock call throws or rejects with (an aborted wait rejects with the signal's reason). */
export declare class PolylockError extends Error {
  constructor(code: PolylockErrorCode, message: string, options?: { cause?: unknown })
  readonly name: 'PolylockError'
  readonly code: PolylockErrorCode
  /** `POLYLOCK_CONFLICT`: the value as it is now (`null` if there is none). */
  readonly current?: Buffer | null
  /** `POLYLOCK_CONFLICT`: the current version (`null` if there is no value). */
  readonly currentVersion?: bigint | null
  /** `POLYLOCK_FENCED`: the highest fencing token the value has accepted. */
  readonly winningToken?: bigint
  /** `POLYLOCK_IN_PROGRESS` and `POLYLOCK_EXHAUSTED`: how long to wait before trying again, in ms. */
  readonly retryAfterMs?: number
}

export interface AcquireOptions {
  /** Stops the wait: the Promise rejects with `signal.reason` and nothing stays held. */
  signal?: AbortSignal
}

export interface Lock {
  /** Acquire, run `fn(guard)`, and release even if `fn` throws. Resolves to what `fn` returns. */
  withLock<T>(fn: (guard: Guard) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>
}

/** `client.withLock`'s options: the lock's `kind`, and the acquisition's `waitMs`, `leaseMs`, `signal`. */
export interface WithLockOptions extends AcquireOptions {
  kind?: 'reentrant' | 'fair' | 'token' | 'lease'
  waitMs?: number
  leaseMs?: number
}

export interface Client {
  /**
   * Acquire the lock `name`, run `fn(guard)`, and release even if `fn` throws. Resolves to what
   * `fn` returns. (`await using guard = await client.lock(name).acquire()` is the scoped form.)
   */
  withLock<T>(name: string, fn: (guard: Guard) => T | PromiseLike<T>, options?: WithLockOptions): Promise<T>
}

export interface MultiLock {
  /** Acquire every part, run `fn(guard)`, and release even if `fn` throws. Resolves to what `fn` returns. */
  withLock<T>(fn: (guard: MultiGuard) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>
}

export interface MultiGuard {
  /** Resolves, with a `POLYLOCK_LOST` error, when any part is lost; stays pending if released first. */
  readonly lost: Promise<PolylockError>
  /** `await using guard = await multi.acquire()` releases every part at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>
}

/** What `Idempotency.begin` found. */
export type BeginOutcome =
  | { outcome: 'acquired'; ticket: Ticket }
  | { outcome: 'replay'; response: Buffer }
  | { outcome: 'inProgress'; retryAfterMs: number }
  | { outcome: 'mismatch' }

/** A payload's fingerprint: bytes as given (a string as UTF-8), or any other value as its JSON. */
export type Fingerprint = Buffer | Uint8Array | string | null | undefined | object | number | boolean

export interface RunOptions {
  /** Wait up to this long for an attempt under way, then replay its result (default: do not wait). */
  waitMs?: number
}

export interface Idempotency {
  /** Claim `key` for the payload `fingerprint`. */
  begin(key: string, fingerprint?: Fingerprint): Promise<BeginOutcome>
  /**
   * `fn(ticket)` once for `key`, or the result the finished attempt stored: a Buffer as bytes,
   * anything else as JSON (a replay hands back the JSON-decoded value). A failing `fn`
   * abandons the key (a retry runs) and its error propagates. Rejects with
   * `POLYLOCK_IN_PROGRESS` (`retryAfterMs`) and `POLYLOCK_MISMATCH`.
   */
  run<T>(key: string, fingerprint: Fingerprint, fn: (ticket: Ticket) => T | PromiseLike<T>, options?: RunOptions): Promise<T>
}

/** A RedLock lock on a client of its own (see `redlock()`). */
export interface RedLock extends Lock {
  /** The client it uses. */
  readonly client: Client
  /** Close its client (giving back any hold). */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * A RedLock lock `name` over independent Redis servers (`host:port` or `redis://host:port`),
 * held while a majority of them grant it. Its guards have no fencing token (`null`).
 */
export declare function redlock(urls: string[], name: string): Promise<RedLock>

/** The `redlock://` URL of independent Redis servers, for `connect()`. */
export declare function redlockUrl(urls: string[]): string

export interface Guard {
  /** Resolves, with a `POLYLOCK_LOST` error, when the hold is lost; stays pending if it is released first. Keeps the process alive only while the guard is held. */
  readonly lost: Promise<PolylockError>
  /** `await using guard = await lock.acquire()` releases at the end of the scope (no-op if already released). */
  [Symbol.asyncDispose](): Promise<void>
}

export interface CampaignOptions {
  /** Stops the campaign: the Promise rejects with `signal.reason` and no candidacy is left behind. */
  signal?: AbortSignal
}

export interface LatchAwaitOptions {
  /** Stops the wait: the Promise rejects with `signal.reason`. */
  signal?: AbortSignal
}

export interface LatchWaitOptions {
  /** Stops the wait: the Promise rejects with `signal.reason`. */
  signal?: AbortSignal
}

/**
 * The leader now and after every change (`null` while nobody leads), from `election.observe()`.
 * `for await` ends when the client closes; `break` (or `close()`) stops the watch.
 */
export interface LeaderObserver extends AsyncIterableIterator<Leader | null> {
  return(): Promise<IteratorReturnResult<undefined>>
  /** Stop watching: a pending `next()` resolves `{ done: true }`. */
  close(): void
}

export interface Election {
  /** The leader now and after every change, as an async iterator. */
  observe(): LeaderObserver
}

export interface Leadership {
  /** Resolves, with a `POLYLOCK_LOST` error, when the leadership is lost; stays pending if resigned first. */
  readonly lost: Promise<PolylockError>
  /** `await using leadership = await election.campaign(value)` resigns at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>
}

export interface Client {
  /** `await using client = await connect(url)` closes the client at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>
  /** This client's own metrics, in the same shape as `metrics()`. */
  metrics(): MetricsSnapshot
  /**
   * Who holds the mutex `name` (of `options.kind`, default the backend's), with which token,
   * for how long yet and how many wait, as far as the backend's layout tells: the object the
   * CLI's `polylock status --json` prints. Rejects with `POLYLOCK_UNSUPPORTED` for a kind the
   * backend lacks.
   */
  status(name: string, options?: LockOptions): Promise<LockStatus>
  /**
   * The mutexes whose name starts with `prefix` (default: all), sorted by name then kind: the
   * array the CLI's `polylock list --json` prints. Rejects with `POLYLOCK_UNSUPPORTED` where
   * the backend cannot enumerate its locks.
   */
  list(prefix?: string): Promise<LockEntry[]>
}

/** A mutex's status (`client.status()`): the core's one shape, the same fields in every language. */
export interface LockStatus {
  name: string
  kind: 'reentrant' | 'fair' | 'token' | 'lease'
  /** The URL scheme: `sqlite`, `redis`, `etcd`, ... */
  backend: string
  held: boolean
  /** The holder's owner id, where the layout records it. */
  holder: string | null
  /** The holder's fencing token, where the layout records it. */
  fencing_token: bigint | null
  /** The lock's token counter (the next hold's token is greater). */
  token_counter: bigint | null
  /** What is left of the holder's lease; `null` for no hold, or a hold without expiry. */
  remaining_lease_ms: number | null
  /** False for a hold the store keeps while its session lives. */
  lease_expires: boolean
  /** How many wait, where the backend can count them. */
  waiters: number | null
  /** The layout the backend keeps the lock in (its incumbent's, or polylock's own). */
  layout: string
  /** The layout's further facts, in display order. */
  details: Record<string, string>
}

/** One lock found by `client.list()`. */
export interface LockEntry {
  name: string
  kind: 'reentrant' | 'fair' | 'token' | 'lease'
  held: boolean
}

/**
 * A value's next states from `value.watch()` on: the new `VersionedValue`, or `null` once it
 * is deleted (close writes may show only the last). Rejects with `POLYLOCK_CONNECTION` once
 * the client closes; `break` (or `close()`) stops the watch.
 */
export interface ValueWatcher extends AsyncIterableIterator<VersionedValue | null> {
  return(): Promise<IteratorReturnResult<undefined>>
  /** Stop watching: a pending `next()` resolves `{ done: true }`. */
  close(): void
}

export interface Value {
  /** The value's next states, as an async iterator; watching starts at this call. */
  watch(): ValueWatcher
}

/** polylock's version, the same as `VERSION` (and as every other language's). */
export declare const version: string


/** A log level name (any case; `'warning'` and `'none'` are read as `'warn'` and `'off'`). */
export type LogLevelName = 'off' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/** An error kind's name as metrics label it: a `PolylockErrorCode` without `POLYLOCK_`. */
export type ErrorKindName = PolylockErrorCode extends `POLYLOCK_${infer Kind}` ? Kind : never

/** How an acquisition ended, as metrics count it. */
export type AcquireOutcome = 'acquired' | 'reentered' | 'timeout' | 'error' | 'cancelled'

/** Why a hold was lost, as metrics count it. */
export type LostReason = 'lease_expired' | 'taken' | 'renewal_failed' | 'session_ended' | 'client_closed'

/**
 * A histogram: `buckets[i]` counts the observations at most `buckets_le_seconds[i]` and above
 * the bound before it (per bucket, not cumulative); the last one those above a minute.
 */
export interface MetricsHistogram {
  count: number
  sum_seconds: number
  buckets: number[]
}

/** The counts of one (backend scheme, kind) pair. */
export interface MetricsSeries {
  /** The URL scheme: `sqlite`, `redis`, `etcd`, ... */
  backend: string
  /** `reentrant`, `fair`, `token`, `lease`, `read`, `write`, `semaphore`. */
  kind: string
  acquires: Record<AcquireOutcome, number>
  /** How long granted acquisitions waited. */
  acquire_wait: MetricsHistogram
  /** Grant to release. */
  hold_time: MetricsHistogram
  /** Holds given back (lost or not). */
  releases: number
  renewals: number
  renewal_failures: number
  /** How long after its due time each watchdog renewal went out. */
  renewal_lateness: MetricsHistogram
  lost: Record<LostReason, number>
  /** Errors ending acquire, renew and release calls, by kind. */
  errors: Record<ErrorKindName, number>
}

/** The connections of one backend scheme. */
export interface MetricsBackend {
  backend: string
  connects: number
  connect_failures: number
  reconnects: number
  failovers: number
}

/** A metrics snapshot: the core's one JSON shape (the same field names in every language). */
export interface MetricsSnapshot {
  /** The histograms' upper bounds, in seconds (0.1 ms to 60 s). */
  buckets_le_seconds: number[]
  series: MetricsSeries[]
  backends: MetricsBackend[]
}

/** The process's metrics: every client summed by (backend, kind). */
export declare function metrics(): MetricsSnapshot

/** @internal How `index.js` passes an AbortSignal to the native side; not part of the API. */
export declare class AcquireCancel {
  constructor()
  cancel(): void
}

/**
 * A connection to one backend. Close it when done: closing stops every watchdog and gives
 * every hold back (their guards then report `isLost`).
 */
export declare class Client {
  /** A handle on the lock `name`. Cheap, and holds nothing until acquired. */
  lock(name: string, options?: LockOptions | undefined | null): Lock
  /**
   * A handle on the read-write lock `name` (`.read`, `.write`). Throws
   * `POLYLOCK_UNSUPPORTED` if the backend has none.
   */
  rwLock(name: string): RwLock
  /**
   * A handle on the semaphore `name` of `options.permits` permits. Throws
   * `POLYLOCK_UNSUPPORTED` if the backend has none.
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore
  /**
   * A Snowflake generator on a worker id leased from the backend: `workerId` if given
   * (rejects with `POLYLOCK_TIMEOUT` if another generator holds it), else the lowest free
   * one. No two generators of one store issue the same ID, whatever their clocks say.
   * (A generator on a fixed worker id, without a backend: `new Snowflake({ workerId })`.)
   */
  snowflake(options?: LeasedSnowflakeOptions): Promise<LeasedSnowflake>
  /**
   * Leaf-style segment IDs of `tag` (Leaf's `biz_tag`): never 0, never repeated by any
   * process using this store. Throws `POLYLOCK_UNSUPPORTED` if the backend has no counters.
   */
  segment(tag: string, options?: SegmentOptions | undefined | null): Segment
  /**
   * A handle on the versioned value `name` (compare-and-set, fenced writes). Throws
   * `POLYLOCK_UNSUPPORTED` if the backend has no versioned values.
   */
  value(name: string): any
  /**
   * Idempotency keys of `namespace`: a completed key replays its response for
   * `retentionMs` (default 24 h); an attempt that neither completes nor extends is taken
   * over after `inProgressTtlMs` (default 60 s).
   */
  idempotency(namespace: string, options?: IdempotencyOptions | undefined | null): Idempotency
  /**
   * The locks `parts` (names of mutexes, or `{ name, side: 'read' | 'write' }` for sides
   * of read-write locks) acquired and released as one, always in the byte order of their
   * keys, so two multi-locks over the same names never deadlock. Holds nothing yet.
   */
  multiLock(parts: Array<string | MultiLockPartOptions>): MultiLock
  /**
   * A handle on the leader election `name`: `campaign`, `leader`, `observe`. Throws
   * `POLYLOCK_UNSUPPORTED` if the backend has no elections (RedLock).
   */
  election(name: string): Election
  /**
   * A handle on the countdown latch `name` (Redisson's `RCountDownLatch` on Redis). Throws
   * `POLYLOCK_UNSUPPORTED` if the backend has no latches (RedLock).
   */
  latch(name: string): Latch
  /**
   * Break the hold on the mutex `name` (of `options.kind`, default the backend's) whoever
   * holds it, and wake its waiters (Redisson's `forceUnlock`); whether there was a hold.
   * Dangerous: the holder carries on believing it holds the lock until its next renewal or
   * release tells it otherwise (its guard then reports `isLost`).
   */
  forceUnlock(name: string, options?: LockOptions): Promise<boolean>
  /**
   * Stop the watchdogs, give every hold back and close the backend. Calls on the client
   * afterwards fail with `POLYLOCK_CONNECTION`. Closing twice is harmless.
   */
  close(): Promise<void>
  /** The URL connected to, with any password replaced by `***`. */
  get url(): string
  get closed(): boolean
  /** This client's random id: the first half of every owner it acquires as. */
  get clientId(): string
}

/** A named election as seen by one client. Each campaign is a candidate of its own. */
export declare class Election {
  get name(): string
  /**
   * Campaign with `value` until this candidate leads (at most `waitMs`); resolves to the
   * leadership. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out and with the signal's
   * reason if `signal` aborts the campaign; either way no candidacy is left behind.
   */
  campaign(value: Buffer | Uint8Array | string, options?: CampaignOptions): Promise<Leadership>
  /**
   * The try form of `campaign`: campaign with `value` until this candidate leads (at most
   * `waitMs`; 0: try once) and resolve to the leadership, or to `null` when `waitMs` runs
   * out first. Rejects with the signal's reason if `signal` aborts the campaign; either way
   * no candidacy is left behind.
   */
  tryCampaign(value: Buffer | Uint8Array | string, options?: CampaignOptions): Promise<Leadership | null>
  /** The current leader, or `null` when nobody leads. */
  leader(): Promise<Leader | null>
}

export declare class Guard {
  /**
   * Strictly greater than the token of every earlier hold of this lock name: hand it to
   * the storage you protect, and have it reject writes with an older token. `null` on
   * RedLock, which has none: a majority of independent counters is no counter that only
   * grows (use a single Redis, etcd, ZooKeeper or SQL when writes must be fenced).
   */
  get fencingToken(): bigint | null
  /** The lock's name. */
  get name(): string
  /** True once the backend no longer holds the lock for this guard's owner. */
  get isLost(): boolean
  /** Why the hold was lost, or `null` while it is held (or was released normally). */
  get lostReason(): string | null
  /** True once `release()` was called on this guard. */
  get released(): boolean
  /**
   * Give this acquisition back. Rejects with `POLYLOCK_LOST` if the hold was lost meanwhile,
   * and with `POLYLOCK_NOT_OWNER` if this guard was already released.
   */
  release(): Promise<void>
  /**
   * Acquire the lock again as this guard's owner (reentrancy): resolves at once to a new
   * guard with the same fencing token. Each guard is released on its own; the lock is free
   * when all of them are. Rejects with `POLYLOCK_LOST` if this guard's hold was lost (never
   * a fresh hold), and with `POLYLOCK_INVALID_ARGUMENT` for a semaphore permit.
   */
  reenter(): Promise<Guard>
}

/**
 * The middleware's options, checked by the core: which requests it applies to and how long
 * their responses replay.
 */
export declare class HttpIdempotencyRules {
  /** Throws `POLYLOCK_INVALID_ARGUMENT` naming the option that is wrong. */
  constructor(options?: HttpIdempotencyRulesOptions | undefined | null)
  /** The header that carries the key, as given. */
  get header(): string
  /** How long a completed key replays its response, in ms. */
  get lifetimeMs(): number
  /** The methods, upper case. */
  get methods(): Array<string>
  /** Whether a request of `method` goes through the middleware. */
  appliesTo(method: string): boolean
}

/** Idempotency keys of one namespace. */
export declare class Idempotency {
  get namespace(): string
}

/**
 * A handle on the countdown latch `name`. Nothing is owned and nothing expires: a latch
 * whose counters never count down stays closed, so give waits a timeout.
 */
export declare class Latch {
  get name(): string
  /**
   * Set the count to `count` if the latch is open (at zero, or never set); whether it was
   * set. Rejects with `POLYLOCK_INVALID_ARGUMENT` for a count below 1.
   */
  trySetCount(count: number | bigint): Promise<boolean>
  /** Take one off the count (never below zero); at zero every waiter is released. */
  countDown(): Promise<void>
  /** The count now; 0 when the latch is open. */
  count(): Promise<number>
  /**
   * The waiting form: wait until the count is zero, at most `options.waitMs` (absent: as
   * long as it takes; 0: look once). Resolves once it is zero; rejects with
   * `POLYLOCK_TIMEOUT` if `waitMs` runs out first, with the signal's reason if
   * `options.signal` aborts, and with `POLYLOCK_CONNECTION` if the client closes meanwhile.
   * (`latch.await` is the try form, resolving `false` instead.)
   */
  awaitZero(options?: LatchWaitOptions): Promise<void>
  /**
   * The try form: wait until the count is zero, `true` once it is, `false` if the wait ran
   * out first. The wait is `timeoutMs` (a bare number) or `{ waitMs }` as locks take it
   * (absent or `null`: no bound; 0: look once). Rejects with the signal's reason if
   * `options.signal` aborts (in the options object, or the second argument after a bare
   * number), and with `POLYLOCK_CONNECTION` if the client closes meanwhile. (`index.js`
   * turns the signal into `cancel`.)
   */
  await(timeoutMsOrOptions?: number | LatchWaitOptions | null, options?: LatchAwaitOptions): Promise<boolean>
}

/** @internal The leader after each change, one `next()` at a time; `close()` ends it. */
export declare class LeaderChanges {
  /**
   * The next change, or `{ ended: true }` once the stream is over. Rejects with the
   * stream's error, which ends it.
   */
  next(): Promise<LeaderChange>
  /** End the stream: a pending `next()` resolves `{ ended: true }`, and so does every later one. */
  close(): void
}

/**
 * One won campaign, for one term. `resign()` hands over to the next candidate; a
 * leadership garbage-collected without it resigns in the background.
 */
export declare class Leadership {
  /** The election's name. */
  get name(): string
  /** The term: a fencing token strictly greater than every earlier leader's term. */
  get term(): bigint
  /** The value this leader campaigned with or last proclaimed. */
  get value(): Buffer
  /** True until resigned or lost; once false, never true again. */
  get isLeader(): boolean
  /** True once the store no longer has this leader (lease passed, session ended, taken). */
  get isLost(): boolean
  /** Why the leadership was lost, or `null` while it is not. */
  get lostReason(): string | null
  /** While the backend cannot tell whether this is still the leader (ZooKeeper's SUSPENDED). */
  get isSuspended(): boolean
  /**
   * Replace the leader's value, keeping the term. Rejects with `POLYLOCK_LOST` if this is no
   * longer the leader, `POLYLOCK_NOT_OWNER` once resigned.
   */
  proclaim(value: Buffer | Uint8Array | string): Promise<void>
  /**
   * Stop leading, so that the next candidate leads. Resigning twice is harmless; rejects
   * with `POLYLOCK_LOST` if the leadership had been lost before.
   */
  resign(): Promise<void>
}

/**
 * A Snowflake generator holding a leased worker id. `close()` it when done: the id is then
 * free for the next generator at once (otherwise at its lease end).
 */
export declare class LeasedSnowflake {
  /**
   * The next ID. Rejects with `POLYLOCK_LOST` when the lease ended (the next call leases
   * another id, unless a `workerId` was asked for), `POLYLOCK_EXHAUSTED` (with
   * `retryAfterMs`) when the clock cannot yet pass the previous holder's mark.
   */
  nextId(): Promise<bigint>
  /** The next ID as a decimal string (for JSON, which has no BigInt). */
  nextIdString(): Promise<string>
  /** `count` IDs in increasing order, all under one lease. */
  nextIds(count: number): Promise<BigUint64Array>
  /** The worker id held now; `null` between a lost lease and the next call. */
  workerId(): Promise<number | null>
  /** The epoch of the lease held now: greater than that of every earlier take of the id. */
  epoch(): Promise<bigint | null>
  /** The parts of an ID of this generator's layout. */
  parse(id: bigint | string): SnowflakeParts
  get epochMs(): number
  /** Stop renewing, write the mark down to the last ID issued and give the id back. */
  close(): Promise<void>
}

export declare class Lock {
  /**
   * Wait for the lock and hold it. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out,
   * and with the signal's reason if `signal` aborts the wait.
   */
  acquire(options?: AcquireOptions): Promise<Guard>
  /**
   * Try to acquire, waiting at most `waitMs` (default 0: try once). Resolves to `null`
   * when the lock stayed taken.
   */
  tryAcquire(options?: AcquireOptions): Promise<Guard | null>
  /**
   * Whether anyone holds the lock in the store now (any owner, any process; for a side of
   * a read-write lock, that side). A snapshot: it may change as soon as it is read.
   */
  isLocked(): Promise<boolean>
  get name(): string
  /** The mutex's kind, or `'read'` / `'write'` for a side of a read-write lock. */
  get kind(): 'reentrant' | 'fair' | 'token' | 'lease' | 'read' | 'write'
}

/** The proof that every part is held. `release()` gives every part back. */
export declare class MultiGuard {
  /** One fencing token per part, in the order the parts were taken. */
  get fencingTokens(): Array<PartToken>
  /** The parts' names, in the order they were taken. */
  get names(): Array<string>
  /** True once any part is no longer held. */
  get isLost(): boolean
  /** True once `release()` was called. */
  get released(): boolean
  /**
   * Give every part back (each even if another fails). Rejects with `POLYLOCK_LOST` if a
   * part was lost meanwhile, `POLYLOCK_NOT_OWNER` if already released.
   */
  release(): Promise<void>
}

export declare class MultiLock {
  /**
   * Wait for every part (one `waitMs` for them all) and hold them. Rejects with
   * `POLYLOCK_TIMEOUT` naming the part that was not free; nothing stays held then.
   */
  acquire(options?: AcquireOptions): Promise<MultiGuard>
  /**
   * Try to take every part, waiting at most `waitMs` (default 0: try once). Resolves to
   * `null` when a part stayed taken (and nothing is held).
   */
  tryAcquire(options?: AcquireOptions): Promise<MultiGuard | null>
  /** The parts' names, in the order they are taken (byte order of their storage keys). */
  get names(): Array<string>
}

/**
 * A read-write lock: `read` is shared (any number of holders while nobody writes), `write`
 * is exclusive. Each side is used like a `Lock`. The writer may also read (a downgrade); a
 * reader asking for the write side is refused at once with `POLYLOCK_INVALID_ARGUMENT`.
 */
export declare class RwLock {
  /** The shared side. */
  get read(): Lock
  /** The exclusive side. */
  get write(): Lock
  get name(): string
}
export type ReadWriteLock = RwLock

/**
 * IDs of one tag: never 0, never handed out twice by any process using the same store.
 * A crash or a dropped generator leaves gaps.
 */
export declare class Segment {
  /**
   * The next ID, as a BigInt. Rejects with `POLYLOCK_EXHAUSTED` (with `retryAfterMs`) when
   * no range could be loaded within the wait.
   */
  nextId(): Promise<bigint>
  /** The next ID as a decimal string (for JSON, which has no BigInt). */
  nextIdString(): Promise<string>
  /** `count` IDs in one call (increasing within each reserved range). */
  nextIds(count: number): Promise<BigUint64Array>
  /** `count` IDs as decimal strings. */
  nextIdStrings(count: number): Promise<string[]>
  /** The tag (Leaf's `biz_tag`). */
  get tag(): string
  /** The size of the range asked for last (adapted to how fast ranges are used). */
  get step(): number
}

/** A semaphore of `permits` permits; the count is fixed by the first use of the name. */
export declare class Semaphore {
  /**
   * Wait for a permit and hold it. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out,
   * and with the signal's reason if `signal` aborts the wait.
   */
  acquire(options?: AcquireOptions): Promise<Guard>
  /**
   * Try to take a permit, waiting at most `waitMs` (default 0: try once). Resolves to
   * `null` when every permit stayed taken.
   */
  tryAcquire(options?: AcquireOptions): Promise<Guard | null>
  get name(): string
  /** How many permits the semaphore has in all. */
  get permits(): number
}

/**
 * A snowflake generator for one worker id you assign. IDs never repeat and never go backwards within
 * it, even if the wall clock does.
 */
export declare class Snowflake {
  /**
   * A generator on a worker id you assign (no backend). Two live generators must never
   * share one; `client.snowflake()` leases one from the backend instead.
   */
  constructor(options: SnowflakeOptions)
  nextId(): bigint
  /** The next ID as a decimal string (for JSON, which has no BigInt). */
  nextIdString(): string
  /** `count` IDs in increasing order, in one call. */
  nextIds(count: number): BigUint64Array
  /** The parts of an ID of this generator's layout. */
  parse(id: bigint | string): SnowflakeParts
  get workerId(): number
  get epochMs(): number
}

/**
 * One attempt's claim on a key: `complete` it with the response to replay, or `abandon` it
 * so that a retry runs again; `extend` it while the work runs longer than the in-progress TTL.
 */
export declare class Ticket {
  get key(): string
  /**
   * Grows with every attempt that takes the key: usable as a fencing token
   * (`value.writeFenced(ticket.token, ...)`).
   */
  get token(): bigint
  /**
   * Store `response` (bytes, as they are) for later `begin`s to replay. Rejects with
   * `POLYLOCK_LOST` if another attempt took the key over (its result stands).
   */
  complete(response: Buffer | Uint8Array | string): Promise<void>
  /**
   * Give the key up (the work failed): the next `begin` runs again. Rejects with
   * `POLYLOCK_LOST` if another attempt took the key over.
   */
  abandon(): Promise<void>
  /**
   * Keep the key for another in-progress TTL from now. Rejects with `POLYLOCK_LOST` if
   * another attempt took it over.
   */
  extend(): Promise<void>
}

export declare class Value {
  get name(): string
  /** The value, its version and its fencing token; `null` if there is none. */
  get(): Promise<VersionedValue | null>
  /**
   * Create the value; its first version. Rejects with `POLYLOCK_CONFLICT` (with `current`
   * and `currentVersion`) if it exists.
   */
  create(value: Buffer | Uint8Array | string): Promise<bigint>
  /**
   * Replace the value if it is still at `version`; the new version. Rejects with
   * `POLYLOCK_CONFLICT`, carrying `current` and `currentVersion`, if someone wrote first.
   */
  compareAndSet(version: bigint | number, value: Buffer | Uint8Array | string): Promise<bigint>
  /** Remove the value if it is still at `version`, else `POLYLOCK_CONFLICT`. */
  delete(version: bigint | number): Promise<void>
  /**
   * Write if `token` (a guard's `fencingToken`) is at least the highest token this value
   * has accepted; the new version. Rejects with `POLYLOCK_FENCED` (with `winningToken`)
   * if a later lock holder has written.
   */
  writeFenced(token: bigint | number, value: Buffer | Uint8Array | string): Promise<bigint>
}

/** @internal Each new state of a value, one `next()` at a time; `close()` ends it. */
export declare class ValueChanges {
  /**
   * The next state, or `{ ended: true }` once the watch is closed. Rejects with the
   * watch's error (`POLYLOCK_CONNECTION` once the client closed), which ends it.
   */
  next(): Promise<ValueChange>
  /** End the watch: a pending `next()` resolves `{ ended: true }`, and so does every later one. */
  close(): void
}

export interface AcquireOptions {
  /** How long to wait for the lock, in ms. Absent: as long as it takes; 0: try once. */
  waitMs?: number
  /**
   * Hold for at most this long, in ms, unless released sooner. Absent: the watchdog
   * renews the lock while the guard is held (30 s lease by default).
   */
  leaseMs?: number
}

/** What `begin` found. `outcome` says which; the other fields are set for that outcome only. */
export interface BeginResult {
  outcome: 'acquired' | 'replay' | 'inProgress' | 'mismatch'
  /** `acquired`: this caller does the work, then `ticket.complete(response)`. */
  ticket?: Ticket
  /** `replay`: the stored response of the attempt that finished. */
  response?: Buffer
  /** `inProgress`: another attempt may be taken over after this many ms (HTTP 409). */
  retryAfterMs?: number
}

export interface CampaignOptions {
  /**
   * How long to campaign, in ms. Absent: until this candidate leads; 0: try once. A wait
   * that runs out leaves no candidacy behind: `campaign` rejects with `POLYLOCK_TIMEOUT`,
   * `tryCampaign` resolves to `null`.
   */
  waitMs?: number
}

/**
 * Connect to the backend `url` names (`sqlite://path.db`, `redis://host:port`, `etcd://...`,
 * ...); without one, to `$POLYLOCK_URL`, else `sqlite://polylock.db`.
 */
export declare function connect(url?: string | undefined | null): Promise<Client>

/**
 * A stored response read back; `POLYLOCK_INVALID_ARGUMENT` if the key's record holds
 * something else.
 */
export declare function decodeHttpResponse(stored: Buffer): HttpResponse

/** The URL `connect()` uses when neither the caller nor `$POLYLOCK_URL` names one. */
export declare const DEFAULT_URL: string

/**
 * The stored form of `response` (the kit's, shared by every language's middleware),
 * without the per-connection headers. `POLYLOCK_INVALID_ARGUMENT` for a status outside
 * 100..=599 or a header that is not a `[name, value]` pair.
 */
export declare function encodeHttpResponse(response: HttpResponse): Buffer

/** Every code, in the order of the core's table: `index.js` and the tests read it. */
export declare function errorCodes(): Array<string>

/** The header a replayed response carries, with the value `true`. */
export declare const HTTP_REPLAYED_HEADER: string

/** The default fingerprint of a request: its method, its path with the query, its body. */
export declare function httpIdempotencyFingerprint(method: string, path: string, body: Buffer | Uint8Array | string): Buffer

/** The key a header value carries: trimmed, without the quotes of the draft's string form. */
export declare function httpIdempotencyKeyOf(headerValue: string): string

/** `null` if `key` can key a request, else why not (for a 400). */
export declare function httpIdempotencyKeyProblem(key: string): string | null

export interface HttpIdempotencyRulesOptions {
  /** The request header that carries the key (default `Idempotency-Key`). */
  header?: string
  /** How long a completed key replays its response, in ms (default 24 h). */
  lifetimeMs?: number
  /** The methods the middleware applies to (default `['POST', 'PATCH']`). */
  methods?: Array<string>
}

/** Whether a response of `status` is stored (a server error is not: a retry runs again). */
export declare function httpIdempotencyStores(status: number): boolean

/**
 * The response for a request that is not run: `'badKey'` (400), `'inProgress'` (409, with
 * `Retry-After` from `retryAfterMs`) or `'mismatch'` (422), as a problem document naming
 * the key.
 */
export declare function httpRefusalResponse(refusal: 'badKey' | 'inProgress' | 'mismatch', key: string, retryAfterMs?: number | undefined | null): HttpResponse

/**
 * A response as the middleware stores and replays it. Header names are lower case; a
 * name may repeat (`set-cookie`).
 */
export interface HttpResponse {
  status: number
  headers: Array<[string, string]>
  body: Buffer
}

export interface IdempotencyOptions {
  /** How long a completed key replays its response, in ms (default 24 h). */
  retentionMs?: number
  /**
   * How long an attempt may run without `extend()` before another takes the key over,
   * in ms (default 60 s).
   */
  inProgressTtlMs?: number
}

export interface LatchWaitOptions {
  /** How long to wait for zero, in ms. Absent: as long as it takes; 0: look once. */
  waitMs?: number
}

/** The leader of an election: the value it campaigned with or last proclaimed, and its term. */
export interface Leader {
  value: Buffer
  /** The leader's term (a fencing token: greater for every new leader). */
  term: bigint
}

/**
 * One step of an observed election: the leader after a change (`null`: nobody leads), or
 * `ended` once the stream is over (closed, or its client closed).
 */
export interface LeaderChange {
  ended: boolean
  leader?: Leader
}

export interface LeasedSnowflakeOptions {
  /**
   * Lease this worker id (rejects with `POLYLOCK_TIMEOUT` if another generator holds it);
   * absent: the lowest free one.
   */
  workerId?: number | bigint
  /** The ID layout (default: Twitter's). */
  layout?: SnowflakeLayoutOptions
  /**
   * How long a new holder may wait for its clock to pass the previous holder's mark, in
   * ms (default 2000).
   */
  maxWaitMs?: number
}

export interface LockOptions {
  /**
   * `"reentrant"` (the default), `"fair"`, `"token"` or `"lease"`; a kind the backend
   * does not offer is refused here, with `POLYLOCK_UNSUPPORTED`.
   */
  kind?: 'reentrant' | 'fair' | 'token' | 'lease'
}

/** The level records are handed on at now: `'off'` unless something turned logging on. */
export declare function logLevel(): LogLevelName

/** One core event, as a logger function receives it. */
export interface LogRecord {
  /** The event's level. */
  level: 'error' | 'warn' | 'info' | 'debug' | 'trace'
  /** The Rust module that emitted it, such as `polylock::engine::acquire`. */
  target: string
  /** The event's message, such as `acquired` (empty if it has none). */
  message: string
  /**
   * The event's other fields, in the order written, values as text: `op`, `name`,
   * `backend`, `kind`, `wait_ms`, `token`, `outcome`, `reason`, `error`...
   */
  fields: Record<string, string>
}

/**
 * Records a logger function did not get since the process started: the JavaScript thread
 * was too busy to take them (1024 were waiting already).
 */
export declare function logRecordsDropped(): number

/** The longest lock name the core accepts, in bytes. */
export declare const MAX_NAME_LEN: number

/** Whether operations are being counted (`setMetricsEnabled`). */
export declare function metricsEnabled(): boolean

/** One part: a mutex (of the backend's default kind, or `kind`), or a side of a read-write lock. */
export interface MultiLockPartOptions {
  name: string
  /** `'lock'` (the default), `'read'` or `'write'` (a side of the read-write lock `name`). */
  side?: 'lock' | 'read' | 'write'
  /** For a `'lock'` part: its kind (default: the backend's, reentrant where offered). */
  kind?: 'reentrant' | 'fair' | 'token' | 'lease'
}

/** The parts of a Twitter-layout ID (or of the layout with epoch `epochMs`). */
export declare function parseSnowflake(id: bigint | string, epochMs?: number | undefined | null): SnowflakeParts

/** One part's fencing token; `null` on a backend without fencing tokens (RedLock). */
export interface PartToken {
  name: string
  token: bigint | null
}

/**
 * The process's metrics in Prometheus' text exposition format (0.0.4), to serve on a
 * `/metrics` page.
 */
export declare function prometheusText(): string

/**
 * `redlock://h1:p1,h2:p2,...` from entries that are each `host:port` or
 * `redis://[user:password@]host:port`; the servers must share one set of credentials.
 */
export declare function redlockUrl(urls: Array<string>): string

export interface SegmentOptions {
  /** The first and smallest range reserved at a time (Leaf's `step`; default 1000). */
  step?: number
  /**
   * The largest range the adaptive step may grow to (default: Leaf's 1,000,000, or
   * `step` if larger).
   */
  maxStep?: number
  /** Load the next range once this share of the current one is used (default 0.1). */
  loadAt?: number
  /**
   * How long a call waits for a range being loaded before `POLYLOCK_EXHAUSTED`, in ms
   * (default 5000).
   */
  waitMs?: number
}

export interface SemaphoreOptions {
  /** How many permits the semaphore has (fixed by the first use of its name). */
  permits: number
}

/**
 * Hand polylock's log records at `level` and above to `logger`, called on the JavaScript
 * thread with one `LogRecord`. `level` defaults to the level logging is at now
 * (`POLYLOCK_LOG`, `setLogLevel`) or, when that is off, `'info'`. `setLogger(null)` stops:
 * no more records anywhere (not even stderr) until `setLogLevel` turns them on again.
 * Throws `POLYLOCK_INVALID_ARGUMENT` for an unknown level name.
 *
 * The logger never keeps the process alive and never slows polylock down: records wait for
 * the JavaScript thread in a queue of 1024; past that they are dropped and counted
 * (`logRecordsDropped()`). A logger that throws loses that record (`index.js` reports it
 * once, as a process warning).
 */
export declare function setLogger(logger: ((record: LogRecord) => void) | null, level?: LogLevelName): void

/**
 * Change the level records are handed on at (`'off'` stops them), for the current logger
 * or, without one, for stderr. Throws `POLYLOCK_INVALID_ARGUMENT` for an unknown name.
 */
export declare function setLogLevel(level: LogLevelName): void

/**
 * Turn the counting of operations on or off for the whole process (on by default); the
 * counts read so far stay as they are.
 */
export declare function setMetricsEnabled(enabled: boolean): void

export interface SnowflakeLayoutOptions {
  /** The epoch in ms since 1970 (default: Twitter's, 1288834974657). */
  epochMs?: number
  /** Bits of milliseconds, of worker id and of sequence (default 41, 10, 12). */
  timestampBits?: number
  workerBits?: number
  sequenceBits?: number
}

export interface SnowflakeOptions {
  /** This generator's worker id, 0..=1023; no two live generators may share one. */
  workerId: number | bigint
  /** The epoch in ms since 1970 (default: Twitter's, 1288834974657). */
  epochMs?: number
}

export interface SnowflakeParts {
  /** Milliseconds since the Unix epoch. */
  timestampMs: number
  worker: number
  sequence: number
}

/**
 * @internal A lock's status as the core's one JSON text (`polylock::kit::inspect_json`),
 * with its two tokens as BigInts, which JSON.parse would round; `index.js` puts them in.
 */
export interface StatusNative {
  json: string
  fencingToken?: bigint
  tokenCounter?: bigint
}

/**
 * @internal A response `run` stored, read back by the core's codec: `{ bytes }` or
 * `{ json }` (text `index.js` parses). `POLYLOCK_INVALID_ARGUMENT` for a response stored
 * through a ticket's plain `complete`.
 */
export interface StoredRunResponse {
  bytes?: Buffer
  json?: string
}

/** A ULID (26 characters of Crockford base32), greater than every earlier one of this process. */
export declare function ulid(): string

/** `count` ULIDs in increasing order. */
export declare function ulidBatch(count: number): Array<string>

/** The Unix milliseconds of a ULID. */
export declare function ulidTimestampMs(ulid: string): number

/** The same 128 bits as a UUID, to store a ULID in a UUID column. */
export declare function ulidToUuid(ulid: string): string

/**
 * A UUIDv7 (RFC 9562, method 1), greater than every earlier one of this process, even when
 * the wall clock steps back: `01895f4c-4d2a-7aaa-…`.
 */
export declare function uuid7(): string

/** `count` UUIDv7s in increasing order. */
export declare function uuid7Batch(count: number): Array<string>

/** The Unix milliseconds of a UUIDv7 (an error for another version). */
export declare function uuid7TimestampMs(uuid: string): number

/** The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond). */
export declare function uuidToUlid(uuid: string): string

/**
 * One step of a watched value: its new state (`null`: deleted), or `ended` once the watch
 * is closed.
 */
export interface ValueChange {
  ended: boolean
  value?: VersionedValue
}

/** polylock's version, the same in every language (the workspace's, in the root Cargo.toml). */
export declare const VERSION: string

export interface VersionedValue {
  value: Buffer
  /** Grows on every write of the name (compare it for equality only). */
  version: bigint
  /** The highest fencing token the value has accepted, once written fenced; else `null`. */
  fencingToken: bigint | null
}
