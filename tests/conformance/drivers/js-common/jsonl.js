// What the Node and WebAssembly conformance drivers share: JSON lines with 64-bit integers and
// the loop that answers one request at a time (tests/conformance/PROTOCOL.md).
'use strict'

const readline = require('node:readline')

// ---- JSON with 64-bit integers ------------------------------------------------------------
// Node 20's JSON.parse turns integers past 2^53 into rounded doubles: such literals are
// rewritten to marked strings before parsing and become BigInts. Answers write BigInts as
// plain integer literals.
const BIG = '\u0000big:'

function parseRequest(text) {
  let out = ''
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      out += c
      if (c === '\\') out += text[++i]
      else if (c === '"') inString = false
    } else if (c === '"') {
      inString = true
      out += c
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const token = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i))[0]
      const integer = /^-?\d+$/.test(token)
      out += integer && !Number.isSafeInteger(Number(token)) ? JSON.stringify(BIG + token) : token
      i += token.length - 1
    } else {
      out += c
    }
  }
  return JSON.parse(out, (_key, value) =>
    typeof value === 'string' && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value,
  )
}

function encode(value) {
  if (typeof value === 'bigint') return value.toString()
  if (value === null || value === undefined) return 'null'
  if (Array.isArray(value)) return `[${value.map(encode).join(',')}]`
  if (typeof value === 'object') {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined)
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${encode(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** Say ready, then answer each stdin line with `answer(line)` (awaited), in order; at EOF run
 *  `atEnd` and exit. */
async function serve(surface, answer, atEnd = async () => {}) {
  process.stdout.write(`${encode({ ready: surface })}\n`)
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of lines) {
    if (line.trim() === '') continue
    process.stdout.write(`${encode(await answer(line))}\n`)
  }
  await atEnd()
  process.exit(0)
}

module.exports = { parseRequest, encode, serve }
