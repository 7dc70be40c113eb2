"""polylock from Python next to what Python users run today, in one process and one run,
printed as ratios (figures, not pass/fail).

    python bench/python/bench_redis.py [--url redis://127.0.0.1:16379] [--seconds 2] [--threads 8]

- uncontended: one worker, its own lock name, lock+unlock pairs per second:
  polylock (sync, thread owner), polylock.aio (task owner), redis-py `Lock`; then N
  threads, a name each, total pairs per second.
- asyncio: polylock.aio beside redis-py's asyncio `Lock` (`redis.asyncio`), one task in
  sequence and 64 tasks (a name each), pairs/s and the process's CPU per pair; with the
  per-pair breakdown lines: polylock.aio on `mem://` (the binding and engine with no I/O),
  and polylock.aio with its calls run as runtime tasks that wake the loop through
  `call_soon_threadsafe` (the path loops without `add_reader` take; every call took it
  before the loop-polled path).
- cpu: the process's own CPU per lock+unlock pair (`time.process_time()`, every thread),
  polylock beside redis-py at the same paced rate, sync (8 threads) and asyncio (8 tasks).
- contended: N threads on one name, hold 1 ms, 1 ms outside; utilisation = time the lock
  was held / wall time.
- IDs per second: polylock `next_id()` in a loop and `next_ids(10000)`, against the pure
  Python `snowflake-id` package (if installed) and the layout's ceiling (4.096M/s/worker).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
import time
import uuid
from typing import Optional

import redis
import redis.asyncio

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


# ----- asyncio: polylock.aio beside redis-py's asyncio Lock -----------------------------------


class Rate:
    """Pairs per second and the process's CPU per pair (every thread: the runtime's too)."""

    def __init__(self, pairs: int, wall: float, cpu: float):
        self.pairs = pairs
        self.per_second = per_second(pairs, wall)
        self.cpu_us = cpu / pairs * 1e6 if pairs else float("nan")

    def describe(self) -> str:
        return f"{self.per_second:10.0f} pairs/s  {self.cpu_us:7.1f} us CPU/pair"


async def _aio_workers(make_lock, tasks: int, seconds: float, pace: Optional[float] = None) -> Rate:
    """`tasks` tasks, a lock each, `async with lock: pass` until `seconds` pass; with `pace`,
    each task keeps to pace/tasks pairs per second."""
    locks = [make_lock() for _ in range(tasks)]
    for lock in locks:  # warm-up: connections made, scripts loaded
        async with lock:
            pass
    counts = [0] * tasks
    started_cpu, started = time.process_time(), time.perf_counter()
    deadline = started + seconds

    async def worker(index: int) -> None:
        lock = locks[index]
        interval = tasks / pace if pace else 0.0
        next_at = started + interval * index / tasks
        while time.perf_counter() < deadline:
            if pace:
                delay = next_at - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += interval
            async with lock:
                pass
            counts[index] += 1

    await asyncio.gather(*(worker(i) for i in range(tasks)))
    return Rate(sum(counts), time.perf_counter() - started, time.process_time() - started_cpu)


def aio_redis_py(url: str, tasks: int, seconds: float, pace: Optional[float] = None) -> Rate:
    async def main() -> Rate:
        connection = redis.asyncio.Redis.from_url(url, max_connections=max(tasks, 1))
        try:
            return await _aio_workers(
                lambda: connection.lock(f"bench:{uuid.uuid4().hex}", timeout=30), tasks, seconds, pace
            )
        finally:
            await connection.aclose()

    return asyncio.run(main())


@contextlib.contextmanager
def _runtime_task_path():
    """polylock.aio as every call ran before the loop-polled path: a task on the client's
    runtime that takes the GIL and wakes the loop with call_soon_threadsafe."""
    saved = polylock.aio._loop_waker
    polylock.aio._loop_waker = lambda loop: None
    try:
        yield
    finally:
        polylock.aio._loop_waker = saved


def aio_polylock(url: str, tasks: int, seconds: float, pace: Optional[float] = None, runtime_tasks: bool = False) -> Rate:
    async def main() -> Rate:
        async with await polylock.aio.connect(url) as client:
            return await _aio_workers(lambda: client.lock(f"bench:{uuid.uuid4().hex}"), tasks, seconds, pace)

    with _runtime_task_path() if runtime_tasks else contextlib.nullcontext():
        return asyncio.run(main())


def aio_section(url: str, seconds: float) -> None:
    print(f"asyncio lock+unlock on {url}: polylock.aio beside redis-py asyncio (redis.asyncio Lock)")
    for tasks in (1, 64):
        theirs = aio_redis_py(url, tasks, seconds)
        ours = aio_polylock(url, tasks, seconds)
        label = "1 task" if tasks == 1 else f"{tasks} tasks, a name each"
        print(f"  {label}")
        print(f"    redis-py asyncio   {theirs.describe()}")
        print(
            f"    polylock.aio       {ours.describe()}   {ours.per_second / theirs.per_second:5.2f}x redis-py asyncio"
        )
        hop = aio_polylock(url, tasks, seconds, runtime_tasks=True)
        print(
            f"    .. runtime tasks   {hop.describe()}   {hop.per_second / theirs.per_second:5.2f}x redis-py asyncio"
            "   (calls run as runtime tasks, woken by call_soon_threadsafe)"
        )
    floor = aio_polylock("mem://", 1, seconds)
    floor_hop = aio_polylock("mem://", 1, seconds, runtime_tasks=True)
    print("  per-pair breakdown, 1 task (wall us per pair)")
    print(f"    polylock.aio on mem:// (binding + engine, no I/O)        {1e6 / floor.per_second:7.1f} us")
    print(f"    .. runtime tasks on mem:// (+ 2 hops to the runtime and back) {1e6 / floor_hop.per_second:7.1f} us")


# ----- CPU per pair at the same rate ---------------------------------------------------------


def _threads_paced(make_lock, threads: int, seconds: float, pace: float) -> Rate:
    counts = [0] * threads
    locks = [make_lock() for _ in range(threads)]
    for lock in locks:
        lock.acquire()
        lock.release()
    started_cpu, started = time.process_time(), time.perf_counter()
    deadline = started + seconds
    interval = threads / pace

    def worker(index: int) -> None:
        lock = locks[index]
        next_at = started + interval * index / threads
        while time.perf_counter() < deadline:
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            next_at += interval
            lock.acquire()
            lock.release()
            counts[index] += 1

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return Rate(sum(counts), time.perf_counter() - started, time.process_time() - started_cpu)


def cpu_section(url: str, seconds: float, workers: int = 8) -> None:
    print(f"CPU per lock+unlock pair (time.process_time(), all threads), {workers} workers at the same paced rate")
    # A rate both sides reach: a fraction of the slower side's unpaced rate.
    connection = redis.Redis.from_url(url)
    try:
        theirs_max = _threads_paced(
            lambda: connection.lock(f"bench:{uuid.uuid4().hex}", timeout=30), workers, seconds / 2, 1e9
        )
        pace = round(theirs_max.per_second * 0.6, -1) or 100.0
        theirs = _threads_paced(
            lambda: connection.lock(f"bench:{uuid.uuid4().hex}", timeout=30), workers, seconds, pace
        )
    finally:
        connection.close()
    with polylock.connect(url) as client:
        ours = _threads_paced(lambda: client.lock(f"bench:{uuid.uuid4().hex}"), workers, seconds, pace)
    print(f"  threads at {pace:.0f} pairs/s")
    print(f"    redis-py Lock      {theirs.describe()}")
    print(f"    polylock           {ours.describe()}   CPU/pair {ours.cpu_us / theirs.cpu_us:5.2f}x redis-py")
    aio_max = aio_redis_py(url, workers, seconds / 2)
    pace = round(aio_max.per_second * 0.6, -1) or 100.0
    theirs = aio_redis_py(url, workers, seconds, pace)
    ours = aio_polylock(url, workers, seconds, pace)
    print(f"  asyncio tasks at {pace:.0f} pairs/s")
    print(f"    redis-py asyncio   {theirs.describe()}")
    print(f"    polylock.aio       {ours.describe()}   CPU/pair {ours.cpu_us / theirs.cpu_us:5.2f}x redis-py asyncio")


SECTIONS = ("uncontended", "asyncio", "threads", "contended", "cpu", "ids")


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

    if "asyncio" in sections:
        aio_section(args.url, args.seconds)

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

    if "cpu" in sections:
        cpu_section(args.url, args.seconds)

    if "ids" in sections:
        print("snowflake IDs/s (one worker)")
        figures = ids_per_second(args.seconds)
        peer = figures.get("snowflake-id next()")
        for label, rate in figures.items():
            versus = f"   {rate / peer:6.2f}x snowflake-id" if peer and not label.startswith("snowflake-id") else ""
            print(f"  {label:26} {rate:12.0f}   {rate / LAYOUT_CEILING:6.1%} of the layout's ceiling{versus}")


if __name__ == "__main__":
    main()
