// Every JavaScript block of docs/frameworks/node.md runs, in a scratch folder where polylock,
// express and fastify resolve as installed packages, and prints exactly the ```text block
// that follows it on the page.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { tempDir } from './helpers.mjs'

const run = promisify(execFile)
const packageDir = fileURLToPath(new URL('..', import.meta.url))
const page = path.join(packageDir, '..', 'docs', 'frameworks', 'node.md')

function blocks(markdown) {
  const found = []
  const fence = /^```(\S*)[^\n]*\n([\s\S]*?)^```$/gm
  let match
  while ((match = fence.exec(markdown)) !== null) found.push({ tag: match[1], code: match[2], at: match.index })
  return found
}

const all = blocks(fs.readFileSync(page, 'utf8'))
const programs = all.filter((block) => block.tag === 'js')

test('docs/frameworks/node.md has its examples', () => {
  assert.ok(programs.length >= 4, `${programs.length} js blocks`)
})

for (const program of programs) {
  const line = fs.readFileSync(page, 'utf8').slice(0, program.at).split('\n').length
  test(`docs/frameworks/node.md:${line} prints what the page shows`, async () => {
    const expected = all.find((block) => block.at > program.at && block.tag === 'text')
    assert.ok(expected, 'an output block follows')
    const dir = tempDir()
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(packageDir, path.join(dir, 'node_modules', 'polylock'), 'dir')
    for (const name of ['express', 'fastify']) {
      fs.symlinkSync(path.join(packageDir, 'node_modules', name), path.join(dir, 'node_modules', name), 'dir')
    }
    const file = /^import /m.test(program.code) ? 'example.mjs' : 'example.cjs'
    fs.writeFileSync(path.join(dir, file), program.code)
    const env = { ...process.env }
    delete env.POLYLOCK_URL
    const { stdout } = await run(process.execPath, [file], { cwd: dir, env })
    assert.equal(stdout.trim(), expected.code.trim())
  })
}
