// Every export of index.js is a named ESM export too: Node finds a CommonJS module's names by
// scanning its `module.exports = { ... }` literal, which stops at the first non-shorthand value.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as named from '../index.js'

test('each CommonJS export of the package is also a named ESM export', () => {
  const exported = createRequire(import.meta.url)('../index.js')
  for (const name of Object.keys(exported)) {
    assert.equal(named[name], exported[name], `'${name}' is missing from the ESM named exports`)
  }
})
