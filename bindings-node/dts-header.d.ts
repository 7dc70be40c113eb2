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

