"""Read-write locks and semaphores through the sync and asyncio APIs, on every backend: the
embedded ones, and each server of tests/services in its incumbent's layout (Redisson's
RReadWriteLock and RPermitExpirableSemaphore, Curator's recipes, etcd's recipe, PostgreSQL's
shared advisory locks, InnoDB row locks on MySQL/MariaDB)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import polylock
import polylock.aio
from conftest import backend_params, make_url, run_in_thread, unique_name


@pytest.fixture(params=backend_params())
def client(request, tmp_path):
    with polylock.connect(make_url(request.param, tmp_path)) as client:
        yield client


def test_readers_share_writers_exclude_and_tokens_grow(client):
    rw = client.rw_lock(unique_name())
    with rw.read:
        first = rw.read.fencing_token
        # Another thread reads at the same time, but cannot write.
        assert run_in_thread(lambda: (rw.read.acquire(timeout=1), rw.read.fencing_token, rw.read.release())[1]) > first
        assert run_in_thread(lambda: rw.write.acquire(timeout=0.05)) is False
    with rw.write:
        assert rw.write.fencing_token > first
        assert rw.write.hold_count == 1
        assert run_in_thread(lambda: rw.read.acquire(blocking=False)) is False
        assert run_in_thread(lambda: rw.write.acquire(blocking=False)) is False
    assert run_in_thread(lambda: (rw.write.acquire(blocking=False), rw.write.release())[0]) is True
    assert rw.name == rw.read.name == rw.write.name
    assert rw.read.kind == "read" and rw.write.kind == "write"


def test_downgrade_allowed_upgrade_refused_at_once(client):
    rw = client.rw_lock(unique_name())
    rw.write.acquire()
    assert rw.read.acquire(timeout=1)  # the writer may read
    rw.write.release()  # downgraded
    assert run_in_thread(lambda: (rw.read.acquire(timeout=1), rw.read.release())[0])
    started = time.monotonic()
    with pytest.raises(polylock.InvalidArgumentError, match="release the read lock first"):
        rw.write.acquire(timeout=5)
    assert time.monotonic() - started < 1
    rw.read.release()
    with pytest.raises(polylock.NotOwnerError):
        rw.read.release()


def test_semaphore_hands_out_n_owned_permits(client):
    name = unique_name()
    semaphore = client.semaphore(name, permits=2)
    assert semaphore.permits == 2 and semaphore.name == name
    first = semaphore.acquire()
    second = semaphore.acquire(timeout=1)
    assert first.fencing_token < second.fencing_token and first.id != second.id
    assert semaphore.acquire(timeout=0.05) is None
    assert semaphore.acquire(blocking=False) is None
    # Any thread may release a permit it was handed; a second release is NotOwner.
    run_in_thread(first.release)
    with pytest.raises(polylock.NotOwnerError):
        first.release()
    with semaphore.acquire(timeout=1) as third:
        assert third.fencing_token > second.fencing_token
    semaphore.release(second.id)
    with semaphore as held:  # a permit for the block
        assert isinstance(held, polylock.Permit)
    with pytest.raises(polylock.InvalidArgumentError, match="has 2 permits"):
        client.semaphore(name, permits=3).acquire(timeout=0)
    with pytest.raises(polylock.InvalidArgumentError):
        client.semaphore(unique_name(), permits=0)


def test_a_permit_whose_lease_runs_out_comes_back(client):
    semaphore = client.semaphore(unique_name(), permits=1)
    short = semaphore.acquire(lease=0.2)
    assert semaphore.acquire(timeout=0.05) is None
    later = semaphore.acquire(timeout=5)
    assert later is not None and later.fencing_token > short.fencing_token
    with pytest.raises(polylock.LockLostError):
        short.release()
    later.release()


def test_at_most_n_threads_hold_permits(client):
    semaphore = client.semaphore(unique_name(), permits=2)
    inside, most, guard = [0], [0], threading.Lock()

    def worker():
        for _ in range(5):
            with semaphore:
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert 1 <= most[0] <= 2
    # Two permits can be held at once. Shown with a barrier, not by hoping the
    # loop above overlapped: on a three-member ZooKeeper an acquire can take
    # longer than a 5 ms hold, and the loop then runs one holder at a time.
    both_inside = threading.Barrier(2, timeout=10)
    met = []

    def holder():
        with semaphore:
            both_inside.wait()
            met.append(True)

    pair = [threading.Thread(target=holder) for _ in range(2)]
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join(30)
    assert met == [True, True]


@pytest.mark.parametrize("backend", backend_params())
def test_asyncio_rw_lock_and_semaphore(backend, tmp_path):
    url = make_url(backend, tmp_path)

    async def main():
        async with await polylock.aio.connect(url) as client:
            rw = client.rw_lock(unique_name())
            async with rw.read:
                token = rw.read.fencing_token

                async def other_task_reads_but_cannot_write():
                    assert await rw.read.acquire(timeout=1)
                    await rw.read.release()
                    return await rw.write.acquire(timeout=0.05)

                assert await asyncio.create_task(other_task_reads_but_cannot_write()) is False
            async with rw.write:
                assert rw.write.fencing_token > token
            semaphore = client.semaphore(unique_name(), permits=1)
            async with semaphore as permit:
                assert await semaphore.acquire(timeout=0.05) is None
                assert permit.fencing_token > 0
            # A task cancelled while it waits for a permit leaves none taken.
            held = await semaphore.acquire()
            waiting = asyncio.create_task(semaphore.acquire())
            await asyncio.sleep(0.05)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await held.release()
            again = await semaphore.acquire(timeout=2)
            assert again is not None
            await again.release()

    asyncio.run(main())
