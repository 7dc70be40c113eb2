"""polylock.contrib.celery.SingletonTask with three real Celery workers (processes of their
own, one task at a time each) on the running Redis as broker, result backend and lock store:
runs of one key never overlap across the workers, a waiting run starts only after the
holder's end, a ``lock_skip`` run on the third worker finds the lock taken (held on one
worker, waited for on another) and does not run.

The workers import this module (``-A test_contrib_celery:app``); its configuration comes
from the environment the test gives them (a queue of this run's own)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis
from celery import Celery

from polylock.contrib.celery import SingletonTask, default_lock_name

HERE = Path(__file__).resolve().parent
REDIS_URL = os.environ.get("POLYLOCK_TEST_REDIS_URL") or "redis://127.0.0.1:16379"
QUEUE = os.environ.get("POLYLOCK_CELERY_TEST_QUEUE", "polylock-test-unused")

app = Celery("polylock_celery_test", broker=REDIS_URL, backend=REDIS_URL)
app.conf.update(
    task_default_queue=QUEUE,
    task_acks_late=True,  # a busy worker reserves no second message: the other one takes it
    worker_prefetch_multiplier=1,
    task_track_started=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    polylock_url=REDIS_URL,
)


def _events() -> "redis.Redis[bytes]":
    # No socket timeout: redis-py 8 reads with a 5 s one by default, which broke the gated
    # holder's BLPOP of up to 60 s after 5 s (TimeoutError), so the holder's run ended (and
    # gave the lock back) early, without recording its end.
    return redis.Redis.from_url(REDIS_URL, socket_timeout=None)


@app.task(bind=True, base=SingletonTask, lock_key="celery-test:{resource}")
def guarded(self, resource: str, run: str, gate: bool = False) -> int:
    """Records its start (with the lock's fencing token and the worker) and end into the
    Redis list ``run``; with ``gate`` it waits for the test to push to ``run:gate`` first."""
    events = _events()
    token = self.current_lock.fencing_token
    events.rpush(run, f"start {token} {self.request.hostname}")
    if gate:
        events.rpush(f"{run}:entered", "1")
        events.blpop([f"{run}:gate"], timeout=60)
    events.rpush(run, f"end {token}")
    return token


@app.task(bind=True, base=SingletonTask, lock_key="celery-test:{resource}", lock_skip=True)
def skipping(self, resource: str, run: str) -> str:
    _events().rpush(run, "skipping ran")
    return "ran"


import pytest  # noqa: E402  (not needed by the workers)

from conftest import SERVER_URLS  # noqa: E402

pytestmark = pytest.mark.skipif("redis" not in SERVER_URLS, reason="needs the Redis of tests/services")


@pytest.fixture(scope="module")
def workers():
    """Three worker processes on a queue of this run's own; their node names. Each runs one
    task at a time and reserves no second one, so with a holder and a waiter busy on two of
    them a third task can only run on the third."""
    queue = f"polylock-test-{uuid.uuid4().hex}"
    app.conf.task_default_queue = queue
    env = dict(os.environ, POLYLOCK_CELERY_TEST_QUEUE=queue, POLYLOCK_TEST_REDIS_URL=REDIS_URL)
    names = [f"w{i}-{queue}@localhost" for i in (1, 2, 3)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "test_contrib_celery:app", "worker", "--pool=threads",
             "--concurrency=1", "-n", name, "-Q", queue, "--without-gossip", "--without-mingle",
             "--without-heartbeat", "--loglevel=WARNING"],
            cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        for name in names
    ]
    try:
        deadline = time.monotonic() + 60
        while True:
            replies = app.control.ping(destination=names, timeout=0.5)
            if len(replies) == len(names):
                break
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a worker exited: {process.stderr.read().decode()}")
            assert time.monotonic() < deadline, "the workers did not answer a ping within 60 s"
        yield names
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:  # a task still running: no warm shutdown
                process.kill()
                process.wait(30)


def wait_for_state(result, state: str) -> None:
    deadline = time.monotonic() + 30
    while result.state != state:
        assert time.monotonic() < deadline, f"task {result.id} is {result.state}, not {state}"
        time.sleep(0.02)  # polling the result backend, not synchronising work


def test_a_waiting_run_starts_after_the_holder_and_a_skipping_run_is_skipped(workers):
    run, resource = f"celery-run-{uuid.uuid4().hex}", uuid.uuid4().hex
    events = _events()
    try:
        holder = guarded.delay(resource, run, gate=True)
        # The holder is in its body, holding the lock, on one worker.
        assert events.blpop([f"{run}:entered"], timeout=30) is not None
        waiter = guarded.delay(resource, run)
        wait_for_state(waiter, "STARTED")  # on a second worker, waiting for the lock
        # On the third worker, while the holder holds and the waiter waits: skipped, not run.
        got = skipping.delay(resource, run).get(timeout=30)
        assert got is None, [e for e in events.lrange(run, 0, -1)]
        # Nothing else ran meanwhile: the waiter still waits, the holder is still in its body.
        assert [e.decode().split()[0] for e in events.lrange(run, 0, -1)] == ["start"]
        assert waiter.state == "STARTED" and holder.state == "STARTED"
        events.rpush(f"{run}:gate", "go")
        first_token = holder.get(timeout=30)
        second_token = waiter.get(timeout=30)
        assert second_token > first_token  # two holds of one lock, in order
        assert skipping.delay(resource, run).get(timeout=30) == "ran"
        log = [e.decode().split() for e in events.lrange(run, 0, -1)]
        assert log[0][:2] == ["start", str(first_token)]
        assert log[1] == ["end", str(first_token)]
        assert log[2][:2] == ["start", str(second_token)]
        assert log[3] == ["end", str(second_token)]
        assert log[4] == ["skipping", "ran"] and len(log) == 5
        # The holder and the waiter ran on two different workers.
        assert log[0][2] != log[2][2] and {log[0][2], log[2][2]} <= set(workers)
    finally:
        events.rpush(f"{run}:gate", "go")  # a failed assertion must not leave the holder gated
        for key in (run, f"{run}:gate", f"{run}:entered"):
            events.expire(key, 120)  # gone once a holder let go here has ended


def test_many_runs_of_one_key_alternate_start_and_end(workers):
    run, resource = f"celery-run-{uuid.uuid4().hex}", uuid.uuid4().hex
    events = _events()
    try:
        results = [guarded.delay(resource, run) for _ in range(6)]
        tokens = [r.get(timeout=60) for r in results]
        log = [e.decode().split() for e in events.lrange(run, 0, -1)]
        assert len(log) == 12
        for i in range(0, 12, 2):
            assert log[i][0] == "start" and log[i + 1] == ["end", log[i][1]], log
        assert len(set(tokens)) == 6
        started_tokens = [int(entry[1]) for entry in log[::2]]
        assert started_tokens == sorted(started_tokens)  # each hold after the last one
        assert {entry[2] for entry in log[::2]} <= set(workers)
    finally:
        events.delete(run)


def test_default_lock_names_and_checked_options():
    assert default_lock_name("app.add", {"a": 1, "b": [2]}) == 'celery:app.add:{"a":1,"b":[2]}'
    long = default_lock_name("app.add", {"a": "x" * 1000})
    assert long.startswith("celery:app.add:sha256:") and len(long) < 200
    with pytest.raises(TypeError, match="no parameter 'order'"):

        @app.task(base=SingletonTask, lock_key="orders:{order}")
        def ship(order_id):
            pass

        ship.run  # a task is made when the app is finalized: make it now

    with pytest.raises(ValueError, match="timeout"):

        @app.task(base=SingletonTask, lock_timeout=-2)
        def late():
            pass

        late.run

    # The default key: the task's name and its arguments, bound by name.
    @app.task(base=SingletonTask, name="polylock.test.add")
    def add(a, b=2):
        return a + b

    assert add.lock_name((1,), {}) == add.lock_name((), {"a": 1, "b": 2}) == 'celery:polylock.test.add:{"a":1,"b":2}'
    assert add(1) == 3  # called in this process: locked too
