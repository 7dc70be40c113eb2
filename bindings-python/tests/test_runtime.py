"""The runtime under the sync API: waits release the GIL and still answer Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import polylock


def test_waiting_releases_the_gil(client, lock_name):
    lock = client.lock(lock_name)
    holder_ready, stop = threading.Event(), threading.Event()

    def hold():
        with client.lock(lock_name):
            holder_ready.set()
            stop.wait(10)

    counted = [0]

    def count():
        while not stop.is_set():
            counted[0] += 1

    threads = [threading.Thread(target=hold), threading.Thread(target=count)]
    threads[0].start()
    assert holder_ready.wait(10)
    threads[1].start()
    try:
        before = counted[0]
        assert lock.acquire(timeout=0.5) is False
        assert counted[0] - before > 1000, "another thread could not run while this one waited"
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_ctrl_c_interrupts_a_blocked_acquire(client, lock_name):
    holder_ready, stop = threading.Event(), threading.Event()

    def hold():
        with client.lock(lock_name):
            holder_ready.set()
            stop.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holder_ready.wait(10)
    interrupter = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    interrupter.start()
    lock = client.lock(lock_name)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            lock.acquire(timeout=20)
        assert time.monotonic() - started < 5
        assert not lock.locked()
    finally:
        stop.set()
        holder.join(10)
        interrupter.cancel()
    assert lock.acquire(timeout=5)
    lock.release()


def test_dropping_an_unclosed_client_gives_its_holds_back(url, lock_name):
    import gc

    dropped = polylock.connect(url)
    assert dropped.lock(lock_name).acquire()
    del dropped
    gc.collect()
    with polylock.connect(url) as other:
        lock = other.lock(lock_name)
        assert lock.acquire(timeout=5)
        lock.release()
