"""polylock.locked: functions and coroutine functions run holding a lock named from their
arguments, on SQLite and the running Redis."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

import polylock
from conftest import SERVER_URLS


def backends():
    return ["sqlite"] + (["redis"] if "redis" in SERVER_URLS else [])


@pytest.fixture(params=backends())
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/locks.db"
    return SERVER_URLS["redis"]


def test_the_name_is_filled_from_the_call_arguments_by_parameter_name(url):
    run = uuid.uuid4().hex
    seen = []
    with polylock.connect(url) as client:

        @polylock.locked(f"locked-{run}:{{order_id}}:{{carrier}}", client=client, timeout=5)
        def ship(order_id, carrier="ups"):
            # The lock is held, by this thread, while the function runs.
            name = f"locked-{run}:{order_id}:{carrier}"
            seen.append((name, client.lock(name).locked(), client.lock(name).is_locked()))
            return order_id

        assert ship(42) == 42
        assert ship(order_id=7, carrier="dhl") == 7
        assert seen == [(f"locked-{run}:42:ups", True, True), (f"locked-{run}:7:dhl", True, True)]
        # Released after the call.
        assert not client.lock(f"locked-{run}:42:ups").is_locked()


def test_a_busy_lock_raises_lock_timeout_or_skips_without_running(url):
    run = uuid.uuid4().hex
    calls = []
    with polylock.connect(url) as client, polylock.connect(url) as other:

        @polylock.locked(f"busy-{run}:{{n}}", client=client, timeout=0.2)
        def waits(n):
            calls.append(("waits", n))

        @polylock.locked(f"busy-{run}:{{n}}", client=url, skip=True)
        def skips(n):
            calls.append(("skips", n))
            return "ran"

        with other.lock(f"busy-{run}:1").hold(timeout=5):  # another client holds it
            with pytest.raises(polylock.LockTimeoutError):
                waits(1)
            assert skips(1) is None
            assert skips(2) == "ran"  # another name: another lock
        assert calls == [("skips", 2)]
        waits(1)
        assert skips(1) == "ran"
        assert calls == [("skips", 2), ("waits", 1), ("skips", 1)]


def test_calls_from_two_threads_never_overlap(url):
    run = uuid.uuid4().hex
    events = []
    both_waiting = threading.Barrier(2)
    with polylock.connect(url) as client:

        @polylock.locked(f"threads-{run}", client=client, timeout=30)
        def critical(tag):
            events.append(("in", tag))
            events.append(("out", tag))

        def worker(tag):
            both_waiting.wait()
            for _ in range(5):
                critical(tag)

        threads = [threading.Thread(target=worker, args=(tag,)) for tag in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(events) == 20
    for i in range(0, 20, 2):
        assert events[i][0] == "in" and events[i + 1] == ("out", events[i][1]), events


def test_an_exception_releases_the_lock_and_propagates(url):
    run = uuid.uuid4().hex
    with polylock.connect(url) as client:

        @polylock.locked(f"raises-{run}", client=client)
        def fails():
            raise KeyError("boom")

        with pytest.raises(KeyError):
            fails()
        assert not client.lock(f"raises-{run}").is_locked()


def test_coroutine_functions_hold_the_lock_per_task(url):
    run = uuid.uuid4().hex

    async def main():
        client = await polylock.aio.connect(url)
        order = []
        inside = asyncio.Event()
        go_on = asyncio.Event()

        @polylock.locked(f"aio-{run}:{{key}}", client=client, timeout=10)
        async def first(key):
            order.append("first in")
            inside.set()
            await go_on.wait()
            order.append("first out")

        @polylock.locked(f"aio-{run}:{{key}}", client=client, timeout=10)
        async def second(key):
            order.append("second in")

        @polylock.locked(f"aio-{run}:{{key}}", client=client, skip=True)
        async def skipped(key):
            order.append("skipped ran")

        one = asyncio.create_task(first("k"))
        await inside.wait()
        assert await skipped("k") is None
        two = asyncio.create_task(second("k"))
        go_on.set()
        await asyncio.gather(one, two)
        assert order == ["first in", "first out", "second in"]
        await client.close()

    asyncio.run(main())


def test_a_sync_client_serves_a_coroutine_function(url):
    run = uuid.uuid4().hex
    with polylock.connect(url) as client:

        @polylock.locked(f"mixed-{run}", client=client)
        async def work():
            return client.lock(f"mixed-{run}").is_locked()  # anyone holding it: this task

        assert asyncio.run(work()) is True
        assert not client.lock(f"mixed-{run}").is_locked()


def test_templates_are_checked_when_decorating():
    with pytest.raises(TypeError, match="no parameter 'order'"):
        polylock.locked("orders:{order}", client="mem://x")(lambda order_id: None)
    with pytest.raises(TypeError, match="positional field"):
        polylock.locked("orders:{0}", client="mem://x")(lambda order_id: None)
    with pytest.raises(ValueError, match="timeout"):
        polylock.locked("orders", timeout=-1)
    with pytest.raises(TypeError, match="client must be"):
        polylock.locked("orders", client=42)  # type: ignore[arg-type]

    # Attribute access, literal braces and **kwargs are read as str.format reads them.
    class Order:
        id = 9

    with polylock.connect(f"mem://{uuid.uuid4().hex}") as client:
        names = []

        @polylock.locked("{{o}}:{order.id}:{extra}", client=client)
        def fn(order, **kwargs):
            names.append(client.lock("{o}:9:x").locked())

        fn(Order(), extra="x")
    assert names == [True]
