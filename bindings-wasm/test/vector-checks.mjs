// The shared vectors (vectors.tsv) checked against one loaded build of polylock-wasm. Plain
// ES module with no Node imports: the Node suite runs it on the Node build and on the web
// build, and test/browser/page.mjs runs it in Chromium on the web build.

/** The rows of one kind of vectors.tsv, as arrays of fields (the kind left out). */
export function vectorRows(text, kind) {
  const rows = text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split('\t'))
    .filter((fields) => fields[0] === kind)
    .map((fields) => fields.slice(1))
  if (rows.length === 0) throw new Error(`vectors.tsv has no ${kind} rows`)
  return rows
}

/** The `{ epochMs?, layout? }` options of a layout column: `twitter`, `discord` or `epoch/t/w/s`. */
export function layoutOptions(spec) {
  if (spec === 'twitter' || spec === 'discord') return { layout: spec }
  const [epochMs, timestampBits, workerBits, sequenceBits] = spec.split('/').map(Number)
  return { epochMs, layout: { timestampBits, workerBits, sequenceBits } }
}

function equal(failures, what, got, want) {
  if (got !== want) failures.push(`${what}: got ${String(got)}, want ${String(want)}`)
}

/**
 * Every vector against `polylock` (the module's exports). Returns the list of mismatches
 * (empty when all agree) and how many checks ran.
 */
export function checkVectors(polylock, text) {
  const failures = []
  let checks = 0
  const check = (what, got, want) => {
    checks++
    equal(failures, what, got, want)
  }
  for (const [id, layout, timestampMs, workerId, sequence] of vectorRows(text, 'snowflake')) {
    const options = layoutOptions(layout)
    const want = { timestampMs: Number(timestampMs), workerId: Number(workerId), sequence: Number(sequence) }
    for (const input of [BigInt(id), id]) {
      const parts = polylock.parseSnowflake(input, options)
      for (const key of Object.keys(want)) check(`parseSnowflake(${id}, ${layout}).${key}`, parts[key], want[key])
      check(`timestampOf(${id}, ${layout})`, polylock.timestampOf(input, options), want.timestampMs)
    }
    const generator = new polylock.Snowflake({ workerId: 0, ...options })
    try {
      const parts = generator.parse(BigInt(id))
      for (const key of Object.keys(want)) check(`Snowflake(${layout}).parse(${id}).${key}`, parts[key], want[key])
    } finally {
      generator.free()
    }
  }
  for (const [uuid, timestampMs] of vectorRows(text, 'uuid7')) {
    check(`timestampOf(${uuid})`, polylock.timestampOf(uuid), Number(timestampMs))
    check(`timestampOf(${uuid} upper case)`, polylock.timestampOf(uuid.toUpperCase()), Number(timestampMs))
    check(`timestampOf(${uuid} without dashes)`, polylock.timestampOf(uuid.replaceAll('-', '')), Number(timestampMs))
  }
  for (const [ulid, timestampMs, uuid] of vectorRows(text, 'ulid')) {
    check(`timestampOf(${ulid})`, polylock.timestampOf(ulid), Number(timestampMs))
    check(`timestampOf(${ulid} lower case)`, polylock.timestampOf(ulid.toLowerCase()), Number(timestampMs))
    check(`ulidToUuid(${ulid})`, polylock.ulidToUuid(ulid), uuid)
    check(`uuidToUlid(${uuid})`, polylock.uuidToUlid(uuid), ulid)
  }
  for (const [name, advisoryKey, mysqlName, shedlockName] of vectorRows(text, 'names')) {
    check(`postgresAdvisoryKey(${name})`, polylock.postgresAdvisoryKey(name), BigInt(advisoryKey))
    check(`mysqlLockName(${name})`, polylock.mysqlLockName(name), mysqlName)
    check(`shedlockName(${name})`, polylock.shedlockName(name), shedlockName)
  }
  return { failures, checks }
}
