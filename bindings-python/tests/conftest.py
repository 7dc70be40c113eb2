"""Fixtures shared by the suite: every landed backend by URL, and unique lock names.

Backends: SQLite (a file per test), mem:// (a store per test) and the Redis of
tests/services ($POLYLOCK_TEST_REDIS_URL). No mocks: Redis must be running (run-tests.sh
starts it), and a test that cannot reach it fails rather than skips.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest

import polylock

REDIS_URL = os.environ.get("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")

# The other Redis deployments of tests/services, tested when their URL is exported
# (tests/run-all.sh exports every running service's; run-tests.sh alone starts plain Redis).
REDIS_VARIANT_URLS = {
    variant: os.environ[variable]
    for variant, variable in [
        ("redis-cluster", "POLYLOCK_TEST_REDIS_CLUSTER_URL"),
        ("redis-sentinel", "POLYLOCK_TEST_REDIS_SENTINEL_URL"),
        ("redis-tls", "POLYLOCK_TEST_REDIS_TLS_URL"),
    ]
    if os.environ.get(variable)
}

REDIS_KINDS = ["reentrant", "fair", "token"]

# Every backend, and the lock kinds it offers.
BACKEND_KINDS = {
    "sqlite": ["reentrant"],
    "mem": ["reentrant"],
    "redis": REDIS_KINDS,
    **{variant: REDIS_KINDS for variant in REDIS_VARIANT_URLS},
}


def make_url(backend: str, tmp_path, query: str = "") -> str:
    """A URL for `backend` that no other test shares."""
    suffix = f"?{query}" if query else ""
    if backend == "sqlite":
        return f"sqlite://{tmp_path}/locks.db{suffix}"
    if backend == "mem":
        return f"mem://{uuid.uuid4().hex}{suffix}"
    if backend == "redis":
        return f"{REDIS_URL}{suffix}"
    if backend in REDIS_VARIANT_URLS:
        base = REDIS_VARIANT_URLS[backend]
        return f"{base}&{query}" if query and "?" in base else f"{base}{suffix}"
    raise ValueError(backend)


def unique_name(prefix: str = "pytest") -> str:
    return f"{prefix}:{uuid.uuid4().hex}"


def backend_kind_params(backends=None):
    return [
        pytest.param(backend, kind, id=f"{backend}-{kind}")
        for backend, kinds in BACKEND_KINDS.items()
        if backends is None or backend in backends
        for kind in kinds
    ]


def backend_params(backends=None):
    return [pytest.param(backend, id=backend) for backend in BACKEND_KINDS if backends is None or backend in backends]


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
