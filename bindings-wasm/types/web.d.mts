/* tslint:disable */
/* eslint-disable */

/** Options of `new Snowflake(...)`: the names of the Node binding's `client.snowflake(...)`. */
export interface SnowflakeOptions {
    /** This generator's worker id, `0..=2**workerBits - 1` (1023 in Twitter's layout); no two live generators may share one. */
    workerId: number | bigint
    /** The epoch in ms since 1970 (default: the layout's; Twitter's is 1288834974657). */
    epochMs?: number
    /** `'twitter'` (the default: 41 bits of ms, 10 of worker, 12 of sequence), `'discord'` (the same widths, Discord's epoch), or your own widths (at most 63 bits in all, at least 31 of ms and 1 of sequence; absent ones are Twitter's). */
    layout?: SnowflakeLayoutName | SnowflakeLayoutBits
}

/** Options of `parseSnowflake` and `timestampOf`: which layout an ID is of. */
export interface SnowflakeLayoutOptions {
    epochMs?: number
    layout?: SnowflakeLayoutName | SnowflakeLayoutBits
}

export type SnowflakeLayoutName = 'twitter' | 'discord'

export interface SnowflakeLayoutBits {
    timestampBits?: number
    workerBits?: number
    sequenceBits?: number
}

/** The parts of a Snowflake ID. */
export interface SnowflakeParts {
    /** Milliseconds since the Unix epoch. */
    timestampMs: number
    workerId: number
    sequence: number
}



/** Options of `new UlidGenerator(...)`. */
export interface UlidGeneratorOptions {
    /** When the 80 random bits of one millisecond are used up: `'nextMillisecond'` (the default) moves on to the next millisecond with fresh bits, so the generator never fails; `'error'` throws `POLYLOCK_BACKEND`, as the ULID spec's reference implementation does. */
    overflow?: 'nextMillisecond' | 'error'
}



/**
 * A Snowflake generator for one worker id. IDs never repeat and never go backwards within
 * it; within one millisecond the sequence counts up, and when it is used up the generator
 * waits for the next millisecond.
 */
export class Snowflake {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * The smallest ID of this layout at `timestampMs` (worker 0, sequence 0): IDs issued at
     * or after that millisecond are `>=` it, earlier ones `<` it.
     */
    idFromTimestamp(timestampMs: number): bigint;
    constructor(options: SnowflakeOptions);
    /**
     * The next ID as a decimal string (for JSON, which has no BigInt).
     */
    nextIdString(): string;
    /**
     * The next ID.
     */
    nextId(): bigint;
    /**
     * `count` IDs in increasing order, in one call.
     */
    nextIds(count: number): BigUint64Array;
    /**
     * The parts of an ID of this generator's layout.
     */
    parse(id: bigint | string): SnowflakeParts;
    readonly epochMs: number;
    /**
     * The widths of the three parts.
     */
    readonly layout: Required<SnowflakeLayoutBits>;
    readonly workerId: number;
}

/**
 * A monotonic ULID generator of its own (the module-level `ulid()` shares one), with a
 * choice of what happens when a millisecond's random part is used up.
 */
export class UlidGenerator {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * `count` ULIDs in increasing order.
     */
    batch(count: number): string[];
    constructor(options?: UlidGeneratorOptions | null);
    /**
     * The next ULID, greater than every earlier one of this generator.
     */
    next(): string;
}

/**
 * Every error code, in the order of the core's table (as the Node binding's `errorCodes()`).
 */
export function errorCodes(): string[];

/**
 * The MySQL/MariaDB `GET_LOCK` name of a lock name: the name itself when it is at most 64
 * characters and lowercase, else `polylock:` and 48 hex digits of its SHA-256.
 */
export function mysqlLockName(name: string): string;

/**
 * The parts of a Snowflake ID: of Twitter's layout, or of the one `options` describe.
 */
export function parseSnowflake(id: bigint | string, options?: SnowflakeLayoutOptions): SnowflakeParts;

/**
 * The `pg_advisory_lock(bigint)` key of a lock name: the first 8 bytes of SHA-256(name as
 * UTF-8), read as a big-endian signed 64-bit integer.
 */
export function postgresAdvisoryKey(name: string): bigint;

/**
 * ShedLock's `shedlock.name` of a lease lock: the name itself when it is at most 64
 * characters, else the hashed form of `mysqlLockName`.
 */
export function shedlockName(name: string): string;

/**
 * The Unix milliseconds an ID was made at: a UUIDv7 (36 characters, or 32 hex digits), a
 * ULID (26 characters), or a Snowflake (a BigInt or a decimal string of at most 20 digits)
 * of Twitter's layout or of the one `options` describe. Any other UUID version is an error.
 */
export function timestampOf(id: bigint | string, options?: SnowflakeLayoutOptions): number;

/**
 * A ULID (26 characters of Crockford base32), greater than every earlier one of this
 * module: within a millisecond (or while the clock stands still or steps back) the random
 * part counts up by one.
 */
export function ulid(): string;

/**
 * `count` ULIDs in increasing order.
 */
export function ulidBatch(count: number): string[];

/**
 * The same 128 bits as a UUID (lowercase, dashed), to store a ULID in a UUID column.
 */
export function ulidToUuid(ulid: string): string;

/**
 * A UUIDv7 (RFC 9562, method 1: a 42-bit counter within a millisecond), greater than every
 * earlier one of this module, even when the clock steps back: `01895f4c-4d2a-7aaa-…`.
 */
export function uuid7(): string;

/**
 * `count` UUIDv7s in increasing order.
 */
export function uuid7Batch(count: number): string[];

/**
 * The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond).
 */
export function uuidToUlid(uuid: string): string;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_snowflake_free: (a: number, b: number) => void;
    readonly __wbg_ulidgenerator_free: (a: number, b: number) => void;
    readonly errorCodes: (a: number) => void;
    readonly mysqlLockName: (a: number, b: number) => void;
    readonly parseSnowflake: (a: number, b: number, c: number) => void;
    readonly postgresAdvisoryKey: (a: number, b: number) => void;
    readonly shedlockName: (a: number, b: number) => void;
    readonly snowflake_epochMs: (a: number) => number;
    readonly snowflake_idFromTimestamp: (a: number, b: number, c: number) => void;
    readonly snowflake_layout: (a: number) => number;
    readonly snowflake_new: (a: number, b: number) => void;
    readonly snowflake_nextId: (a: number, b: number) => void;
    readonly snowflake_nextIdString: (a: number, b: number) => void;
    readonly snowflake_nextIds: (a: number, b: number, c: number) => void;
    readonly snowflake_parse: (a: number, b: number, c: number) => void;
    readonly snowflake_workerId: (a: number) => number;
    readonly timestampOf: (a: number, b: number, c: number) => void;
    readonly ulid: () => number;
    readonly ulidBatch: (a: number, b: number) => void;
    readonly ulidToUuid: (a: number, b: number) => void;
    readonly ulidgenerator_batch: (a: number, b: number, c: number) => void;
    readonly ulidgenerator_new: (a: number, b: number) => void;
    readonly ulidgenerator_next: (a: number) => number;
    readonly uuid7: () => number;
    readonly uuid7Batch: (a: number, b: number) => void;
    readonly uuidToUlid: (a: number, b: number) => void;
    readonly __wbindgen_export: (a: number, b: number) => number;
    readonly __wbindgen_export2: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_export3: (a: number) => void;
    readonly __wbindgen_add_to_stack_pointer: (a: number) => number;
    readonly __wbindgen_export4: (a: number, b: number, c: number) => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
