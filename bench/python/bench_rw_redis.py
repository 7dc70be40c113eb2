"""Read-lock pairs per second from Python on Redis, beside the same workload from Rust, in
one run, printed as figures and ratios (no pass/fail). Issue #17's goal: Python within 2x of
Rust.

    python bench/python/bench_rw_redis.py [--url redis://127.0.0.1:16379] [--seconds 2]
        [--threads 8] [--rust-binary target/release/polylock-bench]

- 1 worker: one thread (sync) or one task (asyncio) on a read-write lock of its own name,
  `read.acquire(lease=30)` + `read.release()` in a loop (Redisson's RReadWriteLock layout:
  a hash, a timeout key per read hold, one script each way); the same with the watchdog's
  lease; a mutex on its own name for scale.
- N workers: N threads (sync), a name each, total pairs per second.
- Rust: the redis section of `polylock-bench` has the same read pairs from Rust, one task
  and 8 tasks (bench/src/redis/read_locks.rs, line `read-lock pairs, a name each`); with
  `--rust-binary` this script runs `polylock-bench redis --quick` (its other lines too),
  reads that line and prints Python / Rust ratios. Compare 8 workers with `--threads 8`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import threading
import time
import uuid

import polylock
import polylock.aio

LEASE_S = 30.0


def per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def timed_loop(seconds: float, step) -> float:
    count, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        step()
        count += 1
    return per_second(count, time.perf_counter() - started)


def read_pairs_sync(url: str, seconds: float, lease) -> float:
    with polylock.connect(url) as client:
        read = client.rw_lock(f"bench-rw:{uuid.uuid4().hex}").read

        def pair():
            read.acquire(lease=lease)
            read.release()

        return timed_loop(seconds, pair)


def mutex_pairs_sync(url: str, seconds: float) -> float:
    with polylock.connect(url) as client:
        lock = client.lock(f"bench-rw:{uuid.uuid4().hex}")

        def pair():
            lock.acquire(lease=LEASE_S)
            lock.release()

        return timed_loop(seconds, pair)


def read_pairs_aio(url: str, seconds: float) -> float:
    async def main():
        async with await polylock.aio.connect(url) as client:
            read = client.rw_lock(f"bench-rw:{uuid.uuid4().hex}").read
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                await read.acquire(lease=LEASE_S)
                await read.release()
                count += 1
            return per_second(count, time.perf_counter() - started)

    return asyncio.run(main())


def read_pairs_threads(url: str, seconds: float, threads: int) -> float:
    """Total read pairs/s of `threads` threads of one client, each on a name of its own."""
    counts = [0] * threads
    with polylock.connect(url) as client:
        deadline = time.perf_counter() + seconds

        def worker(index: int):
            read = client.rw_lock(f"bench-rw:{uuid.uuid4().hex}").read
            while time.perf_counter() < deadline:
                read.acquire(lease=LEASE_S)
                read.release()
                counts[index] += 1

        started = time.perf_counter()
        pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        return per_second(sum(counts), time.perf_counter() - started)


def rust_figures(binary: str, url: str) -> dict:
    """The Rust side's read pairs/s from polylock-bench's redis section: {"one": .., "many": ..}."""
    answer = subprocess.run([binary, "redis", "--quick", "--url", url], check=True, capture_output=True, text=True)
    for output_line in answer.stdout.splitlines():
        if output_line.startswith("redis") and "read-lock pairs" in output_line:
            rates = re.findall(r"polylock (\d+) worker\(s\), lease 30s ([\d,]+) pairs/s", output_line)
            figures = {int(workers): float(rate.replace(",", "")) for workers, rate in rates}
            return {"one": figures[1], "many": figures[max(figures)], "workers": max(figures)}
    raise RuntimeError(f"no read-lock line from {binary} redis: {answer.stdout[-2000:]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379"))
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rust-binary", help="target/release/polylock-bench, for the Rust figures")
    args = parser.parse_args()

    print(f"# read-lock pairs/s on {args.url}, {args.seconds} s each, polylock {polylock.__version__}")
    one = read_pairs_sync(args.url, args.seconds, LEASE_S)
    watchdog = read_pairs_sync(args.url, args.seconds, None)
    aio = read_pairs_aio(args.url, args.seconds)
    mutex = mutex_pairs_sync(args.url, args.seconds)
    many = read_pairs_threads(args.url, args.seconds, args.threads)
    print(f"python  1 worker   read (lease 30s)       {one:10.0f} pairs/s")
    print(f"python  1 worker   read (watchdog)        {watchdog:10.0f} pairs/s")
    print(f"python  1 worker   read, asyncio          {aio:10.0f} pairs/s")
    print(f"python  1 worker   mutex (lease 30s)      {mutex:10.0f} pairs/s  (for scale)")
    print(f"python  {args.threads} workers  read (lease 30s)       {many:10.0f} pairs/s")
    if args.rust_binary:
        rust = rust_figures(args.rust_binary, args.url)
        print(f"rust    1 worker   read (lease 30s)       {rust['one']:10.0f} pairs/s")
        print(f"rust    {rust['workers']} workers  read (lease 30s)       {rust['many']:10.0f} pairs/s")
        print(
            f"ratio   python / rust: 1 worker {one / rust['one']:.2f}x (asyncio {aio / rust['one']:.2f}x), "
            f"{args.threads} workers {many / rust['many']:.2f}x (goal: at least 0.50x)"
        )


if __name__ == "__main__":
    main()
