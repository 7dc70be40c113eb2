"""What the ASGI and Django idempotency middlewares share: their options, the request's key
and fingerprint, and the responses they give instead of running the app. The rules are the
core's (``polylock::kit::http_idempotency``, through ``polylock._polylock``); this module only
carries values between them and the idempotency primitive (``client.idempotency``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from .. import _polylock
from .._errors import InvalidArgumentError
from .._values import fingerprint_of

#: The header a replayed response carries (``true``).
REPLAYED_HEADER: str = _polylock.HTTP_REPLAYED_HEADER
#: The namespace of idempotency keys the middlewares use unless told otherwise; the same in
#: every language, so services behind one store replay each other's responses.
DEFAULT_NAMESPACE = "http"
#: How long an attempt that neither completes nor is abandoned (its process died) keeps its
#: key before a retry may take it over: the primitive's default.
IN_PROGRESS_TTL = 60.0

OPTIONS = ("header", "lifetime", "methods", "fingerprint", "namespace")

Headers = List[Tuple[str, str]]


class RequestInfo(NamedTuple):
    """A request as a ``fingerprint`` option sees it, in every framework: ``method`` (upper
    case), ``path`` (with ``?`` and the query, as sent), ``headers`` (names lower case) and
    ``body`` (bytes)."""

    method: str
    path: str
    headers: Headers
    body: bytes


class Response(NamedTuple):
    status: int
    headers: Headers
    body: bytes


class Settings:
    """The checked options of one middleware."""

    __slots__ = ("native", "header", "fingerprint", "namespace")

    def __init__(self, options: Dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(
                f"unknown idempotency middleware option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(u) for u in unknown)} (the options: {', '.join(OPTIONS)})"
            )
        methods = options.get("methods")
        if isinstance(methods, str):
            raise InvalidArgumentError(
                f"idempotency middleware option 'methods' must be a list of methods, got the str {methods!r}"
            )
        lifetime = options.get("lifetime")
        if lifetime is not None and (isinstance(lifetime, bool) or not isinstance(lifetime, (int, float))):
            raise InvalidArgumentError(
                f"idempotency middleware option 'lifetime' must be seconds (a number), got {lifetime!r}"
            )
        self.native = _polylock.NativeHttpOptions(
            options.get("header"), None if lifetime is None else float(lifetime), None if methods is None else list(methods)
        )
        self.header = self.native.header.lower()
        fingerprint = options.get("fingerprint")
        if fingerprint is not None and not callable(fingerprint):
            raise InvalidArgumentError(
                f"idempotency middleware option 'fingerprint' must be a function of the request, got {fingerprint!r}"
            )
        self.fingerprint: Optional[Callable[[RequestInfo], Any]] = fingerprint
        namespace = options.get("namespace", DEFAULT_NAMESPACE)
        if not isinstance(namespace, str):
            raise InvalidArgumentError(f"idempotency middleware option 'namespace' must be a str, got {namespace!r}")
        self.namespace = namespace

    @property
    def lifetime(self) -> float:
        return self.native.lifetime

    def applies_to(self, method: str) -> bool:
        return self.native.applies_to(method)

    def fingerprint_of(self, request: RequestInfo) -> bytes:
        """The stored fingerprint: the kit's (method, path with query, body) by default, else
        the ``fingerprint`` option's value as ``Idempotency.begin`` reads a payload."""
        if self.fingerprint is None:
            return _polylock.http_fingerprint(request.method, request.path, request.body)
        return fingerprint_of(self.fingerprint(request))


def key_of(header_value: str) -> Tuple[str, Optional[str]]:
    """The key a header value carries, and why it is no key (None if it is one)."""
    key = _polylock.http_key_of(header_value)
    return key, _polylock.http_key_problem(key)


def refusal(kind: str, key: str, retry_after: Optional[float] = None) -> Response:
    """The response for ``bad_key`` (400), ``in_progress`` (409) or ``mismatch`` (422)."""
    return Response(*_polylock.http_refusal_response(kind, key, retry_after))


def stores(status: int) -> bool:
    return _polylock.http_stores(status)


def encode(response: Response) -> bytes:
    return _polylock.http_encode_response(response.status, response.headers, response.body)


def replayed(stored: bytes) -> Response:
    """A stored response as it is sent again: with ``Idempotent-Replayed: true``."""
    status, headers, body = _polylock.http_decode_response(stored)
    return Response(status, headers + [(REPLAYED_HEADER.lower(), "true")], body)


def quietly(call: Callable[[], Any]) -> None:
    try:
        call()
    except Exception:  # the app's own exception (or response) is the one that counts
        pass


__all__ = ["RequestInfo", "Response", "Settings", "REPLAYED_HEADER", "DEFAULT_NAMESPACE"]
