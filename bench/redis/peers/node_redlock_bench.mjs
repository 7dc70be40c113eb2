// The Node peer of polylock-bench's redis section: node-redlock v5 on one ioredis client,
// used the way its README shows, with N concurrent async loops in one process. Prints ONE
// JSON line; polylock-bench computes every figure from it, the same way for every side.
//
//   node node_redlock_bench.mjs --url URL --workload uncontended|contended --seconds S
//                               --workers N --prefix KEYPREFIX
//
// uncontended: N loops, each on its own resource, lock+unlock until S seconds have passed:
//              {"pairs": [per loop], "elapsed_ns": group wall time}
// contended:   N loops on ONE resource: acquire (retrying as long as it takes), hold 1 ms,
//              release, 1 ms outside; {"holds": [[acquired_ns, released_ns, ...] per loop],
//              "elapsed_ns"}, times since the common start on the monotonic clock;
//              released_ns is when release() was called.

import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

import Redis from "ioredis";
import Redlock, { ResourceLockedError } from "redlock";

const LEASE_MS = 30000;
const HOLD_MS = 1;
const OUTSIDE_MS = 1;

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    workload: { type: "string" },
    seconds: { type: "string" },
    workers: { type: "string" },
    prefix: { type: "string" },
  },
});
for (const key of ["url", "workload", "seconds", "workers", "prefix"]) {
  if (args[key] === undefined) throw new Error(`--${key} is required`);
}
if (!["uncontended", "contended"].includes(args.workload)) {
  throw new Error(`--workload must be uncontended or contended, not ${args.workload}`);
}

const clock = () => process.hrtime.bigint();
// Nanoseconds since `start`, as a Number: exact below 2^53 ns (104 days).
const since = (start) => Number(clock() - start);

const client = new Redis(args.url);
// Every setting is redlock's default except retryCount: the default (10 retries, then an
// ExecutionError) gives up after about 2 s, and -1 is the documented way to wait for good.
const redlock = new Redlock([client], { retryCount: -1 });
// As the README says: attempts on a held lock emit ResourceLockedError, which is expected.
redlock.on("error", (error) => {
  if (error instanceof ResourceLockedError) return;
  console.error(error);
});

async function uncontended(resource, start, deadline) {
  let pairs = 0;
  for (;;) {
    const lock = await redlock.acquire([resource], LEASE_MS);
    await lock.release();
    pairs += 1;
    if (clock() >= deadline) return [pairs, since(start)];
  }
}

async function contended(resource, start, deadline) {
  const holds = [];
  while (clock() < deadline) {
    const lock = await redlock.acquire([resource], LEASE_MS);
    const acquired = since(start);
    await sleep(HOLD_MS);
    holds.push(acquired, since(start));
    await lock.release();
    await sleep(OUTSIDE_MS);
  }
  return [holds, since(start)];
}

const workers = Number(args.workers);
const resources = Array.from({ length: workers }, (_, i) =>
  args.workload === "uncontended" ? `${args.prefix}:${i}` : args.prefix,
);
await client.ping();
const start = clock();
const deadline = start + BigInt(Math.round(Number(args.seconds) * 1e9));
const loop = args.workload === "uncontended" ? uncontended : contended;
const results = await Promise.all(resources.map((resource) => loop(resource, start, deadline)));
await client.quit();

const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
const { retryCount, retryDelay, retryJitter, driftFactor } = redlock.settings;
console.log(
  JSON.stringify({
    peer: "node-redlock",
    version: `redlock ${version("redlock")}, ioredis ${version("ioredis")}`,
    mode: "async",
    settings:
      `duration ${LEASE_MS} ms, retryDelay ${retryDelay} ms, retryJitter ${retryJitter} ms, ` +
      `retryCount ${retryCount}, driftFactor ${driftFactor}`,
    [args.workload === "uncontended" ? "pairs" : "holds"]: results.map(([result]) => result),
    elapsed_ns: Math.max(...results.map(([, elapsed]) => elapsed)),
  }),
);
