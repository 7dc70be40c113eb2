"""The blocking API: a lock owned by the calling thread, as with ``threading.RLock``."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Optional, Type

from . import _polylock

_current_thread_id = threading.get_ident


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
        if not blocking:
            if timeout is not None and timeout != -1:
                raise ValueError("can't specify a timeout for a non-blocking call")
            wait: Optional[float] = 0.0
        else:
            # threading's convention: -1 means no bound.
            wait = None if timeout is None or timeout == -1 else timeout
        return self._native.acquire(_current_thread_id(), wait, lease) is not None

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


class Client:
    """A connection to one backend (chosen by URL), with its own runtime and watchdogs."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeClient) -> None:
        self._native = native

    def lock(self, name: str, kind: str = "reentrant") -> Lock:
        """A handle on the lock ``name``: kind ``reentrant`` (every backend), ``fair`` or
        ``token`` (Redis), ``lease`` (SQL). Cheap; holds nothing until acquired."""
        return Lock(self._native.lock(name, kind))

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
