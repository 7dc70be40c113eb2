"""Leader elections, blocking.

    election = client.election("scheduler")
    with election.campaign(b"node-a", timeout=30) as leadership:   # waits until leading
        leadership.term          # a fencing token: greater for every new leader
        leadership.is_leader     # False once resigned or lost, and never True again
        leadership.proclaim(b"node-a:v2")
    # leaving the block resigns: the next candidate leads

    election.leader()            # Leader(value=b"...", term=...) or None
    for leader in election.observe():   # the leader after each change (None: nobody leads)
        ...

In asyncio (a ``polylock.aio`` client): ``async with election.campaign(b"node-a"):``,
``await election.try_campaign(...)``, ``await election.leader()``, ``async for leader in
election.observe():``.

Values are bytes (a str is sent as UTF-8). On etcd the layout is etcd's own election
(``etcdctl elect``), on ZooKeeper Curator's LeaderLatch; elsewhere the leader holds the lock
of the election's name and its record sits beside it (see the README).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, AsyncIterator, Iterator, NamedTuple, Optional, Type, Union

from . import _polylock
from .aio import _Holding, _run

Value = Union[bytes, bytearray, memoryview, str]


def _bytes(value: Value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"an election value is bytes or str, not {type(value).__name__}")


class Leader(NamedTuple):
    """The leader of an election: the value it campaigned with or last proclaimed, and its term."""

    value: bytes
    term: int


def _leader(raw: Optional[Any]) -> Optional[Leader]:
    return None if raw is None else Leader(bytes(raw[0]), int(raw[1]))


class Leadership:
    """One won campaign, for one term. Usable as a context manager that resigns on exit."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLeadership) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def term(self) -> int:
        """A fencing token strictly greater than every earlier leader's term."""
        return self._native.term

    @property
    def is_leader(self) -> bool:
        """True until resigned or lost; once False, never True again."""
        return self._native.is_leader

    @property
    def is_lost(self) -> bool:
        """Whether the store no longer has this leader (lease passed, session ended)."""
        return self._native.is_lost

    @property
    def is_suspended(self) -> bool:
        """While the backend cannot tell whether this is still the leader (ZooKeeper's SUSPENDED)."""
        return self._native.is_suspended

    @property
    def value(self) -> bytes:
        return self._native.value

    def proclaim(self, value: Value) -> None:
        """Replace the leader's value, keeping the term. LockLostError if no longer leading."""
        self._native.proclaim(_bytes(value))

    def resign(self) -> None:
        """Stop leading so the next candidate leads. Harmless twice; LockLostError if the
        leadership had been lost."""
        self._native.resign()

    def __enter__(self) -> "Leadership":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.resign()

    def __repr__(self) -> str:
        return f"<polylock.Leadership name={self.name!r} term={self.term} is_leader={self.is_leader}>"


class Election:
    """A named election as seen by one client. Each campaign is a candidate of its own."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeElection) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def campaign(self, value: Value, timeout: Optional[float] = None) -> Leadership:
        """Wait until leading (``timeout`` seconds at most; None: no limit, 0: try once);
        LockTimeoutError if it ran out, with no candidacy left behind. The GIL is released
        while waiting."""
        return Leadership(self._native.campaign(_bytes(value), timeout))

    def try_campaign(self, value: Value, timeout: Optional[float] = None) -> Optional[Leadership]:
        """The try form of :meth:`campaign`: None when ``timeout`` seconds run out before
        leading (no candidacy is left behind)."""
        native = self._native.try_campaign(_bytes(value), timeout)
        return None if native is None else Leadership(native)

    def leader(self) -> Optional[Leader]:
        """The current leader, or None."""
        return _leader(self._native.leader())

    def observe(self) -> Iterator[Optional[Leader]]:
        """The leader now and after every change (None while nobody leads), until the client
        closes. Blocks between changes, with the GIL released."""
        changes = self._native.observe()
        while True:
            ended, leader = changes.next()
            if ended:
                return
            yield _leader(leader)

    def __repr__(self) -> str:
        return f"<polylock.Election name={self.name!r}>"


class AsyncLeadership:
    """:class:`Leadership` for asyncio: ``proclaim`` and ``resign`` are coroutines, and
    ``async with`` resigns at the end of the block."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLeadership) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def term(self) -> int:
        """A fencing token strictly greater than every earlier leader's term."""
        return self._native.term

    @property
    def is_leader(self) -> bool:
        """True until resigned or lost; once False, never True again."""
        return self._native.is_leader

    @property
    def is_lost(self) -> bool:
        """Whether the store no longer has this leader (lease passed, session ended)."""
        return self._native.is_lost

    @property
    def is_suspended(self) -> bool:
        """While the backend cannot tell whether this is still the leader (ZooKeeper's SUSPENDED)."""
        return self._native.is_suspended

    @property
    def value(self) -> bytes:
        return self._native.value

    async def proclaim(self, value: Value) -> None:
        """Replace the leader's value, keeping the term. LockLostError if no longer leading."""
        data = _bytes(value)
        await _run(lambda wake: self._native.start_proclaim(data, wake))

    async def resign(self) -> None:
        """Stop leading so the next candidate leads (runs to its end even if the awaiting
        task is cancelled). Harmless twice; LockLostError if the leadership had been lost."""
        await _run(self._native.start_resign)

    async def __aenter__(self) -> "AsyncLeadership":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.resign()

    def __repr__(self) -> str:
        return f"<polylock.aio.Leadership name={self.name!r} term={self.term} is_leader={self.is_leader}>"


class AsyncElection:
    """:class:`Election` for asyncio: waiting never blocks the loop, and cancelling a task
    that campaigns stops its candidacy."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeElection) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def campaign(self, value: Value, timeout: Optional[float] = None) -> "_Holding[AsyncLeadership]":
        """Wait until leading (``timeout`` seconds at most; None: no limit, 0: try once);
        LockTimeoutError if it ran out, with no candidacy left behind. ``await`` it for the
        :class:`AsyncLeadership`, or ``async with election.campaign(...) as leadership:``
        to resign at the end of the block."""
        data = _bytes(value)
        return _Holding(lambda: self._campaign(data, timeout))

    async def _campaign(self, data: bytes, timeout: Optional[float]) -> AsyncLeadership:
        return AsyncLeadership(await _run(lambda wake: self._native.start_campaign(data, timeout, False, wake)))

    async def try_campaign(self, value: Value, timeout: Optional[float] = None) -> Optional[AsyncLeadership]:
        """The try form of :meth:`campaign`: None when ``timeout`` seconds run out before
        leading (no candidacy is left behind)."""
        data = _bytes(value)
        native = await _run(lambda wake: self._native.start_campaign(data, timeout, True, wake))
        return None if native is None else AsyncLeadership(native)

    async def leader(self) -> Optional[Leader]:
        """The current leader, or None."""
        return _leader(await _run(self._native.start_leader))

    async def observe(self) -> AsyncIterator[Optional[Leader]]:
        """The leader now and after every change (None while nobody leads), until the client
        closes: ``async for leader in election.observe():``."""
        changes = self._native.observe()
        while True:
            ended, leader = await _run(changes.start_next)
            if ended:
                return
            yield _leader(leader)

    def __repr__(self) -> str:
        return f"<polylock.aio.Election name={self.name!r}>"


def _election(self: Any, name: str) -> Election:
    """A handle on the leader election ``name``. UnsupportedError on RedLock."""
    return Election(_polylock.NativeElection.open(self._native, name))


def _aio_election(self: Any, name: str) -> AsyncElection:
    """A handle on the leader election ``name``, for asyncio. UnsupportedError on RedLock."""
    return AsyncElection(_polylock.NativeElection.open(self._native, name))


def install(sync_client: type, aio_client: type) -> None:
    """Give the Client classes ``election``."""
    sync_client.election = _election  # type: ignore[attr-defined]
    aio_client.election = _aio_election  # type: ignore[attr-defined]


__all__ = ["Election", "Leadership", "Leader", "AsyncElection", "AsyncLeadership"]
