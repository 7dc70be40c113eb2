"""The operator's calls on the client, blocking and asyncio, on every backend: ``status``
(the fields ``polylock status --json`` prints), ``list`` (held locks under a prefix, sorted)
and ``force_unlock`` (breaks anyone's hold). A backend that cannot list or break holds
refuses with UnsupportedError, never with an empty answer."""

from __future__ import annotations

import asyncio

import pytest

import polylock
import polylock.aio
from conftest import BACKEND_KINDS, unique_name

STATUS_FIELDS = [
    "name",
    "kind",
    "backend",
    "held",
    "holder",
    "fencing_token",
    "token_counter",
    "remaining_lease_ms",
    "lease_expires",
    "waiters",
    "layout",
    "details",
]

# SQL servers keep their default kind as a session lock (pg_advisory_lock, GET_LOCK): the
# server lists no such lock and only its session may end it, so there the lease kind's rows
# (ShedLock's table) are what an operator lists and breaks.
SESSION_LOCK_BACKENDS = ("postgres", "mariadb", "mysql")


def breakable_kind(backend: str) -> str:
    return "lease" if backend.startswith(SESSION_LOCK_BACKENDS) else "reentrant"


def lists(url: str) -> bool:
    """mem:// keeps its locks in a map it does not enumerate; a Redis Cluster's keys are spread
    over its masters, which one script cannot scan."""
    return not url.startswith(("mem:", "redis+cluster:", "rediss+cluster:"))


def test_status_list_and_force_unlock(client, url, backend):
    name = unique_name("admin")
    kind = breakable_kind(backend)
    lock, other_lock = client.lock(name + ":a", kind), client.lock(name + ":b", kind)
    assert client.status(name + ":a", kind)["held"] is False
    lock.acquire()
    with other_lock:
        status = client.status(name + ":a", kind)
        assert list(status) == STATUS_FIELDS
        assert status["name"] == name + ":a" and status["held"] is True and status["kind"] == kind
        with polylock.connect(url) as other:
            assert other.status(name + ":a", kind)["held"] is True
            if lists(url):
                listed = other.list(name)
                assert [entry["name"] for entry in listed if entry["held"]] == [name + ":a", name + ":b"]
                assert all(set(entry) == {"name", "kind", "held"} for entry in listed)
                assert other.list(unique_name("nothing-here")) == []
            else:
                with pytest.raises(polylock.UnsupportedError):
                    other.list(name)
            # Broken under its owner (whose release, or next renewal, learns of the loss).
            assert other.force_unlock(name + ":a", kind) is True
            assert other.force_unlock(name + ":a", kind) is False
            assert other.status(name + ":a", kind)["held"] is False
            assert lock.is_locked() is False
            assert other_lock.is_locked() is True


@pytest.mark.parametrize("backend", [b for b in ("postgres", "mariadb") if b in BACKEND_KINDS])
def test_a_sql_session_lock_is_not_listed_nor_broken(client):
    name = unique_name("admin")
    with client.lock(name):
        assert client.status(name)["held"] is True
        assert client.list(name) == []
        with pytest.raises(polylock.UnsupportedError, match="session"):
            client.force_unlock(name)


def test_admin_bad_input_is_typed(client):
    with pytest.raises(polylock.InvalidArgumentError):
        client.status("")
    with pytest.raises(polylock.InvalidArgumentError):
        client.status("x", kind="no-such-kind")
    with pytest.raises(polylock.InvalidArgumentError):
        client.force_unlock("", kind=None)


def test_asyncio_admin(url, backend):
    async def main():
        name = unique_name("admin")
        kind = breakable_kind(backend)
        async with await polylock.aio.connect(url) as client:
            lock = client.lock(name, kind)
            assert (await client.status(name, kind))["held"] is False
            async with lock:
                status = await client.status(name, kind)
                assert list(status) == STATUS_FIELDS and status["held"] is True
                if lists(url):
                    assert [e["name"] for e in await client.list(name) if e["held"]] == [name]
                else:
                    with pytest.raises(polylock.UnsupportedError):
                        await client.list(name)
                assert await client.force_unlock(name, kind) is True
                assert (await client.status(name, kind))["held"] is False
                assert await lock.acquire(timeout=5)

    asyncio.run(asyncio.wait_for(main(), 60))
