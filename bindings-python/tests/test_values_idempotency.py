"""Versioned values, fenced writes and idempotency keys (issue 22) on every backend.

A backend that does not offer versioned values must refuse them with UnsupportedError (that
is what its tests check); every other backend runs the whole contract. Processes are real
OS processes (the Python interpreter running this suite), paused with SIGSTOP where the
scenario needs a holder frozen past its lease.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import polylock
from conftest import IN_PROCESS_BACKENDS, scheme_of, unique_name, with_query

# The multi-process contention tests: 16 processes on a 2-core machine, on the embedded
# default and the two servers most deployments use.
CONTENTION_BACKENDS = {"sqlite", "redis", "postgres"}


def offers_values(client) -> bool:
    """Whether the backend offers versioned values; one that does not must say so."""
    try:
        client.value("probe")
        return True
    except polylock.UnsupportedError:
        with pytest.raises(polylock.UnsupportedError):
            client.idempotency("probe")
        return False


def test_values_are_written_by_compare_and_set(client):
    if not offers_values(client):
        return
    value = client.value(unique_name("value"))
    assert value.get() is None
    v1 = value.create(b"one")
    with pytest.raises(polylock.ConflictError) as err:
        value.create(b"again")
    assert isinstance(err.value, polylock.PolylockError)
    assert (err.value.current_value, err.value.current_version) == (b"one", v1)
    v2 = value.compare_and_set(v1, b"two")
    assert v2 > v1
    with pytest.raises(polylock.ConflictError) as err:
        value.compare_and_set(v1, b"stale")
    assert (err.value.current_value, err.value.current_version) == (b"two", v2)
    assert value.get() == (b"two", v2)
    assert value.get_record() == polylock.VersionedValue(b"two", v2, None)
    with pytest.raises(polylock.ConflictError):
        value.delete(v1)
    value.delete(v2)
    assert value.get() is None
    with pytest.raises(polylock.ConflictError) as err:
        value.compare_and_set(v2, b"gone")
    assert (err.value.current_value, err.value.current_version) == (None, None)
    assert value.create(bytearray(b"three")) > v2, "versions grow across a delete"
    with pytest.raises(polylock.InvalidArgumentError):
        client.value("")
    with pytest.raises(TypeError):
        value.create("text is not bytes")


def test_fenced_writes_never_accept_a_lower_token(client):
    if not offers_values(client):
        return
    value = client.value(unique_name("fenced"))
    value.write_fenced(5, b"by 5")
    with pytest.raises(polylock.FencedError) as err:
        value.write_fenced(3, b"by 3")
    assert err.value.winning_token == 5
    version = value.write_fenced(5, b"by 5 again")
    value.compare_and_set(version, b"plain")
    assert value.get_record().fencing_token == 5, "a plain compare-and-set keeps the fence"
    with pytest.raises(polylock.FencedError):
        value.write_fenced(4, b"by 4")
    with pytest.raises(OverflowError):
        value.write_fenced(-1, b"negative")


def test_the_lock_token_pattern(client):
    """Hold the lock, pass its token, write fenced."""
    if not offers_values(client):
        return
    name = unique_name("guarded")
    with client.lock(name) as lock:
        token = lock.fencing_token
        client.value(name).write_fenced(token, b"written under the lock")
    assert client.value(name).get_record()[0::2] == (b"written under the lock", token)


def test_idempotency_begin_complete_replay_mismatch(client):
    if not offers_values(client):
        return
    idem = client.idempotency(unique_name("payments"))
    outcome = idem.begin("order-1", b"fp-a")
    assert isinstance(outcome, polylock.Acquired)
    ticket = outcome.ticket
    assert ticket.token == 1 and ticket.key == "order-1"
    busy = idem.begin("order-1", b"fp-a")
    assert isinstance(busy, polylock.InProgress) and 0 < busy.retry_after <= 60
    assert isinstance(idem.begin("order-1", b"fp-b"), polylock.Mismatch)
    ticket.extend()
    ticket.complete(b"charged")
    assert idem.begin("order-1", b"fp-a") == polylock.Replay(b"charged")
    with pytest.raises(polylock.MismatchError):
        idem.run("order-1", b"fp-b", lambda: b"never")
    with pytest.raises(polylock.InvalidArgumentError):
        ticket.complete(b"twice")
    with pytest.raises(polylock.InvalidArgumentError):
        idem.begin("", b"fp")


def test_a_crashed_attempt_is_taken_over_and_its_complete_is_lost(client):
    if not offers_values(client):
        return
    idem = client.idempotency(unique_name("jobs"), in_progress_ttl=0.3)
    crashed = idem.begin("job", b"fp").ticket
    time.sleep(0.4)
    takeover = idem.begin("job", b"fp")
    assert isinstance(takeover, polylock.Acquired) and takeover.ticket.token > crashed.token
    with pytest.raises(polylock.LockLostError):
        crashed.complete(b"late")
    takeover.ticket.complete(b"second")
    assert idem.begin("job", b"fp") == polylock.Replay(b"second")


def test_records_expire_after_retention(client):
    if not offers_values(client):
        return
    idem = client.idempotency(unique_name("short"), retention=0.3)
    assert idem.run("k", "fp", lambda: {"n": 1}) == {"n": 1}
    assert idem.run("k", "fp", lambda: {"n": 2}) == {"n": 1}, "replayed"
    time.sleep(0.4)
    assert idem.run("k", "other fp", lambda: {"n": 3}) == {"n": 3}, "expired: runs afresh"


def test_run_replays_waits_and_abandons_on_error(client):
    if not offers_values(client):
        return
    idem = client.idempotency(unique_name("run"))
    calls = []

    def work(amount):
        calls.append(amount)
        time.sleep(0.2)
        return {"charged": amount}

    results = []
    first = threading.Thread(target=lambda: results.append(idem.run("k", {"amount": 5}, work, 5)))
    first.start()
    time.sleep(0.05)
    with pytest.raises(polylock.InProgressError) as err:
        idem.run("k", {"amount": 5}, work, 5)
    assert 0 < err.value.retry_after <= 60
    assert idem.run("k", {"amount": 5}, work, 5, wait=10) == {"charged": 5}
    first.join()
    assert results == [{"charged": 5}] and calls == [5], "the work ran once"
    assert idem.run("bytes", None, lambda: b"\x00raw") == b"\x00raw"
    assert idem.run("bytes", None, lambda: b"other") == b"\x00raw"

    def flaky():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        idem.run("flaky", "fp", flaky)
    assert idem.run("flaky", "fp", lambda: "ok") == "ok", "a failed attempt is abandoned"


def test_idempotent_decorator(client):
    if not offers_values(client):
        return
    calls = []

    @client.idempotent(key="request_id", namespace=unique_name("decorated"))
    def charge(request_id, amount, currency="EUR"):
        calls.append(request_id)
        return {"id": request_id, "amount": amount, "currency": currency}

    assert charge("r1", 10) == {"id": "r1", "amount": 10, "currency": "EUR"}
    assert charge("r1", 10) == {"id": "r1", "amount": 10, "currency": "EUR"}
    assert charge(request_id="r2", amount=3) == {"id": "r2", "amount": 3, "currency": "EUR"}
    assert calls == ["r1", "r2"]
    with pytest.raises(polylock.MismatchError):
        charge("r1", 11)


def test_asyncio_values_and_idempotency(url):
    async def main():
        async with await polylock.aio.connect(url) as client:
            try:
                value = client.value(unique_name("aio"))
            except polylock.UnsupportedError:
                return
            version = await value.create(b"a")
            with pytest.raises(polylock.ConflictError) as err:
                await value.compare_and_set(version + 1000, b"b")
            assert err.value.current_version == version
            await value.write_fenced(7, b"fenced")
            with pytest.raises(polylock.FencedError):
                await value.write_fenced(6, b"older")
            assert (await value.get_record()).fencing_token == 7

            idem = client.idempotency(unique_name("aio-idem"))
            calls = []

            async def work(n):
                calls.append(n)
                await asyncio.sleep(0.1)
                return [n, n]

            results = await asyncio.gather(
                idem.run("k", "fp", work, 1, wait=10), idem.run("k", "fp", work, 2, wait=10), idem.run("k", "fp", work, 3, wait=10)
            )
            assert len(calls) == 1 and results == [[calls[0]] * 2] * 3
            outcome = await idem.begin("step", b"fp")
            assert isinstance(outcome, polylock.Acquired)
            await outcome.ticket.complete(b"done")
            assert await idem.begin("step", b"fp") == polylock.Replay(b"done")

            @client.idempotent(key=lambda order, **_: f"order:{order}", namespace=unique_name("aio-dec"))
            async def ship(order):
                calls.append(order)
                return order * 2

            assert await ship(21) == 42 and await ship(21) == 42
            assert calls.count(21) == 1

    asyncio.run(main())


# --- Real processes -----------------------------------------------------------------------

PRELUDE = """
import json, sys, polylock
client = polylock.connect(sys.argv[1])
"""

INCREMENTER = PRELUDE + textwrap.dedent(
    """
    value = client.value(sys.argv[2])
    retries = 0
    for _ in range(int(sys.argv[3])):
        while True:
            data, version = value.get()
            try:
                value.compare_and_set(version, str(int(data) + 1).encode())
                break
            except polylock.ConflictError:
                retries += 1
    print(json.dumps({"retries": retries}), flush=True)
    client.close()
    """
)

BEGINNER = PRELUDE + textwrap.dedent(
    """
    idem = client.idempotency(sys.argv[2])
    sys.stdin.readline()  # start together
    outcome = idem.begin("one-key", b"fp")
    print(type(outcome).__name__, flush=True)
    client.close()
    """
)

FIRST_HOLDER = PRELUDE + textwrap.dedent(
    """
    lock = client.lock(sys.argv[2], sys.argv[3])
    lock.acquire(lease=1.0)
    token = lock.fencing_token
    print("TOKEN", token, flush=True)
    sys.stdin.readline()  # paused (SIGSTOP) before this, told to go on after SIGCONT
    try:
        client.value(sys.argv[2]).write_fenced(token, b"holder 1")
        print("OUTCOME WRITTEN", flush=True)
    except polylock.FencedError as err:
        print("OUTCOME FENCED", err.winning_token, flush=True)
    """
)


def paused_holder(url):
    """How holder 1 holds a lock that ends while it is paused: (its URL, the lock kind).
    PostgreSQL's and MySQL's default locks last as long as the session (a paused process keeps
    its connection), so they use their lease kind (ShedLock's table); etcd and ZooKeeper end a
    paused holder's session after its TTL, so the child's is short."""
    scheme = scheme_of(url)
    if scheme in ("postgres", "postgresql", "mysql", "mariadb"):
        return url, "lease"
    if scheme.startswith("etcd"):
        return with_query(url, "ttl=2s"), "reentrant"
    if scheme == "zk":
        return with_query(url, "session_timeout=2s"), "reentrant"
    return url, "reentrant"


def spawn(script, *args, stdin=None):
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE if stdin else None,
        stdout=subprocess.PIPE,
        text=True,
    )


def values_url(backend, url):
    """`url` if the backend offers versioned values, else None (its refusal checked)."""
    with polylock.connect(url) as client:
        return url if offers_values(client) else None


def test_sixteen_processes_increment_one_counter_exactly(backend, url):
    if backend not in CONTENTION_BACKENDS:
        pytest.skip(f"contention across 16 processes runs on {sorted(CONTENTION_BACKENDS)} only")
    if values_url(backend, url) is None:
        return
    name, processes, each = unique_name("counter"), 16, 100
    with polylock.connect(url) as client:
        client.value(name).create(b"0")
    children = [spawn(INCREMENTER, url, name, str(each)) for _ in range(processes)]
    retries = 0
    for child in children:
        out, _ = child.communicate(timeout=300)
        assert child.returncode == 0, out
        retries += json.loads(out.strip().splitlines()[-1])["retries"]
    with polylock.connect(url) as client:
        assert client.value(name).get()[0] == str(processes * each).encode()
    print(f"{backend}: {processes * each} increments by compare-and-set, {retries} retries")


def test_sixteen_concurrent_begins_yield_exactly_one_acquired(backend, url):
    if backend not in CONTENTION_BACKENDS:
        pytest.skip(f"contention across 16 processes runs on {sorted(CONTENTION_BACKENDS)} only")
    if values_url(backend, url) is None:
        return
    namespace = unique_name("race")
    children = [spawn(BEGINNER, url, namespace, stdin=True) for _ in range(16)]
    time.sleep(1.0)  # let every interpreter start and connect
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    outcomes = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0, out
        outcomes.append(out.strip().splitlines()[-1])
    assert outcomes.count("Acquired") == 1, outcomes
    assert outcomes.count("InProgress") == 15, outcomes


def test_a_paused_holders_fenced_write_is_refused(backend, url):
    """Kleppmann's scenario: holder 1 paused (SIGSTOP) past its lease, holder 2 writes fenced,
    holder 1 resumes and its write is refused."""
    if backend in IN_PROCESS_BACKENDS:
        pytest.skip("another process cannot share mem://")
    if values_url(backend, url) is None:
        return
    name = unique_name("kleppmann")
    child_url, kind = paused_holder(url)
    child = spawn(FIRST_HOLDER, child_url, name, kind, stdin=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("TOKEN "), line
        first_token = int(line.split()[1])
        os.kill(child.pid, signal.SIGSTOP)
        with polylock.connect(url) as client:
            lock = client.lock(name, kind)
            assert lock.acquire(timeout=30), "the paused holder's lease (or session) never ended"
            second_token = lock.fencing_token
            assert second_token > first_token
            client.value(name).write_fenced(second_token, b"holder 2")
            os.kill(child.pid, signal.SIGCONT)
            child.stdin.write("go\n")
            child.stdin.flush()
            out, _ = child.communicate(timeout=60)
            assert out.strip().splitlines()[-1] == f"OUTCOME FENCED {second_token}"
            assert client.value(name).get_record() == (b"holder 2", client.value(name).get()[1], second_token)
            lock.release()
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
