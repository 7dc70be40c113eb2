"""The redis-py peer of polylock-bench's redis section: redis-py's own `Lock`, used the way
its users use it, in one process. Prints ONE JSON line; polylock-bench computes every
figure from it, the same way for every side.

    python redis_py_bench.py --url URL --workload uncontended|contended --mode asyncio|threads
                             --seconds S --workers N --prefix KEYPREFIX

uncontended: N workers, each on its own name, lock+unlock in a loop until S seconds have
             passed: {"pairs": [per worker], "elapsed_ns": group wall time}
contended:   N workers on ONE name: acquire (waiting as long as it takes), hold 1 ms, release,
             1 ms outside; {"holds": [[acquired_ns, released_ns, ...] per worker], "elapsed_ns"}
             with times since the common start on the monotonic clock; released_ns is when
             release() was called.
"""

import argparse
import asyncio
import json
import threading
import time

import redis
import redis.asyncio

LEASE_S = 30  # the lock's timeout; redis-py has no watchdog
HOLD_S = 0.001
OUTSIDE_S = 0.001


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--workload", choices=["uncontended", "contended"], required=True)
    parser.add_argument("--mode", choices=["asyncio", "threads"], default="asyncio")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    return parser.parse_args()


# --- asyncio: redis.asyncio, one task per worker -------------------------------------------


async def uncontended_task(client, name, start, deadline):
    pairs = 0
    while True:
        async with client.lock(name, timeout=LEASE_S):
            pass
        pairs += 1
        if time.monotonic_ns() >= deadline:
            return pairs, time.monotonic_ns() - start


async def contended_task(client, name, start, deadline):
    holds = []
    while time.monotonic_ns() < deadline:
        lock = client.lock(name, timeout=LEASE_S)  # blocking, no blocking_timeout: waits as long as it takes
        await lock.acquire()
        acquired = time.monotonic_ns()
        await asyncio.sleep(HOLD_S)
        holds += [acquired - start, time.monotonic_ns() - start]
        await lock.release()
        await asyncio.sleep(OUTSIDE_S)
    return holds, time.monotonic_ns() - start


async def run_asyncio(args, worker, names):
    client = redis.asyncio.Redis.from_url(args.url)
    await client.ping()
    start = time.monotonic_ns()
    deadline = start + int(args.seconds * 1e9)
    results = await asyncio.gather(*(worker(client, name, start, deadline) for name in names))
    await client.aclose()
    return results


# --- threads: the synchronous client, one thread per worker --------------------------------


def uncontended_thread(client, name, start, deadline):
    pairs = 0
    while True:
        with client.lock(name, timeout=LEASE_S):
            pass
        pairs += 1
        if time.monotonic_ns() >= deadline:
            return pairs, time.monotonic_ns() - start


def contended_thread(client, name, start, deadline):
    holds = []
    while time.monotonic_ns() < deadline:
        lock = client.lock(name, timeout=LEASE_S)
        lock.acquire()
        acquired = time.monotonic_ns()
        time.sleep(HOLD_S)
        holds += [acquired - start, time.monotonic_ns() - start]
        lock.release()
        time.sleep(OUTSIDE_S)
    return holds, time.monotonic_ns() - start


def run_threads(args, worker, names):
    client = redis.Redis.from_url(args.url)
    client.ping()
    results = [None] * len(names)
    start_line = threading.Barrier(len(names) + 1)
    clock = {}

    def body(index, name):
        start_line.wait()
        results[index] = worker(client, name, clock["start"], clock["deadline"])

    threads = [threading.Thread(target=body, args=(i, name)) for i, name in enumerate(names)]
    for thread in threads:
        thread.start()
    clock["start"] = time.monotonic_ns()
    clock["deadline"] = clock["start"] + int(args.seconds * 1e9)
    start_line.wait()
    for thread in threads:
        thread.join()
    client.close()
    return results


def settings(url):
    """The lock's settings as redis-py sets them (all defaults but the timeout)."""
    lock = redis.Redis.from_url(url).lock("settings", timeout=LEASE_S)
    return f"timeout={lock.timeout}s, blocking={lock.blocking}, sleep={lock.sleep}s between tries"


def main():
    args = parse_args()
    if args.workload == "uncontended":
        names = [f"{args.prefix}:{i}" for i in range(args.workers)]
    else:
        names = [args.prefix] * args.workers
    if args.mode == "asyncio":
        worker = uncontended_task if args.workload == "uncontended" else contended_task
        results = asyncio.run(run_asyncio(args, worker, names))
    else:
        worker = uncontended_thread if args.workload == "uncontended" else contended_thread
        results = run_threads(args, worker, names)
    key = "pairs" if args.workload == "uncontended" else "holds"
    report = {
        "peer": "redis-py",
        "version": redis.__version__,
        "mode": args.mode,
        "settings": settings(args.url),
        key: [result for result, _ in results],
        "elapsed_ns": max(elapsed for _, elapsed in results),
    }
    print(json.dumps(report, separators=(",", ":")))


if __name__ == "__main__":
    main()
