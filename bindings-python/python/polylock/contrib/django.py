"""``Idempotency-Key`` for Django, configured from settings.

    # settings.py
    MIDDLEWARE = [..., "polylock.contrib.django.IdempotencyMiddleware"]
    POLYLOCK = {"url": "redis://127.0.0.1:6379", "idempotency": {"lifetime": 3600}}

The behaviour is that of :mod:`polylock.contrib.asgi` (the rules are the core's, and so is
the stored form, so records replay across languages and frameworks). ``POLYLOCK["url"]``
names the backend (absent: ``$POLYLOCK_URL``, else the default URL); it is connected on the
first request, once per process. ``POLYLOCK["idempotency"]`` holds the options (``header``,
``lifetime``, ``methods``, ``fingerprint``, ``namespace``); an unknown key in either dict is
ImproperlyConfigured when the middleware is made. A view that raises is a 500 by the time
this middleware sees it (Django turns exceptions into responses), so the key is abandoned and
a retry runs again. A streaming response is passed on and not stored (its body is not
buffered): its key is abandoned.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from .._errors import InvalidArgumentError
from .._locked import ClientSource
from .._values import Acquired, Idempotency, InProgress, Mismatch, Replay
from . import _http
from ._http import RequestInfo

_SETTINGS_KEYS = ("url", "idempotency")


def _as_django(response: _http.Response) -> HttpResponse:
    django = HttpResponse(content=response.body, status=response.status)
    del django["Content-Type"]  # only the stored headers
    for name, value in response.headers:
        if name == "set-cookie":
            django.cookies.load(value)
        elif name in django:
            django[name] = f"{django[name]}, {value}"
        else:
            django[name] = value
    return django


class IdempotencyMiddleware:
    """Django middleware (``MIDDLEWARE``); see the module's doc."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        config: Dict[str, Any] = getattr(django_settings, "POLYLOCK", {}) or {}
        if not isinstance(config, dict):
            raise ImproperlyConfigured(f"settings.POLYLOCK must be a dict, got {type(config).__name__}")
        unknown = sorted(set(config) - set(_SETTINGS_KEYS))
        if unknown:
            raise ImproperlyConfigured(
                f"settings.POLYLOCK: unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(u) for u in unknown)} (the keys: {', '.join(_SETTINGS_KEYS)})"
            )
        options = config.get("idempotency") or {}
        try:
            if not isinstance(options, dict):
                raise InvalidArgumentError(f"must be a dict of options, got {type(options).__name__}")
            self.settings = _http.Settings(options)
            self._source = ClientSource(config.get("url"))
        except (InvalidArgumentError, TypeError) as err:
            raise ImproperlyConfigured(f"settings.POLYLOCK['idempotency']: {err}") from err
        self._idempotency: Optional[Idempotency] = None

    def idempotency(self) -> Idempotency:
        if self._idempotency is None:
            client = self._source.sync()
            self._idempotency = client.idempotency(  # type: ignore[attr-defined]
                self.settings.namespace, self.settings.lifetime, _http.IN_PROGRESS_TTL
            )
        return self._idempotency

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not self.settings.applies_to(request.method or ""):
            return self.get_response(request)
        value = request.headers.get(self.settings.header)
        if value is None:
            return self.get_response(request)
        key, problem = _http.key_of(value)
        if problem is not None:
            return _as_django(_http.refusal("bad_key", key))

        headers = [(name.lower(), value) for name, value in request.headers.items()]
        info = RequestInfo((request.method or "").upper(), request.get_full_path(), headers, request.body)
        outcome = self.idempotency().begin(key, self.settings.fingerprint_of(info))
        if isinstance(outcome, Replay):
            return _as_django(_http.replayed(outcome.response))
        if isinstance(outcome, Mismatch):
            return _as_django(_http.refusal("mismatch", key))
        if isinstance(outcome, InProgress):
            return _as_django(_http.refusal("in_progress", key, outcome.retry_after))
        assert isinstance(outcome, Acquired)
        ticket = outcome.ticket
        try:
            response = self.get_response(request)
        except BaseException:
            _http.quietly(ticket.abandon)
            raise
        if response.streaming or not _http.stores(response.status_code):
            ticket.abandon()
            return response
        stored = [(name.lower(), str(value)) for name, value in response.items()]
        stored += [("set-cookie", morsel.OutputString()) for morsel in response.cookies.values()]
        ticket.complete(_http.encode(_http.Response(response.status_code, stored, response.content)))
        return response


__all__ = ["IdempotencyMiddleware", "RequestInfo"]
