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
}

export interface AcquireOptions {
  /** Stops the wait: the Promise rejects with `signal.reason` and nothing stays held. */
  signal?: AbortSignal
}

export interface Lock {
  /** Acquire, run `fn(guard)`, and release even if `fn` throws. Resolves to what `fn` returns. */
  withLock<T>(fn: (guard: Guard) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>
}

export interface Guard {
  /** Resolves, with a `POLYLOCK_LOST` error, when the hold is lost; stays pending if it is released first. Keeps the process alive only while the guard is held. */
  readonly lost: Promise<PolylockError>
  /** `await using guard = await lock.acquire()` releases at the end of the scope (no-op if already released). */
  [Symbol.asyncDispose](): Promise<void>
}

export interface Client {
  /** `await using client = await connect(url)` closes the client at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>
}

/** polylock's version, the same as `VERSION` (and as every other language's). */
export declare const version: string

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
  /** A snowflake ID generator (Twitter layout: 41 bits of ms, 10 of worker, 12 of sequence). */
  snowflake(options: SnowflakeOptions): Snowflake
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

export declare class Guard {
  /**
   * Strictly greater than the token of every earlier hold of this lock name: hand it to
   * the storage you protect, and have it reject writes with an older token.
   */
  get fencingToken(): bigint
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
  get name(): string
  /** The mutex's kind, or `'read'` / `'write'` for a side of a read-write lock. */
  get kind(): 'reentrant' | 'fair' | 'token' | 'lease' | 'read' | 'write'
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
 * A snowflake generator for one worker id. IDs never repeat and never go backwards within
 * it, even if the wall clock does.
 */
export declare class Snowflake {
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

export interface AcquireOptions {
  /** How long to wait for the lock, in ms. Absent: as long as it takes; 0: try once. */
  waitMs?: number
  /**
   * Hold for at most this long, in ms, unless released sooner. Absent: the watchdog
   * renews the lock while the guard is held (30 s lease by default).
   */
  leaseMs?: number
}

/**
 * Connect to the backend `url` names (`sqlite://path.db`, `redis://host:port`, `etcd://...`,
 * ...); without one, to `$POLYLOCK_URL`, else `sqlite://polylock.db`.
 */
export declare function connect(url?: string | undefined | null): Promise<Client>

/** The URL `connect()` uses when neither the caller nor `$POLYLOCK_URL` names one. */
export declare const DEFAULT_URL: string

/** Every code, in the order of the core's table: `index.js` and the tests read it. */
export declare function errorCodes(): Array<string>

export interface LockOptions {
  /**
   * `"reentrant"` (the default), `"fair"`, `"token"` or `"lease"`; a kind the backend
   * does not offer is refused here, with `POLYLOCK_UNSUPPORTED`.
   */
  kind?: 'reentrant' | 'fair' | 'token' | 'lease'
}

/** The longest lock name the core accepts, in bytes. */
export declare const MAX_NAME_LEN: number

/** The parts of a Twitter-layout ID (or of the layout with epoch `epochMs`). */
export declare function parseSnowflake(id: bigint | string, epochMs?: number | undefined | null): SnowflakeParts

export interface SemaphoreOptions {
  /** How many permits the semaphore has (fixed by the first use of its name). */
  permits: number
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

/** polylock's version, the same in every language (the workspace's, in the root Cargo.toml). */
export declare const VERSION: string
