// An ID made by the WebAssembly Snowflake parses to the same parts in the other languages:
// Rust (the polylock CLI, `polylock id parse`), Python (the pyo3 binding) and Node (the napi
// binding). The shared vectors (vectors.tsv) pin the same parts in every suite; this test
// feeds fresh wasm-made IDs, of Twitter's layout and of a custom epoch, to the real others.
//
// Rust always runs (run-tests.sh builds the CLI, or set POLYLOCK_CLI). Python and napi need
// those bindings built by their own suites (or POLYLOCK_PY_PYTHON, POLYLOCK_NAPI_DIR naming
// them); without them the test is skipped saying so, or fails when
// POLYLOCK_WASM_CROSS_CHECK=all (tests/run-all.sh runs those suites first).
import test from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { join } from 'node:path'

import { Snowflake } from 'polylock-wasm'
import { repoRoot } from './helpers.mjs'

const EPOCH_MS = Date.UTC(2024, 0, 1)
const requireAll = process.env.POLYLOCK_WASM_CROSS_CHECK === 'all'

/** A few fresh IDs of each layout the other bindings take (Twitter's widths, any epoch). */
function wasmMadeIds() {
  const made = []
  for (const [workerId, epochMs] of [[0], [347], [1023], [5, EPOCH_MS], [1023, EPOCH_MS]]) {
    const generator = new Snowflake({ workerId, epochMs })
    const ids = generator.nextIds(3)
    for (const id of ids) made.push({ id, epochMs, parts: generator.parse(id) })
    generator.free()
  }
  return made
}

function unavailable(t, why) {
  if (requireAll) assert.fail(`cross-check required (POLYLOCK_WASM_CROSS_CHECK=all) but ${why}`)
  t.skip(why)
}

test('Rust (polylock id parse) reads the parts of wasm-made IDs', (t) => {
  const cli = process.env.POLYLOCK_CLI
  if (!cli || !existsSync(cli)) return unavailable(t, 'POLYLOCK_CLI is not set to the polylock CLI (run-tests.sh sets it)')
  for (const { id, epochMs, parts } of wasmMadeIds()) {
    const args = ['id', 'parse', String(id), ...(epochMs === undefined ? [] : ['--epoch', String(epochMs)])]
    const out = execFileSync(cli, args, { encoding: 'utf8' })
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(out)?.[1])
    assert.deepEqual({ timestampMs: field('timestamp'), workerId: field('worker'), sequence: field('sequence') }, parts, out)
  }
})

test('Python (the pyo3 binding) reads the parts of wasm-made IDs', (t) => {
  const python = process.env.POLYLOCK_PY_PYTHON ?? join(process.env.POLYLOCK_PY_VENV ?? join(homedir(), '.cache/polylock/py-venv'), 'bin/python')
  const probe = existsSync(python) ? execFileSync(python, ['-c', 'import importlib.util as u; print(bool(u.find_spec("polylock")))'], { encoding: 'utf8' }) : ''
  if (probe.trim() !== 'True') return unavailable(t, `no Python with polylock installed at ${python} (bindings-python/run-tests.sh makes it)`)
  const made = wasmMadeIds()
  const script = `
import json, sys, polylock
for line in sys.stdin:
    id, epoch = json.loads(line)
    p = polylock.parse_snowflake(int(id)) if epoch is None else polylock.parse_snowflake(int(id), epoch_ms=epoch)
    print(json.dumps({"timestampMs": p.timestamp_ms, "workerId": p.worker, "sequence": p.sequence}))
`
  const input = made.map(({ id, epochMs }) => JSON.stringify([String(id), epochMs ?? null])).join('\n') + '\n'
  const out = execFileSync(python, ['-c', script], { input, encoding: 'utf8' })
  assert.deepEqual(out.trim().split('\n').map((line) => JSON.parse(line)), made.map(({ parts }) => parts))
})

test('Node (the napi binding) reads the parts of wasm-made IDs', (t) => {
  // POLYLOCK_NAPI_DIR: a folder with the binding's index.js beside a polylock.node.
  const napiDir = process.env.POLYLOCK_NAPI_DIR ?? join(repoRoot, 'bindings-node')
  if (!existsSync(join(napiDir, 'polylock.node'))) {
    return unavailable(t, `${napiDir}/polylock.node is not built (bindings-node/run-tests.sh builds it)`)
  }
  const napi = createRequire(import.meta.url)(join(napiDir, 'index.js'))
  for (const { id, epochMs, parts } of wasmMadeIds()) {
    // The napi binding names the worker `worker`; this package `workerId` (issue 20's API).
    const { timestampMs, worker, sequence } = napi.parseSnowflake(id, epochMs)
    assert.deepEqual({ timestampMs, workerId: worker, sequence }, parts, String(id))
    assert.deepEqual(napi.parseSnowflake(String(id), epochMs).worker, parts.workerId)
  }
})
