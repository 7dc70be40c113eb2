"""The core's events in Python's ``logging``, and its metrics as dicts.

Records go to the logger ``polylock`` (children named after the Rust module that logged,
such as ``polylock.engine.acquire``, all propagating to ``polylock``). Which records reach
Python is set here (:func:`set_log_level`; at import from ``POLYLOCK_LOG`` or
``DEBUG=polylock``, else WARNING); the ``polylock`` logger's own level, filters and
handlers then apply as for any library's logger.
"""

from __future__ import annotations

import atexit
import json
import logging
import warnings
from typing import Any, Dict, Optional, Union

from . import _polylock
from ._errors import InvalidArgumentError

# polylock's levels and the `logging` levels of their records (trace has no name in
# `logging`: its records are level 5, named TRACE on the record).
_PYTHON_LEVELS = (("trace", 5), ("debug", logging.DEBUG), ("info", logging.INFO), ("warn", logging.WARNING), ("error", logging.ERROR))

def _emit(levelno: int, logger_name: str, target: str, line: str, message: str, fields: Dict[str, str]) -> None:
    """One record of the core, handed over by the native module on the thread that logged.
    ``logger_name`` is the core's (``polylock.engine.acquire``, ``polylock.deps.h2.proto``)."""
    logger = logging.getLogger(logger_name)
    if not logger.isEnabledFor(levelno):
        return
    extra = {
        "polylock": fields,
        "polylock_op": fields.get("op"),
        "polylock_name": fields.get("name"),
        "polylock_message": message,
        "polylock_target": target,
    }
    record = logger.makeRecord(logger.name, levelno, target, 0, line, (), None, extra=extra)
    if levelno < logging.DEBUG:
        record.levelname = "TRACE"
    logger.handle(record)


def set_log_level(level: Union[str, int]) -> None:
    """Which of the core's records reach ``logging``: a name (``off``, ``error``, ``warn`` or
    ``warning``, ``info``, ``debug``, ``trace``, any case) or a ``logging`` level
    (``logging.DEBUG``...: records at that level and above; above ERROR, none).
    InvalidArgumentError for anything else. The ``polylock`` logger's own level still applies."""
    if isinstance(level, str):
        _polylock.set_log_level(level)
        return
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        raise InvalidArgumentError(
            f"a log level is a name (off, error, warn, info, debug, trace) or a logging level >= 0, got {level!r}"
        )
    name = next((name for name, python_level in _PYTHON_LEVELS if level <= python_level), "off")
    _polylock.set_log_level(name)


def log_level() -> str:
    """The level the core's records are handed to ``logging`` at: ``off``, ``error``,
    ``warn``, ``info``, ``debug`` or ``trace``."""
    return _polylock.log_level()


def metrics() -> Dict[str, Any]:
    """The process's counts and histograms, every client's: ``{"buckets_le_seconds": [...],
    "series": [{"backend", "kind", "acquires": {...}, "acquire_wait": {...}, ...}],
    "backends": [{"backend", "connects", ...}]}`` (the README's "Operating polylock" lists
    the fields). A histogram's ``buckets`` counts per bucket, not cumulatively."""
    return json.loads(_polylock.metrics_json())


def prometheus_text() -> str:
    """The process's metrics in Prometheus' text exposition format, to serve on /metrics."""
    return _polylock.prometheus_text()


def set_metrics_enabled(enabled: bool) -> None:
    """Count (True, the default) or stop counting (False) from now on."""
    _polylock.set_metrics_enabled(bool(enabled))


def metrics_enabled() -> bool:
    return _polylock.metrics_enabled()


def client_metrics(native: _polylock.NativeClient) -> Dict[str, Any]:
    return json.loads(native.metrics_json())


def _route_at_import() -> None:
    # POLYLOCK_LOG=<level> or DEBUG=polylock. A value that is no level is one warning and the
    # default level, as in every binding: a misspelt variable must not stop an import.
    asked: Optional[str]
    try:
        asked = _polylock.log_level_from_env()
    except InvalidArgumentError as err:
        warnings.warn("polylock: %s; logs stay at the default level (warn)" % err, RuntimeWarning, stacklevel=3)
        asked = None
    _polylock.route_logging(_emit, "warn" if asked is None else asked)
    # Before the interpreter finalizes, no runtime thread may call back into it. atexit
    # runs last-registered first, so this runs before logging's own shutdown.
    atexit.register(_polylock.unroute_logging)


_route_at_import()
