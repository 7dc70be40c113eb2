"""Countdown latches, multi-locks and RedLock, blocking and asyncio.

    latch = client.latch("batch-42")
    latch.try_set_count(3)          # False while the latch is still counting down
    latch.count_down()              # by each of three workers
    latch.wait(timeout=30)          # True once the count is zero, False if 30 s ran out

    with client.multi_lock(["a", "b", "c"]) as locks:   # taken in one order, one deadline
        locks.fencing_tokens        # {"a": 7, "b": 3, "c": 12}
    latch.await_zero(timeout=30)    # the waiting form: LockTimeoutError if 30 s ran out

    lock = polylock.redlock(["redis://h1:6379", "redis://h2:6379", "redis://h3:6379"], "job")

On Redis a latch is Redisson's RCountDownLatch (the key NAME holds the count), so Java
services using Redisson share it. The asyncio wait (``await latch.wait(timeout)`` on a latch
of a ``polylock.aio`` client) never blocks the loop; cancelling the task stops the wait.
"""

from __future__ import annotations

import asyncio
import functools
from types import TracebackType
from typing import Any, Awaitable, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union

from . import _polylock
from ._errors import LockTimeoutError
from .aio import Hold as AsyncHold
from .aio import _current_owner, _Holding, _run
from ._sync import Hold, Lock, _current_thread_id, _wait, connect

# A multi-lock part: a name (the backend's default mutex), or (name, side) with side one of
# "lock", "read" or "write" (a side of the read-write lock of that name).
Part = Union[str, Tuple[str, str]]


async def _in_executor(call: Any, *args: Any) -> Any:
    """A short store call in the loop's default executor (the native call releases the GIL)."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(call, *args))


class Latch:
    """A countdown latch shared through the store (Redisson's RCountDownLatch on Redis).
    Nothing is owned and nothing expires: a latch whose counters never count down stays
    closed, so give every wait a timeout."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLatch) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def try_set_count(self, count: int) -> bool:
        """Set the count if the latch is open (at zero, or never set); whether it was set.
        InvalidArgumentError for a count below 1."""
        return self._native.try_set_count(count)

    def count_down(self) -> None:
        """Take one off the count (never below zero); at zero every waiter is released."""
        self._native.count_down()

    @property
    def count(self) -> int:
        """The count now; 0 when the latch is open."""
        return self._native.count()

    def get_count(self) -> int:
        """Same as :attr:`count` (Redisson's name)."""
        return self._native.count()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait until the count is zero: True once it is, False if ``timeout`` seconds ran
        out first (None: no bound; 0: look once). The GIL is released while waiting."""
        return self._native.wait(timeout)

    def await_zero(self, timeout: Optional[float] = None) -> None:
        """The waiting form of :meth:`wait`: return once the count is zero, raise
        LockTimeoutError if ``timeout`` seconds ran out first (None: no bound; 0: look once).
        The GIL is released while waiting."""
        self._native.await_zero(timeout)

    def __repr__(self) -> str:
        return f"<polylock.Latch name={self.name!r}>"


class AsyncLatch:
    """:class:`Latch` for asyncio: ``count`` and friends are coroutines, and ``wait`` never
    blocks the loop."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLatch) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    async def try_set_count(self, count: int) -> bool:
        return await _in_executor(self._native.try_set_count, count)

    async def count_down(self) -> None:
        await _in_executor(self._native.count_down)

    async def count(self) -> int:
        return await _in_executor(self._native.count)

    async def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the count is zero, False if ``timeout`` seconds ran out first."""
        try:
            await _run(lambda wake: self._native.start_wait(timeout, wake))
        except LockTimeoutError:
            return False
        return True

    async def await_zero(self, timeout: Optional[float] = None) -> None:
        """The waiting form of :meth:`wait`: return once the count is zero, raise
        LockTimeoutError if ``timeout`` seconds ran out first."""
        await _run(lambda wake: self._native.start_wait(timeout, wake))

    def __repr__(self) -> str:
        return f"<polylock.aio.Latch name={self.name!r}>"


def _parts(names: Iterable[Part]) -> List[Tuple[str, str]]:
    if isinstance(names, (str, bytes)):
        raise TypeError("multi_lock takes a list of names, not one name")
    return [(part, "lock") if isinstance(part, str) else (part[0], part[1]) for part in names]


class MultiLock:
    """Several locks of one client held as one, owned by the calling thread. The parts are
    always taken in one order (byte order of their keys), whatever order they are listed in,
    so two multi-locks over the same names never deadlock; the wait is one deadline for all,
    and a wait that runs out gives back every part it took. Each part is the ordinary lock of
    its name, with its own fencing token."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeMultiLock) -> None:
        self._native = native

    @property
    def names(self) -> List[str]:
        """The parts' names, in the order they are taken."""
        return list(self._native.names)

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None, lease: Optional[float] = None) -> bool:
        """Take every part; True once all are held, False if the wait ran out (nothing is
        held then). ``timeout`` and ``lease`` as in :meth:`polylock.Lock.acquire`; the
        timeout is for the whole multi-lock."""
        return self._native.acquire(_current_thread_id(), _wait(blocking, timeout), lease) is not None

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Hold:
        """The waiting form of :meth:`acquire`: LockTimeoutError when ``timeout`` seconds (for
        the whole multi-lock; None: no bound; 0: try once) run out, with nothing held. A
        :class:`polylock.Hold`: ``with locks.hold(timeout=5):`` holds every part for the block."""
        self._native.acquire(_current_thread_id(), timeout, lease, True)
        return Hold(self)

    def release(self) -> None:
        """Give back one hold of every part by the calling thread (NotOwnerError,
        LockLostError as for a lock; every part is released even if one fails)."""
        self._native.release(_current_thread_id())

    def locked(self) -> bool:
        """Whether the calling thread holds every part (and none was lost)."""
        return self._native.is_held(_current_thread_id())

    @property
    def fencing_tokens(self) -> Dict[str, Optional[int]]:
        """The calling thread's fencing token of each part (None for a part it does not hold
        and on backends without fencing tokens)."""
        return dict(self._native.fencing_tokens(_current_thread_id()))

    def __enter__(self) -> "MultiLock":
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<polylock.MultiLock names={self.names!r}>"


class AsyncMultiLock:
    """:class:`MultiLock` for asyncio: owned by the current task, and waiting never blocks
    the loop (cancelling the task stops the wait and leaves no part held)."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeMultiLock) -> None:
        self._native = native

    @property
    def names(self) -> List[str]:
        """The parts' names, in the order they are taken."""
        return list(self._native.names)

    def acquire(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Awaitable[bool]:
        """Take every part; True once all are held, False if ``timeout`` seconds (for the
        whole multi-lock; None: no bound; 0: try once) ran out, with nothing held."""
        owner = _current_owner()
        return self._acquire(owner, timeout, lease, False)

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> "_Holding[AsyncHold]":
        """The waiting form of :meth:`acquire`: LockTimeoutError when the wait runs out.
        ``async with locks.hold(timeout=5):`` holds every part for the block."""
        owner = _current_owner()
        return _Holding(lambda: self._hold(owner, timeout, lease))

    async def _acquire(self, owner: int, timeout: Optional[float], lease: Optional[float], waiting: bool) -> bool:
        taken = await _run(lambda wake: self._native.start_acquire(owner, timeout, lease, wake, waiting))
        return taken is not None

    async def _hold(self, owner: int, timeout: Optional[float], lease: Optional[float]) -> AsyncHold:
        await self._acquire(owner, timeout, lease, True)
        return AsyncHold(self)

    def release(self) -> Awaitable[None]:
        """Give back one hold of every part by the current task (NotOwnerError, LockLostError
        as for a lock; every part is released even if one fails). Runs to its end even if
        the awaiting task is cancelled."""
        owner = _current_owner()
        return _run(lambda wake: self._native.start_release(owner, wake))

    def locked(self) -> bool:
        """Whether the current task holds every part (and none was lost)."""
        return self._native.is_held(_current_owner())

    @property
    def fencing_tokens(self) -> Dict[str, Optional[int]]:
        """The current task's fencing token of each part (None for a part it does not hold
        and on backends without fencing tokens)."""
        return dict(self._native.fencing_tokens(_current_owner()))

    async def __aenter__(self) -> "AsyncMultiLock":
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<polylock.aio.MultiLock names={self.names!r}>"


class RedLock(Lock):
    """A RedLock lock: a :class:`polylock.Lock` whose ``fencing_token`` is always None. A
    majority of independent servers keeps no one counter that only grows, so RedLock has no
    fencing token to give (Kleppmann's critique; the README says when to prefer a single Redis
    with fencing, etcd or ZooKeeper)."""

    __slots__ = ()

    @property
    def fencing_token(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"<polylock.RedLock name={self.name!r}>"


def redlock(servers: Sequence[str], name: str) -> RedLock:
    """A RedLock lock ``name`` over independent Redis ``servers`` (``host:port`` or
    ``redis://[user:password@]host:port``): held while a majority granted it and its validity
    lasts. RedLock has no fencing tokens (``fencing_token`` is None). The lock keeps its own
    client; InvalidArgumentError for an empty or unusable list."""
    if isinstance(servers, (str, bytes)):
        raise TypeError("redlock takes a list of servers, not one")
    # RedLock's one kind: the token layout node-redlock and redsync use.
    return RedLock(connect(_polylock.redlock_url(list(servers)))._native.lock(name, "token"))


def _latch(self: Any, name: str) -> Latch:
    """A handle on the countdown latch ``name``. UnsupportedError on RedLock."""
    return Latch(_polylock.NativeLatch.open(self._native, name))


def _multi_lock(self: Any, names: Iterable[Part]) -> MultiLock:
    """The locks ``names`` (or (name, "read"/"write") sides of read-write locks) as one."""
    return MultiLock(_polylock.NativeMultiLock.open(self._native, _parts(names)))


def _aio_latch(self: Any, name: str) -> AsyncLatch:
    """A handle on the countdown latch ``name``, for asyncio."""
    return AsyncLatch(_polylock.NativeLatch.open(self._native, name))


def _aio_multi_lock(self: Any, names: Iterable[Part]) -> AsyncMultiLock:
    """The locks ``names`` (or (name, "read"/"write") sides) as one, for asyncio."""
    return AsyncMultiLock(_polylock.NativeMultiLock.open(self._native, _parts(names)))


def install(sync_client: type, aio_client: type) -> None:
    """Give the Client classes ``latch`` and ``multi_lock`` (both)."""
    sync_client.latch = _latch  # type: ignore[attr-defined]
    sync_client.multi_lock = _multi_lock  # type: ignore[attr-defined]
    aio_client.latch = _aio_latch  # type: ignore[attr-defined]
    aio_client.multi_lock = _aio_multi_lock  # type: ignore[attr-defined]


__all__ = ["Latch", "AsyncLatch", "MultiLock", "AsyncMultiLock", "RedLock", "redlock"]
