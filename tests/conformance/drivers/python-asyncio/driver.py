"""Conformance driver of the `python-asyncio` surface: polylock.aio (tests/conformance/
PROTOCOL.md). One event loop; its one long-lived task (the one asyncio.run starts for main())
reads the requests and awaits each in turn, never in a task of its own, so that task is the
owner of every lock hold (polylock.aio's owner is the current task)."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from typing import Any, Dict, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import polylock.aio as aio  # noqa: E402

from protocol import (  # noqa: E402
    ADMIN,
    ERROR_TABLE,
    IS_LOCKED,
    WATCH,
    answer_of,
    begin_answer,
    ids_ops,
    kwargs,
    not_offered,
    parse,
    response_json,
    seconds,
    text,
    write,
)

NO_RAISING_ACQUIRE = (
    "polylock.aio's {what}.acquire resolves to {nothing} when the wait runs out; there is no acquire with a timeout that raises LockTimeoutError"
)
NO_ELECTION = "polylock.aio.Client has no election (the blocking Client has)"

objects: Dict[str, Any] = {}  # label -> object (clients, handles, guards, ...)
rw_locks: Dict[tuple, aio.RWLock] = {}  # (client label, name) -> the one RWLock of both sides


async def reset(_: Dict[str, Any] = {}) -> None:
    # Closing a client gives back its holds, permits and worker ids.
    for obj in list(objects.values()):
        if isinstance(obj, aio.Client):
            try:
                await obj.close()
            except Exception as error:  # reset ignores errors
                print(f"reset: {error!r}", file=sys.stderr)
    objects.clear()
    rw_locks.clear()


def save(r: Dict[str, Any], obj: Any) -> Any:
    if "as" in r:  # a request may leave its result unnamed
        objects[r["as"]] = obj
    return obj


async def connect(r: Dict[str, Any]) -> None:
    save(r, await aio.connect(r["url"]))


def rw_lock(r: Dict[str, Any]) -> None:
    key = (r["client"], r["name"])
    if key not in rw_locks:
        rw_locks[key] = objects[r["client"]].rw_lock(r["name"])
    save(r, getattr(rw_locks[key], r["side"]))


async def try_acquire(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    handle = objects[r["handle"]]
    args = kwargs(timeout=seconds(r, "wait_ms"), lease=seconds(r, "lease_ms"))
    if isinstance(handle, aio.Semaphore):
        permit = await handle.acquire(**args)
        if permit is None:
            return None
        return {"token": save(r, permit).fencing_token}
    if not await handle.acquire(**args):
        return None
    # A lock's hold is the handle itself, owned by this (the main) task.
    return {"token": save(r, handle).fencing_token}


async def acquire(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    # The waiting form. Without a wait it is the surface's `await acquire()` (what `async with`
    # runs), which has no timeout to end with. With a wait the only form resolves to
    # False/None when it runs out, so that request is not offered.
    if "wait_ms" in r:
        if isinstance(objects[r["handle"]], aio.Semaphore):
            not_offered(NO_RAISING_ACQUIRE.format(what="Semaphore", nothing="None"))
        not_offered(NO_RAISING_ACQUIRE.format(what="Lock", nothing="False"))
    taken = await try_acquire(r)
    if taken is None:
        raise RuntimeError("acquire() without a timeout resolved to nothing")  # a DRIVER error
    return taken


def release_handle(r: Dict[str, Any]) -> Any:
    handle = objects[r["handle"]]
    if isinstance(handle, aio.Semaphore):
        not_offered("Semaphore.release takes a permit id; a semaphore handle has no release of its own")
    return handle.release()


def lock_guard(r: Dict[str, Any], what: str) -> aio.Lock:
    guard = objects[r["guard"]]
    if not isinstance(guard, aio.Lock):
        not_offered(f"a {type(guard).__name__} has no {what}")
    return guard


async def wait_lost(r: Dict[str, Any]) -> bool:
    guard = lock_guard(r, "lost signal")
    # Lock.wait_lost() is the surface's signal; the protocol's wait_ms bounds it.
    try:
        await asyncio.wait_for(guard.wait_lost(), timeout=seconds(r, "wait_ms"))
    except asyncio.TimeoutError:
        return False
    return True


def hold_count(r: Dict[str, Any]) -> int:
    handle = objects[r["handle"]]
    if not isinstance(handle, aio.Lock):
        not_offered(f"a {type(handle).__name__} has no hold_count")
    return handle.hold_count


async def value_get(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    got = await objects[r["value"]].get()
    return None if got is None else {"value": text(got[0]), "version": got[1]}


async def idem_begin(r: Dict[str, Any]) -> Dict[str, Any]:
    outcome = await objects[r["idempotency"]].begin(r["key"], r["payload"])
    return begin_answer(outcome, lambda ticket: save(r, ticket))


async def idem_run(r: Dict[str, Any]) -> Any:
    response = r["response"]
    result = await objects[r["idempotency"]].run(
        r["key"], r["payload"], lambda: response, **kwargs(wait=seconds(r, "wait_ms"))
    )
    return response_json(result)


async def snowflake(r: Dict[str, Any]) -> Dict[str, Any]:
    generator = save(r, await objects[r["client"]].snowflake(**kwargs(worker_id=r.get("worker_id"))))
    return {"worker_id": await generator.worker_id()}


def make(r: Dict[str, Any], method: str, *args: Any, **options: Any) -> None:
    save(r, getattr(objects[r["client"]], method)(*args, **kwargs(**options)))


OPS = {
    "reset": reset,
    "connect": connect,
    "close": lambda r: objects[r["client"]].close(),
    "error_table": lambda r: not_offered(ERROR_TABLE),
    "lock": lambda r: make(r, "lock", r["name"], kind=r.get("kind")),
    "rw_lock": rw_lock,
    "semaphore": lambda r: make(r, "semaphore", r["name"], r["permits"]),
    "multi_lock": lambda r: not_offered("polylock.aio.Client has no multi_lock (the blocking Client has)"),
    "acquire": acquire,
    "try_acquire": try_acquire,
    "release": lambda r: objects[r["guard"]].release(),
    "release_handle": release_handle,
    "token": lambda r: objects[r["guard"]].fencing_token,
    "is_lost": lambda r: lock_guard(r, "is_lost()").is_lost(),
    "wait_lost": wait_lost,
    "hold_count": hold_count,
    "is_locked": lambda r: not_offered(IS_LOCKED),
    "status": lambda r: not_offered(ADMIN),
    "list": lambda r: not_offered(ADMIN),
    "force_unlock": lambda r: not_offered(ADMIN),
    **{
        op: (lambda r: not_offered(NO_ELECTION))
        for op in ("election", "campaign", "try_campaign", "leader", "resign", "is_leader", "observe_next")
    },
    "latch": lambda r: make(r, "latch", r["name"]),
    "latch_set": lambda r: objects[r["latch"]].try_set_count(r["count"]),
    "count_down": lambda r: objects[r["latch"]].count_down(),
    "latch_count": lambda r: objects[r["latch"]].count(),
    "latch_wait": lambda r: objects[r["latch"]].wait(**kwargs(timeout=seconds(r, "wait_ms"))),
    "value": lambda r: make(r, "value", r["name"]),
    "value_get": value_get,
    "value_create": lambda r: objects[r["value"]].create(r["data"].encode()),
    "value_cas": lambda r: objects[r["value"]].compare_and_set(r["version"], r["data"].encode()),
    "value_delete": lambda r: objects[r["value"]].delete(r["version"]),
    "value_write_fenced": lambda r: objects[r["value"]].write_fenced(r["token"], r["data"].encode()),
    "value_watch": lambda r: not_offered(WATCH),
    "idempotency": lambda r: make(r, "idempotency", r["namespace"]),
    "idem_begin": idem_begin,
    "idem_complete": lambda r: objects[r["ticket"]].complete(r["response"].encode()),
    "idem_abandon": lambda r: objects[r["ticket"]].abandon(),
    "idem_run": idem_run,
    "segment": lambda r: make(r, "segment", r["tag"], step=r.get("step")),
    "next_id": lambda r: objects[r["segment"]].next_id(),
    "next_ids": lambda r: objects[r["segment"]].next_ids(r["count"]),
    "snowflake": snowflake,
    "snowflake_next": lambda r: objects[r["snowflake"]].next_id(),
    "snowflake_close": lambda r: objects[r["snowflake"]].close(),
    **ids_ops(),
}


async def main() -> None:
    loop = asyncio.get_running_loop()
    write({"ready": "python-asyncio"})
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if not line.strip():
            continue
        request = parse(line)
        op = OPS.get(request.get("op"))
        try:
            if op is None:
                not_offered(f"unknown op {request.get('op')!r}")
            outcome, error = op(request), None
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Exception as raised:  # CancelledError and KeyboardInterrupt end the driver
            outcome, error = None, raised
        write(answer_of(request, outcome, error))
    await reset()


if __name__ == "__main__":
    asyncio.run(main())
