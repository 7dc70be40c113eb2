// The conformance driver of the WebAssembly surface: the npm package `polylock-wasm`
// (bindings-wasm, its Node build), used through its public API only. The package holds IDs
// only, so every lock and coordination op is answered not_offered. One JSON request per
// stdin line, one answer per stdout line, one at a time (tests/conformance/PROTOCOL.md).
'use strict'

const path = require('node:path')

const { parseRequest, serve } = require('../js-common/jsonl.js')

const wasm = require(path.resolve(__dirname, '../../../../bindings-wasm'))


// ---- the ops -------------------------------------------------------------------------------

/** An ID for APIs that take `bigint | string`. */
const id = (value) => (typeof value === 'number' ? BigInt(value) : value)

const ops = {
  reset: () => null, // the package makes nothing that is held or open
  error_table: () => wasm.errorCodes().map((code, i) => [code.replace(/^POLYLOCK_/, ''), i + 1]),
  uuid7: () => wasm.uuid7(),
  ulid: () => wasm.ulid(),
  // The package has one timestamp reader for every kind of ID it knows.
  uuid7_timestamp: (req) => wasm.timestampOf(req.of),
  ulid_timestamp: (req) => wasm.timestampOf(req.of),
  ulid_to_uuid: (req) => wasm.ulidToUuid(req.of),
  uuid_to_ulid: (req) => wasm.uuidToUlid(req.of),
  snowflake_parse(req) {
    const parts =
      req.epoch_ms === undefined ? wasm.parseSnowflake(id(req.of)) : wasm.parseSnowflake(id(req.of), { epochMs: req.epoch_ms })
    return { timestamp_ms: parts.timestampMs, worker_id: parts.workerId, sequence: parts.sequence }
  },
}

// Every other op of the protocol needs a client of a lock backend.
const BACKEND_OPS = `connect close lock rw_lock semaphore multi_lock acquire try_acquire release release_handle
  token is_lost wait_lost hold_count is_locked status list force_unlock election campaign try_campaign leader
  resign is_leader observe_next latch latch_set count_down latch_count latch_wait value value_get value_create
  value_cas value_delete value_write_fenced value_watch idempotency idem_begin idem_complete idem_abandon idem_run
  segment next_id next_ids snowflake snowflake_next snowflake_close`.split(/\s+/)
const NO_BACKEND = 'the WebAssembly package holds IDs only: a browser cannot open a connection to a lock backend'

// ---- framing -------------------------------------------------------------------------------

function answer(line) {
  let req
  try {
    req = parseRequest(line)
  } catch (err) {
    return { id: null, ok: false, error: 'DRIVER', message: `unreadable request: ${err.message}` }
  }
  const reply = { id: req.id }
  if (BACKEND_OPS.includes(req.op)) return { ...reply, ok: false, not_offered: NO_BACKEND }
  if (!Object.hasOwn(ops, req.op)) {
    return { ...reply, ok: false, not_offered: `the wasm driver does not know the op ${JSON.stringify(req.op)}` }
  }
  try {
    const value = ops[req.op](req)
    return { ...reply, ok: true, value: value === undefined ? null : value }
  } catch (err) {
    if (err instanceof Error && err.name === 'PolylockError' && typeof err.code === 'string') {
      return { ...reply, ok: false, error: err.code.replace(/^POLYLOCK_/, ''), message: err.message }
    }
    return { ...reply, ok: false, error: 'DRIVER', message: String(err && err.stack ? err.stack : err) }
  }
}

serve('wasm', answer).catch((err) => {
  console.error(err)
  process.exit(1)
})
