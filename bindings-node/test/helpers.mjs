// Shared by the suite: every backend whose URL is exported, and unique lock names.
//
// SQLite (a file per test) and mem:// always; Redis from POLYLOCK_TEST_REDIS_URL; and any
// other POLYLOCK_TEST_<NAME>_URL in the environment (tests/services/services.sh env exports
// one per running server), so a backend that lands is covered without touching this file.
// A URL whose scheme this build does not know yet is reported and skipped; an unreachable
// server is a failure.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import crypto from 'node:crypto'

import polylock from '../index.js'

const REDIS_KINDS = ['reentrant', 'fair', 'token']

function exportedBackends() {
  const backends = []
  for (const [variable, url] of Object.entries(process.env)) {
    const match = /^POLYLOCK_TEST_(.+)_URL$/.exec(variable)
    if (!match || !url) continue
    const name = match[1].toLowerCase().replace(/_/g, '-')
    const kinds = /^rediss?(\+cluster|\+sentinel)?:\/\//.test(url) ? REDIS_KINDS : ['reentrant']
    backends.push({ name, kinds, url: () => url, crossProcess: true })
  }
  return backends.sort((a, b) => a.name.localeCompare(b.name))
}

let tempRoot
function tempDir() {
  tempRoot ??= fs.mkdtempSync(path.join(os.tmpdir(), 'polylock-node-test-'))
  return fs.mkdtempSync(path.join(tempRoot, 't-'))
}

process.on('exit', () => {
  if (tempRoot) fs.rmSync(tempRoot, { recursive: true, force: true })
})

const BACKENDS = [
  { name: 'sqlite', kinds: ['reentrant'], url: () => `sqlite://${tempDir()}/locks.db`, crossProcess: true },
  { name: 'mem', kinds: ['reentrant'], url: () => `mem://${crypto.randomUUID()}`, crossProcess: false },
  ...exportedBackends(),
]

/** Whether this build knows `backend`'s scheme: a skip reason, or null. */
async function unsupportedReason(backend) {
  try {
    const client = await polylock.connect(backend.url())
    await client.close()
    return null
  } catch (err) {
    if (err.code === 'POLYLOCK_INVALID_ARGUMENT' && /unknown URL scheme|not part of this build/.test(err.message)) {
      return `this build has no ${backend.name} backend yet: ${err.message}`
    }
    return null // connecting again in the test reports the real failure
  }
}

/** Every (backend, kind) pair, with a skip reason for backends this build lacks. */
async function backendKinds() {
  const pairs = []
  for (const backend of BACKENDS) {
    const skip = await unsupportedReason(backend)
    for (const kind of backend.kinds) pairs.push({ backend, kind, skip })
  }
  return pairs
}

function uniqueName(prefix = 'node-test') {
  return `${prefix}:${process.pid}:${crypto.randomUUID()}`
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves to what `promise` rejects with; fails if it resolves. */
async function rejection(promise) {
  try {
    await promise
  } catch (err) {
    return err
  }
  throw new Error('expected a rejection, but the promise resolved')
}

export const REDIS_URL = process.env.POLYLOCK_TEST_REDIS_URL
export { BACKENDS, backendKinds, uniqueName, sleep, rejection, tempDir }
