"""The asyncio API: tasks as owners, contention, timeouts and cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest

import polylock
import polylock.aio
from conftest import backend_kind_params, make_url

pytestmark = pytest.mark.parametrize("backend,kind", backend_kind_params())


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_tasks_contend_with_a_fencing_ledger(url, lock_name, kind):
    async def main():
        ledger = []
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(lock_name, kind)

            async def worker():
                for _ in range(5):
                    async with lock:
                        start = time.monotonic()
                        token = lock.fencing_token
                        await asyncio.sleep(0.002)
                        ledger.append((start, time.monotonic(), token))

            await asyncio.gather(*(worker() for _ in range(4)))
        return ledger

    ledger = sorted(run(main()))
    assert len(ledger) == 20
    for (_, end, token), (next_start, _, next_token) in zip(ledger, ledger[1:]):
        assert end <= next_start and token < next_token


def test_reentrancy_timeouts_and_not_owner(url, lock_name, kind):
    async def main():
        client = await polylock.aio.connect(url)
        lock = client.lock(lock_name, kind)
        assert await lock.acquire()
        assert await lock.acquire(timeout=0)  # same task: reentrant
        assert lock.hold_count == 2 and lock.locked()

        async def other_task():
            started = time.monotonic()
            acquired = await lock.acquire(timeout=0.2)
            return acquired, time.monotonic() - started

        async def release_from_another_task():
            await lock.release()

        acquired, waited = await asyncio.create_task(other_task())
        assert acquired is False and waited >= 0.15
        with pytest.raises(polylock.NotOwnerError):
            await asyncio.create_task(release_from_another_task())
        await lock.release()
        await lock.release()
        assert not lock.locked()
        # wait_for acts for the task that called acquire(), even where it makes a task of its own.
        assert await asyncio.wait_for(lock.acquire(), 5)
        assert lock.locked()
        await lock.release()
        await client.close()

    run(main())


def test_cancelling_a_waiting_task_leaves_nothing_held(url, lock_name, kind):
    async def main():
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(lock_name, kind)
            assert await lock.acquire()
            async def acquire_as_another_task():
                return await lock.acquire()

            waiter = asyncio.create_task(acquire_as_another_task())
            await asyncio.sleep(0.2)
            assert not waiter.done()
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await lock.release()

            async def take_and_give_back():
                # Must be free at once: the cancelled waiter must not have taken it.
                acquired = await lock.acquire(timeout=2)
                await lock.release()
                return acquired

            assert await asyncio.create_task(take_and_give_back())

    run(main())


def test_cancellations_racing_with_releases_leave_nothing_held(backend, tmp_path, lock_name, kind):
    # A short watchdog lease, so that a leaked record costs a second, not thirty.
    url = make_url(backend, tmp_path, "lease=1s")

    async def main():
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(lock_name, kind)

            async def wait_then_give_back():
                if await lock.acquire():
                    await lock.release()

            async def free_at_once():
                acquired = await lock.acquire(timeout=0.5)
                if acquired:
                    await lock.release()
                return acquired

            for attempt in range(40):
                assert await lock.acquire(timeout=5)
                waiter = asyncio.create_task(wait_then_give_back())
                for _ in range(attempt % 4):
                    await asyncio.sleep(0)
                await lock.release()
                waiter.cancel()
                try:
                    await waiter
                except asyncio.CancelledError:
                    pass
                assert await asyncio.create_task(free_at_once()), f"held after cancellation {attempt}"

    run(main())


def test_wait_lost_resolves_when_the_lease_runs_out(url, lock_name, kind):
    async def main():
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(lock_name, kind)
            with pytest.raises(polylock.NotOwnerError):
                await lock.wait_lost()
            assert await lock.acquire(lease=0.3)
            started = time.monotonic()
            # wait_for runs it in a task of its own; the owner is still this task.
            reason = await asyncio.wait_for(lock.wait_lost(), 10)
            assert reason and time.monotonic() - started >= 0.2
            assert lock.is_lost() and not lock.locked()
            with pytest.raises(polylock.LockLostError):
                await lock.release()

    run(main())


def test_event_loop_keeps_running_while_waiting(url, lock_name, kind):
    async def main():
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(lock_name, kind)
            assert await lock.acquire()
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticking = asyncio.create_task(ticker())
            async def try_as_another_task():
                return await lock.acquire(timeout=0.3)

            assert await asyncio.create_task(try_as_another_task()) is False
            ticking.cancel()
            assert ticks >= 10
            await lock.release()

    run(main())


def test_connect_errors_are_raised_in_the_task(backend, kind, tmp_path):
    async def main():
        with pytest.raises(polylock.InvalidArgumentError):
            await polylock.aio.connect("nosuch://x")
        with pytest.raises(polylock.PolylockConnectionError):
            await polylock.aio.connect("sqlite:///proc/polylock-no-such-dir/x.db")

    if backend == "sqlite" and kind == "reentrant":
        run(main())
