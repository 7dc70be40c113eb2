// Run by tests/release/run-tests.sh in a fresh npm project with only the released
// polylock-wasm tarball installed (IDs and SQL lock names: the package has no backends).
//
//   node smoke.cjs VERSION
const { Snowflake, parseSnowflake, uuid7, ulid, postgresAdvisoryKey } = require('polylock-wasm')
const { version } = require('polylock-wasm/package.json')

if (version !== process.argv[2]) throw new Error(`polylock-wasm is ${version}, expected ${process.argv[2]}`)
const id = new Snowflake({ workerId: 7 }).nextId()
if (typeof id !== 'bigint' || parseSnowflake(id).workerId !== 7) throw new Error('snowflake round trip failed')
if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(uuid7()) || ulid().length !== 26) throw new Error('uuid7/ulid')
if (typeof postgresAdvisoryKey('orders:42') !== 'bigint') throw new Error('postgresAdvisoryKey')
console.log(`wasm: polylock-wasm ${version}: snowflake ${id}, uuid7, ulid and advisory key ok`)
