"""The blocking API: locks owned by the calling thread, as with ``threading.RLock``;
read-write locks and semaphores beside them."""

from __future__ import annotations

import json
import threading
from types import TracebackType
from typing import Any, Dict, List, Optional, Type

from . import _observe, _polylock, _segments

# The calling thread's owner id, from the core's binding kit: unique for the life of the
# process. Not threading.get_ident(): CPython reuses those once a thread exits, and a new
# thread would inherit (re-enter, release) a dead thread's hold.
_current_thread_id = _polylock.current_thread_owner


def _wait(blocking: bool, timeout: Optional[float]) -> Optional[float]:
    """threading's (blocking, timeout) as a wait in seconds: 0 tries once, None has no bound."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0.0
    # threading's convention: -1 means no bound.
    return None if timeout is None or timeout == -1 else timeout


class Hold:
    """One hold of the calling thread, as :meth:`Lock.hold` and :meth:`polylock.MultiLock.hold`
    return it: ``with lock.hold(timeout=5):`` gives the lock to the block and releases this
    hold at its end; :meth:`release` gives it back without a block."""

    __slots__ = ("lock",)

    def __init__(self, lock: Any) -> None:
        #: The lock (or multi-lock) held.
        self.lock = lock

    def release(self) -> None:
        """Give back this hold (the calling thread's, as :meth:`Lock.release`)."""
        self.lock.release()

    def __enter__(self) -> Any:
        return self.lock

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.lock.release()

    def __repr__(self) -> str:
        return f"<polylock.Hold of {self.lock!r}>"


class Lock:
    """A distributed lock owned by the calling thread. Reentrant per thread; only the thread
    that acquired it may release it. Made by :meth:`Client.lock`; holds nothing until acquired.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeLock) -> None:
        self._native = native

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None, lease: Optional[float] = None) -> bool:
        """Acquire the lock; True once held, False if the wait ran out.

        ``blocking=False`` tries once. ``timeout`` bounds the wait in seconds (None or -1:
        wait as long as it takes). ``lease`` holds the lock for at most that many seconds;
        without it a watchdog keeps the lock while this client lives. The GIL is released
        while waiting.
        """
        return self._native.acquire(_current_thread_id(), _wait(blocking, timeout), lease) is not None

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Hold:
        """The waiting form of :meth:`acquire`: wait up to ``timeout`` seconds (None: as long
        as it takes; 0: try once) and raise LockTimeoutError when the wait runs out.
        ``lease`` as in :meth:`acquire`. A negative or NaN ``timeout`` is
        InvalidArgumentError (``-1`` means "no bound" only in threading's :meth:`acquire`).
        Returns a :class:`Hold`, so ``with lock.hold(timeout=5):`` holds the lock for the
        block. The GIL is released while waiting."""
        self._native.acquire(_current_thread_id(), timeout, lease, True)
        return Hold(self)

    def is_locked(self) -> bool:
        """Whether anyone (any thread, process or client) holds the lock in the store now;
        :meth:`locked` is whether the calling thread does."""
        return self._native.is_locked()

    def release(self) -> None:
        """Give back one hold of the calling thread.

        Raises NotOwnerError if this thread does not hold the lock, LockLostError if the
        backend stopped holding it before this release.
        """
        self._native.release(_current_thread_id())

    def locked(self) -> bool:
        """Whether the calling thread holds the lock (and it has not been lost)."""
        return self._native.is_held(_current_thread_id())

    @property
    def hold_count(self) -> int:
        """How many times the calling thread holds the lock."""
        return self._native.hold_count(_current_thread_id())

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the calling thread's hold, or None if it holds none. Pass it
        to the storage you protect and have it reject writes with an older token."""
        return self._native.fencing_token(_current_thread_id())

    def is_lost(self) -> bool:
        """True if the calling thread acquired the lock and the backend no longer holds it."""
        return self._native.lost_reason(_current_thread_id()) is not None

    @property
    def lost(self) -> bool:
        """Same as :meth:`is_lost`."""
        return self.is_lost()

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the calling thread's hold was lost, or None."""
        return self._native.lost_reason(_current_thread_id())

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def kind(self) -> str:
        return self._native.kind

    def __enter__(self) -> "Lock":
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
        return f"<polylock.Lock name={self.name!r} kind={self.kind!r}>"


class RWLock:
    """A distributed read-write lock: :attr:`read` is shared (any number of threads at once,
    while nobody writes), :attr:`write` is exclusive. Each side is used like a :class:`Lock`
    (``with``, ``acquire(timeout=, lease=)``, ``release()``, ``fencing_token``), owned by the
    calling thread and reentrant. The writer may also read (a downgrade); a reader asking for
    the write side gets InvalidArgumentError at once (an upgrade could deadlock). A waiting
    writer is not starved by a stream of readers. Made by :meth:`Client.rw_lock`.
    """

    __slots__ = ("read", "write")

    def __init__(self, natives: "tuple[_polylock.NativeLock, _polylock.NativeLock]") -> None:
        self.read = Lock(natives[0])
        self.write = Lock(natives[1])

    @property
    def name(self) -> str:
        return self.read.name

    def __repr__(self) -> str:
        return f"<polylock.RWLock name={self.name!r}>"


class Permit:
    """One permit of a :class:`Semaphore`, with its own lease and fencing token. Any thread
    may release it (it is owned by this object, not by a thread); ``with permit:`` releases
    it at the end of the block."""

    __slots__ = ("_native", "id", "fencing_token")

    def __init__(self, native: _polylock.NativeSemaphore, permit_id: int, fencing_token: int) -> None:
        self._native = native
        #: The permit's identity (what ``Semaphore.release(permit_id)`` takes).
        self.id = permit_id
        #: Greater than the token of every earlier grant of this semaphore's name.
        self.fencing_token = fencing_token

    def release(self) -> None:
        """Give the permit back. NotOwnerError if it was already given back, LockLostError if
        its lease ran out first."""
        self._native.release(self.id)

    def __enter__(self) -> "Permit":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<polylock.Permit id={self.id} fencing_token={self.fencing_token}>"


class Semaphore:
    """A distributed semaphore of ``permits`` owned permits, each with a lease (renewed by a
    watchdog while this client lives, or fixed), so a crashed holder's permit comes back.
    The count is fixed by the first use of the name. Made by :meth:`Client.semaphore`.

    ``with semaphore:`` takes a permit for the block (per thread, a stack of them)."""

    __slots__ = ("_native", "_held")

    def __init__(self, native: _polylock.NativeSemaphore) -> None:
        self._native = native
        self._held = threading.local()

    def acquire(
        self, blocking: bool = True, timeout: Optional[float] = None, lease: Optional[float] = None
    ) -> Optional[Permit]:
        """Take a permit: a :class:`Permit`, or None if the wait ran out. Arguments as
        :meth:`Lock.acquire`. The GIL is released while waiting."""
        taken = self._native.acquire(_wait(blocking, timeout), lease)
        if taken is None:
            return None
        return Permit(self._native, taken[0], taken[1])

    def hold(self, timeout: Optional[float] = None, lease: Optional[float] = None) -> Permit:
        """The waiting form of :meth:`acquire`: a :class:`Permit`, or LockTimeoutError when
        ``timeout`` seconds run out first (None: as long as it takes; 0: try once; negative:
        InvalidArgumentError). ``with semaphore.hold(timeout=5):`` holds the permit for the
        block."""
        taken = self._native.acquire(timeout, lease, True)
        return Permit(self._native, taken[0], taken[1])

    def release(self, permit_id: int) -> None:
        """Give back the permit ``permit_id`` (Redisson's ``release(permitId)``)."""
        self._native.release(permit_id)

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def permits(self) -> int:
        return self._native.permits

    def __enter__(self) -> Permit:
        permit = self.acquire()
        assert permit is not None  # a blocking acquire without a timeout returns a permit
        stack = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        stack.append(permit)
        return permit

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self._held.stack.pop().release()

    def __repr__(self) -> str:
        return f"<polylock.Semaphore name={self.name!r} permits={self.permits}>"


class Client:
    """A connection to one backend (chosen by URL), with its own runtime and watchdogs."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeClient) -> None:
        self._native = native

    def lock(self, name: str, kind: str = "reentrant") -> Lock:
        """A handle on the lock ``name``: kind ``reentrant`` (every backend), ``fair`` or
        ``token`` (Redis), ``lease`` (SQL). Cheap; holds nothing until acquired."""
        return Lock(self._native.lock(name, kind))

    def rw_lock(self, name: str) -> RWLock:
        """A handle on the read-write lock ``name`` (``.read``, ``.write``). UnsupportedError
        if the backend has none."""
        return RWLock(self._native.rw_lock(name))

    def semaphore(self, name: str, permits: int) -> Semaphore:
        """A handle on the semaphore ``name`` of ``permits`` permits. UnsupportedError if the
        backend has none; InvalidArgumentError if ``permits`` is below 1."""
        return Semaphore(self._native.semaphore(name, permits))

    def segment(self, tag: str, step: int = 1000, max_step: Optional[int] = None, load_at: float = 0.1, wait: float = 5.0) -> "_segments.Segment":
        """Leaf-style segment IDs of ``tag`` (never 0, never repeated by any process).
        UnsupportedError if the backend has no counters."""
        return _segments.Segment(_segments.open_segment(self._native, tag, step, max_step, load_at, wait))

    def snowflake(self, worker_id: Optional[int] = None, epoch_ms: Optional[int] = None, max_wait: float = 2.0) -> "_segments.LeasedSnowflake":
        """A Snowflake generator on a worker id leased from the backend: ``worker_id`` if
        given (LockTimeoutError if another generator holds it), else the lowest free one."""
        native = _polylock.NativeLeasedSnowflake.open(self._native, worker_id, epoch_ms, max_wait)
        return _segments.LeasedSnowflake(native)

    def status(self, name: str, kind: Optional[str] = None) -> Dict[str, Any]:
        """Whoever holds the lock ``name`` (of ``kind``, default the backend's): a dict of
        ``name``, ``kind``, ``backend``, ``held``, ``holder``, ``fencing_token``,
        ``token_counter``, ``remaining_lease_ms``, ``lease_expires``, ``waiters``, ``layout``
        and ``details``, the fields ``polylock status --json`` prints (None where the backend
        cannot tell)."""
        return json.loads(self._native.status_json(name, kind))

    def list(self, prefix: str = "") -> List[Dict[str, Any]]:
        """The locks whose name starts with ``prefix``, sorted by name: dicts of ``name``,
        ``kind`` and ``held``, as ``polylock list --json`` prints them. UnsupportedError
        where the backend cannot enumerate its locks."""
        return json.loads(self._native.list_json(prefix))

    def force_unlock(self, name: str, kind: Optional[str] = None) -> bool:
        """Break the hold of the lock ``name`` whoever holds it (Redisson's ``forceUnlock``);
        whether there was one. Dangerous: the holder believes it still holds the lock until
        its next renewal or release tells it otherwise."""
        return self._native.force_unlock(name, kind)

    def close(self) -> None:
        """Stop the watchdogs and give every hold back. Later calls raise
        PolylockConnectionError. Closing twice is harmless."""
        self._native.close()

    @property
    def url(self) -> str:
        """The URL connected to, with any password replaced by ``***``."""
        return self._native.url

    @property
    def closed(self) -> bool:
        return self._native.closed

    @property
    def client_id(self) -> str:
        """This client's random id (the first half of every owner it acquires for)."""
        return self._native.client_id

    def metrics(self) -> Dict[str, Any]:
        """This client's counts and histograms, in the shape of :func:`polylock.metrics`."""
        return _observe.client_metrics(self._native)

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<polylock.Client url={self.url!r}>"


def connect(url: Optional[str] = None) -> Client:
    """Connect to the backend ``url`` names (``sqlite://path.db``, ``mem://``, ``redis://...``).
    Without a URL: ``$POLYLOCK_URL``, else ``sqlite://polylock.db``."""
    return Client(_polylock.NativeClient.connect(url))
