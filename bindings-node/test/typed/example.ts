// A typed example: `tsc --noEmit --strict` must accept it against index.d.ts (types.test.mjs).
// It is never run; it shows the API's shapes and catches a declaration that drifts from them.
import {
  connect,
  parseSnowflake,
  PolylockError,
  Snowflake,
  redlockUrl,
  setLogger,
  setLogLevel,
  logLevel,
  logRecordsDropped,
  metrics,
  prometheusText,
  setMetricsEnabled,
  metricsEnabled,
  type BeginOutcome,
  type LogLevelName,
  type LogRecord,
  type LockEntry,
  type LockStatus,
  type MetricsSnapshot,
  type MetricsSeries,
  type Guard,
  type Leader,
  type Leadership,
  type MultiGuard,
  type PolylockErrorCode,
  type RedLock,
  type SnowflakeParts,
  type VersionedValue,
} from 'polylock'

async function main(): Promise<void> {
  const client = await connect(process.env.POLYLOCK_URL)
  const lock = client.lock('orders:42', { kind: 'reentrant' })
  const controller = new AbortController()

  const guard: Guard = await lock.acquire({ waitMs: 5000, leaseMs: 30_000, signal: controller.signal })
  const token: bigint | null = guard.fencingToken
  const lostFlag: boolean = guard.isLost
  const reason: string | null = guard.lostReason
  guard.lost.then((err: PolylockError) => console.error(err.code, err.message))
  const again: Guard = await guard.reenter()
  await again.release()
  await guard.release()

  const maybe: Guard | null = await lock.tryAcquire({ waitMs: 100 })
  await maybe?.release()

  const total: number = await lock.withLock(async (held) => {
    const t: bigint | null = held.fencingToken
    return Number((t ?? 0n) % 10n)
  })

  try {
    await lock.acquire({ waitMs: 0 })
  } catch (err) {
    if (err instanceof PolylockError) {
      const code: PolylockErrorCode = err.code
      console.log(code)
    }
  }

  const ids = new Snowflake({ workerId: 7 })
  const id: bigint = ids.nextId()
  const text: string = ids.nextIdString()
  const batch: BigUint64Array = ids.nextIds(10)
  const parts: SnowflakeParts = parseSnowflake(id)
  const fromText: number = parseSnowflake(text).worker
  console.log(token, lostFlag, reason, total, batch.length, parts.timestampMs, fromText, client.url, client.closed)

  // IDs from the backend: BigInts or strings, never Numbers.
  const segment = client.segment('orders', { step: 100, waitMs: 1000 })
  const segmentId: bigint = await segment.nextId()
  const segmentIds: BigUint64Array = await segment.nextIds(10)
  const segmentText: string[] = await segment.nextIdStrings(2)
  const leased = await client.snowflake({ layout: { epochMs: 1700000000000 } })
  const leasedWorker: number | null = await leased.workerId()
  const leasedId: bigint = await leased.nextId()
  await leased.close()

  // Versioned values and fenced writes, with the details a failure carries.
  const value = client.value('config')
  const found: VersionedValue | null = await value.get()
  try {
    await value.compareAndSet(found?.version ?? 0n, Buffer.from('v2'))
  } catch (err) {
    if (err instanceof PolylockError && err.code === 'POLYLOCK_CONFLICT') {
      const current: Buffer | null | undefined = err.current
      const currentVersion: bigint | null | undefined = err.currentVersion
      console.log(current, currentVersion)
    }
  }
  const fencedVersion: bigint = await value.writeFenced(token ?? 0n, 'payload')
  const watcher = value.watch()
  for await (const state of watcher) {
    const watchedVersion: bigint | undefined = state?.version
    console.log(watchedVersion)
    break
  }
  watcher.close()

  // Admin: what the CLI's status, list and unlock --force show and do.
  const locked: boolean = await lock.isLocked()
  const status: LockStatus = await client.status('orders:42', { kind: 'reentrant' })
  const holderToken: bigint | null = status.fencing_token
  const leaseLeft: number | null = status.remaining_lease_ms
  const entries: LockEntry[] = await client.list('orders:')
  const broken: boolean = await client.forceUnlock('orders:42')
  console.log(locked, holderToken, leaseLeft, entries.map((e) => `${e.name} ${e.kind} ${e.held}`), broken)

  // Idempotency keys.
  const idem = client.idempotency('payments', { retentionMs: 60_000, inProgressTtlMs: 5_000 })
  const charged: { id: number } = await idem.run('request-1', { amount: 10 }, async () => ({ id: 1 }), { waitMs: 100 })
  const outcome: BeginOutcome = await idem.begin('request-2', Buffer.from('payload'))
  if (outcome.outcome === 'acquired') {
    const ticketToken: bigint = outcome.ticket.token
    await outcome.ticket.complete('done')
    console.log(ticketToken)
  }

  // Several locks as one.
  const multi = client.multiLock(['a', { name: 'b', side: 'read' }])
  const multiGuard: MultiGuard = await multi.acquire({ waitMs: 1000, leaseMs: 5000 })
  const partToken: bigint | null = multiGuard.fencingTokens[0].token
  await multiGuard.release()
  const url: string = redlockUrl(['127.0.0.1:30001', 'redis://127.0.0.1:30002'])
  const useRedlock = async (lock: RedLock) => {
    const guard = await lock.acquire({ leaseMs: 1000 })
    const none: bigint | null = guard.fencingToken
    await guard.release()
    await lock.close()
    return none
  }
  console.log(segmentId, segmentIds, segmentText, leasedWorker, leasedId, fencedVersion, charged, partToken, url, useRedlock)

  // Leader election: the term is a fencing token; values are bytes (a string is its UTF-8).
  const election = client.election('scheduler')
  const leadership: Leadership = await election.campaign('node-a', { waitMs: 30_000, signal: controller.signal })
  const tried: Leadership | null = await election.tryCampaign('node-b', { waitMs: 0 })
  await tried?.resign()
  const term: bigint = leadership.term
  const leading: boolean = leadership.isLeader && !leadership.isLost
  leadership.lost.then((err: PolylockError) => console.error(err.code))
  await leadership.proclaim(Buffer.from('node-a:v2'))
  const current: Leader | null = await election.leader()
  const currentValue: Buffer | undefined = current?.value
  const observer = election.observe()
  for await (const change of observer) {
    const changeTerm: bigint | undefined = change?.term
    console.log(changeTerm)
    break
  }
  observer.close()
  await leadership.resign()

  // Countdown latch.
  const latch = client.latch('batch-42')
  const set: boolean = await latch.trySetCount(3)
  await latch.countDown()
  const left: number = await latch.count()
  const opened: boolean = await latch.await(30_000, { signal: controller.signal })
  const forever: boolean = await latch.await()
  const sameWait: boolean = await latch.await({ waitMs: 30_000, signal: controller.signal })
  await latch.awaitZero({ waitMs: 30_000, signal: controller.signal })
  await latch.awaitZero()
  console.log(sameWait)
  console.log(term, leading, currentValue, set, left, opened, forever)

  // Logs and metrics.
  setLogger((record: LogRecord) => {
    const level: 'error' | 'warn' | 'info' | 'debug' | 'trace' = record.level
    const name: string | undefined = record.fields.name
    console.log(level, record.target, record.message, name)
  }, 'debug')
  setLogLevel('warn')
  const now: LogLevelName = logLevel()
  setLogger(null)
  const dropped: number = logRecordsDropped()
  const snapshot: MetricsSnapshot = metrics()
  const mine: MetricsSeries | undefined = client.metrics().series.find((s) => s.kind === 'reentrant')
  const granted: number = (mine?.acquires.acquired ?? 0) + snapshot.series.length
  const lostTaken: number | undefined = mine?.lost.taken
  const connectionErrors: number | undefined = mine?.errors.CONNECTION
  const waited: number[] | undefined = mine?.acquire_wait.buckets
  setMetricsEnabled(!metricsEnabled())
  const scrape: string = prometheusText()
  console.log(now, dropped, granted, lostTaken, connectionErrors, waited, scrape)

  await client.close()
}

void main
