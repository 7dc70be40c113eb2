"""Bad input gets a clear error of the right class, never a panic."""

from __future__ import annotations

import math

import pytest

import polylock
from conftest import unoffered_kind_params


def test_empty_and_over_long_names(client):
    with pytest.raises(polylock.InvalidArgumentError) as empty:
        client.lock("")
    assert empty.value.kind == "INVALID_ARGUMENT"
    assert isinstance(empty.value, ValueError)
    with pytest.raises(polylock.InvalidArgumentError):
        client.lock("x" * (polylock.MAX_NAME_LEN + 1))


ONE_YEAR = 365 * 24 * 3600


# Outside 10 ms .. 365 days, the range every backend honours (README, "Leases and a watchdog").
@pytest.mark.parametrize(
    "lease",
    [0, 0.0, -1, -0.5, math.nan, math.inf, 1e300, 2**64, 1e-12, 0.005, ONE_YEAR + 1],
)
def test_unusable_leases(client, lock_name, lease):
    lock = client.lock(lock_name)
    with pytest.raises(polylock.InvalidArgumentError) as refused:
        lock.acquire(lease=lease)
    assert "lease" in str(refused.value)
    assert not lock.locked()


@pytest.mark.parametrize("timeout", [-2, math.nan, math.inf, 1e300, 2**64, ONE_YEAR + 1])
def test_unusable_timeouts(client, lock_name, timeout):
    lock = client.lock(lock_name)
    with pytest.raises(polylock.InvalidArgumentError):
        lock.acquire(timeout=timeout)
    assert not lock.locked()


def test_the_longest_lease_and_wait_are_honoured(client, lock_name):
    lock = client.lock(lock_name)
    assert lock.acquire(timeout=ONE_YEAR, lease=ONE_YEAR)
    lock.release()


def test_timeout_with_non_blocking_is_refused_as_threading_does(client, lock_name):
    with pytest.raises(ValueError):
        client.lock(lock_name).acquire(blocking=False, timeout=1)


def test_unknown_kind(client, lock_name):
    with pytest.raises(polylock.InvalidArgumentError):
        client.lock(lock_name, "spinning")


@pytest.mark.parametrize("backend,kind", unoffered_kind_params())
def test_kinds_the_backend_lacks_are_refused(url, backend, kind, lock_name):
    """What conftest's kind table leaves out, the backend refuses with a clear error: the
    suite skips no kind a backend offers."""
    with polylock.connect(url) as client:
        # Refused when the handle is made, before anything is written.
        with pytest.raises(polylock.UnsupportedError) as refused:
            client.lock(lock_name, kind)
        assert f"does not offer {kind} locks" in str(refused.value)
        assert refused.value.kind == "UNSUPPORTED"


@pytest.mark.parametrize("url", ["nosuch://host", "not a url", "mem://x?no_such_option=1", "sqlite://x.db?lease=1ms"])
def test_bad_urls(url):
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.connect(url)


def test_unwritable_sqlite_path_is_a_connection_error():
    with pytest.raises(polylock.PolylockConnectionError) as failed:
        polylock.connect("sqlite:///proc/polylock-no-such-dir/x.db")
    assert isinstance(failed.value, ConnectionError)
    assert failed.value.kind == "CONNECTION"


def test_unreachable_redis_is_a_connection_error():
    with pytest.raises(polylock.PolylockConnectionError):
        polylock.connect("redis://127.0.0.1:1?timeout=500ms")


def test_password_is_not_printed():
    with pytest.raises(polylock.PolylockError) as failed:
        polylock.connect("redis://:hunter2-secret@127.0.0.1:1?timeout=500ms")
    assert "hunter2-secret" not in str(failed.value)


def test_default_url_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("POLYLOCK_URL", f"sqlite://{tmp_path}/from-env.db")
    with polylock.connect() as client:
        assert "from-env.db" in client.url
    assert (tmp_path / "from-env.db").exists()


def test_error_hierarchy():
    for cls in (
        polylock.InvalidArgumentError,
        polylock.LockTimeoutError,
        polylock.NotOwnerError,
        polylock.LockLostError,
        polylock.PolylockConnectionError,
        polylock.BackendError,
    ):
        assert issubclass(cls, polylock.PolylockError)
        assert cls.kind.isupper()
    assert issubclass(polylock.LockTimeoutError, TimeoutError)
    assert issubclass(polylock.PolylockConnectionError, ConnectionError)
