"""Logs and metrics (issue #23): the core's events in Python's `logging`, and its counts as
dicts and Prometheus text, against real backends."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

import polylock
import polylock.aio
from conftest import SERVER_URLS, make_url, skip_if_unsupported, unique_name


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def of(self, op=None, name=None):
        return [
            r
            for r in list(self.records)
            if (op is None or r.polylock_op == op) and (name is None or r.polylock_name == name)
        ]

    def wait_for(self, op, name, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.of(op, name)
            if found:
                return found
            time.sleep(0.01)
        raise AssertionError(f"no {op} record for {name} in {[r.getMessage() for r in self.records]}")


@pytest.fixture
def captured():
    """A handler on the `polylock` logger, which lets everything through; the level polylock
    hands records on at is restored afterwards."""
    logger = logging.getLogger("polylock")
    handler, level_before, polylock_level_before = Collect(), logger.level, polylock.log_level()
    logger.addHandler(handler)
    logger.setLevel(1)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level_before)
        polylock.set_log_level(polylock_level_before)


def run_python(code: str, env_changes: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("POLYLOCK_LOG", "DEBUG")}
    env.update(env_changes)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=timeout
    )


# --- the level switch -------------------------------------------------------------------


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "warn"),
        ({"POLYLOCK_LOG": "debug"}, "debug"),
        ({"POLYLOCK_LOG": "OFF"}, "off"),
        ({"POLYLOCK_LOG": "warning"}, "warn"),
        ({"DEBUG": "express,polylock"}, "debug"),
        ({"DEBUG": "express"}, "warn"),
        ({"POLYLOCK_LOG": "error", "DEBUG": "polylock"}, "error"),
    ],
    ids=["default", "debug", "off", "warning", "DEBUG-list", "DEBUG-other", "POLYLOCK_LOG-wins"],
)
def test_the_level_at_import_comes_from_the_environment(env, expected):
    done = run_python("import polylock; print(polylock.log_level())", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_a_bad_level_in_the_environment_is_one_warning_and_the_default_level():
    code = """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import polylock
        print(polylock.log_level())
        for w in caught:
            print(w.category.__name__, w.message)
    """
    done = run_python(code, {"POLYLOCK_LOG": "loud"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "warn"
    warned = [line for line in lines[1:] if "POLYLOCK_LOG" in line]
    assert len(warned) == 1 and warned[0].startswith("RuntimeWarning"), done.stdout
    assert "trace" in warned[0]  # the message lists the valid names


def test_warnings_reach_logging_by_default_in_a_fresh_process(tmp_path):
    # No level set anywhere: a failed connect is a WARNING in `logging`, as any library's.
    code = f"""
        import logging, polylock
        logging.basicConfig(format="%(levelname)s %(name)s %(polylock_op)s %(message)s")
        try:
            polylock.connect("redis://127.0.0.1:1")
        except polylock.PolylockConnectionError:
            pass
        with polylock.connect("sqlite://{tmp_path}/l.db") as client:
            with client.lock("quiet"):
                pass
    """
    done = run_python(code, {})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines  # the debug and info records of the sqlite part are not handed on
    assert lines[0].startswith("WARNING polylock.client connect connect failed op=connect backend=redis"), lines


@pytest.mark.parametrize(
    "given, expected",
    [
        ("debug", "debug"),
        ("WARNING", "warn"),
        ("Trace", "trace"),
        ("off", "off"),
        (logging.DEBUG, "debug"),
        (logging.INFO, "info"),
        (logging.WARNING, "warn"),
        (logging.ERROR, "error"),
        (logging.CRITICAL, "off"),
        (5, "trace"),
        (0, "trace"),
        (15, "info"),
    ],
)
def test_set_log_level_takes_names_and_logging_levels(captured, given, expected):
    polylock.set_log_level(given)
    assert polylock.log_level() == expected


@pytest.mark.parametrize("bad", ["loud", "critical", -1, True, 1.5, None])
def test_a_bad_level_is_a_typed_error_and_changes_nothing(captured, bad):
    polylock.set_log_level("info")
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.set_log_level(bad)
    assert polylock.log_level() == "info"


# --- records in logging ------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "mem", "redis"])
def test_an_acquire_and_release_are_debug_records_naming_the_lock(captured, backend, tmp_path):
    polylock.set_log_level("debug")
    name = unique_name("observe")
    with polylock.connect(make_url(backend, tmp_path)) as client:
        with client.lock(name):
            pass
    acquired = captured.wait_for("acquire", name)[0]
    released = captured.wait_for("release", name)[0]
    for record in (acquired, released):
        assert record.levelno == logging.DEBUG and record.levelname == "DEBUG"
        assert record.name == "polylock.engine.acquire"  # a child of `polylock`, propagated
        assert name in record.getMessage()
        assert record.polylock["name"] == name
        assert record.polylock["backend"] == urlsplit(make_url(backend, tmp_path)).scheme
        assert record.polylock_target == "polylock::engine::acquire"
    assert acquired.getMessage().startswith(f"acquired op=acquire name={name} ")
    assert acquired.polylock_message == "acquired"
    assert acquired.polylock["outcome"] == "acquired"
    assert int(acquired.polylock["token"]) >= 1
    assert released.polylock["outcome"] == "released"
    assert float(released.polylock["held_ms"]) >= 0
    connects = [r for r in captured.of("connect") if r.polylock.get("client") == client.client_id]
    assert connects and connects[0].levelno == logging.INFO


def test_asyncio_operations_are_logged_too(captured):
    polylock.set_log_level("debug")
    name = unique_name("observe-aio")

    async def main():
        async with await polylock.aio.connect(SERVER_URLS["redis"]) as client:
            async with client.lock(name):
                pass

    asyncio.run(main())
    assert captured.wait_for("acquire", name)[0].polylock["outcome"] == "acquired"
    assert captured.wait_for("release", name)


def test_a_lost_hold_is_a_warning(captured, tmp_path):
    polylock.set_log_level("warn")
    name = unique_name("observe-lost")
    with polylock.connect(f"sqlite://{tmp_path}/l.db") as client:
        lock = client.lock(name)
        assert lock.acquire(lease=0.2)
        time.sleep(0.4)
        assert lock.is_lost()
        lost = captured.wait_for("lost", name)[0]
        assert lost.levelno == logging.WARNING
        assert lost.polylock["reason"] == "lease_expired"
        with pytest.raises(polylock.LockLostError):
            lock.release()
    failed = captured.wait_for("release", name)[0]
    assert failed.levelno == logging.WARNING and failed.polylock["outcome"] == "lost"
    # At warn, the debug records (the acquisition) are not handed on.
    assert not captured.of("acquire", name)


def test_off_emits_nothing(captured, tmp_path):
    polylock.set_log_level("off")
    with polylock.connect(f"sqlite://{tmp_path}/l.db") as client:
        lock = client.lock(unique_name("observe-off"))
        assert lock.acquire(lease=0.05)
        time.sleep(0.1)
        with pytest.raises(polylock.LockLostError):  # would be warnings
            lock.release()
    with pytest.raises(polylock.PolylockConnectionError):
        polylock.connect("redis://127.0.0.1:1")
    time.sleep(0.1)
    assert captured.records == []


def test_level_changes_take_effect_at_once(captured, tmp_path):
    name = unique_name("observe-switch")
    with polylock.connect(f"sqlite://{tmp_path}/l.db") as client:
        lock = client.lock(name)
        polylock.set_log_level("info")
        with lock:
            pass
        polylock.set_log_level(logging.DEBUG)
        with lock:
            pass
        polylock.set_log_level("error")
        with lock:
            pass
    assert len(captured.wait_for("acquire", name)) == 1
    time.sleep(0.1)
    assert len(captured.of("acquire", name)) == 1


def test_the_python_loggers_own_level_still_filters(captured, tmp_path):
    polylock.set_log_level("debug")
    logging.getLogger("polylock").setLevel(logging.INFO)
    name = unique_name("observe-filtered")
    with polylock.connect(f"sqlite://{tmp_path}/l.db") as client:
        with client.lock(name):
            pass
    time.sleep(0.1)
    assert not captured.of("acquire", name)
    assert captured.of("connect")  # INFO passes


@pytest.mark.skipif("etcd" not in SERVER_URLS, reason="no etcd server exported")
def test_the_backends_client_libraries_log_only_at_trace_and_under_polylock_deps(captured):
    # etcd's gRPC stack (h2, tonic, tower) logs hundreds of debug records per connect; the
    # core hands on the client libraries' records only at trace, and then their info and
    # above (as the CLI's -vvv), filed under `polylock.deps.<module>`.
    skip_if_unsupported("etcd")
    polylock.set_log_level("debug")
    name = unique_name("observe-deps")
    with polylock.connect(SERVER_URLS["etcd"]) as client:
        with client.lock(name):
            pass
    captured.wait_for("release", name)
    assert captured.of("acquire", name)
    assert not [r for r in captured.records if not r.polylock_target.startswith("polylock")]
    polylock.set_log_level("trace")
    before = len(captured.records)
    with polylock.connect(SERVER_URLS["etcd"]) as client:
        with client.lock(name):
            pass
    deadline = time.monotonic() + 5
    while len(captured.of("release", name)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(captured.of("release", name)) == 2
    deps = [r for r in captured.records[before:] if not r.polylock_target.startswith("polylock")]
    assert all(r.name.startswith("polylock.deps.") and r.levelno >= logging.INFO for r in deps), deps


# --- no credential in any record ---------------------------------------------------------

PASSWORD_SERVERS = [name for name in ("postgres", "redis-tls", "mariadb", "etcd-tls") if name in SERVER_URLS]


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user_at_host = parts.netloc.rsplit("@", 1)
    user = user_at_host[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{user_at_host[1]}"))


@pytest.mark.skipif(not PASSWORD_SERVERS, reason="no server with a password URL is exported")
@pytest.mark.parametrize("server", PASSWORD_SERVERS)
def test_no_password_reaches_any_record_even_at_trace(captured, server):
    skip_if_unsupported(server)
    url = SERVER_URLS[server]
    password = unquote(urlsplit(url).password or "")
    assert len(password) >= 4, "this test needs a server whose URL has a password"
    wrong = f"wrong-{uuid.uuid4().hex}"
    polylock.set_log_level("trace")
    name = unique_name("observe-secret")
    with polylock.connect(url) as client:
        with client.lock(name):
            pass
    with pytest.raises(polylock.PolylockConnectionError) as refused:
        polylock.connect(with_password(url, wrong))
    assert wrong not in str(refused.value)
    captured.wait_for("release", name)
    failed = [r for r in captured.of("connect") if r.levelno == logging.WARNING]
    assert failed and "***" in failed[-1].polylock["url"]
    assert captured.records
    # A password that is also a word of every record (PostgreSQL's and MariaDB's test
    # password is "polylock") is looked for where a URL would show it.
    secrets = [wrong, f":{password}@", password if password not in "polylock" else f":{password}@"]
    for record in captured.records:
        shown = " ".join([record.getMessage(), repr(vars(record))])
        for secret in secrets:
            assert secret not in shown, record.getMessage()


# --- no deadlock between the sink and the GIL ---------------------------------------------

STRESS = r"""
import asyncio, faulthandler, logging, sys, threading, time
import polylock, polylock.aio

faulthandler.dump_traceback_later(100, exit=True)  # a deadlock shows its stacks
url, seconds = sys.argv[1], float(sys.argv[2])
polylock.set_log_level("debug")
logger = logging.getLogger("polylock")
logger.setLevel(logging.DEBUG)
seen = {"records": 0, "ops": 0, "app": 0}
guard = threading.Lock()

class Counting(logging.Handler):
    def emit(self, record):
        record.getMessage()
        with guard:
            seen["records"] += 1
        time.sleep(0)  # hand the GIL to another thread mid-record

logger.addHandler(Counting())
stop = time.monotonic() + seconds
failures = []

def guarded(work):
    def run():
        try:
            work()
        except BaseException as err:
            failures.append(repr(err))
    return run

client = polylock.connect(url)

def locker(i):
    lock = client.lock(f"stress:{i % 3}")
    own = polylock.connect(url) if i % 4 == 0 else None
    while time.monotonic() < stop:
        target = own.lock(f"stress:{i % 3}") if own else lock
        if target.acquire(timeout=10):
            assert target.locked() and target.fencing_token is not None and not target.is_lost()
            target.release()
            with guard:
                seen["ops"] += 1
    if own:
        own.close()

def app_logger(i):
    log = logging.getLogger(f"polylock.app{i}")
    while time.monotonic() < stop:
        log.debug("app record %d", i)
        with guard:
            seen["app"] += 1
        polylock.metrics(); polylock.log_level()

def switcher():
    while time.monotonic() < stop:
        polylock.set_log_level("trace"); time.sleep(0.01); polylock.set_log_level("debug"); time.sleep(0.01)

def aio_user():
    async def task(i, aclient):
        while time.monotonic() < stop:
            lock = aclient.lock(f"stress:aio:{i % 2}")
            if await lock.acquire(timeout=10):
                lock.locked()
                await lock.release()
                seen["ops"] += 1
    async def main():
        async with await polylock.aio.connect(url) as aclient:
            await asyncio.gather(*(task(i, aclient) for i in range(6)))
    asyncio.run(main())

threads = [threading.Thread(target=guarded(lambda i=i: locker(i))) for i in range(8)]
threads += [threading.Thread(target=guarded(lambda i=i: app_logger(i))) for i in range(4)]
threads += [threading.Thread(target=guarded(switcher)), threading.Thread(target=guarded(aio_user))]
for t in threads:
    t.start()
for t in threads:
    t.join(seconds + 60)
stuck = [t for t in threads if t.is_alive()]
client.close()
if stuck or failures:
    print("STUCK" if stuck else "FAILED", len(stuck), failures, flush=True)
    faulthandler.dump_traceback(all_threads=True)
    sys.exit(1)
print("ok", seen["ops"], seen["records"], seen["app"], flush=True)
"""


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_logging_from_many_threads_while_others_lock_never_deadlocks(backend, tmp_path):
    url = make_url(backend, tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", STRESS, url, "4"], capture_output=True, text=True, timeout=110
    )
    assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
    word, ops, records, app = done.stdout.split()
    assert word == "ok"
    # Real work on every side: locks taken, core records and application records handled.
    assert int(ops) > 50 and int(records) > int(ops) and int(app) > 100, done.stdout
    assert time.monotonic() - started < 100


# --- metrics -------------------------------------------------------------------------------


def series_of(snapshot, backend, kind="reentrant"):
    found = [s for s in snapshot["series"] if s["backend"] == backend and s["kind"] == kind]
    return found[0] if found else None


def backend_of(snapshot, backend):
    found = [b for b in snapshot["backends"] if b["backend"] == backend]
    return found[0] if found else {"connects": 0}


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_metrics_count_acquires_and_releases(backend, tmp_path):
    url = make_url(backend, tmp_path)
    scheme = urlsplit(url).scheme
    before = polylock.metrics()
    acquired_before = (series_of(before, scheme) or {"acquires": {"acquired": 0}})["acquires"]["acquired"]
    name = unique_name("observe-metrics")
    with polylock.connect(url) as client:
        lock = client.lock(name)
        for _ in range(3):
            with lock:
                with lock:  # reentered
                    pass
        mine = series_of(client.metrics(), scheme)
        assert mine["acquires"]["acquired"] == 3
        assert mine["acquires"]["reentered"] == 3
        assert mine["releases"] == 3
        assert mine["acquire_wait"]["count"] == mine["acquires"]["acquired"]
        assert mine["hold_time"]["count"] == mine["releases"]
        assert len(mine["acquire_wait"]["buckets"]) == len(client.metrics()["buckets_le_seconds"]) + 1
        assert sum(mine["acquire_wait"]["buckets"]) == mine["acquire_wait"]["count"]
    after = polylock.metrics()
    assert series_of(after, scheme)["acquires"]["acquired"] >= acquired_before + 3
    assert backend_of(after, scheme)["connects"] >= backend_of(before, scheme)["connects"] + 1
    text = polylock.prometheus_text()
    line = f'polylock_acquires_total{{backend="{scheme}",kind="reentrant",outcome="acquired"}} '
    value = [row for row in text.splitlines() if row.startswith(line)]
    assert value and int(value[0][len(line):]) >= series_of(after, scheme)["acquires"]["acquired"]
    assert "# TYPE polylock_acquire_wait_seconds histogram" in text


def test_a_timed_out_acquire_is_counted(tmp_path):
    url = f"sqlite://{tmp_path}/l.db"
    name = unique_name("observe-timeout")
    with polylock.connect(url) as holder, polylock.connect(url) as waiter:
        with holder.lock(name):
            assert not waiter.lock(name).acquire(timeout=0.05)
        assert series_of(waiter.metrics(), "sqlite")["acquires"]["timeout"] == 1
        assert series_of(holder.metrics(), "sqlite")["acquires"]["timeout"] == 0


def test_an_asyncio_clients_metrics(tmp_path):
    async def main():
        async with await polylock.aio.connect(f"sqlite://{tmp_path}/l.db") as client:
            async with client.lock(unique_name("observe-aio-metrics")):
                pass
            return client.metrics()

    mine = series_of(asyncio.run(main()), "sqlite")
    assert mine["acquires"]["acquired"] == 1 and mine["releases"] == 1


def test_metrics_can_be_turned_off(tmp_path):
    assert polylock.metrics_enabled()
    try:
        polylock.set_metrics_enabled(False)
        assert not polylock.metrics_enabled()
        with polylock.connect(f"sqlite://{tmp_path}/l.db") as client:
            with client.lock(unique_name("observe-uncounted")):
                pass
            assert (series_of(client.metrics(), "sqlite") or {"acquires": {"acquired": 0}})["acquires"]["acquired"] == 0
    finally:
        polylock.set_metrics_enabled(True)
    assert polylock.metrics_enabled()


def test_a_closed_clients_metrics_stay_readable(tmp_path):
    client = polylock.connect(f"sqlite://{tmp_path}/l.db")
    with client.lock(unique_name("observe-closed")):
        pass
    client.close()
    # What it did stays readable after close.
    assert series_of(client.metrics(), "sqlite")["acquires"]["acquired"] == 1


def test_records_stop_at_interpreter_exit_and_exit_stays_clean():
    # Clients left open, a thread still locking and debug records flowing when the
    # interpreter exits: polylock's atexit hook unroutes first (checked by a hook registered
    # before it, which atexit runs after it), and the process exits 0 without a hang.
    code = f"""
        import atexit, logging, sys, threading
        atexit.register(lambda: print("at exit:", sys.modules["polylock"].log_level(), flush=True))
        import polylock
        logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(name)s %(message)s")
        polylock.set_log_level("debug")
        client = polylock.connect({SERVER_URLS["redis"]!r})
        held = client.lock("{unique_name("observe-exit")}")
        held.acquire()

        def churn():
            lock = client.lock("{unique_name("observe-exit-churn")}")
            while True:
                with lock:
                    pass

        threading.Thread(target=churn, daemon=True).start()
        import time; time.sleep(0.3)
        print("leaving", flush=True)
    """
    done = run_python(code, {}, timeout=60)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "polylock.engine.acquire acquired op=acquire" in done.stdout
    assert done.stdout.rstrip().endswith("at exit: off"), done.stdout[-500:]
    assert "Fatal Python error" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
