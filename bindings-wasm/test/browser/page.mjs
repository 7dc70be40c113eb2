// Runs in Chromium (test/browser.test.mjs): the web build, initialised the way the README
// shows, against the shared vectors and live generation. The verdict lands in
// window.polylockResult as plain JSON (BigInts as strings).
import init, * as polylock from 'polylock-wasm'
import { checkVectors } from '/test/vector-checks.mjs'

function live() {
  const failures = []
  const expect = (ok, what) => ok || failures.push(what)
  const generator = new polylock.Snowflake({ workerId: 513 })
  const ids = Array.from({ length: 20000 }, () => generator.nextId())
  expect(ids.every((id, i) => typeof id === 'bigint' && (i === 0 || id > ids[i - 1])), 'nextId: increasing BigInts')
  const parts = generator.parse(ids.at(-1))
  expect(parts.workerId === 513, `parse: worker ${parts.workerId}`)
  expect(Math.abs(parts.timestampMs - Date.now()) < 5000, `parse: timestamp ${parts.timestampMs} vs ${Date.now()}`)
  const batch = generator.nextIds(1000)
  expect(batch instanceof BigUint64Array && batch[0] > ids.at(-1), 'nextIds: a BigUint64Array after the last nextId')
  const uuids = polylock.uuid7Batch(100000)
  expect(uuids.every((u, i) => i === 0 || u > uuids[i - 1]), 'uuid7Batch: increasing')
  expect(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(polylock.uuid7()), 'uuid7: RFC 9562 form')
  const ulids = polylock.ulidBatch(100000)
  expect(ulids.every((u, i) => i === 0 || u > ulids[i - 1]), 'ulidBatch: increasing')
  expect(Math.abs(polylock.timestampOf(polylock.ulid()) - Date.now()) < 5000, 'ulid: of now')
  try {
    polylock.parseSnowflake(5)
    failures.push('a Number was accepted as an ID')
  } catch (err) {
    expect(err instanceof Error && err.name === 'PolylockError' && err.code === 'POLYLOCK_INVALID_ARGUMENT', `error: ${err}`)
  }
  return { failures, sample: { snowflake: String(ids[0]), uuid7: uuids[0], ulid: ulids[0] } }
}

try {
  await init()
  const vectors = checkVectors(polylock, await (await fetch('/test/vectors.tsv')).text())
  const { failures, sample } = live()
  window.polylockResult = {
    userAgent: navigator.userAgent,
    checks: vectors.checks,
    failures: vectors.failures.concat(failures),
    sample,
  }
} catch (err) {
  window.polylockResult = { failures: [`threw: ${err?.stack ?? err}`] }
}
