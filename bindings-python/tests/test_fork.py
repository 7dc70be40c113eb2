"""A client inherited across fork() raises a clear error in the child instead of hanging,
and the parent's client keeps working."""

from __future__ import annotations

import os
import time

import pytest

import polylock
from conftest import IN_PROCESS_BACKENDS, NO_NEW_CLIENT_AFTER_FORK, backend_params, scheme_of

pytestmark = pytest.mark.parametrize("backend", backend_params())


def run_in_child(function, timeout=20.0):
    """Fork, run `function` in the child, and return its exit status (killing it if it hangs)."""
    pid = os.fork()
    if pid == 0:
        status = 99
        try:
            status = function()
        finally:
            os._exit(status)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_inherited_client_raises_in_the_child(client, lock_name):
    lock = client.lock(lock_name)
    with lock:
        pass

    def child():
        try:
            lock.acquire(timeout=1)
        except polylock.PolylockConnectionError as err:
            return 0 if "fork" in str(err) else 2
        return 1

    assert run_in_child(child) == 0
    # The parent is unaffected.
    assert lock.acquire(timeout=5)
    lock.release()


def test_child_can_connect_again(url, backend, client, lock_name):
    if backend in IN_PROCESS_BACKENDS:
        pytest.skip(f"a {backend} store lives in one process: a child cannot share it")
    lock = client.lock(lock_name)
    assert lock.acquire()
    no_new_client = NO_NEW_CLIENT_AFTER_FORK.get(scheme_of(url))

    def child():
        try:
            with polylock.connect(url) as own:
                theirs = own.lock(lock_name)
                if theirs.acquire(blocking=False):
                    return 3  # the parent holds it
                return 0 if no_new_client is None else 4
        except polylock.PolylockConnectionError as err:
            # Refused at once, saying why, rather than timing out like an unreachable server.
            return 5 if no_new_client is None else 0 if "fork" in str(err) else 6

    started = time.monotonic()
    assert run_in_child(child) == 0
    assert time.monotonic() - started < 5, "the child hung before answering"
    lock.release()


def test_child_exits_cleanly_with_an_inherited_client(client):
    # Dropping and closing the inherited client in the child must not hang.
    def child():
        client.close()
        return 0

    assert run_in_child(child) == 0
    assert not client.closed
