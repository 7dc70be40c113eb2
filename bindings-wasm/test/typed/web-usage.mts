// A user's browser code, type-checked against types/web.d.ts (never run): the web build
// must be initialised before use.
import init, { initSync, Snowflake, uuid7, type InitOutput } from 'polylock-wasm/web'

const ready: InitOutput = await init()
await init({ module_or_path: new URL('polylock_wasm_bg.wasm', import.meta.url) })
initSync({ module: new Uint8Array() })
const id: bigint = new Snowflake({ workerId: 1 }).nextId()
const value: string = uuid7()

export { ready, id, value }
