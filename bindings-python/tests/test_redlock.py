"""polylock.redlock([servers], name) (issue 18): a lock over three independent redis-servers
this test starts on free ports above 30000 (and kills): held only with a majority, excluding
another RedLock client of the same name, no fencing token, still working with one server
frozen (SIGSTOP) and refused with two frozen; bad server lists get InvalidArgumentError."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import redis

import polylock
from conftest import unique_name


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _answers(port: int) -> bool:
    try:
        return redis.Redis(port=port, socket_timeout=0.2).ping()
    except redis.RedisError:
        return False


@pytest.fixture
def servers():
    """Three private redis-servers; their ports. Killed (after SIGCONT) when the test ends."""
    for attempt in range(20):
        base = 40000 + (os.getpid() % 500) * 30 + attempt * 3
        ports = [base, base + 1, base + 2]
        if all(_free(port) for port in ports):
            break
    else:
        pytest.fail("no three free ports above 30000")
    children = [
        subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        for port in ports
    ]
    try:
        deadline = time.monotonic() + 10
        while not all(_answers(port) for port in ports):
            assert time.monotonic() < deadline, "the private redis-servers did not start"
            time.sleep(0.05)
        yield ports, children
    finally:
        for child in children:
            child.send_signal(signal.SIGCONT)
            child.kill()
            child.wait()


def test_a_majority_holds_and_excludes_another_redlock_client(servers):
    ports, _ = servers
    name = unique_name("redlock")
    nodes = [f"127.0.0.1:{port}" for port in ports]
    lock = polylock.redlock(nodes, name)
    other = polylock.redlock([f"redis://127.0.0.1:{port}" for port in ports], name)
    assert lock.acquire(timeout=2, lease=10)
    assert lock.locked()
    assert lock.fencing_token is None, "RedLock has no fencing tokens"
    holding = sum(redis.Redis(port=port).exists(name) for port in ports)
    assert holding >= 2, f"held with only {holding} of 3 servers"
    result = []
    thread = threading.Thread(target=lambda: result.append(other.acquire(timeout=0.3)))
    thread.start()
    thread.join(10)
    assert result == [False]
    lock.release()
    assert sum(redis.Redis(port=port).exists(name) for port in ports) == 0
    assert other.acquire(timeout=2)
    other.release()


def test_one_frozen_server_is_outvoted_two_are_not(servers):
    ports, children = servers
    nodes = [f"127.0.0.1:{port}" for port in ports]
    children[0].send_signal(signal.SIGSTOP)
    lock = polylock.redlock(nodes, unique_name("redlock"))
    assert lock.acquire(timeout=5, lease=5)
    lock.release()
    lonely = polylock.redlock(nodes, unique_name("redlock"))  # connected while two answer
    children[1].send_signal(signal.SIGSTOP)
    try:
        held = lonely.acquire(timeout=1, lease=5)
    except polylock.PolylockConnectionError:  # "no majority answered": refused, as it must be
        held = False
    assert held is False, "held with one vote of three"
    assert not lonely.locked()
    # A new client cannot even start without a majority to talk to.
    with pytest.raises(polylock.PolylockConnectionError):
        polylock.redlock(nodes, unique_name("redlock"))


def test_bad_server_lists_are_refused():
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.redlock([], "x")
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.redlock(["127.0.0.1"], "x")  # no port
    with pytest.raises(TypeError):
        polylock.redlock("127.0.0.1:6379", "x")
