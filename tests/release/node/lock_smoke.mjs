// Run by tests/release/run-tests.sh in a fresh npm project with only the released tarball
// installed: take a lock on SQLite and on Redis through it and check the version it reports.
//
//   node lock_smoke.mjs VERSION NAME URL...
import { createRequire } from 'node:module'
// The default import: Node's ESM loader sees only some of index.js's exports as named ones.
import polylock from 'polylock'

const { connect, version, PolylockError } = polylock

const [expected, name, ...urls] = process.argv.slice(2)
if (version !== expected) throw new Error(`polylock's version is ${version}, expected ${expected}`)
const where = createRequire(import.meta.url).resolve('polylock')
if (!where.startsWith(process.cwd())) throw new Error(`polylock resolved to ${where}, not the project's node_modules`)
for (const url of urls) {
  const client = await connect(url)
  const guard = await client.lock(name).acquire({ waitMs: 10000 })
  if (typeof guard.fencingToken !== 'bigint' || guard.fencingToken <= 0n) throw new Error('no fencing token')
  await guard.release()
  const err = await client.lock(name).acquire({ waitMs: -1 }).catch((e) => e)
  if (!(err instanceof PolylockError) || err.code !== 'POLYLOCK_INVALID_ARGUMENT') throw err
  await client.close()
  console.log(`node: polylock ${version}: locked and released on ${url.split(':')[0]} (token ${guard.fencingToken})`)
}
