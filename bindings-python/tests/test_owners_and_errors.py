"""Lock owners are never reused across threads, and the exception classes follow the core's
one table of error kinds."""

from __future__ import annotations

import threading

import pytest

import polylock
from polylock import _polylock
from conftest import backend_params, make_url, unique_name


@pytest.mark.parametrize("backend", backend_params(["sqlite", "mem"]))
def test_a_new_thread_never_inherits_a_dead_threads_hold(backend, tmp_path):
    """Threads that hold a lock exit without releasing it and are replaced by new ones, many
    rounds over (CPython hands a new thread the identity of one that exited). None of the new
    threads can re-enter or release a dead thread's hold."""
    with polylock.connect(make_url(backend, tmp_path)) as client:
        for _ in range(30):
            lock = client.lock(unique_name())
            holder = threading.Thread(target=lambda: lock.acquire(lease=30))
            holder.start()
            holder.join()

            def successor():
                assert not lock.locked(), "a new thread sees a dead thread's hold as its own"
                with pytest.raises(polylock.NotOwnerError):
                    lock.release()
                return lock.acquire(blocking=False)

            outcome = {}
            thread = threading.Thread(target=lambda: outcome.setdefault("took", successor()))
            thread.start()
            thread.join()
            assert outcome.get("took") is False, "a new thread re-entered a dead thread's hold"


def test_thread_owners_are_stable_per_thread_and_unique():
    mine = _polylock.current_thread_owner()
    assert mine == _polylock.current_thread_owner()
    seen = {mine}
    for _ in range(50):
        box = []
        thread = threading.Thread(target=lambda: box.append(_polylock.current_thread_owner()))
        thread.start()
        thread.join()
        assert box[0] not in seen
        seen.add(box[0])


def test_every_core_error_kind_has_its_exception_class():
    classes = {cls.kind: cls for cls in vars(polylock).values() if isinstance(cls, type) and issubclass(cls, polylock.PolylockError)}
    kinds = _polylock.error_kinds()
    assert [number for _, number in kinds] == list(range(1, len(kinds) + 1))
    for name, _number in kinds:
        assert name in classes, f"no exception class for the core's error kind {name}"
        assert issubclass(classes[name], polylock.PolylockError)
    assert set(classes) - {"UNKNOWN"} == {name for name, _ in kinds}, "a class for a kind the core lacks"


def test_every_exception_class_carries_its_kinds_number():
    classes = [cls for cls in vars(polylock).values() if isinstance(cls, type) and issubclass(cls, polylock.PolylockError)]
    numbers = dict(_polylock.error_kinds())
    for cls in classes:
        if cls is polylock.PolylockError:
            assert cls.code == 0 and cls.kind == "UNKNOWN"
            continue
        assert cls.code == numbers[cls.kind], f"{cls.__name__}.code"
        assert isinstance(cls.code, int)
    # An instance raised by the core carries it too.
    with pytest.raises(polylock.InvalidArgumentError) as raised:
        polylock.connect("nosuchscheme://x")
    assert raised.value.code == numbers["INVALID_ARGUMENT"] == polylock.InvalidArgumentError.code
    assert sorted((cls.kind, cls.code) for cls in classes if cls.code) == sorted(_polylock.error_kinds())
