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
