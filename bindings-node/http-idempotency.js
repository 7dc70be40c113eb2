// What polylock/express and polylock/fastify share: their options checked, the key of a
// request, the outcome of `begin`, and storing a response. Every rule is the core's
// (polylock::kit::http_idempotency, through src/http_idempotency.rs): which methods, what a
// key is, the fingerprint, the stored form, which statuses are stored, the 400/409/422
// documents. This file only hands the frameworks' values to it, so a record written by one
// language's middleware replays from another's.
'use strict'

const polylock = require('./index.js')

const {
  PolylockError,
  HttpIdempotencyRules,
  HTTP_REPLAYED_HEADER,
  httpIdempotencyKeyOf,
  httpIdempotencyKeyProblem,
  httpIdempotencyFingerprint,
  httpIdempotencyStores,
  encodeHttpResponse,
  decodeHttpResponse,
  httpRefusalResponse,
} = polylock

const OPTIONS = ['client', 'header', 'lifetimeMs', 'methods', 'fingerprint', 'namespace']
const EMPTY = Buffer.alloc(0)

function invalid(message) {
  return new PolylockError('POLYLOCK_INVALID_ARGUMENT', message)
}

/**
 * The checked options of a middleware: `{ rules, keys, fingerprint }`. `frameworkOwn` names
 * options the framework itself passes along (Fastify's register options), which are not ours.
 */
function prepare(options, what, frameworkOwn = []) {
  if (options === null || typeof options !== 'object') {
    throw invalid(`${what} needs an options object with a client, such as { client }`)
  }
  for (const name of Object.keys(options)) {
    if (!OPTIONS.includes(name) && !frameworkOwn.includes(name)) {
      throw invalid(`${what}: unknown option '${name}' (the options are ${OPTIONS.join(', ')})`)
    }
  }
  const { client, header, lifetimeMs, methods, fingerprint, namespace = 'http' } = options
  if (client === null || typeof client !== 'object' || typeof client.idempotency !== 'function') {
    throw invalid(`${what}: option 'client' must be a polylock client (from connect())`)
  }
  if (fingerprint !== undefined && typeof fingerprint !== 'function') {
    throw invalid(`${what}: option 'fingerprint' must be a function of the request`)
  }
  if (methods !== undefined && !Array.isArray(methods)) {
    throw invalid(`${what}: option 'methods' must be an array of HTTP methods, such as ['POST', 'PATCH']`)
  }
  if (typeof namespace !== 'string') {
    throw invalid(`${what}: option 'namespace' must be a string`)
  }
  const rules = new HttpIdempotencyRules({ header, lifetimeMs, methods })
  const keys = client.idempotency(namespace, { retentionMs: rules.lifetimeMs })
  return { rules, keys, fingerprint, headerName: rules.header.toLowerCase() }
}

/** `null` when the request passes through untouched; else `{ key, problem }` (`problem` null for a good key). */
function requestKey(rules, method, headerValue) {
  if (headerValue === undefined || !rules.appliesTo(method)) return null
  const key = httpIdempotencyKeyOf(Array.isArray(headerValue) ? headerValue.join(', ') : String(headerValue))
  return { key, problem: httpIdempotencyKeyProblem(key) }
}

/** The request's fingerprint: the user's function, else the core's (method, path with query, body). */
async function fingerprintOf(prepared, request, method, path, body) {
  if (prepared.fingerprint !== undefined) return prepared.fingerprint(request, body)
  if (body === undefined) {
    throw invalid(
      "the idempotency middleware fingerprints the raw request body, which was read before it ran: use it before the body parsers, or give a 'fingerprint' option",
    )
  }
  return httpIdempotencyFingerprint(method, path, body)
}

/** Claim `key`: `{ ticket }` to run the request, or `{ response, replayed }` to answer with instead. */
async function begin(keys, key, fingerprint) {
  const begun = await keys.begin(key, fingerprint)
  switch (begun.outcome) {
    case 'acquired':
      return { ticket: begun.ticket }
    case 'replay':
      return { response: decodeHttpResponse(begun.response), replayed: true }
    case 'inProgress':
      return { response: httpRefusalResponse('inProgress', key, begun.retryAfterMs), replayed: false }
    default:
      return { response: httpRefusalResponse('mismatch', key), replayed: false }
  }
}

/** Node's outgoing headers (`getHeaders()`) as `[name, value]` pairs, a repeated header as several. */
function headerPairs(headers) {
  const pairs = []
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    for (const one of Array.isArray(value) ? value : [value]) pairs.push([name.toLowerCase(), String(one)])
  }
  return pairs
}

/** The stored headers grouped by name, for `setHeader`: a name given once keeps a plain value. */
function groupedHeaders(pairs) {
  const grouped = new Map()
  for (const [name, value] of pairs) {
    const values = grouped.get(name)
    if (values === undefined) grouped.set(name, [value])
    else values.push(value)
  }
  return [...grouped].map(([name, values]) => [name, values.length === 1 ? values[0] : values])
}

/** Store the response the request produced, or give the key up for a server error. */
function settle(ticket, response) {
  if (!httpIdempotencyStores(response.status)) return ticket.abandon()
  return ticket.complete(encodeHttpResponse(response))
}

/** Give the key up (the request failed); a failure to do so is not the caller's to handle. */
function abandon(ticket) {
  return ticket.abandon().catch(() => {})
}

/** Report a failure to store a response without failing the response already made. */
function warnNotStored(err) {
  process.emitWarning(`polylock idempotency: a response was sent but not stored: ${err?.message ?? err}`, {
    type: 'PolylockWarning',
    code: err?.code,
  })
}

module.exports = {
  EMPTY,
  HTTP_REPLAYED_HEADER,
  prepare,
  requestKey,
  fingerprintOf,
  begin,
  headerPairs,
  groupedHeaders,
  settle,
  abandon,
  warnNotStored,
  httpRefusalResponse,
}
