"""Value.watch on every backend, blocking and asyncio: a watch started before a write sees it
(from another client), then the next version, then the deletion (None); ``current`` is the
state last seen; a watch iterated by asyncio never blocks the loop, and a cancelled wait
leaves the watch usable. A watch let go of (a Redis subscription among them) is closed
inside the client's runtime: nothing is raised, not even unraisably, from its finaliser."""

from __future__ import annotations

import asyncio
import gc
import queue
import threading

import pytest

import polylock
import polylock.aio
from conftest import unique_name

# An exception in a finaliser (say, a panic while a watch is freed) fails the test.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")


def follow(watch, count):
    """Iterate `watch` for `count` states on another thread; a queue of what it saw."""
    seen: "queue.Queue" = queue.Queue()

    def run():
        try:
            for _, state in zip(range(count), watch):
                seen.put(state)
        except BaseException as error:  # handed to the test
            seen.put(error)

    threading.Thread(target=run, daemon=True).start()
    return seen


def test_a_watch_sees_writes_from_another_client_in_order(client, url):
    name = unique_name("value")
    watch = client.value(name).watch()
    assert watch.current is None
    seen = follow(watch, 3)
    with polylock.connect(url) as other:
        value = other.value(name)
        first = value.create(b"one")
        got = seen.get(timeout=20)
        assert got == polylock.VersionedValue(b"one", first, None)
        second = value.compare_and_set(first, b"two")
        assert seen.get(timeout=20) == polylock.VersionedValue(b"two", second, None)
        value.delete(second)
        assert seen.get(timeout=20) is None
    assert watch.current is None


def test_a_watch_starts_from_the_current_state(client):
    value = client.value(unique_name("value"))
    version = value.create(b"now")
    watch = value.watch()
    assert watch.current == polylock.VersionedValue(b"now", version, None)
    seen = follow(watch, 1)
    assert seen.empty()
    newer = value.compare_and_set(version, b"later")
    assert seen.get(timeout=20) == polylock.VersionedValue(b"later", newer, None)
    assert watch.current == polylock.VersionedValue(b"later", newer, None)


def test_asyncio_watch(url):
    async def main():
        name = unique_name("value")
        async with await polylock.aio.connect(url) as client, await polylock.aio.connect(url) as other:
            watch = await client.value(name).watch()
            assert isinstance(watch, polylock.aio.ValueWatch) and watch.current is None
            # A wait given up leaves the watch usable.
            waiting = asyncio.create_task(watch.__anext__())
            await asyncio.sleep(0.1)
            waiting.cancel()
            try:
                await waiting
            except asyncio.CancelledError:
                pass
            version = await other.value(name).create(b"one")
            got = await asyncio.wait_for(watch.__anext__(), 20)
            assert got == polylock.VersionedValue(b"one", version, None)
            await other.value(name).delete(version)
            async for state in watch:
                assert state is None
                break
            assert watch.current is None

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_watch_let_go_of_is_closed_quietly(client):
    value = client.value(unique_name("value"))
    for _ in range(3):
        watch = value.watch()
        del watch
        gc.collect()
    version = value.create(b"still usable")
    assert value.watch().current == polylock.VersionedValue(b"still usable", version, None)
