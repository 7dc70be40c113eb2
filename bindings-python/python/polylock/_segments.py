"""IDs from the backend: Leaf-style segments of a tag, and Snowflake generators on a leased
worker id. Made by polylock's core; see the README's "IDs: segments and leased Snowflake".

- A segment ID is never 0 and never one any process handed out before for that tag (its
  range is durable in the store before the first ID of it is handed out); a crash leaves
  gaps, never repeats.
- A leased Snowflake generator issues IDs no other holder of its worker id ever issues,
  whatever the clocks say; when its lease is lost, the pending call raises LockLostError and
  the next call leases another free id (unless a worker id was asked for).
"""

from __future__ import annotations

import asyncio
from typing import List, Optional

from . import _polylock


class Segment:
    """Segment IDs of one tag (Leaf's ``biz_tag``). Threads may share one."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeSegment) -> None:
        self._native = native

    def next_id(self) -> int:
        """The next ID. ExhaustedError (``retry_after`` in seconds) if the next range does
        not arrive within the generator's ``wait``."""
        return self._native.next_id()

    def next_ids(self, count: int) -> List[int]:
        """``count`` IDs in one call."""
        return self._native.next_ids(count)

    @property
    def tag(self) -> str:
        return self._native.tag

    @property
    def step(self) -> int:
        """The size of the range asked for last (adapted to how fast ranges are used)."""
        return self._native.step

    def __repr__(self) -> str:
        return f"<polylock.Segment tag={self.tag!r}>"


class LeasedSnowflake:
    """A Snowflake generator (Twitter layout) on a worker id leased from the backend."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLeasedSnowflake) -> None:
        self._native = native

    def next_id(self) -> int:
        return self._native.next_id()

    def next_ids(self, count: int) -> List[int]:
        return self._native.next_ids(count)

    @property
    def worker_id(self) -> Optional[int]:
        """The worker id held now (None between a lost lease and the next call)."""
        return self._native.worker_id()

    @property
    def epoch(self) -> Optional[int]:
        """The lease's epoch: greater than every earlier take of the same worker id."""
        return self._native.epoch()

    def close(self) -> None:
        """Give the worker id back (its high-water mark stays at the last ID issued)."""
        self._native.close()

    def __enter__(self) -> "LeasedSnowflake":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<polylock.LeasedSnowflake worker_id={self.worker_id}>"


async def _in_executor(function, *args):  # type: ignore[no-untyped-def]
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


class AsyncSegment:
    """Segment IDs of one tag for asyncio: loaded IDs come at once; a wait for a range runs
    in the loop's executor."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeSegment) -> None:
        self._native = native

    async def next_id(self) -> int:
        ready = self._native.take_ready(1)
        if ready:
            return ready[0]
        return await _in_executor(self._native.next_id)

    async def next_ids(self, count: int) -> List[int]:
        ids = self._native.take_ready(count)
        if len(ids) < count:
            ids.extend(await _in_executor(self._native.next_ids, count - len(ids)))
        return ids

    @property
    def tag(self) -> str:
        return self._native.tag

    @property
    def step(self) -> int:
        return self._native.step

    def __repr__(self) -> str:
        return f"<polylock.aio.Segment tag={self.tag!r}>"


class AsyncLeasedSnowflake:
    """A Snowflake generator on a leased worker id, for asyncio."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLeasedSnowflake) -> None:
        self._native = native

    async def next_id(self) -> int:
        return await _in_executor(self._native.next_id)

    async def next_ids(self, count: int) -> List[int]:
        return await _in_executor(self._native.next_ids, count)

    async def worker_id(self) -> Optional[int]:
        return await _in_executor(self._native.worker_id)

    async def epoch(self) -> Optional[int]:
        return await _in_executor(self._native.epoch)

    async def close(self) -> None:
        await _in_executor(self._native.close)

    async def __aenter__(self) -> "AsyncLeasedSnowflake":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def open_segment(
    native_client: _polylock.NativeClient,
    tag: str,
    step: int = 1000,
    max_step: Optional[int] = None,
    load_at: float = 0.1,
    wait: float = 5.0,
) -> _polylock.NativeSegment:
    return _polylock.NativeSegment.open(native_client, tag, step, max_step, load_at, wait)


async def open_leased_snowflake_async(
    native_client: _polylock.NativeClient,
    worker_id: Optional[int] = None,
    epoch_ms: Optional[int] = None,
    max_wait: float = 2.0,
) -> AsyncLeasedSnowflake:
    native = await _in_executor(_polylock.NativeLeasedSnowflake.open, native_client, worker_id, epoch_ms, max_wait)
    return AsyncLeasedSnowflake(native)
