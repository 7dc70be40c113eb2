"""What the python and python-asyncio drivers share: the JSON-lines framing of
tests/conformance/PROTOCOL.md, durations, and errors read from polylock's exception classes.
Nothing here decides an outcome: it only writes what the surface did."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional

import polylock


class NotOffered(Exception):
    """The surface has no way to express the request; the argument says why."""


def not_offered(why: str) -> Any:
    raise NotOffered(why)


def seconds(request: Dict[str, Any], key: str) -> Optional[float]:
    """A protocol duration (milliseconds, or "NaN"/"inf"/"-inf") as Python's seconds (float).
    Absent: None, so the caller omits the argument. The number is translated, never its
    meaning: -1 ms is -0.001 s (and -1000 ms is -1.0 s, which threading-style APIs read as
    "no bound": that is the surface's convention, reported as it is)."""
    if key not in request or request[key] is None:
        return None
    raw = request[key]
    if isinstance(raw, str):
        return float({"NaN": "nan", "inf": "inf", "-inf": "-inf"}[raw]) / 1000.0
    return raw / 1000.0


def kwargs(**given: Any) -> Dict[str, Any]:
    """Keyword arguments with the absent (None) ones left out: the surface's defaults apply."""
    return {key: value for key, value in given.items() if value is not None}


def text(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else bytes(data).decode("utf-8")


def error_answer(request_id: Any, error: BaseException) -> Dict[str, Any]:
    """A raised polylock error as the protocol's error answer (kind from the class, not the
    message); anything else is the driver's (DRIVER)."""
    if isinstance(error, OutcomeAsError):
        kind = error.kind
    elif isinstance(error, polylock.PolylockError):
        kind = type(error).kind
    else:
        return {"id": request_id, "ok": False, "error": "DRIVER", "message": f"{type(error).__name__}: {error}"}
    answer: Dict[str, Any] = {"id": request_id, "ok": False, "error": kind, "message": str(error)}
    details: Dict[str, Any] = {}
    if isinstance(error, polylock.ConflictError):
        details["current_version"] = error.current_version
        details["current_value"] = text(error.current_value)
    if isinstance(error, polylock.FencedError) and error.winning_token is not None:
        details["token"] = error.winning_token
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        details["retry_after_ms"] = retry_after * 1000.0
    if details:
        answer["details"] = details
    return answer


def answer_of(request: Dict[str, Any], outcome: Any, error: Optional[BaseException]) -> Dict[str, Any]:
    request_id = request.get("id")
    if error is None:
        return {"id": request_id, "ok": True, "value": outcome}
    if isinstance(error, NotOffered):
        return {"id": request_id, "ok": False, "not_offered": str(error)}
    if not isinstance(error, (polylock.PolylockError, OutcomeAsError)):
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    return error_answer(request_id, error)


def write(answer: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer, allow_nan=False) + "\n")
    sys.stdout.flush()


def parse(line: str) -> Dict[str, Any]:
    return json.loads(line)


# IDs need no backend and no owner: the same module functions on both surfaces.
def ids_ops() -> Dict[str, Any]:
    def snowflake_parse(r: Dict[str, Any]) -> Dict[str, int]:
        parts = polylock.parse_snowflake(r["of"], **kwargs(epoch_ms=r.get("epoch_ms")))
        return {"timestamp_ms": parts.timestamp_ms, "worker_id": parts.worker, "sequence": parts.sequence}

    return {
        "uuid7": lambda r: str(polylock.uuid7()),
        "ulid": lambda r: polylock.ulid(),
        "uuid7_timestamp": lambda r: polylock.uuid7_timestamp_ms(r["of"]),
        "ulid_timestamp": lambda r: polylock.ulid_timestamp_ms(r["of"]),
        "ulid_to_uuid": lambda r: str(polylock.ulid_to_uuid(r["of"])),
        "uuid_to_ulid": lambda r: polylock.uuid_to_ulid(r["of"]),
        "snowflake_parse": snowflake_parse,
    }


def error_table() -> List[List[Any]]:
    """The exception classes' (kind, code), in number order: read from the classes' own
    attributes, so a class without its number, or a kind without its class, shows."""
    classes = [
        cls
        for cls in vars(polylock).values()
        if isinstance(cls, type) and issubclass(cls, polylock.PolylockError) and cls is not polylock.PolylockError
    ]
    return [[cls.kind, cls.code] for cls in sorted(classes, key=lambda cls: cls.code)]


def versioned_json(state: Any) -> Optional[Dict[str, Any]]:
    """A VersionedValue (or None: no value) as PROTOCOL.md's {"value", "version"}."""
    return None if state is None else {"value": text(state.value), "version": state.version}


def status_answer(status: Dict[str, Any]) -> Dict[str, Any]:
    """Client.status's dict as PROTOCOL.md's status answer (a mutex has one holder at most)."""
    return {"held": status["held"], "holders": int(status["held"])}


def list_answer(entries: List[Dict[str, Any]]) -> List[str]:
    """Client.list's dicts as PROTOCOL.md's list answer: the names held, sorted."""
    return sorted(entry["name"] for entry in entries if entry["held"])


class OutcomeAsError(Exception):
    """begin's InProgress / Mismatch outcomes, which PROTOCOL.md reports as errors of those
    kinds (the core's begin returns them as outcomes too; the surface's run raises them)."""

    def __init__(self, kind: str, message: str, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


def begin_answer(outcome: Any, save_ticket: Callable[[Any], Any]) -> Dict[str, Any]:
    """Idempotency.begin's outcome (sync or asyncio: the same four classes)."""
    if isinstance(outcome, polylock.Acquired):
        return {"acquired": {"token": save_ticket(outcome.ticket).token}}
    if isinstance(outcome, polylock.Replay):
        return {"replay": text(outcome.response)}
    if isinstance(outcome, polylock.InProgress):
        raise OutcomeAsError("IN_PROGRESS", f"begin returned {outcome!r}", outcome.retry_after)
    if isinstance(outcome, polylock.Mismatch):
        raise OutcomeAsError("MISMATCH", f"begin returned {outcome!r}")
    raise TypeError(f"begin returned {outcome!r}")


def response_json(result: Any) -> Any:
    """What run returned (bytes as stored, or the JSON-decoded response) as a JSON value."""
    return text(result) if isinstance(result, (bytes, bytearray, memoryview)) else result
