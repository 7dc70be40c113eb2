"""Versioned values, fenced writes and idempotency keys, blocking and asyncio.

    value = client.value("config")
    version = value.create(b"v1")
    value.compare_and_set(version, b"v2")        # ConflictError if someone wrote first
    for state in value.watch():                  # each new VersionedValue (None: deleted)
        ...

    with client.lock("report") as lock:          # hold the lock, pass its token, write fenced
        value.write_fenced(lock.fencing_token, b"...")   # FencedError if a later holder wrote

    idem = client.idempotency("payments")
    result = idem.run(request_id, payload, charge, card)   # charge(card) once per request_id

    @client.idempotent(key="request_id")
    def charge(request_id, card): ...

Responses that ``run`` stores are bytes as they are, or anything else as JSON (a tag byte
says which), so a replay hands back what the first call returned (JSON-decoded: tuples come
back as lists). Fingerprints are bytes or text as given (hashed with SHA-256 past 1024
bytes), or, for any other object, the SHA-256 of its canonical JSON (keys sorted, no
spaces). Both rules are the core's (``polylock::kit::idempotency_codec``), shared by every
binding, so services in different languages replay each other's responses.

The asyncio forms run each store call in the event loop's default executor (the native call
releases the GIL while it waits); a cancelled task stops waiting, and a store call already
started finishes on its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
from typing import Any, Awaitable, Callable, NamedTuple, Optional, Tuple, Union

from . import _polylock
from ._errors import InProgressError, MismatchError
from .aio import _run

DEFAULT_RETENTION = 24 * 3600.0
DEFAULT_IN_PROGRESS_TTL = 60.0


class VersionedValue(NamedTuple):
    """A value as it is in the store, with its version and (once written fenced) the highest
    fencing token it has accepted."""

    value: bytes
    version: int
    fencing_token: Optional[int]


class Acquired(NamedTuple):
    """``begin`` claimed the key: do the work, then ``ticket.complete(response)``."""

    ticket: "Ticket"


class Replay(NamedTuple):
    """An attempt finished before: its stored response (bytes)."""

    response: bytes


class InProgress(NamedTuple):
    """Another attempt is under way; it may be taken over after ``retry_after`` seconds (HTTP 409)."""

    retry_after: float


class Mismatch(NamedTuple):
    """The key was used before with another fingerprint (HTTP 422)."""


Outcome = Union[Acquired, Replay, InProgress, Mismatch]


def fingerprint_of(payload: Any) -> bytes:
    """The fingerprint ``begin`` stores for ``payload`` (see the module's doc). The rule is the
    core's (``polylock::kit::idempotency_codec``), so every language computes the same one."""
    native = _polylock.NativeIdempotency
    if payload is None:
        return b""
    if isinstance(payload, str):
        payload = payload.encode()
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return native.fingerprint_of_bytes(bytes(payload))
    return native.fingerprint_of_json(json.dumps(payload, default=repr))


def encode_response(result: Any) -> bytes:
    if isinstance(result, (bytes, bytearray, memoryview)):
        return _polylock.NativeIdempotency.encode_response(False, bytes(result))
    return _polylock.NativeIdempotency.encode_response(True, json.dumps(result).encode())


def decode_response(stored: bytes) -> Any:
    is_json, body = _polylock.NativeIdempotency.decode_response(stored)
    return json.loads(body) if is_json else body


def _in_progress(key: str, retry_after: float) -> InProgressError:
    err = InProgressError(
        f"idempotency key {key!r} is being worked on by another attempt; retry after {retry_after:.3f}s"
    )
    err.retry_after = retry_after  # type: ignore[attr-defined]
    return err


def _mismatch(key: str) -> MismatchError:
    return MismatchError(f"idempotency key {key!r} was used before with another payload (a different fingerprint)")


def _outcome(kind: str, data: Any) -> Outcome:
    if kind == "acquired":
        return Acquired(Ticket(data))
    if kind == "replay":
        return Replay(data)
    if kind == "in_progress":
        return InProgress(data)
    return Mismatch()


class Value:
    """A named value written by compare-and-set on a version that only grows. Made by
    :meth:`polylock.Client.value`."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeValue) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def get(self) -> Optional[Tuple[bytes, int]]:
        """``(value, version)``, or None if there is no value."""
        got = self._native.get()
        return None if got is None else (got[0], got[1])

    def get_record(self) -> Optional[VersionedValue]:
        """The value, its version and its fencing token, or None."""
        got = self._native.get()
        return None if got is None else VersionedValue(*got)

    def create(self, value: bytes) -> int:
        """Create the value; its version. ConflictError (``current_value``,
        ``current_version``) if it exists."""
        return self._native.create(bytes(value))

    def compare_and_set(self, version: int, value: bytes) -> int:
        """Replace the value if it is still at ``version``; the new version. ConflictError,
        carrying ``current_value`` and ``current_version``, if someone else wrote first."""
        return self._native.compare_and_set(version, bytes(value))

    def delete(self, version: int) -> None:
        """Remove the value if it is still at ``version``, else ConflictError."""
        self._native.delete(version)

    def write_fenced(self, token: int, value: bytes) -> int:
        """Write if ``token`` is at least the highest fencing token this value has accepted;
        the new version. FencedError (``winning_token``) if a later lock holder wrote."""
        return self._native.write_fenced(token, bytes(value))

    def watch(self) -> "ValueWatch":
        """Follow this value's changes from now on (armed before this returns): iterate the
        :class:`ValueWatch` for each new state, ``for state in value.watch():``."""
        return ValueWatch(self._native.watch())

    def __repr__(self) -> str:
        return f"<polylock.Value name={self.name!r}>"


class ValueWatch:
    """The changes of a :class:`Value` from the moment :meth:`Value.watch` was called: iterate
    for each new state (a :class:`VersionedValue`, or None once the value is deleted). Several
    writes close together may show as their last one; a state is never seen twice, nor an
    older one after a newer. Each step blocks (the GIL released) until the value changes."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeValueWatch) -> None:
        self._native = native

    @property
    def current(self) -> Optional[VersionedValue]:
        """The state last seen: when the watch started, or the last one iterated."""
        return _record(self._native.current())

    def __iter__(self) -> "ValueWatch":
        return self

    def __next__(self) -> Optional[VersionedValue]:
        return _record(self._native.changed())

    def __repr__(self) -> str:
        return f"<polylock.ValueWatch current={self.current!r}>"


def _record(raw: Optional[Tuple[bytes, int, Optional[int]]]) -> Optional[VersionedValue]:
    return None if raw is None else VersionedValue(bytes(raw[0]), raw[1], raw[2])


class Ticket:
    """One attempt's claim on an idempotency key."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeTicket) -> None:
        self._native = native

    @property
    def token(self) -> int:
        """Grows with every attempt that takes the key; usable as a fencing token."""
        return self._native.token

    @property
    def key(self) -> str:
        return self._native.key

    def complete(self, response: bytes) -> None:
        """Store ``response`` for later ``begin`` calls to replay. LockLostError if another
        attempt took the key over (its result stands)."""
        self._native.complete(bytes(response))

    def abandon(self) -> None:
        """Give the key up so that a retry runs again. LockLostError if taken over."""
        self._native.abandon()

    def extend(self) -> None:
        """Keep the key for another ``in_progress_ttl``. LockLostError if taken over."""
        self._native.extend()

    def __repr__(self) -> str:
        return f"<polylock.Ticket key={self.key!r} token={self.token}>"


class Idempotency:
    """Idempotency keys of one namespace. Made by :meth:`polylock.Client.idempotency`."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeIdempotency) -> None:
        self._native = native

    @property
    def namespace(self) -> str:
        return self._native.namespace

    def begin(self, key: str, fingerprint: Any = None) -> Outcome:
        """Claim ``key``: Acquired(ticket) | Replay(response) | InProgress(retry_after) | Mismatch()."""
        return _outcome(*self._native.begin(key, fingerprint_of(fingerprint)))

    def run(
        self, key: str, fingerprint: Any, fn: Callable[..., Any], *args: Any, wait: Optional[float] = None, **kwargs: Any
    ) -> Any:
        """``fn(*args, **kwargs)`` once for ``key``, or the result the finished attempt stored.
        A failing ``fn`` abandons the key (the retry runs) and its exception propagates.
        ``wait``: seconds to wait for an attempt under way, then replay it (default: do not
        wait). Raises InProgressError (``retry_after``) and MismatchError."""
        deadline = None if wait is None else time.monotonic() + wait
        poll = 0.02
        while True:
            outcome = self.begin(key, fingerprint)
            if isinstance(outcome, Acquired):
                try:
                    result = fn(*args, **kwargs)
                except BaseException:
                    _quietly(outcome.ticket.abandon)
                    raise
                outcome.ticket.complete(encode_response(result))
                return result
            if isinstance(outcome, Replay):
                return decode_response(outcome.response)
            if isinstance(outcome, Mismatch):
                raise _mismatch(key)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is None or remaining <= 0:
                raise _in_progress(key, outcome.retry_after)
            time.sleep(max(0.001, min(poll, outcome.retry_after, remaining)))
            poll = min(poll * 2, 1.0)

    def __repr__(self) -> str:
        return f"<polylock.Idempotency namespace={self.namespace!r}>"


def _quietly(call: Callable[[], Any]) -> None:
    try:
        call()
    except Exception:  # the work's own exception is the one the caller needs
        pass


async def _in_executor(call: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(call, *args))


class AsyncValue:
    """:class:`Value` for asyncio: the same methods, awaited."""

    __slots__ = ("_sync",)

    def __init__(self, native: _polylock.NativeValue) -> None:
        self._sync = Value(native)

    @property
    def name(self) -> str:
        return self._sync.name

    async def get(self) -> Optional[Tuple[bytes, int]]:
        return await _in_executor(self._sync.get)

    async def get_record(self) -> Optional[VersionedValue]:
        return await _in_executor(self._sync.get_record)

    async def create(self, value: bytes) -> int:
        return await _in_executor(self._sync.create, value)

    async def compare_and_set(self, version: int, value: bytes) -> int:
        return await _in_executor(self._sync.compare_and_set, version, value)

    async def delete(self, version: int) -> None:
        await _in_executor(self._sync.delete, version)

    async def write_fenced(self, token: int, value: bytes) -> int:
        return await _in_executor(self._sync.write_fenced, token, value)

    async def watch(self) -> "AsyncValueWatch":
        """Follow this value's changes from now on (armed before this returns):
        ``async for state in await value.watch():``."""
        return AsyncValueWatch(await _run(self._sync._native.start_watch))

    def __repr__(self) -> str:
        return f"<polylock.aio.Value name={self.name!r}>"


class AsyncValueWatch:
    """:class:`ValueWatch` for asyncio: an async iterator whose waits never block the loop
    (cancelling the awaiting task stops the wait; the watch stays usable)."""

    __slots__ = ("_native",)

    def __init__(self, native: _polylock.NativeValueWatch) -> None:
        self._native = native

    @property
    def current(self) -> Optional[VersionedValue]:
        """The state last seen: when the watch started, or the last one iterated."""
        return _record(self._native.current())

    def __aiter__(self) -> "AsyncValueWatch":
        return self

    async def __anext__(self) -> Optional[VersionedValue]:
        return _record(await _run(self._native.start_changed))

    def __repr__(self) -> str:
        return f"<polylock.aio.ValueWatch current={self.current!r}>"


class AsyncTicket:
    """:class:`Ticket` for asyncio."""

    __slots__ = ("_sync",)

    def __init__(self, ticket: Ticket) -> None:
        self._sync = ticket

    @property
    def token(self) -> int:
        return self._sync.token

    @property
    def key(self) -> str:
        return self._sync.key

    async def complete(self, response: bytes) -> None:
        await _in_executor(self._sync.complete, response)

    async def abandon(self) -> None:
        await _in_executor(self._sync.abandon)

    async def extend(self) -> None:
        await _in_executor(self._sync.extend)


class AsyncIdempotency:
    """:class:`Idempotency` for asyncio: ``begin`` and ``run`` awaited; ``run`` takes a
    coroutine function or a plain one."""

    __slots__ = ("_sync",)

    def __init__(self, native: _polylock.NativeIdempotency) -> None:
        self._sync = Idempotency(native)

    @property
    def namespace(self) -> str:
        return self._sync.namespace

    async def begin(self, key: str, fingerprint: Any = None) -> Outcome:
        outcome = await _in_executor(self._sync.begin, key, fingerprint)
        if isinstance(outcome, Acquired):
            return Acquired(AsyncTicket(outcome.ticket))  # type: ignore[arg-type]
        return outcome

    async def run(
        self, key: str, fingerprint: Any, fn: Callable[..., Any], *args: Any, wait: Optional[float] = None, **kwargs: Any
    ) -> Any:
        """As :meth:`Idempotency.run`; ``fn`` may be a coroutine function."""
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        poll = 0.02
        while True:
            outcome = await self.begin(key, fingerprint)
            if isinstance(outcome, Acquired):
                ticket: AsyncTicket = outcome.ticket  # type: ignore[assignment]
                try:
                    result = fn(*args, **kwargs)
                    if inspect.isawaitable(result):
                        result = await result
                except BaseException:
                    try:
                        await ticket.abandon()
                    except Exception:
                        pass
                    raise
                await ticket.complete(encode_response(result))
                return result
            if isinstance(outcome, Replay):
                return decode_response(outcome.response)
            if isinstance(outcome, Mismatch):
                raise _mismatch(key)
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is None or remaining <= 0:
                raise _in_progress(key, outcome.retry_after)
            await asyncio.sleep(max(0.001, min(poll, outcome.retry_after, remaining)))
            poll = min(poll * 2, 1.0)


def _key_and_fingerprint(
    fn: Callable[..., Any],
    key: Union[str, Callable[..., str]],
    fingerprint: Optional[Callable[..., Any]],
    args: Tuple[Any, ...],
    kwargs: dict,
) -> Tuple[str, Any]:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    if callable(key):
        the_key = key(*args, **kwargs)
    else:
        if key not in bound.arguments:
            raise TypeError(f"@idempotent(key={key!r}): {fn.__qualname__} has no argument {key!r}")
        the_key = str(bound.arguments[key])
    payload = fingerprint(*args, **kwargs) if fingerprint is not None else dict(bound.arguments)
    return the_key, payload


def idempotent_decorator(
    idempotency: Union[Idempotency, AsyncIdempotency],
    key: Union[str, Callable[..., str]],
    fingerprint: Optional[Callable[..., Any]],
    wait: Optional[float],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator behind ``client.idempotent``: the key is the named argument's value (or
    ``key(*args, **kwargs)``); the fingerprint, all the arguments (or
    ``fingerprint(*args, **kwargs)``)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if isinstance(idempotency, AsyncIdempotency):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                the_key, payload = _key_and_fingerprint(fn, key, fingerprint, args, kwargs)
                return await idempotency.run(the_key, payload, fn, *args, wait=wait, **kwargs)

            return run_async

        @functools.wraps(fn)
        def run_sync(*args: Any, **kwargs: Any) -> Any:
            the_key, payload = _key_and_fingerprint(fn, key, fingerprint, args, kwargs)
            return idempotency.run(the_key, payload, fn, *args, wait=wait, **kwargs)

        return run_sync

    return decorate


# Client methods, for polylock.Client and polylock.aio.Client (installed by install()).


def _value(self: Any, name: str) -> Value:
    """A handle on the versioned value ``name`` (compare-and-set, fenced writes).
    UnsupportedError if the backend has no versioned values."""
    return Value(_polylock.NativeValue.open(self._native, name))


def _idempotency(
    self: Any, namespace: str, retention: float = DEFAULT_RETENTION, in_progress_ttl: float = DEFAULT_IN_PROGRESS_TTL
) -> Idempotency:
    """Idempotency keys of ``namespace``: responses replayed for ``retention`` seconds; an
    attempt that neither completes nor extends is taken over after ``in_progress_ttl``."""
    return Idempotency(_polylock.NativeIdempotency.open(self._native, namespace, retention, in_progress_ttl))


def _idempotent(
    self: Any,
    key: Union[str, Callable[..., str]],
    namespace: str = "idempotent",
    fingerprint: Optional[Callable[..., Any]] = None,
    wait: Optional[float] = None,
    retention: float = DEFAULT_RETENTION,
    in_progress_ttl: float = DEFAULT_IN_PROGRESS_TTL,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function so that it runs once per key (see :meth:`Idempotency.run`)."""
    return idempotent_decorator(self.idempotency(namespace, retention, in_progress_ttl), key, fingerprint, wait)


def _aio_value(self: Any, name: str) -> AsyncValue:
    """A handle on the versioned value ``name``, for asyncio."""
    return AsyncValue(_polylock.NativeValue.open(self._native, name))


def _aio_idempotency(
    self: Any, namespace: str, retention: float = DEFAULT_RETENTION, in_progress_ttl: float = DEFAULT_IN_PROGRESS_TTL
) -> AsyncIdempotency:
    """Idempotency keys of ``namespace``, for asyncio."""
    return AsyncIdempotency(_polylock.NativeIdempotency.open(self._native, namespace, retention, in_progress_ttl))


def install(sync_client: type, aio_client: type) -> None:
    """Give both Client classes ``value``, ``idempotency`` and ``idempotent``."""
    sync_client.value = _value  # type: ignore[attr-defined]
    sync_client.idempotency = _idempotency  # type: ignore[attr-defined]
    sync_client.idempotent = _idempotent  # type: ignore[attr-defined]
    aio_client.value = _aio_value  # type: ignore[attr-defined]
    aio_client.idempotency = _aio_idempotency  # type: ignore[attr-defined]
    aio_client.idempotent = _idempotent  # type: ignore[attr-defined]


__all__ = [
    "Value",
    "VersionedValue",
    "Idempotency",
    "Ticket",
    "Acquired",
    "Replay",
    "InProgress",
    "Mismatch",
    "AsyncValue",
    "ValueWatch",
    "AsyncValueWatch",
    "AsyncIdempotency",
    "AsyncTicket",
    "fingerprint_of",
]
