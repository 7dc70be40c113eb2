"""``polylock.locked``: run a function (or a coroutine function) holding a lock.

    @polylock.locked("orders:{order_id}", client="redis://127.0.0.1:6379", timeout=10)
    def ship(order_id, carrier="ups"):
        ...

The lock's name is a ``str.format`` template filled from the call's arguments, by parameter
name, after defaults are applied: ``ship(42)``, ``ship(order_id=42)`` and
``ship(42, "ups")`` all lock ``orders:42``. Attribute and index access work as in
``str.format`` (``"orders:{order.id}"``); ``{{``/``}}`` are literal braces; a name without
fields is one lock for every call. Positional fields (``{}``, ``{0}``) and fields naming no
parameter are refused when the function is decorated (TypeError), not at the first call.
"""

from __future__ import annotations

import functools
import inspect
import os
import string
import threading
from typing import Any, Callable, Dict, Optional, Union

from . import aio
from ._sync import Client, connect

#: ``timeout`` not given: wait as long as it takes, or, with ``skip=True``, try once.
_UNSET: Any = object()

ClientSpec = Union[None, str, Client, aio.Client]


def name_fields(template: str) -> "list[str]":
    """The root names of a template's fields (``{order.id}`` -> ``order``); ValueError for a
    template ``str.format`` cannot read, TypeError for positional fields."""
    roots = []
    for _, field, _, _ in string.Formatter().parse(template):
        if field is None:
            continue
        root = field.split(".", 1)[0].split("[", 1)[0]
        if root == "" or root.isdigit():
            raise TypeError(
                f"lock name {template!r}: positional field {{{field}}}; name the parameter instead (e.g. {{order_id}})"
            )
        roots.append(root)
    return roots


class NameTemplate:
    """A lock name template bound to one function's signature (see the module's doc)."""

    __slots__ = ("template", "signature", "constant")

    def __init__(self, template: str, fn: Callable[..., Any], what: str = "lock name") -> None:
        if not isinstance(template, str) or not template:
            raise TypeError(f"{what} must be a non-empty str, got {template!r}")
        self.template = template
        self.signature = inspect.signature(fn)
        roots = name_fields(template)
        params = self.signature.parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for root in roots:
            if root not in params and not takes_any:
                raise TypeError(
                    f"{what} {template!r}: {getattr(fn, '__qualname__', fn)!r} has no parameter {root!r}"
                    f" (its parameters: {', '.join(params) or 'none'})"
                )
        # Without fields the name is the template itself, braces unescaped.
        self.constant = template.format() if not roots else None

    def render(self, args: "tuple[Any, ...]", kwargs: Dict[str, Any]) -> str:
        if self.constant is not None:
            return self.constant
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        for param in self.signature.parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                values.update(values.pop(param.name, {}))
        return self.template.format(**values)


class ClientSource:
    """The client a decorator or middleware uses: one given, or one connected to a URL on
    first use, once per process (a client connected before ``fork()`` is refused in the
    child, so a forked worker connects its own)."""

    __slots__ = ("_given", "_url", "_pid", "_client", "_guard")

    def __init__(self, client: ClientSpec) -> None:
        if client is not None and not isinstance(client, (str, Client, aio.Client)):
            raise TypeError(
                f"client must be a polylock.Client, a polylock.aio.Client, a URL or None, got {type(client).__name__}"
            )
        self._given = client if isinstance(client, (Client, aio.Client)) else None
        self._url: Optional[str] = client if isinstance(client, str) else None
        self._pid = -1
        self._client: Optional[Client] = None
        self._guard = threading.Lock()

    def sync(self) -> Client:
        """A blocking client (the given one, or one over the same connection)."""
        if self._given is not None:
            return self._given if isinstance(self._given, Client) else Client(self._given._native)
        with self._guard:
            if self._client is None or self._pid != os.getpid():
                self._client = connect(self._url)  # None: $POLYLOCK_URL, else the default
                self._pid = os.getpid()
            return self._client

    def aio(self) -> aio.Client:
        """An asyncio client over the same connection as :meth:`sync` (the first connect
        blocks briefly; every later call does not)."""
        if isinstance(self._given, aio.Client):
            return self._given
        return aio.Client(self.sync()._native)


def _check_timeout(timeout: Any) -> None:
    if timeout is _UNSET or timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ValueError(f"timeout must be seconds >= 0 or None (wait as long as it takes), got {timeout!r}")


def locked(
    name: str,
    *,
    client: ClientSpec = None,
    timeout: Optional[float] = _UNSET,
    lease: Optional[float] = None,
    skip: bool = False,
    kind: str = "reentrant",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function or a coroutine function so that each call runs holding the lock
    ``name`` (a template of the call's arguments: see the module's doc).

    ``client``: a :class:`polylock.Client` or :class:`polylock.aio.Client`, a URL (connected
    on the first call, once per process), or None (``$POLYLOCK_URL``, else the default URL).
    ``timeout``: seconds to wait for the lock (default: as long as it takes; 0: try once);
    when it runs out the call raises :class:`polylock.LockTimeoutError` without running, or,
    with ``skip=True``, returns None without running (as ShedLock skips a job another node
    runs; ``skip=True`` without a ``timeout`` tries once). ``lease``: hold for at most that
    many seconds (default: a watchdog keeps the lock until the call returns). ``kind``: the
    lock kind (``reentrant`` on every backend). The owner is the calling thread (a task for
    coroutine functions), so a decorated function calling itself re-enters its lock. If
    the hold was lost while the function ran (its ``lease`` ran out, the server lost it),
    the call raises :class:`polylock.LockLostError` after the function returned: its work
    was not protected to the end.
    """
    _check_timeout(timeout)
    source = ClientSource(client)
    wait = (0.0 if skip else None) if timeout is _UNSET else timeout

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        template = NameTemplate(name, fn)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                lock = source.aio().lock(template.render(args, kwargs), kind)
                if skip:
                    if not await lock.acquire(timeout=wait, lease=lease):
                        return None
                else:
                    await lock.hold(timeout=wait, lease=lease)
                try:
                    result = await fn(*args, **kwargs)
                except BaseException:
                    try:
                        await lock.release()
                    except Exception:  # the function's own exception is the one to see
                        pass
                    raise
                await lock.release()  # LockLostError if the lease ran out during the call
                return result

            return run_async

        @functools.wraps(fn)
        def run_sync(*args: Any, **kwargs: Any) -> Any:
            lock = source.sync().lock(template.render(args, kwargs), kind)
            if skip:
                if not lock.acquire(timeout=wait, lease=lease):
                    return None
            else:
                lock.hold(timeout=wait, lease=lease)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                try:
                    lock.release()
                except Exception:  # the function's own exception is the one to see
                    pass
                raise
            lock.release()  # LockLostError if the lease ran out during the call
            return result

        return run_sync

    return decorate


__all__ = ["locked"]
