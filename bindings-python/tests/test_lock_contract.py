"""The lock contract through the sync API, on every backend and kind."""

from __future__ import annotations

import threading
import time

import pytest

import polylock
from conftest import backend_kind_params, make_url, run_in_thread, unique_name

pytestmark = pytest.mark.parametrize("backend,kind", backend_kind_params())


def test_acquire_release_and_tokens_increase(client, lock_name, kind):
    lock = client.lock(lock_name, kind)
    assert not lock.locked() and lock.fencing_token is None
    tokens = []
    for _ in range(3):
        assert lock.acquire()
        assert lock.locked()
        tokens.append(lock.fencing_token)
        lock.release()
        assert not lock.locked()
    assert tokens == sorted(set(tokens)), tokens


def test_threads_contend_with_a_fencing_ledger(url, lock_name, kind):
    """Threads of two clients take turns; each hold's token is greater than the previous
    hold's, and no two holds overlap in time."""
    threads_per_client, rounds = 3, 6
    ledger = []
    ledger_lock = threading.Lock()
    errors = []

    def worker(client):
        lock = client.lock(lock_name, kind)
        try:
            for _ in range(rounds):
                with lock:
                    start = time.monotonic()
                    token = lock.fencing_token
                    time.sleep(0.002)
                    end = time.monotonic()
                with ledger_lock:
                    ledger.append((start, end, token))
        except BaseException as err:
            errors.append(err)

    with polylock.connect(url) as first, polylock.connect(url) as second:
        threads = [
            threading.Thread(target=worker, args=(client,))
            for client in (first, second)
            for _ in range(threads_per_client)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors, errors
    assert len(ledger) == 2 * threads_per_client * rounds
    ledger.sort()
    for (start, end, token), (next_start, _, next_token) in zip(ledger, ledger[1:]):
        assert end <= next_start, "two holds overlapped"
        assert token < next_token, "a later hold got a smaller fencing token"


def test_try_once_and_timeouts(client, lock_name, kind):
    holder_ready, release_now = threading.Event(), threading.Event()

    def hold():
        lock = client.lock(lock_name, kind)
        assert lock.acquire()
        holder_ready.set()
        release_now.wait(30)
        lock.release()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holder_ready.wait(10)
        lock = client.lock(lock_name, kind)
        assert lock.acquire(blocking=False) is False
        started = time.monotonic()
        assert lock.acquire(timeout=0.3) is False
        assert time.monotonic() - started >= 0.25
        assert not lock.locked()
    finally:
        release_now.set()
        thread.join(10)
    assert lock.acquire(timeout=5) is True
    lock.release()


def test_waiter_gets_the_lock_when_it_is_released(client, lock_name, kind):
    lock = client.lock(lock_name, kind)
    assert lock.acquire()
    waiter = threading.Thread(target=lambda: results.append(client.lock(lock_name, kind).acquire(timeout=10)))
    results = []
    waiter.start()
    time.sleep(0.2)
    assert results == []
    lock.release()
    waiter.join(10)
    assert results == [True]


def test_reentrant_per_thread(client, lock_name, kind):
    lock = client.lock(lock_name, kind)
    with lock:
        token = lock.fencing_token
        with lock:
            assert lock.hold_count == 2
            assert lock.fencing_token == token
            # Another thread is another owner: it must wait.
            assert run_in_thread(lambda: client.lock(lock_name, kind).acquire(blocking=False)) is False
        assert lock.hold_count == 1 and lock.locked()
    assert not lock.locked()
    assert run_in_thread(lambda: _acquire_and_release(client.lock(lock_name, kind)))


def _acquire_and_release(lock):
    acquired = lock.acquire(timeout=5)
    lock.release()
    return acquired


def test_release_by_another_thread_is_refused(client, lock_name, kind):
    lock = client.lock(lock_name, kind)
    with pytest.raises(polylock.NotOwnerError) as not_held:
        lock.release()
    assert not_held.value.kind == "NOT_OWNER"
    assert isinstance(not_held.value, RuntimeError)
    assert lock.acquire()
    with pytest.raises(polylock.NotOwnerError):
        run_in_thread(lock.release)
    assert lock.locked(), "a refused release must leave the hold alone"
    lock.release()


def test_explicit_lease_expires_and_the_loss_is_reported(client, lock_name, kind):
    lock = client.lock(lock_name, kind)
    assert lock.acquire(lease=0.3)
    assert not lock.is_lost()
    time.sleep(0.8)
    assert lock.is_lost() and lock.lost
    assert lock.lost_reason
    assert not lock.locked()
    # Someone else can take it now.
    assert run_in_thread(lambda: _acquire_and_release(client.lock(lock_name, kind)))
    with pytest.raises(polylock.LockLostError) as lost:
        lock.release()
    assert lost.value.kind == "LOST"


def test_watchdog_keeps_the_lock_past_its_lease(backend, tmp_path, lock_name, kind):
    with polylock.connect(make_url(backend, tmp_path, "lease=300ms")) as client:
        lock = client.lock(lock_name, kind)
        with lock:
            time.sleep(1.0)
            assert lock.locked() and not lock.is_lost()
            assert run_in_thread(lambda: client.lock(lock_name, kind).acquire(blocking=False)) is False


def test_close_gives_holds_back(url, lock_name, kind):
    first = polylock.connect(url)
    lock = first.lock(lock_name, kind)
    assert lock.acquire()
    first.close()
    first.close()  # harmless
    assert first.closed
    with polylock.connect(url) as second:
        other = second.lock(lock_name, kind)
        assert other.acquire(timeout=5)
        other.release()
    with pytest.raises(polylock.PolylockConnectionError):
        first.lock(unique_name(), kind).acquire()
