"""polylock from Python next to what Python users run today, in one process and one run,
printed as ratios (figures, not pass/fail).

    python bench/python/bench_redis.py [--url redis://127.0.0.1:16379] [--seconds 2] [--threads 8]

- uncontended: one worker, its own lock name, lock+unlock pairs per second:
  polylock (sync, thread owner), polylock.aio (task owner), redis-py `Lock`; then N
  threads, a name each, total pairs per second.
- contended: N threads on one name, hold 1 ms, 1 ms outside; utilisation = time the lock
  was held / wall time.
- IDs per second: polylock `next_id()` in a loop and `next_ids(10000)`, against the pure
  Python `snowflake-id` package (if installed) and the layout's ceiling (4.096M/s/worker).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
import uuid

import redis

import polylock
import polylock.aio

HOLD_S = OUTSIDE_S = 0.001
LAYOUT_CEILING = 4_096_000


def per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def timed_loop(seconds: float, step) -> float:
    count, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        step()
        count += 1
    return per_second(count, time.perf_counter() - started)


def uncontended_polylock(url: str, seconds: float) -> float:
    with polylock.connect(url) as client:
        lock = client.lock(f"bench:{uuid.uuid4().hex}")

        def pair():
            lock.acquire()
            lock.release()

        return timed_loop(seconds, pair)


def uncontended_polylock_aio(url: str, seconds: float) -> float:
    async def main():
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(f"bench:{uuid.uuid4().hex}")
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                async with lock:
                    pass
                count += 1
            return per_second(count, time.perf_counter() - started)

    return asyncio.run(main())


def uncontended_redis_py(url: str, seconds: float) -> float:
    connection = redis.Redis.from_url(url)
    lock = connection.lock(f"bench:{uuid.uuid4().hex}", timeout=30)

    def pair():
        lock.acquire()
        lock.release()

    try:
        return timed_loop(seconds, pair)
    finally:
        connection.close()


def uncontended_threads(make_lock, threads: int, seconds: float) -> float:
    """Total pairs/s of `threads` threads, each on a lock name of its own."""
    counts = [0] * threads
    deadline = time.perf_counter() + seconds

    def worker(index: int):
        lock = make_lock()
        while time.perf_counter() < deadline:
            lock.acquire()
            lock.release()
            counts[index] += 1

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return per_second(sum(counts), time.perf_counter() - started)


class Contended:
    """What one side's contended run measured: utilisation (time held / wall time) and the
    hand-over gap, from one holder's release call to the next holder's acquire returning
    (what the binding adds to the core's handoff shows up here)."""

    def __init__(self, holds, elapsed: float):
        holds.sort()
        self.count = len(holds)
        self.utilisation = sum(released - acquired for acquired, released in holds) / elapsed
        gaps = sorted(nxt[0] - prev[1] for prev, nxt in zip(holds, holds[1:]) if nxt[0] >= prev[1])
        self.overlaps = max(0, len(holds) - 1 - len(gaps))
        self.gap_p50 = gaps[len(gaps) // 2] if gaps else float("nan")
        self.gap_p99 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))] if gaps else float("nan")
        self.per_second = per_second(len(holds), elapsed)

    def describe(self) -> str:
        overlaps = f", {self.overlaps} OVERLAPS" if self.overlaps else ""
        return (
            f"{self.utilisation:6.1%}   hand-over p50 {self.gap_p50 * 1e6:6.0f} us, p99 {self.gap_p99 * 1e6:6.0f} us, "
            f"{self.per_second:5.0f} holds/s{overlaps}"
        )


def contended_run(make_lock, threads: int, seconds: float) -> Contended:
    """`threads` threads contend for one lock: hold 1 ms, 1 ms outside, until `seconds` pass."""
    holds = [[] for _ in range(threads)]
    deadline = time.perf_counter() + seconds

    def worker(index: int):
        lock = make_lock()
        mine = holds[index]
        while time.perf_counter() < deadline:
            lock.acquire()
            acquired = time.perf_counter()
            time.sleep(HOLD_S)
            released = time.perf_counter()
            lock.release()
            mine.append((acquired, released))
            time.sleep(OUTSIDE_S)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return Contended([hold for mine in holds for hold in mine], time.perf_counter() - started)


def contended_polylock(url: str, threads: int, seconds: float) -> Contended:
    name = f"bench:{uuid.uuid4().hex}"
    with polylock.connect(url) as client:
        return contended_run(lambda: client.lock(name), threads, seconds)


def contended_redis_py(url: str, threads: int, seconds: float) -> Contended:
    name = f"bench:{uuid.uuid4().hex}"
    connection = redis.Redis.from_url(url)
    try:
        return contended_run(lambda: connection.lock(name, timeout=30), threads, seconds)
    finally:
        connection.close()


def ids_per_second(seconds: float) -> dict:
    ids = polylock.Snowflake(1)
    figures = {
        "polylock next_id()": timed_loop(seconds, ids.next_id),
        "polylock next_ids(10000)": 10_000 * timed_loop(seconds, lambda: ids.next_ids(10_000)),
    }
    try:
        from snowflake import SnowflakeGenerator  # the pure-Python `snowflake-id` package
    except ImportError:
        return figures
    generator = SnowflakeGenerator(1)
    figures["snowflake-id next()"] = timed_loop(seconds, lambda: next(generator))
    return figures


SECTIONS = ("uncontended", "threads", "contended", "ids")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="redis://127.0.0.1:16379")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--only", choices=SECTIONS, action="append", help="run only this section (repeatable; default: all)"
    )
    args = parser.parse_args()
    sections = args.only or SECTIONS

    if "uncontended" in sections:
        print(f"uncontended lock+unlock pairs/s on {args.url}")
        redis_py = uncontended_redis_py(args.url, args.seconds)
        sync = uncontended_polylock(args.url, args.seconds)
        aio = uncontended_polylock_aio(args.url, args.seconds)
        print(f"  redis-py Lock      {redis_py:10.0f}")
        print(f"  polylock (threads) {sync:10.0f}   {sync / redis_py:5.2f}x redis-py")
        print(f"  polylock.aio       {aio:10.0f}   {aio / redis_py:5.2f}x redis-py")

    if "threads" in sections:
        print(f"uncontended, {args.threads} threads, a name each: total pairs/s")
        connection = redis.Redis.from_url(args.url)
        theirs = uncontended_threads(
            lambda: connection.lock(f"bench:{uuid.uuid4().hex}", timeout=30), args.threads, args.seconds
        )
        connection.close()
        with polylock.connect(args.url) as client:
            ours = uncontended_threads(lambda: client.lock(f"bench:{uuid.uuid4().hex}"), args.threads, args.seconds)
        print(f"  redis-py Lock      {theirs:10.0f}")
        print(f"  polylock           {ours:10.0f}   {ours / theirs:5.2f}x redis-py")

    if "contended" in sections:
        print(f"contended: {args.threads} threads, hold 1 ms, 1 ms outside; utilisation, release-to-acquire gap")
        theirs = contended_redis_py(args.url, args.threads, args.seconds)
        ours = contended_polylock(args.url, args.threads, args.seconds)
        print(f"  redis-py Lock      {theirs.describe()}")
        print(f"  polylock           {ours.describe()}   {ours.utilisation / theirs.utilisation:5.2f}x redis-py")

    if "ids" in sections:
        print("snowflake IDs/s (one worker)")
        figures = ids_per_second(args.seconds)
        peer = figures.get("snowflake-id next()")
        for label, rate in figures.items():
            versus = f"   {rate / peer:6.2f}x snowflake-id" if peer and not label.startswith("snowflake-id") else ""
            print(f"  {label:26} {rate:12.0f}   {rate / LAYOUT_CEILING:6.1%} of the layout's ceiling{versus}")


if __name__ == "__main__":
    main()
