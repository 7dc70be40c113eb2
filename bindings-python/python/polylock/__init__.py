"""polylock: distributed locks and IDs over SQLite, Redis and more, from one Rust core.

    import polylock

    with polylock.connect("sqlite://locks.db") as client:
        lock = client.lock("orders:42")
        with lock:                      # owned by this thread, renewed by a watchdog
            write(data, token=lock.fencing_token)

    @polylock.locked("orders:{order_id}", timeout=10)   # one call per order at a time
    def ship(order_id): ...

See ``polylock.aio`` for asyncio, ``polylock.contrib`` for ASGI, Django and Celery.
"""

from __future__ import annotations

# The exceptions first: the native module looks them up when it raises.
from ._errors import (
    BackendError,
    ConflictError,
    ExhaustedError,
    FencedError,
    InProgressError,
    InternalError,
    InvalidArgumentError,
    LockLostError,
    LockTimeoutError,
    MismatchError,
    NotOwnerError,
    PolylockCancelledError,
    PolylockConnectionError,
    PolylockError,
    UnsupportedError,
)
from ._ids import (
    Snowflake,
    SnowflakeParts,
    parse_snowflake,
    ulid,
    ulid_batch,
    ulid_timestamp_ms,
    ulid_to_uuid,
    uuid7,
    uuid7_batch,
    uuid7_timestamp_ms,
    uuid_to_ulid,
)
from ._polylock import DEFAULT_URL, MAX_NAME_LEN, __version__

# Routes the core's records to `logging` (level from POLYLOCK_LOG / DEBUG=polylock, else
# WARNING): a POLYLOCK_LOG that names no level is one RuntimeWarning here, at import.
from ._observe import log_level, metrics, metrics_enabled, prometheus_text, set_log_level, set_metrics_enabled
from ._sync import Client, Hold, Lock, Permit, RWLock, Semaphore, connect
from . import aio
from ._values import Acquired, Idempotency, InProgress, Mismatch, Replay, Ticket, Value, ValueWatch, VersionedValue
from ._values import install as _install_values
from ._latch import Latch, MultiLock, RedLock, redlock
from ._latch import install as _install_latch
from ._election import Election, Leader, Leadership
from ._election import install as _install_election
from ._locked import locked

_install_values(Client, aio.Client)  # client.value(), .idempotency(), .idempotent()
_install_latch(Client, aio.Client)  # client.latch(), .multi_lock()
_install_election(Client, aio.Client)  # client.election()

__all__ = [
    "connect",
    "locked",
    "Client",
    "Lock",
    "Hold",
    "RWLock",
    "Semaphore",
    "Permit",
    "Value",
    "VersionedValue",
    "ValueWatch",
    "Election",
    "Leader",
    "Leadership",
    "Latch",
    "MultiLock",
    "RedLock",
    "redlock",
    "Idempotency",
    "Ticket",
    "Acquired",
    "Replay",
    "InProgress",
    "Mismatch",
    "aio",
    "Snowflake",
    "SnowflakeParts",
    "parse_snowflake",
    "ulid",
    "ulid_batch",
    "ulid_timestamp_ms",
    "ulid_to_uuid",
    "uuid7",
    "uuid7_batch",
    "uuid7_timestamp_ms",
    "uuid_to_ulid",
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
    "set_log_level",
    "log_level",
    "metrics",
    "prometheus_text",
    "set_metrics_enabled",
    "metrics_enabled",
    "DEFAULT_URL",
    "MAX_NAME_LEN",
    "__version__",
]
