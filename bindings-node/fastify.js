// polylock/fastify: the Idempotency-Key plugin for Fastify (issue 38).
//
//   import idempotency from 'polylock/fastify'
//   await app.register(idempotency, { client })
//
// A plugin in fastify-plugin's style (it skips encapsulation): its hooks apply to the
// context it is registered in and to that context's children, so registering it at the root
// covers every route, and inside a plugin only that plugin's routes. onRequest reads the
// key, preParsing keeps the raw body for the fingerprint, preHandler claims the key (or
// answers with the replay or the refusal), onSend stores the response before it goes out,
// onError gives the key up. The rules are the core's (http-idempotency.js).
'use strict'

const { Transform, Readable } = require('node:stream')

const common = require('./http-idempotency.js')

const { EMPTY, HTTP_REPLAYED_HEADER } = common

// Options Fastify's register() itself reads and passes on to every plugin.
const FASTIFY_OWN = ['prefix', 'logLevel', 'logSerializers']

const kState = Symbol('polylock.idempotency')

function send(reply, response, replayed) {
  reply.code(response.status)
  for (const [name, value] of common.groupedHeaders(response.headers)) reply.header(name, value)
  if (replayed) reply.header(HTTP_REPLAYED_HEADER, 'true')
  return reply.send(response.body)
}

function collect(stream) {
  return new Promise((resolve, reject) => {
    const chunks = []
    stream.on('data', (chunk) => chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk))
    stream.on('end', () => resolve(Buffer.concat(chunks)))
    stream.on('error', reject)
  })
}

/** A pass-through of a streamed payload that stores the whole of it before its end goes out. */
function storingStream(ticket, status, headers) {
  const chunks = []
  const tee = new Transform({
    transform(chunk, encoding, callback) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : Buffer.from(chunk))
      callback(null, chunk)
    },
    flush(callback) {
      common
        .settle(ticket, { status, headers, body: Buffer.concat(chunks) })
        .catch(common.warnNotStored)
        .finally(() => callback())
    },
  })
  return tee
}

/**
 * The Fastify plugin. Options: `client` (a polylock client, required), `header` (default
 * `Idempotency-Key`), `lifetimeMs` (how long a response replays, default 24 h), `methods`
 * (default `['POST', 'PATCH']`), `fingerprint(request, rawBody)` (default: the method, the
 * URL with its query and the raw body), `namespace` (default `'http'`). An unknown option
 * fails the registration.
 */
async function idempotency(fastify, options) {
  const prepared = common.prepare(options, 'polylock/fastify idempotency', FASTIFY_OWN)
  const { rules, keys, headerName } = prepared

  fastify.addHook('onRequest', async (request, reply) => {
    const found = common.requestKey(rules, request.method, request.headers[headerName])
    if (found === null) return
    if (found.problem !== null) {
      return send(reply, common.httpRefusalResponse('badKey', found.key), false)
    }
    request[kState] = { key: found.key, body: EMPTY, ticket: null }
  })

  fastify.addHook('preParsing', async (request, reply, payload) => {
    const state = request[kState]
    if (state === undefined) return payload
    state.body = await collect(payload)
    const again = Readable.from(state.body.length > 0 ? [state.body] : [])
    again.receivedEncodedLength = payload.receivedEncodedLength ?? state.body.length
    return again
  })

  fastify.addHook('preHandler', async (request, reply) => {
    const state = request[kState]
    if (state === undefined) return
    const fingerprint = await common.fingerprintOf(prepared, request, request.method, request.url, state.body)
    const decided = await common.begin(keys, state.key, fingerprint)
    if (decided.ticket === undefined) {
      request[kState] = undefined
      return send(reply, decided.response, decided.replayed)
    }
    state.ticket = decided.ticket
  })

  // A handler that throws: the key is given up whatever the error handler answers.
  fastify.addHook('onError', async (request) => {
    const state = request[kState]
    if (state?.ticket) {
      const ticket = state.ticket
      state.ticket = null
      await common.abandon(ticket)
    }
  })

  fastify.addHook('onSend', async (request, reply, payload) => {
    const state = request[kState]
    if (!state?.ticket) return payload
    const ticket = state.ticket
    state.ticket = null
    const status = reply.statusCode
    const headers = common.headerPairs(reply.getHeaders())
    if (payload !== null && payload !== undefined && typeof payload.pipe === 'function') {
      return payload.pipe(storingStream(ticket, status, headers))
    }
    const body = payload === null || payload === undefined ? EMPTY : Buffer.from(payload)
    await common.settle(ticket, { status, headers, body }).catch(common.warnNotStored)
    return payload
  })

  // A response that never went out (the client went away, a timeout): give the key up.
  const giveUp = async (request) => {
    const state = request[kState]
    if (state?.ticket) {
      const ticket = state.ticket
      state.ticket = null
      await common.abandon(ticket)
    }
  }
  fastify.addHook('onResponse', giveUp)
  fastify.addHook('onRequestAbort', giveUp)
}

// fastify-plugin's marks, set by hand (no dependency): skip encapsulation, name the plugin.
idempotency[Symbol.for('skip-override')] = true
idempotency[Symbol.for('fastify.display-name')] = 'polylock-idempotency'
idempotency[Symbol.for('plugin-meta')] = { name: 'polylock-idempotency', fastify: '4.x || 5.x' }

module.exports = idempotency
module.exports.idempotency = idempotency
module.exports.default = idempotency
