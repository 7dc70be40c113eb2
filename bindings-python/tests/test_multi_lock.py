"""Multi-locks (issue 18) on every backend: used like a lock (``with``, ``acquire(timeout=,
lease=)``, ``release()``), parts taken in one order whatever order they are listed in (two
threads listing them in opposite orders never deadlock, checked by a ledger), one deadline
for the whole wait with every part given back when it runs out, and a fencing token per part
that is the ordinary lock's."""

from __future__ import annotations

import threading

import pytest

import polylock
from conftest import unique_name


def test_used_like_a_lock_with_a_token_per_part(client):
    names = [unique_name("b"), unique_name("a"), unique_name("c")]
    multi = client.multi_lock(names)
    assert sorted(multi.names) == sorted(names)
    assert multi.names == sorted(multi.names, key=lambda n: n.encode())
    with multi as held:
        assert held.locked()
        tokens = held.fencing_tokens
        assert set(tokens) == set(names)
        assert all(isinstance(token, int) for token in tokens.values()), tokens
        for name in names:
            part = client.lock(name)
            # Another thread's single lock of a part is excluded.
            assert run_in_thread(lambda: try_and_release(part)) is False
    assert not multi.locked()
    for name in names:
        lock = client.lock(name)
        assert lock.acquire(timeout=0)
        lock.release()


def test_a_wait_that_runs_out_gives_every_part_back(client):
    first, busy, last = unique_name("a"), unique_name("m"), unique_name("z")
    blocker = client.lock(busy)
    assert run_in_thread(lambda: blocker.acquire(lease=2)) is True  # another thread's hold
    multi = client.multi_lock([last, busy, first])
    assert multi.acquire(timeout=0.2, lease=10) is False
    assert not multi.locked()
    for name in (first, last):
        lock = client.lock(name)
        assert lock.acquire(timeout=0), f"{name} was left held by a failed multi-lock"
        lock.release()
    with pytest.raises(polylock.NotOwnerError):
        multi.release()


def test_opposite_orders_never_deadlock(client):
    names = [unique_name(letter) for letter in "xyz"]
    holders = {name: 0 for name in names}
    guard = threading.Lock()
    errors = []

    def worker(order):
        try:
            multi = client.multi_lock(order)
            for _ in range(5):
                assert multi.acquire(timeout=30)
                with guard:
                    for name in order:
                        holders[name] += 1
                        assert holders[name] == 1, f"two multi-locks held {name}"
                with guard:
                    for name in order:
                        holders[name] -= 1
                multi.release()
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(order,)) for order in (names, names[::-1]) * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "deadlocked"
    assert errors == []


def test_read_and_write_sides_mix_with_locks(client):
    try:
        client.rw_lock(unique_name("probe"))
    except polylock.UnsupportedError:
        pytest.skip("this backend has no read-write locks (test_rw_lock_and_semaphore checks the refusal)")
    table, row = unique_name("table"), unique_name("row")
    multi = client.multi_lock([(table, "read"), row])
    with multi:
        reader = client.rw_lock(table).read
        assert run_in_thread(lambda: try_and_release(reader)) is True  # readers share
        writer = client.rw_lock(table).write
        assert run_in_thread(lambda: try_and_release(writer)) is False
    with pytest.raises(polylock.InvalidArgumentError):
        client.multi_lock([(row, "sideways")])


def test_bad_input_is_refused(client):
    with pytest.raises(polylock.InvalidArgumentError):
        client.multi_lock([])
    with pytest.raises(polylock.InvalidArgumentError):
        client.multi_lock(["same", "same"])
    with pytest.raises(TypeError):
        client.multi_lock("one-name")


def try_and_release(lock) -> bool:
    if lock.acquire(timeout=0):
        lock.release()
        return True
    return False


def run_in_thread(function):
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join(30)
    return result[0]
