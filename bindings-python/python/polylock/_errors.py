"""The exceptions of polylock: one base class, one subclass per core error kind.

Each class also derives from the builtin exception a Python user would catch for that
situation (``TimeoutError``, ``ConnectionError``, ``ValueError``, ``RuntimeError``), so
code written against the standard library keeps working. ``kind`` is the core's stable
name for the error (``"NOT_OWNER"``, ...) and ``code`` its stable number, both class
attributes. The numbers are not written here: they are read from the core's one table of
kinds (``ErrorKind::ALL``) when this module is imported, by each class's ``kind``.
"""

from __future__ import annotations

from . import _polylock


class PolylockError(Exception):
    """Base class of every error polylock raises."""

    kind: str = "UNKNOWN"
    #: The kind's number in the core's table (``ErrorKind::ALL``); 0 for no kind.
    code: int = 0


class InvalidArgumentError(PolylockError, ValueError):
    """An unusable argument: an empty name, a zero lease, an unknown URL scheme."""

    kind = "INVALID_ARGUMENT"


class LockTimeoutError(PolylockError, TimeoutError):
    """The wait for a lock ended before the lock was free."""

    kind = "TIMEOUT"


class NotOwnerError(PolylockError, RuntimeError):
    """A release by someone who does not hold the lock (RuntimeError, as threading.RLock raises)."""

    kind = "NOT_OWNER"


class LockLostError(PolylockError):
    """The lock was held, but the backend no longer holds it for this owner."""

    kind = "LOST"


class PolylockConnectionError(PolylockError, ConnectionError):
    """The backend cannot be reached or opened, refused the credentials, or the client is closed."""

    kind = "CONNECTION"


class BackendError(PolylockError):
    """The backend answered with something unexpected, or a local resource failed."""

    kind = "BACKEND"


class UnsupportedError(PolylockError):
    """The backend does not offer this primitive or kind of lock (say, a read-write lock on a
    backend without them). Raised when the handle is made, before anything is written."""

    kind = "UNSUPPORTED"


class PolylockCancelledError(PolylockError):
    """The caller gave up on the call before it finished; nothing it was taking is held.
    (asyncio code sees ``asyncio.CancelledError`` itself, as usual.)"""

    kind = "CANCELLED"


class InternalError(PolylockError):
    """A bug inside polylock, caught at the language boundary; the message says where."""

    kind = "INTERNAL"


class ConflictError(PolylockError):
    """A compare-and-set found another version than the one expected (someone else wrote
    first), or a value to create already exists."""

    kind = "CONFLICT"
    #: The value as it is now (``None``: there is none), and its version.
    current_value: "bytes | None" = None
    current_version: "int | None" = None


class FencedError(PolylockError):
    """A fenced write carried a token lower than one the value has already accepted: the
    writer's lock was taken over while it was paused."""

    kind = "FENCED"
    #: The highest token the value has accepted.
    winning_token: "int | None" = None


class ExhaustedError(PolylockError):
    """IDs are used up until the next range is loaded or the worker lease is renewed;
    retrying later can succeed."""

    kind = "EXHAUSTED"
    #: Seconds after which a retry can succeed, when known.
    retry_after: "float | None" = None


class InProgressError(PolylockError):
    """Another attempt is working on this idempotency key now; retry later (HTTP 409)."""

    kind = "IN_PROGRESS"
    #: Seconds after which the other attempt's claim runs out, when known.
    retry_after: "float | None" = None


class MismatchError(PolylockError, ValueError):
    """The idempotency key was used before with another payload (HTTP 422)."""

    kind = "MISMATCH"


def _number_the_classes() -> None:
    """Give every class its kind's number, from the core's table (a kind without a class
    is caught by the test suite, which compares the two)."""
    numbers = dict(_polylock.error_kinds())
    for value in list(globals().values()):
        if isinstance(value, type) and issubclass(value, PolylockError) and value.kind in numbers:
            value.code = numbers[value.kind]


_number_the_classes()

__all__ = [
    "PolylockError",
    "InvalidArgumentError",
    "LockTimeoutError",
    "NotOwnerError",
    "LockLostError",
    "PolylockConnectionError",
    "BackendError",
    "UnsupportedError",
    "PolylockCancelledError",
    "InternalError",
    "ConflictError",
    "FencedError",
    "ExhaustedError",
    "InProgressError",
    "MismatchError",
]
