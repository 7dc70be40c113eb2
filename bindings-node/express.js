// polylock/express: the Idempotency-Key middleware for Express (issue 38).
//
//   const { idempotency } = require('polylock/express')
//   app.use(idempotency({ client }))          // before the body parsers
//
// The first request with a key runs; the response it sends (status, headers, body, also when
// written in pieces) is stored when it ends, and a repeat with the same key and request gets
// it back with `Idempotent-Replayed: true`. The rules are the core's (http-idempotency.js);
// this file only adapts Express's request and response to them.
'use strict'

const common = require('./http-idempotency.js')

const { HTTP_REPLAYED_HEADER } = common

/** Answer with a stored response or a refusal. */
function send(res, response, replayed) {
  res.statusCode = response.status
  for (const [name, value] of common.groupedHeaders(response.headers)) res.setHeader(name, value)
  if (replayed) res.setHeader(HTTP_REPLAYED_HEADER, 'true')
  res.end(response.body)
}

/**
 * The raw body of `req`. Unread: read here, then put back in front of the stream (before its
 * end is announced), so the body parsers after this middleware read it as usual. Read already
 * (a body parser ran first): what that parser kept of the bytes (`req.rawBody`, or a Buffer or
 * string `req.body`), else `undefined`.
 */
function rawBody(req) {
  if (Buffer.isBuffer(req.rawBody)) return Promise.resolve(req.rawBody)
  if (req.readableDidRead || req.readableEnded || req.body !== undefined) {
    if (Buffer.isBuffer(req.body)) return Promise.resolve(req.body)
    if (typeof req.body === 'string') return Promise.resolve(Buffer.from(req.body))
    return Promise.resolve(undefined)
  }
  return new Promise((resolve, reject) => {
    const chunks = []
    const stop = () => {
      req.removeListener('readable', onReadable)
      req.removeListener('end', onEnd)
      req.removeListener('error', onError)
    }
    function onReadable() {
      let chunk
      while ((chunk = req.read()) !== null) chunks.push(chunk)
      // `complete` is set once the whole message is parsed, before the stream's end is pushed:
      // every byte is in `chunks`, and `end` has not been emitted (it waits a tick), so the
      // bytes can go back in front of the stream.
      if (req.complete) {
        stop()
        const body = Buffer.concat(chunks)
        if (body.length > 0) req.unshift(body)
        resolve(body)
      }
    }
    function onEnd() {
      stop()
      resolve(Buffer.concat(chunks))
    }
    function onError(err) {
      stop()
      reject(err)
    }
    req.on('readable', onReadable)
    req.on('end', onEnd)
    req.on('error', onError)
  })
}

function chunkBytes(chunk, encoding) {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return null
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8')
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
}

/**
 * Capture what the route sends on `res` and store it through `ticket` before the response
 * ends (so a client that got it and retries gets the replay); a 5xx gives the key up, as does
 * a response that never ends (the client went away).
 */
function capture(res, ticket) {
  const chunks = []
  let headHeaders = null
  let settled = false
  const { write, end, writeHead } = res
  res.writeHead = function (status, reason, headers) {
    const given = typeof reason === 'string' ? headers : reason
    if (given !== null && typeof given === 'object') headHeaders = given
    return writeHead.apply(this, arguments)
  }
  res.write = function (chunk, encoding) {
    const bytes = chunkBytes(chunk, encoding)
    if (bytes !== null) chunks.push(Buffer.from(bytes))
    return write.apply(this, arguments)
  }
  res.end = function (chunk, encoding) {
    const args = arguments
    const bytes = chunkBytes(chunk, encoding)
    if (bytes !== null) chunks.push(Buffer.from(bytes))
    res.write = write
    res.end = end
    res.writeHead = writeHead
    if (settled) return end.apply(this, args)
    settled = true
    let response
    try {
      const headers = { ...res.getHeaders() }
      if (headHeaders !== null) Object.assign(headers, headersOf(headHeaders))
      response = { status: res.statusCode, headers: common.headerPairs(headers), body: Buffer.concat(chunks) }
    } catch (err) {
      common.abandon(ticket)
      throw err
    }
    common
      .settle(ticket, response)
      .catch(common.warnNotStored)
      .finally(() => end.apply(this, args))
    return this
  }
  res.once('close', () => {
    if (!settled) {
      settled = true
      common.abandon(ticket)
    }
  })
}

/** The headers given to `writeHead`: an object, or an array of pairs or of alternating names and values. */
function headersOf(given) {
  if (!Array.isArray(given)) {
    const lower = {}
    for (const [name, value] of Object.entries(given)) lower[name.toLowerCase()] = value
    return lower
  }
  const lower = {}
  const add = (name, value) => {
    const key = String(name).toLowerCase()
    lower[key] = lower[key] === undefined ? value : [].concat(lower[key], value)
  }
  if (given.length > 0 && Array.isArray(given[0])) for (const [name, value] of given) add(name, value)
  else for (let i = 0; i + 1 < given.length; i += 2) add(given[i], given[i + 1])
  return lower
}

/**
 * Express middleware applying the Idempotency-Key rules to the requests that pass it.
 *
 * Options: `client` (a polylock client, required), `header` (default `Idempotency-Key`),
 * `lifetimeMs` (how long a response replays, default 24 h), `methods` (default
 * `['POST', 'PATCH']`), `fingerprint(req, rawBody)` (default: the method, the path with its
 * query and the raw body), `namespace` (default `'http'`). An unknown option throws.
 */
function idempotency(options) {
  const prepared = common.prepare(options, 'polylock/express idempotency()')
  const { rules, keys, headerName } = prepared

  async function run(req, res, next, key) {
    const body = await rawBody(req)
    const fingerprint = await common.fingerprintOf(prepared, req, req.method, req.originalUrl ?? req.url, body)
    const decided = await common.begin(keys, key, fingerprint)
    if (decided.ticket === undefined) {
      send(res, decided.response, decided.replayed)
      return
    }
    capture(res, decided.ticket)
    next()
  }

  return function polylockIdempotency(req, res, next) {
    let found
    try {
      found = common.requestKey(rules, req.method, req.headers[headerName])
    } catch (err) {
      next(err)
      return
    }
    if (found === null) {
      next()
      return
    }
    if (found.problem !== null) {
      send(res, common.httpRefusalResponse('badKey', found.key), false)
      return
    }
    run(req, res, next, found.key).catch(next)
  }
}

module.exports = { idempotency }
