// A Node process and the `polylock` CLI contend for one lock (cross-process backends).
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import readline from 'node:readline'

import polylock from '../index.js'
import { tempDir, uniqueName, REDIS_URL } from './helpers.mjs'

const CLI_TIMED_OUT = 75

function cliBinary() {
  if (process.env.POLYLOCK_CLI) return process.env.POLYLOCK_CLI
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const metadata = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: root }))
  const binary = path.join(metadata.target_directory, 'release', 'polylock')
  if (!fs.existsSync(binary)) {
    throw new Error(`${binary} is missing: run \`cargo build --release -p polylock-cli\` or set POLYLOCK_CLI`)
  }
  return binary
}

function cli(url, args, stdout = 'ignore') {
  const child = spawn(cliBinary(), ['--url', url, ...args], { stdio: ['ignore', stdout, 'inherit'] })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, exited }
}

const backends = [['sqlite', () => `sqlite://${tempDir()}/cli.db`]]
if (REDIS_URL) backends.push(['redis', () => REDIS_URL])

for (const [backend, makeUrl] of backends) {
  describe(`the CLI and Node on ${backend}`, () => {
    let url, client
    before(async () => {
      url = makeUrl()
      client = await polylock.connect(url)
    })
    after(async () => {
      await client.close()
    })

    test('the CLI waits for Node, and Node for the CLI', async () => {
      const name = uniqueName('node-cli')
      const lock = client.lock(name)
      const nodeGuard = await lock.acquire()
      const blocked = cli(url, ['run', '--lock', name, '--wait', '300ms', '--', 'true'])
      assert.equal(await blocked.exited, CLI_TIMED_OUT)
      await nodeGuard.release()

      const holder = cli(url, ['run', '--lock', name, '--wait', '10s', '--', 'sh', '-c', 'echo "$POLYLOCK_FENCING_TOKEN"; sleep 1'], 'pipe')
      try {
        const lines = readline.createInterface({ input: holder.child.stdout })
        const [firstLine] = await new Promise((resolve) => lines.once('line', (line) => resolve([line])))
        const cliToken = BigInt(firstLine)
        assert.ok(cliToken > nodeGuard.fencingToken)
        assert.equal(await lock.tryAcquire(), null)
        const started = performance.now()
        const guard = await lock.acquire({ waitMs: 15_000 })
        assert.ok(performance.now() - started > 300, 'Node got the lock while the CLI still held it')
        assert.ok(guard.fencingToken > cliToken)
        assert.equal(await holder.exited, 0)
        await guard.release()
      } finally {
        holder.child.kill()
      }
    })
  })
}
