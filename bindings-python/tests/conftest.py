"""Fixtures shared by the suite: every landed backend by URL, and unique lock names.

Backends: SQLite (a file per test) and mem:// (a store per test) always; the Redis of
tests/services ($POLYLOCK_TEST_REDIS_URL, default its loopback port); and every other
POLYLOCK_TEST_<NAME>_URL in the environment (`tests/services/services.sh env` exports one per
running server: the Redis deployments, etcd, ZooKeeper, PostgreSQL, MariaDB), so a server
that lands in tests/services is covered without touching this file.

No mocks: a server whose URL is exported must answer, and a test that cannot reach it fails
rather than skips. A URL whose scheme this build does not know is skipped, with the reason.
Tests isolate themselves by lock name (a uuid per test), never by flushing a server.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from functools import lru_cache
from typing import Dict, Iterator, List, Optional

import pytest

import polylock

REDIS_URL = os.environ.get("POLYLOCK_TEST_REDIS_URL") or "redis://127.0.0.1:16379"

ALL_KINDS = ["reentrant", "fair", "token", "lease"]

# The lock kinds each scheme's backend offers (core/src/backend/*: `supports`). A kind missing
# here is tested as refused (test_bad_input.py), so this table cannot drift from the core.
KINDS_BY_SCHEME = {
    "redis": ["reentrant", "fair", "token"],
    "rediss": ["reentrant", "fair", "token"],
    "redis+cluster": ["reentrant", "fair", "token"],
    "redis+sentinel": ["reentrant", "fair", "token"],
    "rediss+cluster": ["reentrant", "fair", "token"],
    "rediss+sentinel": ["reentrant", "fair", "token"],
    "postgres": ["reentrant", "lease"],
    "postgresql": ["reentrant", "lease"],
    "mysql": ["reentrant", "lease"],
    "mariadb": ["reentrant", "lease"],
    "etcd": ["reentrant"],
    "etcds": ["reentrant"],
    "etcd+tls": ["reentrant"],
    "zk": ["reentrant"],
    "sqlite": ["reentrant"],
    "mem": ["reentrant"],
}

# Backends whose locks live in one process only: no CLI, no forked child can share them.
IN_PROCESS_BACKENDS = {"mem"}

# Schemes whose client cannot start again in a child forked after the parent used it, and why.
# A child gets a clear connection error at once instead (test_fork.py checks that).
NO_NEW_CLIENT_AFTER_FORK = {
    "zk": "the ZooKeeper client's I/O thread (async-io's reactor) does not survive fork()",
}


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def exported_urls() -> Dict[str, str]:
    """Backend name -> URL for every POLYLOCK_TEST_<NAME>_URL exported (redis always)."""
    urls = {"redis": REDIS_URL}
    for variable, url in os.environ.items():
        match = re.fullmatch(r"POLYLOCK_TEST_(.+)_URL", variable)
        if match and url:
            urls[match.group(1).lower().replace("_", "-")] = url
    return dict(sorted(urls.items()))


SERVER_URLS = exported_urls()

# Every backend, and the lock kinds it offers.
BACKEND_KINDS: Dict[str, List[str]] = {
    "sqlite": KINDS_BY_SCHEME["sqlite"],
    "mem": KINDS_BY_SCHEME["mem"],
    **{name: KINDS_BY_SCHEME.get(scheme_of(url), ["reentrant"]) for name, url in SERVER_URLS.items()},
}


def with_query(url: str, query: str) -> str:
    if not query:
        return url
    return f"{url}{'&' if '?' in url else '?'}{query}"


def make_url(backend: str, tmp_path, query: str = "") -> str:
    """A URL for `backend`; lock names (a uuid each) keep tests apart on a shared server.
    Skips the test if this build does not know the backend's scheme."""
    skip_if_unsupported(backend)
    if backend == "sqlite":
        return with_query(f"sqlite://{tmp_path}/locks.db", query)
    if backend == "mem":
        return with_query(f"mem://{uuid.uuid4().hex}", query)
    if backend in SERVER_URLS:
        return with_query(SERVER_URLS[backend], query)
    raise ValueError(backend)


@lru_cache(maxsize=None)
def unsupported_reason(backend: str) -> Optional[str]:
    """Why this build cannot test `backend` (a scheme it does not know), or None."""
    if backend not in SERVER_URLS:
        return None
    try:
        polylock.connect(SERVER_URLS[backend]).close()
    except polylock.InvalidArgumentError as err:
        if "unknown URL scheme" in str(err):
            return f"this build has no {scheme_of(SERVER_URLS[backend])}:// backend: {err}"
    except polylock.PolylockError:
        pass  # connecting again in the test reports the real failure
    return None


def skip_if_unsupported(backend: str) -> None:
    reason = unsupported_reason(backend)
    if reason:
        pytest.skip(reason)


def unique_name(prefix: str = "pytest") -> str:
    return f"{prefix}:{os.getpid()}:{uuid.uuid4().hex}"


def backend_kind_params(backends=None):
    return [
        pytest.param(backend, kind, id=f"{backend}-{kind}")
        for backend, kinds in BACKEND_KINDS.items()
        if backends is None or backend in backends
        for kind in kinds
    ]


def backend_params(backends=None):
    return [pytest.param(backend, id=backend) for backend in BACKEND_KINDS if backends is None or backend in backends]


def unoffered_kind_params():
    """Every (backend, kind) pair the backend does not offer."""
    return [
        pytest.param(backend, kind, id=f"{backend}-{kind}")
        for backend, kinds in BACKEND_KINDS.items()
        for kind in ALL_KINDS
        if kind not in kinds
    ]


def run_in_thread(function):
    """Run `function` in another thread (another owner) and return what it returned or raised."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as err:  # handed back to the test
            outcome["error"] = err

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the other thread is stuck"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def lock_name() -> str:
    return unique_name()


@pytest.fixture(params=backend_params())
def backend(request) -> str:
    return request.param


@pytest.fixture
def url(backend: str, tmp_path) -> str:
    return make_url(backend, tmp_path)


@pytest.fixture
def client(url: str) -> Iterator[polylock.Client]:
    with polylock.connect(url) as client:
        yield client
