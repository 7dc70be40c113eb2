// The real node-redlock (v5, one ioredis client per server) as a RedLock peer of polylock's
// redlock:// backend, driven over stdin/stdout by core/tests/redlock.rs:
//
//   node redlock_peer.mjs PORT,PORT,... RESOURCE LEASE_MS
//
// It tries once to lock RESOURCE on the servers of 127.0.0.1:PORT and prints `held` or
// `busy`; a held lock is released when a line arrives on stdin, then it prints `released`
// and exits. Any other failure prints `error: ...` and exits 2.
import Redis from "ioredis";
import Redlock, { ExecutionError, ResourceLockedError } from "redlock";
import readline from "node:readline";

const [ports, resource, leaseMs] = process.argv.slice(2);
const clients = ports.split(",").map((port) => new Redis({ host: "127.0.0.1", port: Number(port), lazyConnect: false }));
const redlock = new Redlock(clients, { retryCount: 0 });
const stop = () => clients.forEach((client) => client.disconnect());

let lock;
try {
  lock = await redlock.acquire([resource], Number(leaseMs));
} catch (error) {
  if (error instanceof ExecutionError || error instanceof ResourceLockedError) {
    console.log("busy");
    stop();
    process.exit(0);
  }
  console.log(`error: ${error}`);
  stop();
  process.exit(2);
}
console.log("held");
const lines = readline.createInterface({ input: process.stdin });
for await (const _line of lines) {
  break;
}
await lock.release();
console.log("released");
stop();
process.exit(0);
