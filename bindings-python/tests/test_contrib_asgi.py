"""polylock.contrib.asgi.IdempotencyMiddleware in a real FastAPI app: through Starlette's
TestClient, through httpx against uvicorn servers (one in a thread of this process, one in a
process of its own), on SQLite and on the running Redis.

Run as a module by uvicorn (``test_contrib_asgi:served``), it serves the same app from the
environment: the second instance of the cross-instance test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Dict

import anyio
import httpx
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

import polylock
from polylock.contrib.asgi import IdempotencyMiddleware

HERE = Path(__file__).resolve().parent


def make_app(client: Any, instance: str = "a", **options: Any) -> "tuple[FastAPI, Dict[str, Any]]":
    """A small orders API behind the middleware; ``state`` counts the handler's runs."""
    api = FastAPI()
    state: Dict[str, Any] = {"runs": 0, "entered": threading.Event(), "release": threading.Event(), "flaky": 0}

    @api.get("/health")
    async def health() -> Dict[str, str]:
        return {"instance": instance}

    @api.post("/orders")
    async def create(request: Request) -> Response:
        state["runs"] += 1
        order = json.loads(await request.body())
        body = {"id": uuid.uuid4().hex, "order": order, "instance": instance, "run": state["runs"]}
        response = JSONResponse(body, status_code=201, headers={"Location": f"/orders/{body['id']}"})
        response.set_cookie("seen", "1")
        return response

    @api.put("/orders/{order_id}")
    async def replace(order_id: str) -> Dict[str, Any]:
        state["runs"] += 1
        return {"id": order_id, "run": state["runs"]}

    @api.get("/orders")
    async def listing() -> Dict[str, Any]:
        state["runs"] += 1
        return {"run": state["runs"]}

    @api.post("/slow")
    async def slow() -> Dict[str, Any]:
        state["runs"] += 1
        state["entered"].set()
        await anyio.to_thread.run_sync(state["release"].wait)
        return {"slow": True}

    @api.post("/flaky")
    async def flaky() -> Response:
        state["flaky"] += 1
        if state["flaky"] == 1:
            return JSONResponse({"error": "try again"}, status_code=503)
        return JSONResponse({"attempt": state["flaky"]}, status_code=201)

    @api.post("/boom")
    async def boom() -> None:
        state["runs"] += 1
        if state["runs"] == 1:
            raise RuntimeError("the handler failed")

    api.add_middleware(IdempotencyMiddleware, client=client, **options)
    return api, state


if os.environ.get("POLYLOCK_ASGI_TEST_URL"):  # imported by the uvicorn process
    served, _ = make_app(os.environ["POLYLOCK_ASGI_TEST_URL"], instance="b")


import pytest  # noqa: E402  (not needed by the uvicorn process)
from starlette.testclient import TestClient  # noqa: E402

from conftest import SERVER_URLS  # noqa: E402


def backends():
    return ["sqlite"] + (["redis"] if "redis" in SERVER_URLS else [])


@pytest.fixture(params=backends())
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/locks.db"
    return SERVER_URLS["redis"]


def key() -> str:
    return f"test-{uuid.uuid4()}"


def test_first_request_runs_and_a_retry_replays_its_response(url):
    with polylock.connect(url) as client:
        app, state = make_app(client)
        http = TestClient(app)
        k = key()
        first = http.post("/orders", json={"sku": "A1", "n": 2}, headers={"Idempotency-Key": k})
        assert first.status_code == 201
        assert first.json()["order"] == {"sku": "A1", "n": 2}  # the app got the whole body
        assert "idempotent-replayed" not in first.headers
        again = http.post("/orders", json={"sku": "A1", "n": 2}, headers={"Idempotency-Key": f'"{k}"'})
        assert again.status_code == 201
        assert again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        assert again.headers["location"] == first.headers["location"]
        assert again.headers["content-type"] == "application/json"
        assert again.headers["set-cookie"] == first.headers["set-cookie"]
        assert again.headers["content-length"] == str(len(again.content))
        assert state["runs"] == 1


def test_same_key_with_another_request_is_422(url):
    with polylock.connect(url) as client:
        app, state = make_app(client)
        http = TestClient(app)
        k = key()
        assert http.post("/orders", json={"sku": "A1"}, headers={"Idempotency-Key": k}).status_code == 201
        for other in (
            http.post("/orders", json={"sku": "B2"}, headers={"Idempotency-Key": k}),
            http.post("/orders?dry_run=1", json={"sku": "A1"}, headers={"Idempotency-Key": k}),
        ):
            assert other.status_code == 422
            assert other.headers["content-type"] == "application/problem+json"
            problem = other.json()
            assert problem["status"] == 422 and k in problem["detail"]
        assert state["runs"] == 1


def test_a_server_error_is_not_stored_and_the_retry_runs(url):
    with polylock.connect(url) as client:
        app, state = make_app(client)
        http = TestClient(app)
        k = key()
        assert http.post("/flaky", headers={"Idempotency-Key": k}).status_code == 503
        second = http.post("/flaky", headers={"Idempotency-Key": k})
        assert (second.status_code, second.json()) == (201, {"attempt": 2})
        third = http.post("/flaky", headers={"Idempotency-Key": k})
        assert (third.status_code, third.json(), third.headers["idempotent-replayed"]) == (201, {"attempt": 2}, "true")
        assert state["flaky"] == 2


def test_a_handler_that_raises_abandons_the_key_and_the_error_propagates(url):
    with polylock.connect(url) as client:
        app, state = make_app(client)
        k = key()
        with pytest.raises(RuntimeError, match="the handler failed"):
            TestClient(app).post("/boom", headers={"Idempotency-Key": k})
        # Not in progress, not stored: the retry runs.
        retry = TestClient(app).post("/boom", headers={"Idempotency-Key": k})
        assert retry.status_code == 200 and "idempotent-replayed" not in retry.headers
        assert state["runs"] == 2


def test_requests_without_a_key_or_of_other_methods_pass_through_and_bad_keys_are_400(tmp_path):
    app, state = make_app(f"sqlite://{tmp_path}/locks.db")
    http = TestClient(app)
    k = key()
    assert http.get("/orders", headers={"Idempotency-Key": k}).json() == {"run": 1}
    assert http.get("/orders", headers={"Idempotency-Key": k}).json() == {"run": 2}
    assert http.put("/orders/1", headers={"Idempotency-Key": k}).json() == {"id": "1", "run": 3}
    assert http.put("/orders/1", headers={"Idempotency-Key": k}).json() == {"id": "1", "run": 4}
    a = http.post("/orders", json={}).json()
    b = http.post("/orders", json={}).json()
    assert a["id"] != b["id"] and state["runs"] == 6
    for bad in ("", "has space", "k" * 256):
        refused = http.post("/orders", json={}, headers={"Idempotency-Key": bad})
        assert refused.status_code == 400
        assert refused.json()["title"] == "Bad idempotency key"
    assert state["runs"] == 6


def test_options_header_methods_fingerprint_namespace_and_unknown_ones(tmp_path):
    url = f"sqlite://{tmp_path}/locks.db"
    app, state = make_app(
        url,
        header="X-Request-Id",
        methods=["put"],
        namespace="orders-api",
        lifetime=3600,
        fingerprint=lambda request: request.path,  # the body does not count
    )
    http = TestClient(app)
    k = key()
    first = http.put("/orders/7", content=b"one", headers={"X-Request-Id": k})
    again = http.put("/orders/7", content=b"two", headers={"x-request-id": k})
    assert again.json() == first.json() == {"id": "7", "run": 1}
    assert again.headers["idempotent-replayed"] == "true"
    assert http.put("/orders/8", headers={"X-Request-Id": k}).status_code == 422
    http.post("/orders", json={}, headers={"X-Request-Id": k})  # POST is not in methods
    http.post("/orders", json={}, headers={"X-Request-Id": k})
    assert state["runs"] == 3
    with polylock.connect(url) as client:  # the record is in the namespace named
        assert isinstance(client.idempotency("orders-api").begin(k, b"x"), polylock.Mismatch)

    for bad, message in (
        ({"headers": "X"}, "unknown idempotency middleware option 'headers'"),
        ({"header": "Bad Header"}, "'header'"),
        ({"lifetime": -1}, "'lifetime'"),
        ({"lifetime": "1h"}, "'lifetime'"),
        ({"methods": []}, "'methods'"),
        ({"methods": "POST"}, "'methods'"),
        ({"fingerprint": "body"}, "'fingerprint'"),
    ):
        with pytest.raises(polylock.InvalidArgumentError, match=message):
            IdempotencyMiddleware(app, client=url, **bad)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(base: str, process: "subprocess.Popen[bytes] | None" = None) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{base}/health", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {process.returncode}: {process.stderr.read().decode()}")
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # polling a server's readiness, not synchronising work


class ThreadServer:
    """uvicorn serving an app from a thread of this process."""

    def __init__(self, app: FastAPI) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        base = f"http://127.0.0.1:{self.port}"
        wait_until_serving(base)
        return base

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def test_a_concurrent_request_with_the_same_key_is_409_over_real_http(url):
    with polylock.connect(url) as client:
        app, state = make_app(client)
        with ThreadServer(app) as base:
            k = key()
            results: Dict[str, httpx.Response] = {}

            def first() -> None:
                results["first"] = httpx.post(f"{base}/slow", headers={"Idempotency-Key": k}, timeout=60)

            thread = threading.Thread(target=first)
            thread.start()
            assert state["entered"].wait(30)  # the first request is in its handler
            busy = httpx.post(f"{base}/slow", headers={"Idempotency-Key": k}, timeout=30)
            assert busy.status_code == 409
            assert busy.headers["content-type"] == "application/problem+json"
            assert int(busy.headers["retry-after"]) >= 1
            state["release"].set()
            thread.join(60)
            assert results["first"].status_code == 200 and results["first"].json() == {"slow": True}
            after = httpx.post(f"{base}/slow", headers={"Idempotency-Key": k}, timeout=30)
            assert after.json() == {"slow": True} and after.headers["idempotent-replayed"] == "true"
            assert state["runs"] == 1


@pytest.mark.skipif("redis" not in SERVER_URLS, reason="needs the Redis of tests/services")
def test_another_instance_in_another_process_replays_over_the_shared_redis():
    url = SERVER_URLS["redis"]
    port = free_port()
    env = dict(os.environ, POLYLOCK_ASGI_TEST_URL=url)
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "test_contrib_asgi:served", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning"],
        cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        other = f"http://127.0.0.1:{port}"
        wait_until_serving(other, process)
        assert httpx.get(f"{other}/health").json() == {"instance": "b"}
        app, state = make_app(url, instance="a")
        k1, k2 = key(), key()
        # Written by this process's instance, replayed by the other process's...
        first = TestClient(app).post("/orders", json={"sku": "X"}, headers={"Idempotency-Key": k1})
        replay = httpx.post(f"{other}/orders", json={"sku": "X"}, headers={"Idempotency-Key": k1})
        assert first.json()["instance"] == "a" and replay.json() == first.json()
        assert replay.status_code == 201 and replay.headers["idempotent-replayed"] == "true"
        # ...and the other way round, with the mismatch seen across instances too.
        theirs = httpx.post(f"{other}/orders", json={"sku": "Y"}, headers={"Idempotency-Key": k2})
        mine = TestClient(app).post("/orders", json={"sku": "Y"}, headers={"Idempotency-Key": k2})
        assert theirs.json()["instance"] == "b" and mine.json() == theirs.json()
        assert mine.headers["idempotent-replayed"] == "true"
        assert TestClient(app).post("/orders", json={"sku": "Z"}, headers={"Idempotency-Key": k2}).status_code == 422
        assert state["runs"] == 1
    finally:
        process.terminate()
        process.wait(30)
