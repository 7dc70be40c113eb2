"""UUIDv7 and ULID through the binding: the core's generators, Python's types."""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

import polylock

# The same vectors as polylock-id's own tests (id/src/uuid7.rs, id/src/ulid.rs).
ULID_VECTOR = "01ARYZ6S4104HMASW9NF6YY093"
ULID_VECTOR_AS_UUID = "01563df3-6481-0123-4567-89abcdef0123"
UUID7_VECTOR = "01895f4c-4d2a-7aaa-aaaa-aaaa12345678"


def test_uuid7_is_a_version_7_uuid_of_now():
    value = polylock.uuid7()
    assert isinstance(value, uuid.UUID)
    assert value.version == 7 and value.variant == uuid.RFC_4122
    assert abs(polylock.uuid7_timestamp_ms(value) - time.time() * 1000) < 5_000
    assert polylock.uuid7_timestamp_ms(str(value)) == polylock.uuid7_timestamp_ms(value)
    assert polylock.uuid7_timestamp_ms(UUID7_VECTOR) == 0x01895F4C4D2A


def test_uuid7s_and_ulids_increase_across_threads():
    seen_uuids, seen_ulids = [], []

    def make():
        seen_uuids.extend(polylock.uuid7_batch(5_000))
        seen_ulids.extend(polylock.ulid() for _ in range(2_000))

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen_uuids)) == 20_000
    assert len(set(seen_ulids)) == 8_000
    batch = polylock.uuid7_batch(1000)
    assert batch == sorted(batch) and batch[0] > max(seen_uuids)
    ulids = polylock.ulid_batch(1000)
    assert ulids == sorted(ulids) and ulids[0] > max(seen_ulids)


def test_ulid_text_conversions_and_timestamp():
    value = polylock.ulid()
    assert len(value) == 26 and value == value.upper()
    assert abs(polylock.ulid_timestamp_ms(value) - time.time() * 1000) < 5_000
    assert str(polylock.ulid_to_uuid(ULID_VECTOR)) == ULID_VECTOR_AS_UUID
    assert polylock.uuid_to_ulid(ULID_VECTOR_AS_UUID) == ULID_VECTOR
    assert polylock.ulid_timestamp_ms(ULID_VECTOR.lower()) == 1_469_918_176_385
    # A UUIDv7 and its ULID name the same millisecond.
    stamp = polylock.uuid7()
    assert polylock.ulid_timestamp_ms(polylock.uuid_to_ulid(stamp)) == polylock.uuid7_timestamp_ms(stamp)


@pytest.mark.parametrize("bad", ["", "short", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01ARYZ6S4104HMASW9NF6YY09U"])
def test_bad_ulids_are_invalid_arguments(bad):
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.ulid_timestamp_ms(bad)


def test_a_uuid_of_another_version_has_no_uuid7_timestamp():
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.uuid7_timestamp_ms(uuid.uuid4())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_gets_fresh_generators():
    before = polylock.uuid7()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, str(polylock.uuid7()).encode())
        finally:
            os._exit(0)
    os.close(write)
    child = uuid.UUID(os.read(read, 64).decode())
    os.waitpid(pid, 0)
    mine = polylock.uuid7()
    assert len({before, child, mine}) == 3
    # A generator copied into the child would continue the parent's counter: within the same
    # millisecond its first UUID would carry `before`'s counter plus one. A fresh one reseeds.
    if polylock.uuid7_timestamp_ms(child) == polylock.uuid7_timestamp_ms(before):
        assert counter_of(child) != counter_of(before) + 1


def counter_of(value: uuid.UUID) -> int:
    """The 42-bit counter of a UUIDv7: rand_a's 12 bits, then rand_b's top 30."""
    return ((value.int >> 64) & 0xFFF) << 30 | ((value.int >> 32) & ((1 << 30) - 1))
