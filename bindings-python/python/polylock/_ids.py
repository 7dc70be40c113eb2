"""IDs with no backend: Snowflake (Twitter layout: 41 bits of milliseconds, 10 of worker, 12
of sequence), UUIDv7 (RFC 9562) and ULID, made by polylock's core."""

from __future__ import annotations

import os
import uuid
from typing import List, NamedTuple, Optional, Union

from . import _polylock


class SnowflakeParts(NamedTuple):
    """The parts of a snowflake ID."""

    timestamp_ms: int
    """Milliseconds since the Unix epoch."""
    worker: int
    sequence: int


class Snowflake(_polylock.NativeSnowflake):
    """A snowflake generator for one worker id (0..1023). Threads may share one.

    IDs never repeat and never go backwards within a process, even if the wall clock does.
    Two processes need two worker ids (a process forked from another included).
    """

    def parse(self, id: int) -> SnowflakeParts:
        return SnowflakeParts(*super().parse(id))


def parse_snowflake(id: int, epoch_ms: Optional[int] = None) -> SnowflakeParts:
    """Split a Twitter-layout ID (or one with a custom ``epoch_ms``) into its parts."""
    return SnowflakeParts(*_polylock.parse_snowflake(id, epoch_ms))


# One generator of each per process, so every caller's IDs are increasing. A forked child
# gets fresh ones (RFC 9562 §6.9: reseed after fork), so parent and child never continue the
# same counter.
_uuid7 = _polylock.NativeUuid7Generator()
_ulid = _polylock.NativeUlidGenerator()


def _fresh_generators_in_child() -> None:
    global _uuid7, _ulid
    _uuid7 = _polylock.NativeUuid7Generator()
    _ulid = _polylock.NativeUlidGenerator()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_generators_in_child)


def uuid7() -> uuid.UUID:
    """A UUIDv7 (RFC 9562, method 1: a 42-bit counter reseeded each millisecond), greater than
    every earlier one from this process, even when the wall clock steps back."""
    return uuid.UUID(int=_uuid7.next())


def uuid7_batch(count: int) -> List[uuid.UUID]:
    """``count`` UUIDv7s in increasing order, in one call."""
    return [uuid.UUID(int=value) for value in _uuid7.batch(count)]


def ulid() -> str:
    """A ULID (26 characters of Crockford base32), greater than every earlier one from this
    process as text and as a number; within one millisecond the random part counts up."""
    return _polylock.format_ulid(_ulid.next())


def ulid_batch(count: int) -> List[str]:
    """``count`` ULIDs in increasing order, in one call."""
    return [_polylock.format_ulid(value) for value in _ulid.batch(count)]


def _uuid_int(value: Union[uuid.UUID, str]) -> int:
    return value.int if isinstance(value, uuid.UUID) else uuid.UUID(value).int


def uuid7_timestamp_ms(value: Union[uuid.UUID, str]) -> int:
    """The Unix milliseconds of a UUIDv7; ``InvalidArgumentError`` for another version."""
    return _polylock.uuid7_timestamp_ms(_uuid_int(value))


def ulid_timestamp_ms(value: str) -> int:
    """The Unix milliseconds of a ULID."""
    return _polylock.parse_ulid(value) >> 80


def ulid_to_uuid(value: str) -> uuid.UUID:
    """The same 128 bits as a UUID, to store a ULID in a UUID column."""
    return uuid.UUID(int=_polylock.parse_ulid(value))


def uuid_to_ulid(value: Union[uuid.UUID, str]) -> str:
    """The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond)."""
    return _polylock.format_ulid(_uuid_int(value))
