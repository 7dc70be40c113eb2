"""The asyncio API: locks owned by the current task, read-write locks and semaphores.

    client = await polylock.aio.connect("redis://127.0.0.1:6379")
    lock = client.lock("orders:42")
    async with lock:
        ...

Waiting never blocks the event loop: the wait runs on the client's own runtime, which
wakes the loop when it is done. Cancelling a task that waits for a lock stops the wait and
leaves nothing held.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from types import TracebackType
from typing import Any, Awaitable, Callable, Coroutine, Dict, Generator, List, Optional, Type, TypeVar

from . import _observe, _polylock, _segments

# Owner ids of tasks, from the core's binding kit (never reused in this process) rather than
# id(task): a task's address can be reused by a later task, which must not inherit a hold.
_task_owner_ids: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()


def _current_owner() -> int:
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("polylock.aio locks must be used from inside an asyncio task")
    owner = _task_owner_ids.get(task)
    if owner is None:
        owner = _polylock.next_owner_id()
        _task_owner_ids[task] = owner
    return owner


def _resolve(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


class _LoopWaker:
    """The one waker of a loop: native calls that finish put themselves on its ready list and
    make its socket readable (once per batch, without the GIL); the loop then polls them on
    its own thread (``drain``) and resolves the futures of those that are done."""

    __slots__ = ("native", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.native = _polylock.LoopWaker()
        loop.add_reader(self.native.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        for future in self.native.drain():
            if not future.done():
                future.set_result(None)


# One waker per running loop (None: the loop has no add_reader, e.g. Windows' proactor).
_loop_wakers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Optional[_LoopWaker]]" = (
    weakref.WeakKeyDictionary()
)


def _loop_waker(loop: asyncio.AbstractEventLoop) -> Optional[_LoopWaker]:
    try:
        return _loop_wakers[loop]
    except KeyError:
        pass
    try:
        waker: Optional[_LoopWaker] = _LoopWaker(loop)
    except NotImplementedError:
        waker = None
    _loop_wakers[loop] = waker
    return waker


async def _run(start: Callable[[Any], _polylock.PendingCall]) -> Any:
    """Start a native call, await it without blocking the loop, and collect it. A call that
    completes at once (nothing to wait for) is collected without a trip through the loop."""
    loop = asyncio.get_running_loop()
    waker = _loop_waker(loop)
    if waker is None:
        return await _run_on_runtime(loop, start)
    call = start(waker.native)
    if call.done():
        return call.finish()
    done: "asyncio.Future[None]" = loop.create_future()
    call.notify(done)
    try:
        await done
    except BaseException:
        # Cancelled (or the loop is going away): stop the call, and give back a hold it
        # may have acquired that nobody will ever release.
        call.cancel()
        raise
    return call.finish()


async def _run_on_runtime(loop: asyncio.AbstractEventLoop, start: Callable[[Any], _polylock.PendingCall]) -> Any:
    """For loops without add_reader: the call runs on the runtime, which wakes the loop."""
    done: "asyncio.Future[None]" = loop.create_future()
    call = start(functools.partial(loop.call_soon_threadsafe, _resolve, done))
    try:
        await done
    except BaseException:
        call.cancel()
        raise
    return call.finish()


T = TypeVar("T")


class _Holding(Coroutine[Any, Any, T]):
    """What a waiting form (``hold``, ``campaign``) returns: a coroutine (await it, or hand it
    to ``asyncio.create_task`` / ``wait_for``) for the hold, that is also usable in ``async
    with`` for a block (entered with what the hold's own ``async with`` gives, released or
    resigned at the end). The call starts when first awaited or entered."""

    __slots__ = ("_start", "_started", "_held")

    def __init__(self, start: Callable[[], Coroutine[Any, Any, T]]) -> None:
        self._start = start
        self._started: Optional[Coroutine[Any, Any, T]] = None
        self._held: Any = None

    def _coroutine(self) -> Coroutine[Any, Any, T]:
        if self._started is None:
            self._started = self._start()
        return self._started

    def send(self, value: Any) -> Any:
        return self._coroutine().send(value)

    def throw(self, *args: Any) -> Any:
        return self._coroutine().throw(*args)

    def close(self) -> None:
        if self._started is not None:
            self._started.close()

    def __await__(self) -> Generator[Any, None, T]:
        return self._coroutine().__await__()

    async def __aenter__(self) -> Any:
        self._held = await self._coroutine()
        return await self._held.__aenter__()

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self._held.__aexit__(exc_type, exc, traceback)


class Hold:
    """One hold of the current task, as :meth:`Lock.hold` gives it: ``async with hold:``
    gives the lock to the block and releases this hold at its end; :meth:`release` gives it
    back without a block."""

    __slots__ = ("lock",)

    def __init__(self, lock: Any) -> None:
        #: The lock (or multi-lock) held.
        self.lock = lock

    def release(self) -> Awaitable[None]:
        """Give back this hold (the current task's, as :meth:`Lock.release`)."""
        return self.lock.release()

    async def __aenter__(self) -> Any:
        return self.lock

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.lock.release()

    def __repr__(self) -> str:
        return f"<polylock.aio.Hold of {self.lock!r}>"


class Lock:
    """A distributed lock owned by the current asyncio task; reentrant per task."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLock) -> None:
        self._native = native

    # acquire, release and wait_lost pick the owner when they are called, not when they are
    # first awaited: `asyncio.wait_for(lock.acquire(), 5)` (a new task before Python 3.12) or
    # `asyncio.create_task(lock.wait_lost())` still act for the task that called them.

    def acquire(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Awaitable[bool]:
        """Acquire the lock; True once held, False if ``timeout`` seconds passed first
        (None: wait as long as it takes; 0: try once). ``lease`` as in polylock.Lock."""
        owner = _current_owner()
        return self._acquire(owner, timeout, lease)

    async def _acquire(self, owner: int, timeout: Optional[float], lease: Optional[float]) -> bool:
        token = await _run(lambda wake: self._native.start_acquire(owner, timeout, lease, wake))
        return token is not None

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> "_Holding[Hold]":
        """The waiting form of :meth:`acquire`: raises LockTimeoutError when ``timeout``
        seconds run out first (None: as long as it takes; 0: try once; negative:
        InvalidArgumentError). ``await lock.hold(timeout=5)`` gives a :class:`Hold`;
        ``async with lock.hold(timeout=5):`` holds the lock for the block."""
        owner = _current_owner()
        return _Holding(lambda: self._hold(owner, timeout, lease))

    async def _hold(self, owner: int, timeout: Optional[float], lease: Optional[float]) -> Hold:
        await _run(lambda wake: self._native.start_acquire(owner, timeout, lease, wake, True))
        return Hold(self)

    async def is_locked(self) -> bool:
        """Whether anyone (any task, process or client) holds the lock in the store now;
        :meth:`locked` is whether the current task does."""
        return bool(await _run(self._native.start_is_locked))

    def release(self) -> Awaitable[None]:
        """Give back one hold of the current task (NotOwnerError if it holds none). Once
        started, a release runs to its end even if the awaiting task is cancelled."""
        owner = _current_owner()
        return _run(lambda wake: self._native.start_release(owner, wake))

    def locked(self) -> bool:
        """Whether the current task holds the lock (and it has not been lost)."""
        return self._native.is_held(_current_owner())

    @property
    def hold_count(self) -> int:
        return self._native.hold_count(_current_owner())

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the current task's hold, or None."""
        return self._native.fencing_token(_current_owner())

    def is_lost(self) -> bool:
        """True if the current task acquired the lock and the backend no longer holds it."""
        return self._native.lost_reason(_current_owner()) is not None

    @property
    def lost_reason(self) -> Optional[str]:
        return self._native.lost_reason(_current_owner())

    def wait_lost(self) -> Awaitable[str]:
        """Return (with the reason) once the current task's hold is lost. Never returns if
        the lock is released first, so race it against your work, e.g. with
        ``asyncio.wait(..., return_when=FIRST_COMPLETED)``. NotOwnerError if the task holds
        nothing."""
        owner = _current_owner()
        return _run(lambda wake: self._native.start_wait_lost(owner, wake))

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def kind(self) -> str:
        return self._native.kind

    async def __aenter__(self) -> "Lock":
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
        return f"<polylock.aio.Lock name={self.name!r} kind={self.kind!r}>"


class RWLock:
    """A read-write lock for asyncio code: :attr:`read` and :attr:`write` are each used like
    a :class:`Lock` (``async with``, ``await acquire(timeout=, lease=)``), owned by the
    current task. Rules as :class:`polylock.RWLock`."""

    __slots__ = ("read", "write")

    def __init__(self, natives: "tuple[_polylock.NativeLock, _polylock.NativeLock]") -> None:
        self.read = Lock(natives[0])
        self.write = Lock(natives[1])

    @property
    def name(self) -> str:
        return self.read.name

    def __repr__(self) -> str:
        return f"<polylock.aio.RWLock name={self.name!r}>"


class Permit:
    """One permit of a :class:`Semaphore`; ``async with permit:`` releases it at the end."""

    __slots__ = ("_native", "id", "fencing_token")

    def __init__(self, native: _polylock.NativeSemaphore, permit_id: int, fencing_token: int) -> None:
        self._native = native
        self.id = permit_id
        self.fencing_token = fencing_token

    def release(self) -> Awaitable[None]:
        """Give the permit back (runs to its end even if the awaiting task is cancelled)."""
        permit_id = self.id
        return _run(lambda wake: self._native.start_release(permit_id, wake))

    async def __aenter__(self) -> "Permit":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<polylock.aio.Permit id={self.id} fencing_token={self.fencing_token}>"


class Semaphore:
    """A semaphore for asyncio code; rules as :class:`polylock.Semaphore`. ``async with
    semaphore:`` holds a permit for the block (per task, a stack of them)."""

    __slots__ = ("_native", "_held")

    def __init__(self, native: _polylock.NativeSemaphore) -> None:
        self._native = native
        self._held: "weakref.WeakKeyDictionary[asyncio.Task[Any], list[Permit]]" = weakref.WeakKeyDictionary()

    async def acquire(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Optional[Permit]:
        """Take a permit: a :class:`Permit`, or None if ``timeout`` seconds passed first.
        Cancelling the awaiting task stops the wait and leaves no permit taken."""
        taken = await _run(lambda wake: self._native.start_acquire(timeout, lease, wake))
        if taken is None:
            return None
        return Permit(self._native, taken[0], taken[1])

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> "_Holding[Permit]":
        """The waiting form of :meth:`acquire`: a :class:`Permit`, or LockTimeoutError when
        ``timeout`` seconds run out first. ``async with semaphore.hold(timeout=5):`` holds
        the permit for the block."""
        return _Holding(lambda: self._hold(timeout, lease))

    async def _hold(self, timeout: Optional[float], lease: Optional[float]) -> Permit:
        taken = await _run(lambda wake: self._native.start_acquire(timeout, lease, wake, True))
        return Permit(self._native, taken[0], taken[1])

    def release(self, permit_id: int) -> Awaitable[None]:
        """Give back the permit ``permit_id``."""
        return _run(lambda wake: self._native.start_release(permit_id, wake))

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def permits(self) -> int:
        return self._native.permits

    async def __aenter__(self) -> Permit:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("polylock.aio semaphores must be used from inside an asyncio task")
        permit = await self.acquire()
        assert permit is not None  # no timeout: a permit or an exception
        self._held.setdefault(task, []).append(permit)
        return permit

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        await self._held[task].pop().release()

    def __repr__(self) -> str:
        return f"<polylock.aio.Semaphore name={self.name!r} permits={self.permits}>"


class Client:
    """A connection to one backend for asyncio code; see :func:`connect`."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeClient) -> None:
        self._native = native

    def lock(self, name: str, kind: str = "reentrant") -> Lock:
        """A handle on the lock ``name``; holds nothing until acquired."""
        return Lock(self._native.lock(name, kind))

    def rw_lock(self, name: str) -> RWLock:
        """A handle on the read-write lock ``name`` (``.read``, ``.write``)."""
        return RWLock(self._native.rw_lock(name))

    def semaphore(self, name: str, permits: int) -> Semaphore:
        """A handle on the semaphore ``name`` of ``permits`` permits."""
        return Semaphore(self._native.semaphore(name, permits))

    def segment(self, tag: str, step: int = 1000, max_step: Optional[int] = None, load_at: float = 0.1, wait: float = 5.0) -> "_segments.AsyncSegment":
        """Leaf-style segment IDs of ``tag``; see :meth:`polylock.Client.segment`."""
        return _segments.AsyncSegment(_segments.open_segment(self._native, tag, step, max_step, load_at, wait))

    async def snowflake(self, worker_id: Optional[int] = None, epoch_ms: Optional[int] = None, max_wait: float = 2.0) -> "_segments.AsyncLeasedSnowflake":
        """A Snowflake generator on a leased worker id; see :meth:`polylock.Client.snowflake`."""
        return await _segments.open_leased_snowflake_async(self._native, worker_id, epoch_ms, max_wait)

    async def status(self, name: str, kind: Optional[str] = None) -> Dict[str, Any]:
        """Whoever holds the lock ``name``: the dict of :meth:`polylock.Client.status`."""
        return json.loads(await _run(lambda wake: self._native.start_status_json(name, kind, wake)))

    async def list(self, prefix: str = "") -> List[Dict[str, Any]]:
        """The locks whose name starts with ``prefix``: the dicts of :meth:`polylock.Client.list`."""
        return json.loads(await _run(lambda wake: self._native.start_list_json(prefix, wake)))

    async def force_unlock(self, name: str, kind: Optional[str] = None) -> bool:
        """Break the hold of the lock ``name`` whoever holds it; whether there was one (see
        :meth:`polylock.Client.force_unlock`). Runs to its end even if the task is cancelled."""
        return bool(await _run(lambda wake: self._native.start_force_unlock(name, kind, wake)))

    async def close(self) -> None:
        """Stop the watchdogs and give every hold back."""
        await _run(self._native.start_close)

    @property
    def url(self) -> str:
        return self._native.url

    @property
    def closed(self) -> bool:
        return self._native.closed

    def metrics(self) -> Dict[str, Any]:
        """This client's counts and histograms, in the shape of :func:`polylock.metrics`
        (a snapshot of counters in memory: no I/O, so not a coroutine)."""
        return _observe.client_metrics(self._native)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<polylock.aio.Client url={self.url!r}>"


async def connect(url: Optional[str] = None) -> Client:
    """Connect without blocking the event loop. URL as in :func:`polylock.connect`."""
    native = await _run(lambda wake: _polylock.NativeClient.start_connect(url, wake))
    return Client(native)


# The asyncio classes defined beside their blocking ones (which import this module), by the
# names they have here: polylock.aio.Latch is _latch.AsyncLatch, and so on.
_BESIDE_THE_BLOCKING_ONES = {
    "Latch": ("_latch", "AsyncLatch"),
    "MultiLock": ("_latch", "AsyncMultiLock"),
    "Election": ("_election", "AsyncElection"),
    "Leadership": ("_election", "AsyncLeadership"),
    "Value": ("_values", "AsyncValue"),
    "ValueWatch": ("_values", "AsyncValueWatch"),
}


def __getattr__(name: str) -> Any:
    if name in _BESIDE_THE_BLOCKING_ONES:
        import importlib

        module, attribute = _BESIDE_THE_BLOCKING_ONES[name]
        return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Client",
    "Lock",
    "Hold",
    "RWLock",
    "Semaphore",
    "Permit",
    "Latch",
    "MultiLock",
    "Election",
    "Leadership",
    "Value",
    "ValueWatch",
    "connect",
]
