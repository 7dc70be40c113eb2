"""``Idempotency-Key`` for any ASGI application (Starlette, FastAPI, Quart, Django's ASGI).

    from polylock.contrib.asgi import IdempotencyMiddleware

    app = FastAPI()
    app.add_middleware(IdempotencyMiddleware, client="redis://127.0.0.1:6379")
    # or, for any ASGI app: app = IdempotencyMiddleware(app, client=...)

A POST or PATCH carrying ``Idempotency-Key`` runs once per key: its response (status,
headers, body) is stored, and a retry with the same key and request gets it again with
``Idempotent-Replayed: true``. A retry with the same key and another request gets 422; one
that arrives while the first runs gets 409 with ``Retry-After``; a malformed key gets 400. A
server error (5xx) is not stored, so a retry runs again; an app that raises abandons the key
and the exception goes on to the server. Requests without the header, or of other methods,
pass through untouched. Options (``header``, ``lifetime``, ``methods``, ``fingerprint``,
``namespace``) are those of every polylock middleware; an unknown one is
InvalidArgumentError. Records are the core's form, so a Django, Express, Fastify, net/http or
Rack middleware on the same store and namespace replays them.

The request body is read whole before the app runs (it is part of the fingerprint) and given
to the app as one message; the response is passed on as the app sends it and stored when it
ends.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional, Tuple

from .._values import Acquired, AsyncIdempotency, InProgress, Mismatch, Replay
from .._locked import ClientSpec, ClientSource
from . import _http
from ._http import RequestInfo

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _latin1(headers: List[Tuple[bytes, bytes]]) -> _http.Headers:
    return [(bytes(name).decode("latin-1").lower(), bytes(value).decode("latin-1")) for name, value in headers]


async def _send_response(send: Send, response: _http.Response) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in response.headers]
    headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


class IdempotencyMiddleware:
    """Pure ASGI middleware; see the module's doc. ``client``: a :class:`polylock.Client` or
    :class:`polylock.aio.Client`, a URL (connected on the first request, once per process),
    or None (``$POLYLOCK_URL``, else the default URL)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], client: ClientSpec = None, **options: Any) -> None:
        self.app = app
        self.settings = _http.Settings(options)
        self._source = ClientSource(client)
        self._idempotency: Optional[AsyncIdempotency] = None

    def idempotency(self) -> AsyncIdempotency:
        if self._idempotency is None:
            client = self._source.aio()
            self._idempotency = client.idempotency(  # type: ignore[attr-defined]
                self.settings.namespace, self.settings.lifetime, _http.IN_PROGRESS_TTL
            )
        return self._idempotency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.settings.applies_to(scope["method"]):
            await self.app(scope, receive, send)
            return
        headers = _latin1(scope.get("headers") or [])
        value = next((v for name, v in headers if name == self.settings.header), None)
        if value is None:
            await self.app(scope, receive, send)
            return
        key, problem = _http.key_of(value)
        if problem is not None:
            await _send_response(send, _http.refusal("bad_key", key))
            return

        # The whole body first: it is part of the fingerprint.
        chunks: List[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away before sending its request: nothing ran
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        path = bytes(raw_path).decode("latin-1")
        if scope.get("query_string"):
            path += "?" + bytes(scope["query_string"]).decode("latin-1")
        request = RequestInfo(scope["method"].upper(), path, headers, body)

        idempotency = self.idempotency()
        outcome = await idempotency.begin(key, self.settings.fingerprint_of(request))
        if isinstance(outcome, Replay):
            await _send_response(send, _http.replayed(outcome.response))
            return
        if isinstance(outcome, Mismatch):
            await _send_response(send, _http.refusal("mismatch", key))
            return
        if isinstance(outcome, InProgress):
            await _send_response(send, _http.refusal("in_progress", key, outcome.retry_after))
            return
        assert isinstance(outcome, Acquired)
        ticket = outcome.ticket
        await self._run(scope, body, receive, send, ticket)

    async def _run(self, scope: Scope, body: bytes, receive: Receive, send: Send, ticket: Any) -> None:
        given = False

        async def replay_body() -> Message:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the server's http.disconnect

        status: Optional[int] = None
        response_headers: _http.Headers = []
        parts: List[bytes] = []
        ended = False

        async def capture(message: Message) -> None:
            nonlocal status, response_headers, ended
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_headers = _latin1(message.get("headers") or [])
            elif message["type"] == "http.response.body":
                parts.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    ended = True
            await send(message)

        try:
            await self.app(scope, replay_body, capture)
        except BaseException:
            try:
                await ticket.abandon()
            except Exception:
                pass
            raise
        if status is None or not ended or not _http.stores(status):
            await ticket.abandon()  # a 5xx, or no whole response: a retry runs again
            return
        await ticket.complete(_http.encode(_http.Response(status, response_headers, b"".join(parts))))


__all__ = ["IdempotencyMiddleware", "RequestInfo"]
