"""polylock's token lock and redis-py's Lock exclude each other on the same name."""

from __future__ import annotations

import threading

import pytest
import redis

import polylock
from conftest import REDIS_URL


@pytest.fixture
def redis_py():
    connection = redis.Redis.from_url(REDIS_URL)
    yield connection
    connection.close()


@pytest.fixture
def client():
    with polylock.connect(REDIS_URL) as client:
        yield client


def test_redis_py_holder_excludes_polylock(client, redis_py, lock_name):
    theirs = redis_py.lock(lock_name, timeout=30)
    assert theirs.acquire(blocking=False)
    ours = client.lock(lock_name, "token")
    assert ours.acquire(blocking=False) is False
    assert ours.acquire(timeout=0.2) is False
    theirs.release()
    assert ours.acquire(timeout=5)
    ours.release()


def test_polylock_holder_excludes_redis_py(client, redis_py, lock_name):
    ours = client.lock(lock_name, "token")
    assert ours.acquire()
    theirs = redis_py.lock(lock_name, timeout=30)
    assert theirs.acquire(blocking=False) is False
    ours.release()
    assert theirs.acquire(blocking=False)
    theirs.release()


def test_polylock_waiter_wakes_when_redis_py_releases(client, redis_py, lock_name):
    # thread_local=False: redis-py keeps the token per thread otherwise, and the timer releases.
    theirs = redis_py.lock(lock_name, timeout=30, thread_local=False)
    assert theirs.acquire(blocking=False)
    threading.Timer(0.3, theirs.release).start()
    ours = client.lock(lock_name, "token")
    assert ours.acquire(timeout=5)
    ours.release()
