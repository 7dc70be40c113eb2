"""Leader elections (issue 18) from Python, on SQLite, mem, Redis, PostgreSQL and MariaDB:
one leader among candidates, resign hands over with a greater term, leader() and observe()
follow, the context manager resigns, a timed-out campaign leaves nothing behind, and a
leadership that was resigned is refused (never a second term)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import polylock
import polylock.aio
from conftest import backend_params, make_url, unique_name

BACKENDS = ["sqlite", "mem", "redis", "postgres", "mariadb"]


@pytest.fixture(params=backend_params(BACKENDS))
def election_url(request, tmp_path) -> str:
    return make_url(request.param, tmp_path)


def test_one_leader_resign_hands_over_with_a_greater_term(election_url):
    clients = [polylock.connect(election_url) for _ in range(3)]
    name = unique_name("election")
    won = []
    done = threading.Event()

    def candidate(index, client):
        leadership = client.election(name).campaign(f"node-{index}")
        won.append((index, leadership))

    first = clients[0].election(name).campaign("node-0", timeout=10)
    assert first.is_leader and first.value == b"node-0"
    assert clients[1].election(name).leader() == polylock.Leader(b"node-0", first.term)
    threads = [threading.Thread(target=candidate, args=(i, c)) for i, c in enumerate(clients[1:], 1)]
    for thread in threads:
        thread.start()
    done.wait(0.5)
    assert won == [], "a second leader while the first leads"
    first.resign()
    assert not first.is_leader and not first.is_lost
    terms = [first.term]
    for _ in range(2):
        for _ in range(200):
            if len(won) > len(terms) - 1:
                break
            done.wait(0.05)
        index, leadership = won[len(terms) - 1]
        assert leadership.is_leader
        assert leadership.term > terms[-1]
        assert clients[0].election(name).leader() == polylock.Leader(f"node-{index}".encode(), leadership.term)
        terms.append(leadership.term)
        leadership.resign()
    for thread in threads:
        thread.join(10)
    assert clients[0].election(name).leader() is None
    for client in clients:
        client.close()


def test_context_manager_proclaim_and_observe(election_url):
    watcher = polylock.connect(election_url)
    candidate = polylock.connect(election_url)
    name = unique_name("election")
    changes = watcher.election(name).observe()
    assert next(changes) is None
    with candidate.election(name).campaign(b"a", timeout=10) as leadership:
        assert next(changes) == polylock.Leader(b"a", leadership.term)
        leadership.proclaim("a-2")
        assert leadership.value == b"a-2"
        assert next(changes) == polylock.Leader(b"a-2", leadership.term)
        with pytest.raises(polylock.LockTimeoutError):
            watcher.election(name).campaign(b"b", timeout=0.2)
    assert not leadership.is_leader
    assert next(changes) is None
    with pytest.raises(polylock.NotOwnerError):
        leadership.proclaim(b"late")
    # Nothing was left by the timed-out candidate: a try-once campaign wins.
    second = watcher.election(name).campaign(b"b", timeout=0)
    assert second.term > leadership.term
    assert next(changes) == polylock.Leader(b"b", second.term)
    second.resign()
    watcher.close()
    candidate.close()


def test_bad_input_gets_typed_errors(tmp_path):
    client = polylock.connect(make_url("sqlite", tmp_path))
    with pytest.raises(polylock.InvalidArgumentError):
        client.election("")
    with pytest.raises(polylock.InvalidArgumentError):
        client.election("x").campaign(b"v", timeout=-1)
    with pytest.raises(TypeError):
        client.election("x").campaign(12)
    client.close()


def test_try_campaign_returns_none_while_another_leads(election_url):
    with polylock.connect(election_url) as first, polylock.connect(election_url) as second:
        name = unique_name("election")
        leading = first.election(name).campaign(b"a", timeout=10)
        started = time.monotonic()
        assert second.election(name).try_campaign(b"b", timeout=0.2) is None
        assert time.monotonic() - started >= 0.15
        leading.resign()
        won = second.election(name).try_campaign("b", timeout=10)
        assert isinstance(won, polylock.Leadership) and won.is_leader and won.term > leading.term
        assert first.election(name).leader() == polylock.Leader(b"b", won.term)
        won.resign()
        with pytest.raises(polylock.InvalidArgumentError):
            second.election(name).try_campaign(b"b", timeout=-1)


def test_asyncio_election(election_url):
    async def main():
        name = unique_name("election")
        async with await polylock.aio.connect(election_url) as watcher, await polylock.aio.connect(
            election_url
        ) as candidate:
            changes = watcher.election(name).observe()
            assert await changes.__anext__() is None
            assert await watcher.election(name).leader() is None
            async with candidate.election(name).campaign(b"a", timeout=10) as leadership:
                assert isinstance(leadership, polylock.aio.Leadership) and leadership.is_leader
                assert await changes.__anext__() == polylock.Leader(b"a", leadership.term)
                await leadership.proclaim("a-2")
                assert await changes.__anext__() == polylock.Leader(b"a-2", leadership.term)
                assert await watcher.election(name).leader() == polylock.Leader(b"a-2", leadership.term)
                with pytest.raises(polylock.LockTimeoutError):
                    await watcher.election(name).campaign(b"b", timeout=0.2)
                assert await watcher.election(name).try_campaign(b"b", timeout=0.2) is None
            assert not leadership.is_leader
            assert await changes.__anext__() is None
            second = await watcher.election(name).try_campaign(b"b", timeout=0)
            assert second is not None and second.term > leadership.term
            assert await changes.__anext__() == polylock.Leader(b"b", second.term)
            # A campaign whose task is cancelled leaves no candidacy: the next one leads once
            # the leader resigns.
            waiting = asyncio.create_task(candidate.election(name).campaign(b"c"))
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await second.resign()
            third = await candidate.election(name).campaign(b"d", timeout=10)
            assert await watcher.election(name).leader() == polylock.Leader(b"d", third.term)
            await third.resign()
            await changes.aclose()

    asyncio.run(asyncio.wait_for(main(), 60))
