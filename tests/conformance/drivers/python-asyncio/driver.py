"""Conformance driver of the `python-asyncio` surface: polylock.aio (tests/conformance/
PROTOCOL.md). One event loop; its one long-lived task (the one asyncio.run starts for main())
reads the requests and awaits each in turn, never in a task of its own, so that task is the
owner of every lock hold (polylock.aio's owner is the current task)."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import polylock.aio as aio  # noqa: E402

from protocol import (  # noqa: E402
    answer_of,
    begin_answer,
    error_table,
    ids_ops,
    kwargs,
    list_answer,
    not_offered,
    parse,
    response_json,
    seconds,
    status_answer,
    text,
    versioned_json,
    write,
)

objects: Dict[str, Any] = {}  # label -> object (clients, handles, guards, ...)
rw_locks: Dict[tuple, aio.RWLock] = {}  # (client label, name) -> the one RWLock of both sides
multi_names: Dict[str, List[str]] = {}  # multi-lock label -> names in the request's order
observers: Dict[str, "asyncio.Queue[Any]"] = {}  # election label -> leaders seen by its observer
watches: Dict[str, "asyncio.Queue[Any]"] = {}  # value label -> states seen by its watch
observer_tasks: List["asyncio.Task[None]"] = []


async def reset(_: Dict[str, Any] = {}) -> None:
    # Closing a client gives back its holds, permits and worker ids.
    for obj in list(objects.values()):
        if isinstance(obj, aio.Client):
            try:
                await obj.close()
            except Exception as error:  # reset ignores errors
                print(f"reset: {error!r}", file=sys.stderr)
    for task in observer_tasks:
        task.cancel()
    objects.clear()
    rw_locks.clear()
    multi_names.clear()
    observers.clear()
    watches.clear()
    observer_tasks.clear()


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


def multi_lock(r: Dict[str, Any]) -> None:
    make(r, "multi_lock", r["names"])
    multi_names[r["as"]] = list(r["names"])


def token_of(guard: Any, label: str) -> Any:
    if isinstance(guard, aio.MultiLock):
        tokens = guard.fencing_tokens
        return [tokens[name] for name in multi_names[label]]
    return guard.fencing_token


def taken(r: Dict[str, Any], handle: Any, permit: Optional[aio.Permit]) -> Dict[str, Any]:
    """The answer to an acquisition that succeeded, its guard saved under `as`."""
    if permit is not None:
        return {"token": save(r, permit).fencing_token}
    # A lock's (or multi-lock's) hold is the handle itself, owned by this (the main) task.
    save(r, handle)
    if isinstance(handle, aio.MultiLock) and "as" in r:
        multi_names[r["as"]] = multi_names[r["handle"]]
    return {"token": token_of(handle, r["handle"])}


async def try_acquire(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    # The try form: acquire(timeout=) resolves to False (a permit: None) when the wait runs out.
    handle = objects[r["handle"]]
    args = kwargs(timeout=seconds(r, "wait_ms"), lease=seconds(r, "lease_ms"))
    if isinstance(handle, aio.Semaphore):
        permit = await handle.acquire(**args)
        return None if permit is None else taken(r, handle, permit)
    if not await handle.acquire(**args):
        return None
    return taken(r, handle, None)


async def acquire(r: Dict[str, Any]) -> Dict[str, Any]:
    # The waiting form: hold(timeout=) raises LockTimeoutError when the wait runs out.
    handle = objects[r["handle"]]
    held = await handle.hold(**kwargs(timeout=seconds(r, "wait_ms"), lease=seconds(r, "lease_ms")))
    return taken(r, handle, held if isinstance(handle, aio.Semaphore) else None)


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


async def is_locked(r: Dict[str, Any]) -> bool:
    handle = objects[r["handle"]]
    if not isinstance(handle, aio.Lock):
        not_offered(f"a {type(handle).__name__} has no is_locked()")
    return await handle.is_locked()


def leader_json(leader: Any) -> Optional[Dict[str, Any]]:
    return None if leader is None else {"value": text(leader.value), "term": leader.term}


async def campaign(r: Dict[str, Any]) -> Dict[str, int]:
    leadership = await objects[r["election"]].campaign(r["value"], **kwargs(timeout=seconds(r, "wait_ms")))
    return {"term": save(r, leadership).term}


async def try_campaign(r: Dict[str, Any]) -> Optional[Dict[str, int]]:
    leadership = await objects[r["election"]].try_campaign(r["value"], **kwargs(timeout=seconds(r, "wait_ms")))
    return None if leadership is None else {"term": save(r, leadership).term}


def following(iterator: Any) -> "asyncio.Queue[Any]":
    """An async iterator without a timeout (election.observe(), a value's watch) iterated by a
    task of its own, so that a request can wait for its next item with a bound (a timeout
    around __anext__ itself would end an async generator)."""
    seen: "asyncio.Queue[Any]" = asyncio.Queue()

    async def follow() -> None:
        try:
            async for item in iterator:
                seen.put_nowait(("item", item))
        except Exception as error:
            seen.put_nowait(("error", error))

    observer_tasks.append(asyncio.create_task(follow()))
    return seen


async def next_within(seen: "asyncio.Queue[Any]", r: Dict[str, Any], as_json: Any) -> Any:
    try:
        what, item = await asyncio.wait_for(seen.get(), timeout=seconds(r, "wait_ms"))
    except asyncio.TimeoutError:
        return "no change"
    if what == "error":
        raise item
    return as_json(item)


async def observe_next(r: Dict[str, Any]) -> Any:
    label = r["election"]
    if label not in observers:
        observers[label] = following(objects[label].observe())
    return await next_within(observers[label], r, leader_json)


async def value_watch(r: Dict[str, Any]) -> Any:
    label = r["value"]
    if label not in watches:
        watches[label] = following(await objects[label].watch())
    return await next_within(watches[label], r, versioned_json)


async def latch_wait(r: Dict[str, Any]) -> bool:
    # The waiting form: await_zero returns once the count is zero, raises LockTimeoutError.
    await objects[r["latch"]].await_zero(**kwargs(timeout=seconds(r, "wait_ms")))
    return True


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


async def status(r: Dict[str, Any]) -> Dict[str, Any]:
    return status_answer(await objects[r["client"]].status(r["name"]))


async def list_locks(r: Dict[str, Any]) -> List[str]:
    return list_answer(await objects[r["client"]].list(r["prefix"]))


async def leader(r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    return leader_json(await objects[r["election"]].leader())


def make(r: Dict[str, Any], method: str, *args: Any, **options: Any) -> None:
    save(r, getattr(objects[r["client"]], method)(*args, **kwargs(**options)))


OPS = {
    "reset": reset,
    "connect": connect,
    "close": lambda r: objects[r["client"]].close(),
    "error_table": lambda r: error_table(),
    "lock": lambda r: make(r, "lock", r["name"], kind=r.get("kind")),
    "rw_lock": rw_lock,
    "semaphore": lambda r: make(r, "semaphore", r["name"], r["permits"]),
    "multi_lock": multi_lock,
    "acquire": acquire,
    "try_acquire": try_acquire,
    "release": lambda r: objects[r["guard"]].release(),
    "release_handle": release_handle,
    "token": lambda r: token_of(objects[r["guard"]], r["guard"]),
    "is_lost": lambda r: lock_guard(r, "is_lost()").is_lost(),
    "wait_lost": wait_lost,
    "hold_count": hold_count,
    "is_locked": is_locked,
    "status": status,
    "list": list_locks,
    "force_unlock": lambda r: objects[r["client"]].force_unlock(r["name"]),
    "election": lambda r: make(r, "election", r["name"]),
    "campaign": campaign,
    "try_campaign": try_campaign,
    "leader": leader,
    "resign": lambda r: objects[r["leadership"]].resign(),
    "is_leader": lambda r: objects[r["leadership"]].is_leader,
    "observe_next": observe_next,
    "latch": lambda r: make(r, "latch", r["name"]),
    "latch_set": lambda r: objects[r["latch"]].try_set_count(r["count"]),
    "count_down": lambda r: objects[r["latch"]].count_down(),
    "latch_count": lambda r: objects[r["latch"]].count(),
    "latch_wait": latch_wait,
    "value": lambda r: make(r, "value", r["name"]),
    "value_get": value_get,
    "value_create": lambda r: objects[r["value"]].create(r["data"].encode()),
    "value_cas": lambda r: objects[r["value"]].compare_and_set(r["version"], r["data"].encode()),
    "value_delete": lambda r: objects[r["value"]].delete(r["version"]),
    "value_write_fenced": lambda r: objects[r["value"]].write_fenced(r["token"], r["data"].encode()),
    "value_watch": value_watch,
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
