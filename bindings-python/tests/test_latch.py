"""Countdown latches (issue 18) on every backend, blocking and asyncio: N count-downs from
two clients release every waiter of both; a count is refused while the latch counts down and
taken once it is open; a wait that runs out answers False; the count never goes below zero.
On Redis the count is Redisson's RCountDownLatch key, read and written here with redis-py."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis

import polylock
from conftest import REDIS_URL, unique_name


def test_n_count_downs_release_every_waiter_of_two_clients(client, url):
    other = polylock.connect(url)
    name = unique_name("latch")
    latch = client.latch(name)
    assert latch.try_set_count(3)
    results = []

    def wait(handle):
        results.append(handle.wait(timeout=30))

    waiters = [threading.Thread(target=wait, args=(c.latch(name),)) for c in (client, other, client, other)]
    for waiter in waiters:
        waiter.start()
    for left in (2, 1):
        (client if left % 2 else other).latch(name).count_down()
        assert latch.count == left
        time.sleep(0.05)
        assert results == [], "a waiter left before the count reached zero"
    other.latch(name).count_down()
    for waiter in waiters:
        waiter.join(30)
    assert results == [True] * 4
    assert latch.count == 0
    other.close()


def test_a_count_is_refused_while_counting_down_and_taken_once_open(client):
    name = unique_name("latch")
    latch = client.latch(name)
    assert latch.name == name
    assert latch.count == 0 and latch.get_count() == 0
    assert latch.wait(0) is True, "a latch never set is open"
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(9) is False
    assert latch.count == 2
    latch.count_down()
    assert latch.try_set_count(9) is False
    latch.count_down()
    assert latch.try_set_count(4) is True
    assert latch.count == 4
    for bad in (0, -1):
        with pytest.raises(polylock.InvalidArgumentError):
            latch.try_set_count(bad)


def test_a_wait_that_runs_out_is_false_and_the_count_stops_at_zero(client):
    latch = client.latch(unique_name("latch"))
    assert latch.try_set_count(1)
    started = time.monotonic()
    assert latch.wait(timeout=0.2) is False
    assert time.monotonic() - started >= 0.19
    assert latch.wait(timeout=0) is False
    for _ in range(3):
        latch.count_down()
        assert latch.count == 0
    assert latch.wait(timeout=0.2) is True
    with pytest.raises(polylock.InvalidArgumentError):
        latch.wait(timeout=-1)


def test_asyncio_wait_does_not_block_the_loop_and_times_out(url):
    async def scenario():
        client = await polylock.aio.connect(url)
        name = unique_name("latch")
        latch = client.latch(name)
        assert await latch.try_set_count(2)
        assert await latch.count() == 2
        assert await latch.wait(0.1) is False
        waiters = [asyncio.ensure_future(latch.wait(30)) for _ in range(3)]
        ticks = 0
        while ticks < 5:  # the loop runs while the waiters wait
            await asyncio.sleep(0.01)
            ticks += 1
        assert not any(w.done() for w in waiters)
        await latch.count_down()
        await client.latch(name).count_down()
        assert await asyncio.gather(*waiters) == [True, True, True]
        # A cancelled wait stops; the latch is untouched.
        assert await latch.try_set_count(1)
        waiting = asyncio.ensure_future(latch.wait(None))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await latch.count() == 1
        await latch.count_down()
        await client.close()

    asyncio.run(scenario())


def test_redis_keeps_redissons_layout():
    client = polylock.connect(REDIS_URL)
    name = unique_name("latch")
    raw = redis.Redis.from_url(REDIS_URL)
    latch = client.latch(name)
    assert latch.try_set_count(2)
    assert raw.get(name) == b"2"
    latch.count_down()
    assert raw.get(name) == b"1"
    latch.count_down()
    assert raw.exists(name) == 0, "the key goes at zero, as Redisson's script deletes it"
    raw.set(name, 3)  # a count Redisson's trySetCount wrote
    assert latch.count == 3
    assert not latch.try_set_count(1)
    raw.delete(name)
    client.close()


def test_redlock_has_no_latches():
    server = REDIS_URL.split("://", 1)[1].split("/")[0].split("?")[0]
    # One server: a list naming it three times is refused (issue 35).
    client = polylock.connect(polylock._polylock.redlock_url([server]))
    with pytest.raises(polylock.UnsupportedError):
        client.latch("x")
    client.close()
