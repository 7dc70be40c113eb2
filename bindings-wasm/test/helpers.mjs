// What the Node suites share: the shared vectors and the package's root (the tests load the
// package by its own name, through package.json's exports, as a user's code does).
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const packageDir = fileURLToPath(new URL('..', import.meta.url))
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
export const vectorsText = readFileSync(new URL('vectors.tsv', import.meta.url), 'utf8')

/** Asserts that `call` throws a polylock error (an `Error`) with this code. */
export function isPolylockError(code) {
  return (err) => err instanceof Error && err.name === 'PolylockError' && err.code === code
}

/** Runs `body` with `Date.now` answering `clock()` (the module reads the clock through it). */
export function withClock(clock, body) {
  const realNow = Date.now
  Date.now = clock
  try {
    return body()
  } finally {
    Date.now = realNow
  }
}
