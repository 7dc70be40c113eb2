"""Conformance driver of the `python` surface: polylock's blocking API (tests/conformance/
PROTOCOL.md). Every request runs on the main thread, one at a time, so the owner of every
lock hold is this driver's main thread (the sync API's owner is the calling thread)."""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import polylock

from protocol import (
    answer_of,
    begin_answer,
    error_table,
    list_answer,
    response_json,
    ids_ops,
    kwargs,
    not_offered,
    parse,
    seconds,
    status_answer,
    text,
    versioned_json,
    write,
)

objects: Dict[str, Any] = {}  # label -> object (clients, handles, guards, ...)
rw_locks: Dict[tuple, polylock.RWLock] = {}  # (client label, name) -> the one RWLock of both sides
multi_names: Dict[str, List[str]] = {}  # multi-lock label -> names in the request's order
observers: Dict[str, "queue.Queue[Any]"] = {}  # election label -> leaders seen by its observer
watches: Dict[str, "queue.Queue[Any]"] = {}  # value label -> states seen by its watch


def reset(_: Dict[str, Any] = {}) -> None:
    # Closing a client gives back its holds, permits, worker ids and ends its observers.
    for obj in list(objects.values()):
        if isinstance(obj, polylock.Client):
            try:
                obj.close()
            except Exception as error:  # reset ignores errors
                print(f"reset: {error!r}", file=sys.stderr)
    objects.clear()
    rw_locks.clear()
    multi_names.clear()
    observers.clear()
    watches.clear()


def save(r: Dict[str, Any], obj: Any) -> Any:
    if "as" in r:  # a request may leave its result unnamed
        objects[r["as"]] = obj
    return obj


def connect(r: Dict[str, Any]) -> None:
    save(r, polylock.connect(r["url"]))


def lock(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].lock(r["name"], **kwargs(kind=r.get("kind"))))


def rw_lock(r: Dict[str, Any]) -> None:
    key = (r["client"], r["name"])
    if key not in rw_locks:
        rw_locks[key] = objects[r["client"]].rw_lock(r["name"])
    save(r, getattr(rw_locks[key], r["side"]))


def semaphore(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].semaphore(r["name"], r["permits"]))


def multi_lock(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].multi_lock(r["names"]))
    multi_names[r["as"]] = list(r["names"])


def token_of(guard: Any, label: str) -> Any:
    if isinstance(guard, polylock.Permit):
        return guard.fencing_token
    if isinstance(guard, polylock.MultiLock):
        tokens = guard.fencing_tokens
        return [tokens[name] for name in multi_names[label]]
    return guard.fencing_token


def taken(r: Dict[str, Any], handle: Any, permit: Optional[polylock.Permit]) -> Dict[str, Any]:
    """The answer to an acquisition that succeeded, its guard saved under `as`."""
    if permit is not None:
        return {"token": save(r, permit).fencing_token}
    # A lock's (or multi-lock's) hold is the handle itself, owned by this thread.
    save(r, handle)
    if isinstance(handle, polylock.MultiLock) and "as" in r:
        multi_names[r["as"]] = multi_names[r["handle"]]
    return {"token": token_of(handle, r["handle"])}


def try_acquire(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    # The try form: acquire(timeout=) answers False (a permit: None) when the wait runs out.
    handle = objects[r["handle"]]
    args = kwargs(timeout=seconds(r, "wait_ms"), lease=seconds(r, "lease_ms"))
    if isinstance(handle, polylock.Semaphore):
        permit = handle.acquire(**args)
        return None if permit is None else taken(r, handle, permit)
    if not handle.acquire(**args):
        return None
    return taken(r, handle, None)


def acquire(r: Dict[str, Any]) -> Dict[str, Any]:
    # The waiting form: hold(timeout=) raises LockTimeoutError when the wait runs out.
    handle = objects[r["handle"]]
    held = handle.hold(**kwargs(timeout=seconds(r, "wait_ms"), lease=seconds(r, "lease_ms")))
    return taken(r, handle, held if isinstance(handle, polylock.Semaphore) else None)


def release_handle(r: Dict[str, Any]) -> None:
    handle = objects[r["handle"]]
    if isinstance(handle, polylock.Semaphore):
        not_offered("Semaphore.release takes a permit id; a semaphore handle has no release of its own")
    handle.release()


def is_lost(r: Dict[str, Any]) -> bool:
    guard = objects[r["guard"]]
    if isinstance(guard, (polylock.Permit, polylock.MultiLock)):
        not_offered(f"a {type(guard).__name__} has no is_lost()")
    return guard.is_lost()


def wait_lost(r: Dict[str, Any]) -> bool:
    guard = objects[r["guard"]]
    if isinstance(guard, (polylock.Permit, polylock.MultiLock)):
        not_offered(f"a {type(guard).__name__} has no lost signal nor is_lost()")
    # The blocking API has no lost signal (no callback, event or future): PROTOCOL.md allows a
    # poll of is_lost() where the surface has no signal.
    deadline = time.monotonic() + seconds(r, "wait_ms")
    while True:
        if guard.is_lost():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def hold_count(r: Dict[str, Any]) -> int:
    handle = objects[r["handle"]]
    if not isinstance(handle, polylock.Lock):
        not_offered(f"a {type(handle).__name__} has no hold_count")
    return handle.hold_count


def election(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].election(r["name"]))


def leader_json(leader: Optional[polylock.Leader]) -> Optional[Dict[str, Any]]:
    return None if leader is None else {"value": text(leader.value), "term": leader.term}


def campaign(r: Dict[str, Any]) -> Dict[str, int]:
    leadership = objects[r["election"]].campaign(r["value"], **kwargs(timeout=seconds(r, "wait_ms")))
    return {"term": save(r, leadership).term}


def try_campaign(r: Dict[str, Any]) -> Optional[Dict[str, int]]:
    leadership = objects[r["election"]].try_campaign(r["value"], **kwargs(timeout=seconds(r, "wait_ms")))
    return None if leadership is None else {"term": save(r, leadership).term}


def is_locked(r: Dict[str, Any]) -> bool:
    handle = objects[r["handle"]]
    if not isinstance(handle, polylock.Lock):
        not_offered(f"a {type(handle).__name__} has no is_locked()")
    return handle.is_locked()


def latch_wait(r: Dict[str, Any]) -> bool:
    # The waiting form: await_zero returns once the count is zero, raises LockTimeoutError.
    objects[r["latch"]].await_zero(**kwargs(timeout=seconds(r, "wait_ms")))
    return True


def following(iterator: Any, name: str) -> "queue.Queue[Any]":
    """A blocking iterator without a timeout (Election.observe(), Value.watch()) iterated by a
    thread of its own, so that a request can wait for its next item with a bound."""
    seen: "queue.Queue[Any]" = queue.Queue()

    def follow() -> None:
        try:
            for item in iterator:
                seen.put(("item", item))
        except BaseException as error:
            seen.put(("error", error))

    threading.Thread(target=follow, name=name, daemon=True).start()
    return seen


def next_within(seen: "queue.Queue[Any]", r: Dict[str, Any], as_json: Any) -> Any:
    try:
        what, item = seen.get(timeout=seconds(r, "wait_ms"))
    except queue.Empty:
        return "no change"
    if what == "error":
        raise item
    return as_json(item)


def observe_next(r: Dict[str, Any]) -> Any:
    label = r["election"]
    if label not in observers:
        observers[label] = following(objects[label].observe(), f"observe {label}")
    return next_within(observers[label], r, leader_json)


def value_watch(r: Dict[str, Any]) -> Any:
    label = r["value"]
    if label not in watches:
        watches[label] = following(objects[label].watch(), f"watch {label}")
    return next_within(watches[label], r, versioned_json)


def latch(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].latch(r["name"]))


def value(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].value(r["name"]))


def value_get(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    got = objects[r["value"]].get()
    return None if got is None else {"value": text(got[0]), "version": got[1]}


def idempotency(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].idempotency(r["namespace"]))


def idem_run(r: Dict[str, Any]) -> Any:
    response = r["response"]
    result = objects[r["idempotency"]].run(
        r["key"], r["payload"], lambda: response, **kwargs(wait=seconds(r, "wait_ms"))
    )
    return response_json(result)


def segment(r: Dict[str, Any]) -> None:
    save(r, objects[r["client"]].segment(r["tag"], **kwargs(step=r.get("step"))))


def snowflake(r: Dict[str, Any]) -> Dict[str, Any]:
    generator = save(r, objects[r["client"]].snowflake(**kwargs(worker_id=r.get("worker_id"))))
    return {"worker_id": generator.worker_id}


OPS = {
    "reset": reset,
    "connect": connect,
    "close": lambda r: objects[r["client"]].close(),
    "error_table": lambda r: error_table(),
    "lock": lock,
    "rw_lock": rw_lock,
    "semaphore": semaphore,
    "multi_lock": multi_lock,
    "acquire": acquire,
    "try_acquire": try_acquire,
    "release": lambda r: objects[r["guard"]].release(),
    "release_handle": release_handle,
    "token": lambda r: token_of(objects[r["guard"]], r["guard"]),
    "is_lost": is_lost,
    "wait_lost": wait_lost,
    "hold_count": hold_count,
    "is_locked": is_locked,
    "status": lambda r: status_answer(objects[r["client"]].status(r["name"])),
    "list": lambda r: list_answer(objects[r["client"]].list(r["prefix"])),
    "force_unlock": lambda r: objects[r["client"]].force_unlock(r["name"]),
    "election": election,
    "campaign": campaign,
    "try_campaign": try_campaign,
    "leader": lambda r: leader_json(objects[r["election"]].leader()),
    "resign": lambda r: objects[r["leadership"]].resign(),
    "is_leader": lambda r: objects[r["leadership"]].is_leader,
    "observe_next": observe_next,
    "latch": latch,
    "latch_set": lambda r: objects[r["latch"]].try_set_count(r["count"]),
    "count_down": lambda r: objects[r["latch"]].count_down(),
    "latch_count": lambda r: objects[r["latch"]].count,
    "latch_wait": latch_wait,
    "value": value,
    "value_get": value_get,
    "value_create": lambda r: objects[r["value"]].create(r["data"].encode()),
    "value_cas": lambda r: objects[r["value"]].compare_and_set(r["version"], r["data"].encode()),
    "value_delete": lambda r: objects[r["value"]].delete(r["version"]),
    "value_write_fenced": lambda r: objects[r["value"]].write_fenced(r["token"], r["data"].encode()),
    "value_watch": value_watch,
    "idempotency": idempotency,
    "idem_begin": lambda r: begin_answer(objects[r["idempotency"]].begin(r["key"], r["payload"]), lambda t: save(r, t)),
    "idem_complete": lambda r: objects[r["ticket"]].complete(r["response"].encode()),
    "idem_abandon": lambda r: objects[r["ticket"]].abandon(),
    "idem_run": idem_run,
    "segment": segment,
    "next_id": lambda r: objects[r["segment"]].next_id(),
    "next_ids": lambda r: objects[r["segment"]].next_ids(r["count"]),
    "snowflake": snowflake,
    "snowflake_next": lambda r: objects[r["snowflake"]].next_id(),
    "snowflake_close": lambda r: objects[r["snowflake"]].close(),
    **ids_ops(),
}


def main() -> None:
    write({"ready": "python"})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = parse(line)
        op = OPS.get(request.get("op"))
        try:
            if op is None:
                not_offered(f"unknown op {request.get('op')!r}")
            outcome, error = op(request), None
        except Exception as raised:
            outcome, error = None, raised
        write(answer_of(request, outcome, error))
    reset()


if __name__ == "__main__":
    main()
