// Logs and metrics (issue 23), against real servers: off by default and silent, POLYLOCK_LOG
// and DEBUG=polylock write to stderr, a logger function gets plain records naming the lock,
// levels change what arrives, bad level names are typed errors, no password reaches any
// record, a busy JavaScript thread never holds up the runtime, and the metrics count
// acquisitions and releases as the Prometheus text does.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import { fileURLToPath } from 'node:url'

import polylock from '../index.js'
import { tempDir, uniqueName, sleep, rejection, REDIS_URL } from './helpers.mjs'

const CHILD = fileURLToPath(new URL('./fixtures/log-child.mjs', import.meta.url))
const EXIT_LIMIT_MS = 10_000

const backends = [['sqlite', () => `sqlite://${tempDir()}/obs.db`]]
if (REDIS_URL) backends.push(['redis', () => REDIS_URL])

after(() => polylock.setLogger(null))

/** Run log-child.mjs with `env` added to a copy of ours without POLYLOCK_LOG and DEBUG. */
function runChild(scenario, url, name, env = {}) {
  const childEnv = { ...process.env, ...env }
  for (const variable of ['POLYLOCK_LOG', 'DEBUG']) {
    if (!(variable in env)) delete childEnv[variable]
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, scenario, url, name], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: childEnv,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const killer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${scenario}: the child did not exit within ${EXIT_LIMIT_MS} ms (stderr: ${stderr})`))
    }, EXIT_LIMIT_MS)
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, stdout: stdout.trim().split('\n'), stderr })
    })
  })
}

/** Route records at `level` into a fresh array, which is returned. */
function collect(level) {
  const records = []
  polylock.setLogger((record) => records.push(record), level)
  return records
}

/** Resolves once `records` has one matching `predicate` (polled; they arrive through a queue). */
async function recordMatching(records, predicate, what, limitMs = 5000) {
  const deadline = performance.now() + limitMs
  for (;;) {
    const found = records.find(predicate)
    if (found) return found
    if (performance.now() > deadline) {
      assert.fail(`no record ${what} within ${limitMs} ms; got ${JSON.stringify(records.slice(-10))}`)
    }
    await sleep(10)
  }
}

const names = (records, name) => records.filter((record) => record.fields.name === name)

async function acquireRelease(client, name) {
  const guard = await client.lock(name).acquire({ waitMs: 5000 })
  await guard.release()
}

for (const [backend, url] of backends) {
  describe(`logs from the environment, in a child process on ${backend}`, () => {
    test('off by default: logLevel() is off and nothing is written to stderr', async () => {
      const { code, stdout, stderr } = await runChild('plain', url(), uniqueName('obs-off'))
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['off'])
      assert.equal(stderr, '')
    })

    test('POLYLOCK_LOG=debug writes the records to stderr, naming the lock', async () => {
      const name = uniqueName('obs-env')
      const { code, stdout, stderr } = await runChild('plain', url(), name, { POLYLOCK_LOG: 'debug' })
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['debug'])
      assert.match(stderr, /^polylock INFO  polylock::client: connected op=connect backend=/m)
      assert.match(stderr, new RegExp(`^polylock DEBUG polylock::engine::acquire: acquired op=acquire name=${name} backend=${backend} kind=reentrant outcome=acquired `, 'm'))
      assert.match(stderr, new RegExp(`^polylock DEBUG polylock::engine::acquire: released op=release name=${name} `, 'm'))
      for (const line of stderr.trim().split('\n')) assert.match(line, /^polylock (ERROR|WARN |INFO |DEBUG|TRACE) /)
    })

    test('POLYLOCK_LOG=info leaves the debug records out', async () => {
      const { code, stdout, stderr } = await runChild('plain', url(), uniqueName('obs-info'), { POLYLOCK_LOG: 'info' })
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['info'])
      assert.match(stderr, /^polylock INFO  polylock::client: connected /m)
      assert.doesNotMatch(stderr, /DEBUG/)
    })

    test('DEBUG=other,polylock turns on debug records too', async () => {
      const name = uniqueName('obs-debug')
      const { code, stdout, stderr } = await runChild('plain', url(), name, { DEBUG: 'express:*,polylock' })
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['debug'])
      assert.match(stderr, new RegExp(`^polylock DEBUG polylock::engine::acquire: acquired op=acquire name=${name} `, 'm'))
    })

    test('a bad POLYLOCK_LOG is one warning on stderr; logging stays off and the calls work', async () => {
      const { code, stdout, stderr } = await runChild('plain', url(), uniqueName('obs-bad'), { POLYLOCK_LOG: 'loud' })
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['off'])
      const warnings = stderr.split('\n').filter((line) => line.includes('PolylockWarning'))
      assert.equal(warnings.length, 1, stderr)
      assert.match(warnings[0], /\[POLYLOCK_INVALID_ARGUMENT\] PolylockWarning: POLYLOCK_LOG: unknown log level "loud"/)
      assert.doesNotMatch(stderr, /^polylock /m)
    })

    test('a logger that is never unset does not keep the process alive, and writes nothing to stderr', async () => {
      const { code, stdout, stderr } = await runChild('logger', url(), uniqueName('obs-logger'))
      assert.equal(code, 0, stderr)
      assert.deepEqual(stdout, ['debug', '2'])
      assert.equal(stderr, '')
    })
  })

  describe(`a logger function on ${backend}`, () => {
    test('gets plain records on the JavaScript thread, naming the lock', async () => {
      const records = collect('debug')
      assert.equal(polylock.logLevel(), 'debug')
      const client = await polylock.connect(url())
      const name = uniqueName('obs-records')
      await acquireRelease(client, name)
      const acquired = await recordMatching(records, (r) => r.fields.name === name && r.fields.op === 'acquire', 'of the acquire')
      assert.deepEqual(Object.keys(acquired), ['level', 'target', 'message', 'fields'])
      assert.equal(acquired.level, 'debug')
      assert.equal(acquired.target, 'polylock::engine::acquire')
      assert.equal(acquired.message, 'acquired')
      // The fields in the order the core wrote them, values as text.
      assert.deepEqual(Object.keys(acquired.fields).slice(0, 5), ['op', 'name', 'backend', 'kind', 'outcome'])
      assert.equal(acquired.fields.backend, backend)
      assert.equal(acquired.fields.outcome, 'acquired')
      assert.match(acquired.fields.token, /^\d+$/)
      const released = await recordMatching(records, (r) => r.fields.name === name && r.fields.op === 'release', 'of the release')
      assert.equal(released.fields.outcome, 'released')
      const connected = records.find((r) => r.fields.op === 'connect')
      assert.equal(connected?.level, 'info')
      assert.equal(connected.fields.client, client.clientId)
      await client.close()
    })

    test('level changes take effect; setLogger(null) stops the records', async () => {
      const records = collect('warn')
      const client = await polylock.connect(url())
      const name = uniqueName('obs-levels')
      await acquireRelease(client, name)
      await sleep(200)
      assert.deepEqual(names(records, name), [], 'debug records at warn')

      polylock.setLogLevel('DEBUG')
      assert.equal(polylock.logLevel(), 'debug')
      await acquireRelease(client, name)
      await recordMatching(records, (r) => r.fields.name === name && r.fields.op === 'release', 'after setLogLevel(debug)')

      polylock.setLogLevel('off')
      assert.equal(polylock.logLevel(), 'off')
      const before = names(records, name).length
      await acquireRelease(client, name)
      await sleep(200)
      assert.equal(names(records, name).length, before, 'records while off')

      polylock.setLogLevel('debug')
      polylock.setLogger(null)
      assert.equal(polylock.logLevel(), 'off')
      await acquireRelease(client, name)
      await sleep(200)
      assert.equal(names(records, name).length, before, 'records after setLogger(null)')

      // Without a level, a new logger takes the level logging is at, else info.
      const defaulted = collect()
      assert.equal(polylock.logLevel(), 'info')
      await client.close()
      await sleep(300)
      assert.deepEqual(defaulted.filter((r) => r.level === 'debug' || r.level === 'trace'), [])
      polylock.setLogLevel('trace')
      const kept = collect()
      assert.equal(polylock.logLevel(), 'trace')
      assert.deepEqual(kept, [])
      polylock.setLogger(null)
    })
  })
}

test("the README's pino-style routing calls the logger's method of each record's level", async () => {
  // What pino's API looks like (logger[level](mergingObject, message)), without pino.
  const calls = []
  const logger = Object.fromEntries(
    ['trace', 'debug', 'info', 'warn', 'error'].map((level) => [level, (object, message) => calls.push({ level, object, message })]),
  )
  polylock.setLogger((record) => logger[record.level]({ target: record.target, ...record.fields }, record.message), 'debug')
  const client = await polylock.connect(`sqlite://${tempDir()}/pino.db`)
  const name = uniqueName('obs-pino')
  await acquireRelease(client, name)
  await client.close()
  const acquired = await recordMatching(calls, (c) => c.object.name === name && c.message === 'acquired', 'at logger.debug')
  polylock.setLogger(null)
  assert.equal(acquired.level, 'debug')
  assert.equal(acquired.object.target, 'polylock::engine::acquire')
  assert.equal(acquired.object.op, 'acquire')
  assert.ok(calls.some((c) => c.level === 'info' && c.message === 'connected'))
})

test('bad level names and loggers are typed errors, and change nothing', () => {
  polylock.setLogLevel('warn')
  for (const call of [
    () => polylock.setLogLevel('loud'),
    () => polylock.setLogLevel('verbose'),
    () => polylock.setLogLevel(3),
    () => polylock.setLogger(() => {}, 'verbose'),
    () => polylock.setLogger(42),
    () => polylock.setLogger('console.log'),
    () => polylock.setMetricsEnabled('yes'),
  ]) {
    assert.throws(call, (err) => {
      assert.ok(err instanceof polylock.PolylockError, String(err))
      assert.equal(err.code, 'POLYLOCK_INVALID_ARGUMENT')
      return true
    })
  }
  assert.match(
    (() => {
      try {
        polylock.setLogLevel('loud')
      } catch (err) {
        return err.message
      }
    })(),
    /unknown log level "loud": expected one of off, error, warn, info, debug, trace/,
  )
  assert.equal(polylock.logLevel(), 'warn')
  assert.equal(polylock.metricsEnabled(), true)
  polylock.setLogger(null)
})

test('a logger that throws loses its records, not the caller; one warning says so', async () => {
  const warnings = []
  const onWarning = (warning) => warnings.push(warning)
  process.on('warning', onWarning)
  let calls = 0
  polylock.setLogger(() => {
    calls += 1
    throw new Error('logger broke')
  }, 'debug')
  const client = await polylock.connect(`sqlite://${tempDir()}/throws.db`)
  const name = uniqueName('obs-throws')
  await acquireRelease(client, name)
  await acquireRelease(client, name)
  await client.close()
  for (let i = 0; i < 100 && (calls < 5 || warnings.length === 0); i++) await sleep(10)
  polylock.setLogger(null)
  process.off('warning', onWarning)
  assert.ok(calls >= 5, `the logger was called ${calls} times`)
  const ours = warnings.filter((w) => w.name === 'PolylockWarning')
  assert.equal(ours.length, 1)
  assert.match(ours[0].message, /the polylock logger threw.*logger broke/s)
})

test('no password of a URL appears in any record, connected or refused (real servers)', async (t) => {
  const wrong = `Wr0ng-${crypto.randomUUID()}`
  const secrets = [wrong]
  const good = []
  const refused = []
  for (const variable of ['POLYLOCK_TEST_REDIS_TLS_URL', 'POLYLOCK_TEST_ETCD_TLS_URL', 'POLYLOCK_TEST_POSTGRES_URL', 'POLYLOCK_TEST_MARIADB_URL']) {
    const url = process.env[variable]
    if (!url) continue
    const parsed = new URL(url)
    // A password that is also the user or database name shows up as those, legitimately.
    if (parsed.password.length >= 8 && !url.replace(`:${parsed.password}@`, ':@').includes(parsed.password)) {
      secrets.push(decodeURIComponent(parsed.password))
      good.push(url)
    }
    refused.push(url.replace(`:${parsed.password}@`, `:${wrong}@`))
  }
  if (REDIS_URL) refused.push(REDIS_URL.replace('redis://', `redis://:${wrong}@`))
  if (good.length === 0) t.diagnostic('no server with a distinctive password is exported: only refused connects are checked')
  assert.ok(refused.length > 0, 'no server URL to test against')

  const records = collect('trace')
  for (const url of good) {
    const client = await polylock.connect(url)
    assert.ok(!client.url.includes(new URL(url).password), client.url)
    await acquireRelease(client, uniqueName('obs-secret'))
    await client.close()
  }
  for (const url of refused) {
    const err = await rejection(polylock.connect(url))
    assert.ok(err instanceof polylock.PolylockError, String(err))
    for (const secret of secrets) assert.ok(!err.message.includes(secret), `the password in: ${err.message}`)
  }
  await recordMatching(records, (r) => r.fields.op === 'connect' && r.level === 'warn', 'of a refused connect')
  await sleep(200)
  polylock.setLogger(null)
  const connects = records.filter((r) => r.fields.op === 'connect')
  assert.ok(connects.length >= good.length + refused.length, `${connects.length} connect records`)
  assert.ok(connects.some((r) => r.fields.url.includes(':***@')), 'no redacted URL among the connect records')
  for (const record of records) {
    const text = JSON.stringify(record)
    for (const secret of secrets) assert.ok(!text.includes(secret), `a password in a record: ${text}`)
  }
  t.diagnostic(`${records.length} records checked, ${good.length} connected and ${refused.length} refused URLs`)
})

for (const [backend, url] of backends) {
  describe(`metrics on ${backend}`, () => {
    const series = (snapshot) => snapshot.series.find((s) => s.backend === backend && s.kind === 'reentrant')

    test('acquire, release and a timeout move the process and client counts; the Prometheus text agrees', async () => {
      const where = url()
      const before = series(polylock.metrics())
      const client = await polylock.connect(where)
      const other = await polylock.connect(where)
      const name = uniqueName('obs-metrics')
      for (let i = 0; i < 3; i++) await acquireRelease(client, name)
      const held = await other.lock(name).acquire()
      const err = await rejection(client.lock(name).acquire({ waitMs: 0 }))
      assert.equal(err.code, 'POLYLOCK_TIMEOUT')
      await held.release()

      const own = client.metrics()
      assert.deepEqual(Object.keys(own).sort(), ['backends', 'buckets_le_seconds', 'series'])
      assert.equal(own.buckets_le_seconds.length, 18)
      const mine = series(own)
      assert.deepEqual(mine.acquires, { acquired: 3, cancelled: 0, error: 0, reentered: 0, timeout: 1 })
      assert.equal(mine.releases, 3)
      assert.equal(mine.acquire_wait.count, 3)
      assert.equal(mine.hold_time.count, 3)
      assert.equal(mine.acquire_wait.buckets.length, 19)
      assert.equal(mine.acquire_wait.buckets.reduce((a, b) => a + b, 0), 3)
      assert.ok(mine.acquire_wait.sum_seconds > 0)
      assert.equal(mine.lost.taken, 0)
      assert.equal(mine.errors.CONNECTION, 0)
      const all = polylock.metrics()
      // A client's connection counts are its backend's, process-wide (as the core keeps them).
      assert.deepEqual(own.backends, [all.backends.find((b) => b.backend === backend)])
      const now = series(all)
      const was = before ?? { acquires: { acquired: 0, timeout: 0 }, releases: 0 }
      // Both clients' counts, summed: 4 granted (3 + the other's hold), 1 timeout.
      assert.equal(now.acquires.acquired - was.acquires.acquired, 4)
      assert.equal(now.acquires.timeout - was.acquires.timeout, 1)
      assert.equal(now.releases - was.releases, 4)
      assert.ok(all.backends.find((b) => b.backend === backend).connects >= 2)

      const text = polylock.prometheusText()
      const line = `polylock_acquires_total{backend="${backend}",kind="reentrant",outcome="acquired"} ${now.acquires.acquired}`
      assert.ok(text.split('\n').includes(line), `no line '${line}' in the Prometheus text`)
      assert.match(text, /^# TYPE polylock_acquire_wait_seconds histogram$/m)
      await client.close()
      await other.close()
    })

    test('setMetricsEnabled(false) stops the counting, true starts it again', async () => {
      const client = await polylock.connect(url())
      const name = uniqueName('obs-enabled')
      try {
        polylock.setMetricsEnabled(false)
        assert.equal(polylock.metricsEnabled(), false)
        await acquireRelease(client, name)
        assert.equal(series(client.metrics())?.acquires.acquired ?? 0, 0)
      } finally {
        polylock.setMetricsEnabled(true)
      }
      assert.equal(polylock.metricsEnabled(), true)
      await acquireRelease(client, name)
      assert.equal(series(client.metrics()).acquires.acquired, 1)
      await client.close()
    })
  })
}

test('a busy JavaScript thread never holds up the runtime: records are dropped, renewals go on', { skip: !REDIS_URL && 'needs POLYLOCK_TEST_REDIS_URL' }, async () => {
  // 200 locks on a 600 ms lease, so the watchdog renews each every 200 ms and logs each
  // renewal at debug: ~2000 records while the JavaScript thread spins for 2 s, twice what
  // the logger's queue holds. A sink that waited for room would stop the runtime's workers,
  // and with them the renewals; the holds would be lost.
  const records = collect('debug')
  const client = await polylock.connect(`${REDIS_URL}${REDIS_URL.includes('?') ? '&' : '?'}lease=600ms`)
  const prefix = uniqueName('obs-busy')
  const guards = []
  for (let i = 0; i < 200; i++) guards.push(await client.lock(`${prefix}:${i}`).acquire({ waitMs: 5000 }))
  const renewalsBefore = client.metrics().series[0].renewals
  const droppedBefore = polylock.logRecordsDropped()
  const spinUntil = performance.now() + 2000
  while (performance.now() < spinUntil) {
    // Busy: no turn of the event loop for 2 s.
  }
  const renewed = client.metrics().series[0].renewals - renewalsBefore
  const dropped = polylock.logRecordsDropped() - droppedBefore
  await sleep(100)
  polylock.setLogger(null)
  assert.ok(renewed >= 1000, `only ${renewed} renewals while the JavaScript thread was busy`)
  assert.ok(dropped > 0, `no record dropped: ${renewed} renewals, ${records.length} records`)
  assert.ok(records.length <= 1024 + 600, `${records.length} records got through a queue of 1024`)
  assert.deepEqual(guards.filter((guard) => guard.isLost).map((guard) => guard.name), [])
  for (const guard of guards) await guard.release()
  await client.close()
})
