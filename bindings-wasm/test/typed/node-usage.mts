// A user's Node code, type-checked against types/node.d.ts (never run). The @ts-expect-error
// lines fail the check if the declarations stop refusing what they must refuse.
import {
  Snowflake,
  UlidGenerator,
  errorCodes,
  mysqlLockName,
  parseSnowflake,
  postgresAdvisoryKey,
  shedlockName,
  timestampOf,
  ulid,
  ulidBatch,
  ulidToUuid,
  uuid7,
  uuid7Batch,
  uuidToUlid,
  type SnowflakeOptions,
  type SnowflakeParts,
} from 'polylock-wasm'

const options: SnowflakeOptions = { workerId: 1n, epochMs: 1_700_000_000_000, layout: { workerBits: 8 } }
using ids = new Snowflake(options)
const id: bigint = ids.nextId()
const text: string = ids.nextIdString()
const batch: BigUint64Array = ids.nextIds(10)
const parts: SnowflakeParts = ids.parse(text)
const { timestampMs, workerId, sequence }: { timestampMs: number; workerId: number; sequence: number } = parts
const lowest: bigint = ids.idFromTimestamp(Date.now())
const widths: number = ids.layout.timestampBits + ids.layout.workerBits + ids.layout.sequenceBits
const discord = new Snowflake({ workerId: 3, layout: 'discord' })
parseSnowflake(id, { layout: 'twitter' })
parseSnowflake('1050118621198921728')
// @ts-expect-error IDs are never Numbers
parseSnowflake(1050118621198921728)
// @ts-expect-error the worker id is required
new Snowflake({ epochMs: 0 })
// @ts-expect-error an unknown layout name
new Snowflake({ workerId: 1, layout: 'sonyflake' })

const stamps: number[] = [timestampOf(uuid7()), timestampOf(ulid()), timestampOf(id), timestampOf(text, { epochMs: 0 })]
const many: string[] = [...uuid7Batch(3), ...ulidBatch(3), new UlidGenerator({ overflow: 'error' }).next()]
new UlidGenerator().batch(2)
// @ts-expect-error an unknown overflow policy
new UlidGenerator({ overflow: 'wrap' })
const converted: string = uuidToUlid(ulidToUuid(ulid()))
const key: bigint = postgresAdvisoryKey('orders:42')
const names: string[] = [mysqlLockName('orders:42'), shedlockName('job'), ...errorCodes()]
discord.free()

export { batch, timestampMs, workerId, sequence, lowest, widths, stamps, many, converted, key, names }
