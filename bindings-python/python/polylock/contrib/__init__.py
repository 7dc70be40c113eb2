"""Adapters of polylock to frameworks, each imported on its own so that none of the
frameworks is needed by polylock itself:

- :mod:`polylock.contrib.asgi`: ``IdempotencyMiddleware`` for any ASGI app (Starlette, FastAPI);
- :mod:`polylock.contrib.django`: ``IdempotencyMiddleware`` for Django, from ``settings.POLYLOCK``;
- :mod:`polylock.contrib.celery`: ``SingletonTask``, tasks run at most once at a time per key.

The two middlewares apply the core's ``Idempotency-Key`` rules (``polylock::kit::http_idempotency``)
and share their records with every other language's middleware on the same store and namespace.
A ``fingerprint`` option receives a :class:`RequestInfo`.
"""

from ._http import DEFAULT_NAMESPACE, REPLAYED_HEADER, RequestInfo

__all__ = ["RequestInfo", "REPLAYED_HEADER", "DEFAULT_NAMESPACE"]
