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
