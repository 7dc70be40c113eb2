// Issue 38 from Node: polylock/express and polylock/fastify, real Express and Fastify servers on
// 127.0.0.1 asked with fetch, on SQLite and on the running Redis. Each case asserts what the
// client sees (status, headers, body) and how often the route ran.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import { createRequire } from 'node:module'

import express from 'express'
import Fastify from 'fastify'

import polylock from '../index.js'
import { tempDir, REDIS_URL } from './helpers.mjs'

// The package's own subpaths, as a user imports them (package.json "exports").
const require = createRequire(import.meta.url)
const { idempotency: expressIdempotency } = require('polylock/express')
const { default: fastifyIdempotency } = await import('polylock/fastify')

const REPLAYED = 'idempotent-replayed'

function deferred() {
  let resolve
  const promise = new Promise((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** What every app's routes do, counted; `hold` (a promise) keeps /orders waiting until the test lets it go. */
function routes() {
  const state = { calls: { orders: 0, stream: 0, crash: 0, throw: 0 }, hold: null, started: null }
  async function order(method, body) {
    const n = ++state.calls.orders
    if (state.hold) {
      state.started.resolve()
      await state.hold
    }
    return { status: method === 'GET' ? 200 : 201, body: { order: n, method, got: body ?? null } }
  }
  return { state, order }
}

async function expressApp(client, namespace) {
  const { state, order } = routes()
  const app = express()
  app.set('env', 'test') // the default error handler answers 500 without printing the stack
  app.use(expressIdempotency({ client, namespace }))
  app.use(express.json())
  for (const method of ['get', 'post', 'patch']) {
    app[method]('/orders', async (req, res) => {
      const { status, body } = await order(req.method, req.body)
      res.status(status).set('X-Order', String(body.order)).append('Set-Cookie', ['a=1', 'b=2']).json(body)
    })
  }
  app.post('/stream', (req, res) => {
    state.calls.stream++
    res.status(202).type('text/plain')
    res.write('part one, ')
    res.write(Buffer.from('part two, '))
    res.end(`call ${state.calls.stream}`)
  })
  app.post('/crash', (req, res) => {
    state.calls.crash++
    res.status(500).json({ error: 'down' })
  })
  app.post('/throw', () => {
    state.calls.throw++
    throw new Error('boom')
  })
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    state,
    base: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

async function fastifyApp(client, namespace, { errorStatus } = {}) {
  const { state, order } = routes()
  const app = Fastify()
  await app.register(fastifyIdempotency, { client, namespace })
  if (errorStatus) app.setErrorHandler((err, request, reply) => reply.code(errorStatus).send({ handled: err.message }))
  app.route({
    method: ['GET', 'POST', 'PATCH'],
    url: '/orders',
    handler: async (request, reply) => {
      const { status, body } = await order(request.method, request.body)
      reply.code(status).header('x-order', String(body.order)).header('set-cookie', ['a=1', 'b=2'])
      return body
    },
  })
  app.post('/stream', async (request, reply) => {
    state.calls.stream++
    reply.code(202).type('text/plain')
    return Readable.from(['part one, ', Buffer.from('part two, '), `call ${state.calls.stream}`])
  })
  app.post('/crash', async (request, reply) => {
    state.calls.crash++
    reply.code(500)
    return { error: 'down' }
  })
  app.post('/throw', async () => {
    state.calls.throw++
    throw new Error('boom')
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { state, base: `http://127.0.0.1:${app.server.address().port}`, close: () => app.close() }
}

const FRAMEWORKS = { express: expressApp, fastify: fastifyApp }

async function call(base, path, { key, body, method = 'POST', header = 'Idempotency-Key' } = {}) {
  const headers = { 'content-type': 'application/json' }
  if (key !== undefined) headers[header] = key
  const response = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

const newKey = () => crypto.randomUUID()
const newNamespace = () => `node-http-${crypto.randomUUID()}`

const BACKENDS = [
  { name: 'sqlite', url: () => `sqlite://${tempDir()}/locks.db` },
  { name: 'redis', url: () => REDIS_URL, skip: REDIS_URL ? false : 'POLYLOCK_TEST_REDIS_URL is not set' },
]

for (const backend of BACKENDS) {
  for (const [framework, makeApp] of Object.entries(FRAMEWORKS)) {
    describe(`${framework} idempotency on ${backend.name}`, { skip: backend.skip }, () => {
      let client, app
      before(async () => {
        client = await polylock.connect(backend.url())
        app = await makeApp(client, newNamespace())
      })
      after(async () => {
        await app?.close()
        await client?.close()
      })

      test('the first request runs and is stored; a repeat replays it with Idempotent-Replayed', async () => {
        const key = newKey()
        const before = app.state.calls.orders
        const first = await call(app.base, '/orders?src=test', { key, body: { item: 'book', qty: 2 } })
        assert.equal(first.status, 201, first.text)
        assert.equal(first.headers.get(REPLAYED), null)
        assert.deepEqual(JSON.parse(first.text).got, { item: 'book', qty: 2 })
        const again = await call(app.base, '/orders?src=test', { key, body: { item: 'book', qty: 2 } })
        assert.equal(again.status, 201)
        assert.equal(again.headers.get(REPLAYED), 'true')
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get('x-order'), first.headers.get('x-order'))
        assert.deepEqual(again.headers.getSetCookie(), ['a=1', 'b=2'])
        assert.match(again.headers.get('content-type'), /^application\/json/)
        assert.equal(app.state.calls.orders, before + 1, 'the route ran once')
      })

      test('the same key with another body (or path) is 422 and does not run', async () => {
        const key = newKey()
        assert.equal((await call(app.base, '/orders', { key, body: { qty: 1 } })).status, 201)
        const ran = app.state.calls.orders
        const other = await call(app.base, '/orders', { key, body: { qty: 9 } })
        assert.equal(other.status, 422, other.text)
        assert.match(other.headers.get('content-type'), /^application\/problem\+json/)
        assert.equal(JSON.parse(other.text).status, 422)
        assert.equal((await call(app.base, '/orders?x=1', { key, body: { qty: 1 } })).status, 422)
        assert.equal(app.state.calls.orders, ran)
      })

      test('a request while the first with its key runs is 409 with Retry-After', async () => {
        const key = newKey()
        const gate = deferred()
        app.state.hold = gate.promise
        app.state.started = deferred()
        const first = call(app.base, '/orders', { key, body: { slow: true } })
        try {
          await app.state.started.promise
          app.state.hold = null
          const busy = await call(app.base, '/orders', { key, body: { slow: true } })
          assert.equal(busy.status, 409, busy.text)
          assert.ok(Number(busy.headers.get('retry-after')) >= 1, busy.headers.get('retry-after'))
          assert.equal(JSON.parse(busy.text).status, 409)
        } finally {
          app.state.hold = null
          gate.resolve()
        }
        const done = await first
        assert.equal(done.status, 201)
        const replay = await call(app.base, '/orders', { key, body: { slow: true } })
        assert.equal(replay.headers.get(REPLAYED), 'true')
        assert.equal(replay.text, done.text)
      })

      test('a 5xx is not stored: a retry with the key runs again', async () => {
        const key = newKey()
        const before = app.state.calls.crash
        assert.equal((await call(app.base, '/crash', { key, body: {} })).status, 500)
        const retry = await call(app.base, '/crash', { key, body: {} })
        assert.equal(retry.status, 500)
        assert.equal(retry.headers.get(REPLAYED), null)
        assert.equal(app.state.calls.crash, before + 2)
      })

      test('a handler that throws gives the key up; the error reaches the framework', async () => {
        const key = newKey()
        const before = app.state.calls.throw
        assert.equal((await call(app.base, '/throw', { key, body: {} })).status, 500)
        assert.equal((await call(app.base, '/throw', { key, body: {} })).status, 500)
        assert.equal(app.state.calls.throw, before + 2)
      })

      test('a streamed response is stored whole and replayed', async () => {
        const key = newKey()
        const first = await call(app.base, '/stream', { key, body: {} })
        assert.equal(first.status, 202)
        assert.match(first.text, /^part one, part two, call \d+$/)
        const again = await call(app.base, '/stream', { key, body: {} })
        assert.equal(again.status, 202)
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get(REPLAYED), 'true')
        assert.match(again.headers.get('content-type'), /^text\/plain/)
      })

      test('GET, and a POST without the header, pass through untouched', async () => {
        const key = newKey()
        const before = app.state.calls.orders
        const get1 = await call(app.base, '/orders', { key, method: 'GET' })
        const get2 = await call(app.base, '/orders', { key, method: 'GET' })
        assert.equal(get1.status, 200)
        assert.notEqual(get1.text, get2.text, 'each GET ran')
        assert.equal(get2.headers.get(REPLAYED), null)
        const post1 = await call(app.base, '/orders', { body: { plain: 1 } })
        const post2 = await call(app.base, '/orders', { body: { plain: 1 } })
        assert.equal(post2.headers.get(REPLAYED), null)
        assert.notEqual(post1.text, post2.text)
        assert.equal(app.state.calls.orders, before + 4)
      })

      test('a malformed key is 400 and does not run', async () => {
        const before = app.state.calls.orders
        for (const bad of ['has space', 'k'.repeat(256)]) {
          const refused = await call(app.base, '/orders', { key: bad, body: {} })
          assert.equal(refused.status, 400, refused.text)
          assert.match(refused.headers.get('content-type'), /^application\/problem\+json/)
        }
        assert.equal(app.state.calls.orders, before)
      })
    })
  }
}

describe('options', () => {
  let client
  before(async () => {
    client = await polylock.connect(`sqlite://${tempDir()}/locks.db`)
  })
  after(() => client?.close())

  test('an unknown or malformed option is POLYLOCK_INVALID_ARGUMENT, for Express at once and for Fastify at register', async () => {
    for (const options of [
      { client, lifetime: 1000 },
      { client, header: 'Bad Header' },
      { client, lifetimeMs: 0 },
      { client, methods: [] },
      { client, methods: 'POST' },
      { client, fingerprint: 'sha' },
      { header: 'Idempotency-Key' },
    ]) {
      assert.throws(() => expressIdempotency(options), (err) => err.code === 'POLYLOCK_INVALID_ARGUMENT', JSON.stringify(Object.keys(options)))
      const app = Fastify()
      app.register(fastifyIdempotency, options)
      await assert.rejects(app.ready(), (err) => err.code === 'POLYLOCK_INVALID_ARGUMENT')
      await app.close()
    }
  })

  test('header, methods, lifetimeMs and fingerprint options are honoured', async () => {
    const namespace = newNamespace()
    const seen = []
    const app = express()
    app.use(
      expressIdempotency({
        client,
        namespace,
        header: 'X-Request-Id',
        methods: ['put'],
        lifetimeMs: 60_000,
        // Fingerprint on the path only: another body with the same key replays.
        fingerprint: (req, rawBody) => {
          seen.push(rawBody.toString())
          return req.path
        },
      }),
    )
    let runs = 0
    app.put('/things', (req, res) => res.json({ run: ++runs }))
    app.post('/things', (req, res) => res.json({ run: ++runs }))
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const base = `http://127.0.0.1:${server.address().port}`
    try {
      const key = newKey()
      const first = await call(base, '/things', { key, method: 'PUT', header: 'X-Request-Id', body: { a: 1 } })
      const second = await call(base, '/things', { key, method: 'PUT', header: 'X-Request-Id', body: { a: 2 } })
      assert.equal(second.headers.get(REPLAYED), 'true')
      assert.equal(second.text, first.text)
      assert.deepEqual(seen, ['{"a":1}', '{"a":2}'])
      // POST is not among the methods, and Idempotency-Key is not the header: both run.
      await call(base, '/things', { key, header: 'X-Request-Id', body: {} })
      await call(base, '/things', { key, header: 'X-Request-Id', body: {} })
      assert.equal(runs, 3)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})

describe('fastify: an error handler answering 4xx still gives the key up', () => {
  let client, app
  before(async () => {
    client = await polylock.connect(`sqlite://${tempDir()}/locks.db`)
    app = await fastifyApp(client, newNamespace(), { errorStatus: 418 })
  })
  after(async () => {
    await app?.close()
    await client?.close()
  })

  test('the retry runs again', async () => {
    const key = newKey()
    const first = await call(app.base, '/throw', { key, body: {} })
    assert.equal(first.status, 418)
    const again = await call(app.base, '/throw', { key, body: {} })
    assert.equal(again.status, 418)
    assert.equal(again.headers.get(REPLAYED), null)
    assert.equal(app.state.calls.throw, 2)
  })
})

describe('cross-server replay: Express and Fastify sharing one Redis namespace', { skip: REDIS_URL ? false : 'POLYLOCK_TEST_REDIS_URL is not set' }, () => {
  let expressClient, fastifyClient, expressServer, fastifyServer
  before(async () => {
    const namespace = newNamespace()
    expressClient = await polylock.connect(REDIS_URL)
    fastifyClient = await polylock.connect(REDIS_URL)
    expressServer = await expressApp(expressClient, namespace)
    fastifyServer = await fastifyApp(fastifyClient, namespace)
  })
  after(async () => {
    await expressServer?.close()
    await fastifyServer?.close()
    await expressClient?.close()
    await fastifyClient?.close()
  })

  for (const [from, to] of [
    ['express', 'fastify'],
    ['fastify', 'express'],
  ]) {
    test(`${from} stores, ${to} replays without running`, async () => {
      const servers = { express: expressServer, fastify: fastifyServer }
      const key = newKey()
      const body = { item: 'lamp', from }
      const stored = await call(servers[from].base, '/orders', { key, body })
      assert.equal(stored.status, 201)
      const before = servers[to].state.calls.orders
      const replayed = await call(servers[to].base, '/orders', { key, body })
      assert.equal(replayed.status, 201)
      assert.equal(replayed.headers.get(REPLAYED), 'true')
      assert.equal(replayed.text, stored.text)
      assert.deepEqual(replayed.headers.getSetCookie(), ['a=1', 'b=2'])
      assert.equal(servers[to].state.calls.orders, before, `${to}'s route did not run`)
      const mismatch = await call(servers[to].base, '/orders', { key, body: { ...body, extra: 1 } })
      assert.equal(mismatch.status, 422)
    })
  }
})

test('the kit functions are exported and refuse bad input with POLYLOCK_INVALID_ARGUMENT', () => {
  assert.equal(polylock.HTTP_REPLAYED_HEADER, 'Idempotent-Replayed')
  assert.equal(polylock.httpIdempotencyKeyOf(' "abc" '), 'abc')
  assert.equal(polylock.httpIdempotencyKeyProblem('abc'), null)
  const stored = polylock.encodeHttpResponse({ status: 201, headers: [['Content-Length', '2'], ['X-A', '1']], body: Buffer.from('{}') })
  assert.deepEqual(polylock.decodeHttpResponse(stored), { status: 201, headers: [['x-a', '1']], body: Buffer.from('{}') })
  assert.throws(() => polylock.encodeHttpResponse({ status: 99, headers: [], body: Buffer.alloc(0) }), (e) => e.code === 'POLYLOCK_INVALID_ARGUMENT')
  assert.throws(() => polylock.decodeHttpResponse(Buffer.from('bxyz')), (e) => e.code === 'POLYLOCK_INVALID_ARGUMENT')
  assert.throws(() => new polylock.HttpIdempotencyRules({ methods: ['GE T'] }), (e) => e.code === 'POLYLOCK_INVALID_ARGUMENT')
  assert.equal(polylock.httpIdempotencyStores(503), false)
})
