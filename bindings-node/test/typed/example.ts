// A typed example: `tsc --noEmit --strict` must accept it against index.d.ts (types.test.mjs).
// It is never run; it shows the API's shapes and catches a declaration that drifts from them.
import { connect, parseSnowflake, PolylockError, type Guard, type PolylockErrorCode, type SnowflakeParts } from 'polylock'

async function main(): Promise<void> {
  const client = await connect(process.env.POLYLOCK_URL)
  const lock = client.lock('orders:42', { kind: 'reentrant' })
  const controller = new AbortController()

  const guard: Guard = await lock.acquire({ waitMs: 5000, leaseMs: 30_000, signal: controller.signal })
  const token: bigint = guard.fencingToken
  const lostFlag: boolean = guard.isLost
  const reason: string | null = guard.lostReason
  guard.lost.then((err: PolylockError) => console.error(err.code, err.message))
  const again: Guard = await guard.reenter()
  await again.release()
  await guard.release()

  const maybe: Guard | null = await lock.tryAcquire({ waitMs: 100 })
  await maybe?.release()

  const total: number = await lock.withLock(async (held) => {
    const t: bigint = held.fencingToken
    return Number(t % 10n)
  })

  try {
    await lock.acquire({ waitMs: 0 })
  } catch (err) {
    if (err instanceof PolylockError) {
      const code: PolylockErrorCode = err.code
      console.log(code)
    }
  }

  const ids = client.snowflake({ workerId: 7 })
  const id: bigint = ids.nextId()
  const text: string = ids.nextIdString()
  const batch: BigUint64Array = ids.nextIds(10)
  const parts: SnowflakeParts = parseSnowflake(id)
  const fromText: number = parseSnowflake(text).worker
  console.log(token, lostFlag, reason, total, batch.length, parts.timestampMs, fromText, client.url, client.closed)

  await client.close()
}

void main
