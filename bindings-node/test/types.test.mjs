// The committed declarations type-check a strict example (`tsc --noEmit`), and `await using`
// compiled by tsc releases guards and closes clients at the end of their scopes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { tempDir, REDIS_URL } from './helpers.mjs'

const packageDir = fileURLToPath(new URL('..', import.meta.url))
const tsc = path.join(packageDir, 'node_modules', 'typescript', 'bin', 'tsc')

/** A scratch project where `polylock` resolves to this package, as it would once installed. */
function scratchProject() {
  const dir = tempDir()
  fs.mkdirSync(path.join(dir, 'node_modules'))
  fs.symlinkSync(packageDir, path.join(dir, 'node_modules', 'polylock'), 'dir')
  fs.symlinkSync(path.join(packageDir, 'node_modules', '@types'), path.join(dir, 'node_modules', '@types'), 'dir')
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }))
  for (const file of ['example.ts', 'await-using.ts', 'tsconfig.json']) {
    fs.copyFileSync(path.join(packageDir, 'test', 'typed', file), path.join(dir, file))
  }
  return dir
}

function run(command, args, cwd) {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    assert.fail(`${path.basename(args[0] ?? command)} failed:\n${err.stdout}${err.stderr}`)
  }
}

test('tsc --noEmit accepts the typed example', () => {
  const dir = scratchProject()
  run(process.execPath, [tsc, '--noEmit', '-p', dir], dir)
})

test('tsc rejects misuse: a Number where the API takes a BigInt id, a wrong error code, level or metric', () => {
  const dir = scratchProject()
  fs.writeFileSync(
    path.join(dir, 'example.ts'),
    "import { parseSnowflake, PolylockError, setLogLevel, metrics } from 'polylock'\n" +
      'parseSnowflake(12345)\n' +
      "const code: PolylockError['code'] = 'POLYLOCK_OOPS'\n" +
      "setLogLevel('loud')\n" +
      'console.log(code, metrics().series[0].acquires.granted)\n',
  )
  let output = ''
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '-p', dir], { cwd: dir, encoding: 'utf8' })
  } catch (err) {
    output = err.stdout
  }
  assert.match(output, /example\.ts\(2,/, output)
  assert.match(output, /example\.ts\(3,/, output)
  assert.match(output, /example\.ts\(4,/, output)
  assert.match(output, /example\.ts\(5,/, output)
})

test('await using releases the guard and closes the client (compiled by tsc)', () => {
  const dir = scratchProject()
  run(process.execPath, [tsc, '-p', dir], dir)
  const url = REDIS_URL ?? `sqlite://${dir}/await-using.db`
  const output = run(process.execPath, [path.join(dir, 'out', 'await-using.js'), url], dir)
  assert.equal(output.trim(), 'ok')
})
