"""Snowflake IDs (Twitter layout: 41 bits of milliseconds, 10 of worker, 12 of sequence)."""

from __future__ import annotations

from typing import NamedTuple, Optional

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
