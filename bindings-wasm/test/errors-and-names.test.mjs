// Error codes (the core's one table, as the Node binding maps it) and the SQL names of lock
// names (the shared vectors, and PostgreSQL's own sha256 when a server is at hand).
import test from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'

import { errorCodes, mysqlLockName, parseSnowflake, postgresAdvisoryKey, shedlockName } from 'polylock-wasm'
import { vectorRows } from './vector-checks.mjs'
import { isPolylockError, repoRoot, vectorsText } from './helpers.mjs'

test('errorCodes is the core table: ErrorKind::ALL in order, POLYLOCK_ + as_str()', () => {
  const source = readFileSync(join(repoRoot, 'core/src/error.rs'), 'utf8')
  const all = /pub const ALL: \[ErrorKind; \d+\] = \[([^\]]*)\]/.exec(source)
  assert.ok(all, 'ErrorKind::ALL not found in core/src/error.rs')
  const names = Object.fromEntries([...source.matchAll(/ErrorKind::(\w+) => "([A-Z_]+)"/g)].map((m) => [m[1], m[2]]))
  const kinds = [...all[1].matchAll(/ErrorKind::(\w+)/g)].map((m) => m[1])
  assert.deepEqual(errorCodes(), kinds.map((kind) => `POLYLOCK_${names[kind]}`))
})

test('errorCodes equals the Node (napi) binding`s, when that addon is built', (t) => {
  const napiDir = process.env.POLYLOCK_NAPI_DIR ?? join(repoRoot, 'bindings-node')
  if (!existsSync(join(napiDir, 'polylock.node'))) {
    t.skip(`${napiDir}/polylock.node is not built (bindings-node/run-tests.sh builds it)`)
    return
  }
  assert.deepEqual(errorCodes(), createRequire(import.meta.url)(join(napiDir, 'index.js')).errorCodes())
})

test('errors are Errors with name PolylockError, a code and a message that says why', () => {
  try {
    parseSnowflake(42)
    assert.fail('a Number was accepted as an ID')
  } catch (err) {
    assert.ok(err instanceof Error)
    assert.equal(err.name, 'PolylockError')
    assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT')
    assert.match(err.message, /a Number cannot hold a 64-bit ID exactly/)
    assert.match(err.stack, /PolylockError/)
  }
})

test('lock names map to the shared vectors` advisory keys, MySQL names and ShedLock names', () => {
  for (const [name, key, mysql, shedlock] of vectorRows(vectorsText, 'names')) {
    assert.equal(postgresAdvisoryKey(name), BigInt(key), name)
    assert.equal(typeof postgresAdvisoryKey(name), 'bigint')
    assert.equal(mysqlLockName(name), mysql, name)
    assert.equal(shedlockName(name), shedlock, name)
  }
  for (const call of [() => postgresAdvisoryKey(42), () => mysqlLockName(undefined), () => shedlockName({})]) {
    assert.throws(call, isPolylockError('POLYLOCK_INVALID_ARGUMENT'))
  }
})

test('PostgreSQL computes the same advisory keys (sha256 in SQL)', (t) => {
  const url = process.env.POLYLOCK_TEST_POSTGRES_URL
  if (!url) {
    t.skip('POLYLOCK_TEST_POSTGRES_URL is not set (tests/services/services.sh env exports it)')
    return
  }
  const names = vectorRows(vectorsText, 'names').map(([name]) => name)
  names.push('wasm:' + 'é'.repeat(200), 'wasm:\u{1F512}:' + Date.now())
  // Names travel as hex, so no quoting can change them on the way.
  const hex = names.map((name) => `'${Buffer.from(name).toString('hex')}'`).join(', ')
  const sql = `SELECT ('x' || left(encode(sha256(decode(h, 'hex')), 'hex'), 16))::bit(64)::bigint
    FROM unnest(ARRAY[${hex}]) WITH ORDINALITY AS t(h, i) ORDER BY i`
  const out = execFileSync('psql', [url, '-AtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
    encoding: 'utf8',
  })
  assert.deepEqual(out.trim().split('\n').map(BigInt), names.map(postgresAdvisoryKey))
})
