"""The two forms of every wait (docs/conventions.md), on every backend, blocking and asyncio:
``hold`` (locks, read-write sides, permits, multi-locks) and ``Latch.await_zero`` raise
LockTimeoutError when the wait runs out, where ``acquire`` and ``wait`` answer False/None;
both forms refuse a negative wait as InvalidArgumentError; ``with x.hold(timeout=)`` holds for
the block and gives back exactly the hold it took. And ``Lock.is_locked()``: anyone's hold in
the store, where ``locked()`` is the caller's own."""

from __future__ import annotations

import asyncio
import time

import pytest

import polylock
import polylock.aio
from conftest import run_in_thread, unique_name

SHORT = 0.2  # seconds a refused wait lasts


def refused_for(call):
    """Run `call` in another thread (another owner); it must raise LockTimeoutError after
    waiting about SHORT seconds."""

    def timed():
        started = time.monotonic()
        with pytest.raises(polylock.LockTimeoutError):
            call()
        return time.monotonic() - started

    waited = run_in_thread(timed)
    assert waited >= SHORT * 0.75, f"gave up after {waited:.3f} s"


def test_lock_hold_raises_when_the_wait_runs_out_and_holds_for_a_block(client):
    lock = client.lock(unique_name())
    with lock.hold(timeout=5) as held:
        assert held is lock and lock.hold_count == 1
        assert lock.fencing_token is not None or client.url.startswith("redlock")
        refused_for(lambda: lock.hold(timeout=SHORT))
        assert run_in_thread(lambda: lock.acquire(timeout=SHORT)) is False  # the try form
    assert lock.hold_count == 0 and not lock.locked()
    hold = lock.hold(timeout=0)  # free: a try once that takes it
    assert lock.locked() and hold.lock is lock
    hold.release()
    assert not lock.locked()


def test_side_permit_and_multi_lock_holds_raise_on_timeout(client):
    name = unique_name()
    rw = client.rw_lock(name + ":rw")
    with rw.write.hold(timeout=5):
        refused_for(lambda: rw.read.hold(timeout=SHORT))
    semaphore = client.semaphore(name + ":s", permits=1)
    with semaphore.hold(timeout=5) as permit:
        assert isinstance(permit, polylock.Permit) and permit.fencing_token > 0
        refused_for(lambda: semaphore.hold(timeout=SHORT))
        assert run_in_thread(lambda: semaphore.acquire(timeout=0)) is None  # the try form
    multi = client.multi_lock([name + ":a", name + ":b"])
    with multi.hold(timeout=5) as held:
        assert held is multi and multi.locked()
        refused_for(lambda: multi.hold(timeout=SHORT))
    assert not multi.locked()
    # The wait that ran out left no part behind: another owner takes them all at once.
    assert run_in_thread(lambda: (multi.acquire(timeout=0), multi.release())[0]) is True


def test_a_negative_or_nan_wait_is_invalid_in_the_waiting_form(client):
    lock = client.lock(unique_name())
    for bad in (-1, -0.001, float("nan"), float("inf")):
        with pytest.raises(polylock.InvalidArgumentError):
            lock.hold(timeout=bad)
        with pytest.raises(polylock.InvalidArgumentError):
            client.latch(unique_name()).await_zero(timeout=bad)
    assert lock.hold_count == 0


def test_latch_await_zero_raises_where_wait_answers_false(client):
    latch = client.latch(unique_name("latch"))
    assert latch.try_set_count(1)
    started = time.monotonic()
    with pytest.raises(polylock.LockTimeoutError):
        latch.await_zero(timeout=SHORT)
    assert time.monotonic() - started >= SHORT * 0.75
    assert latch.wait(timeout=0) is False
    latch.count_down()
    assert latch.await_zero(timeout=5) is None
    assert latch.await_zero() is None


def test_is_locked_is_anyones_hold_in_the_store(client, url):
    name = unique_name()
    lock = client.lock(name)
    assert lock.is_locked() is False
    with polylock.connect(url) as other:
        theirs = other.lock(name)
        with lock:
            assert lock.is_locked() is True and theirs.is_locked() is True
            assert lock.locked() and not theirs.locked()
        assert theirs.is_locked() is False


async def in_task(call):
    """Await `call()` in a task of its own (another owner: polylock.aio picks the owner when
    a call is made, so the call is made inside the new task)."""

    async def run():
        return await call()

    return await asyncio.create_task(run())


def test_asyncio_waiting_forms(url):
    async def main():
        name = unique_name()
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(name)
            rw = client.rw_lock(name + ":rw")
            semaphore = client.semaphore(name + ":s", permits=1)
            multi = client.multi_lock([name + ":a", name + ":b"])
            latch = client.latch(name + ":latch")

            async def refused(hold):
                started = time.monotonic()
                with pytest.raises(polylock.LockTimeoutError):
                    await hold()
                assert time.monotonic() - started >= SHORT * 0.75

            async with lock.hold(timeout=5) as held:
                assert held is lock and lock.hold_count == 1
                assert await lock.is_locked()
                # Another task is another owner.
                await in_task(lambda: refused(lambda: lock.hold(timeout=SHORT)))
                assert await in_task(lambda: lock.acquire(timeout=0)) is False
            assert lock.hold_count == 0 and not await lock.is_locked()
            hold = await lock.hold(timeout=0)
            assert isinstance(hold, polylock.aio.Hold) and lock.locked()
            await hold.release()
            assert not lock.locked()

            async with rw.write.hold(timeout=5):
                await in_task(lambda: refused(lambda: rw.read.hold(timeout=SHORT)))
            async with semaphore.hold(timeout=5) as permit:
                assert isinstance(permit, polylock.aio.Permit)
                await refused(lambda: semaphore.hold(timeout=SHORT))
                assert await semaphore.acquire(timeout=0) is None
            async with multi.hold(timeout=5) as held:
                assert held is multi and multi.locked()
                assert set(multi.fencing_tokens) == {name + ":a", name + ":b"}
                await in_task(lambda: refused(lambda: multi.hold(timeout=SHORT)))
                assert await in_task(lambda: multi.acquire(timeout=0)) is False
            assert not multi.locked()
            assert await multi.acquire(timeout=0) is True
            await multi.release()

            with pytest.raises(polylock.InvalidArgumentError):
                await lock.hold(timeout=-1)

            assert await latch.try_set_count(1)
            await refused(lambda: latch.await_zero(timeout=SHORT))
            assert await latch.wait(timeout=0) is False
            await latch.count_down()
            assert await latch.await_zero(timeout=5) is None

    asyncio.run(asyncio.wait_for(main(), 60))


def test_asyncio_multi_lock_cancelled_wait_leaves_nothing_held(url):
    async def main():
        name = unique_name()
        async with await polylock.aio.connect(url) as client:
            multi = client.multi_lock([name + ":a", name + ":b"])
            blocker = client.lock(name + ":b")

            async def block():
                await blocker.acquire()

            await asyncio.create_task(block())  # another task holds part b
            waiting = asyncio.create_task(in_task(lambda: multi.acquire(timeout=30)))
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            # Part a, taken before b, is given back: another client sees it free. The give-back
            # runs on the runtime after the cancelled task has ended (asyncio cannot wait for it
            # inside cancel()), so it lands a few milliseconds later: the verification run of
            # 2026-11-29 saw it still held right after the CancelledError on Redis. Making the
            # cancelled await end only after the give-back is left in issue 34's note.
            async with await polylock.aio.connect(url) as other:
                part_a = other.lock(name + ":a")
                deadline = asyncio.get_running_loop().time() + 5
                while await part_a.is_locked():
                    assert asyncio.get_running_loop().time() < deadline, "part a was never given back"
                    await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(main(), 60))
