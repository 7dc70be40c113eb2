// Issue 18 from Node: redlock([url1, url2, url3], name) over three private redis-servers this
// test starts (ports above 30000) and kills: a majority grants, no fencing token, and the real
// node-redlock excludes it on the same resource (each node in the same token layout).
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'

import Redis from 'ioredis'
import Redlock from 'redlock'

import polylock from '../index.js'
import { uniqueName, rejection, sleep } from './helpers.mjs'

/** A redis-server of our own on `port`, with no persistence; resolves once it answers PING. */
async function startRedis(port) {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => server.once('exit', resolve))
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  for (let i = 0; i < 100; i++) {
    if (server.exitCode !== null) break
    try {
      await probe.connect()
      await probe.ping()
      probe.disconnect()
      return { port, url: `redis://127.0.0.1:${port}`, server, exited }
    } catch {
      probe.disconnect()
      await sleep(50)
    }
  }
  server.kill('SIGKILL')
  return null
}

/** Three servers on free ports above 30000 (a port taken by someone else is skipped). */
async function startThree() {
  const nodes = []
  let port = 30000 + ((process.pid * 7) % 20000)
  while (nodes.length < 3 && port < 65000) {
    const node = await startRedis(port++)
    if (node) nodes.push(node)
  }
  assert.equal(nodes.length, 3, 'could not start three redis-servers')
  return nodes
}

describe('redlock() over three private redis-servers', () => {
  let nodes
  before(async () => {
    nodes = await startThree()
  })
  after(async () => {
    for (const node of nodes ?? []) {
      node.server.kill('SIGCONT')
      node.server.kill('SIGKILL')
      await node.exited
    }
  })

  test('a majority grants; guards have no fencing token; two redlock() locks exclude each other', async (t) => {
    const urls = nodes.map((node) => node.url)
    assert.equal(polylock.redlockUrl(urls), `redlock://${nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`)
    const name = uniqueName('node-redlock')
    const first = await polylock.redlock(urls, name)
    const second = await polylock.redlock([...urls].reverse(), name)
    t.after(() => Promise.all([first.close(), second.close()]))
    assert.equal(first.kind, 'token')
    const guard = await first.acquire({ leaseMs: 10_000 })
    assert.equal(guard.fencingToken, null, 'RedLock has no fencing token')
    assert.equal(await second.tryAcquire(), null)
    // Every node holds the token the guard wrote (node-redlock's layout: a plain string key).
    const values = await Promise.all(nodes.map(async (node) => {
      const redis = new Redis(node.url)
      try {
        return await redis.get(name)
      } finally {
        redis.disconnect()
      }
    }))
    assert.ok(values.every((value) => value !== null && value === values[0]), `${values}`)
    const waiting = second.acquire({ waitMs: 10_000, leaseMs: 10_000 })
    await sleep(200)
    await guard.release()
    const next = await waiting
    await next.release()
  })

  test('one node stopped (SIGSTOP): the other two still grant and exclude; two stopped: no grant', async (t) => {
    const urls = nodes.map((node) => node.url)
    const name = uniqueName('node-redlock')
    const lock = await polylock.redlock(urls, name)
    const rival = await polylock.redlock(urls, name)
    t.after(() => Promise.all([lock.close(), rival.close()]))
    nodes[0].server.kill('SIGSTOP')
    try {
      const guard = await lock.acquire({ waitMs: 5000, leaseMs: 5000 })
      assert.equal(await rival.tryAcquire({ leaseMs: 5000 }), null)
      await guard.release()
      nodes[1].server.kill('SIGSTOP')
      try {
        const err = await rejection(rival.acquire({ waitMs: 1000, leaseMs: 5000 }))
        assert.ok(['POLYLOCK_TIMEOUT', 'POLYLOCK_CONNECTION', 'POLYLOCK_BACKEND'].includes(err.code), `${err.code}: ${err.message}`)
      } finally {
        nodes[1].server.kill('SIGCONT')
      }
    } finally {
      nodes[0].server.kill('SIGCONT')
    }
    const guard = await rival.acquire({ waitMs: 5000, leaseMs: 5000 })
    await guard.release()
  })

  test('the real node-redlock and polylock exclude each other on one resource', async (t) => {
    const urls = nodes.map((node) => node.url)
    const clients = nodes.map((node) => new Redis(node.url))
    const redlock = new Redlock(clients, { retryCount: 0 })
    redlock.on('error', () => {})
    const name = uniqueName('node-redlock')
    try {
      const lock = await polylock.redlock(urls, name)
      t.after(() => lock.close())
      assert.equal(typeof lock[Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')], 'function')
      const guard = await lock.acquire({ leaseMs: 10_000 })
      await assert.rejects(redlock.acquire([name], 5000), /quorum|locked|attempts/i)
      await guard.release()

      const theirs = await redlock.acquire([name], 10_000)
      assert.equal(await lock.tryAcquire({ leaseMs: 5000 }), null)
      const waiting = lock.acquire({ waitMs: 10_000, leaseMs: 5000 })
      await sleep(300)
      await theirs.release()
      const ours = await waiting
      await ours.release()
    } finally {
      for (const client of clients) client.disconnect()
    }
  })

  test('bad server lists are INVALID_ARGUMENT, without a password in the message', async () => {
    for (const urls of [[], ['localhost'], ['rediss://127.0.0.1:1'], ['redis://:s3cret1@a:1', 'redis://:s3cret2@b:2'], 'x']) {
      const err = await rejection(polylock.redlock(urls, 'name'))
      assert.ok(err instanceof polylock.PolylockError)
      assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT', `${JSON.stringify(urls)}: ${err.message}`)
      assert.doesNotMatch(err.message, /s3cret/)
    }
  })
})
