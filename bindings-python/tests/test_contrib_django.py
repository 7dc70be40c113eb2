"""polylock.contrib.django.IdempotencyMiddleware in a real minimal Django project (settings
configured here, this module its URLconf), through Django's test Client, on SQLite and on
the running Redis; and records shared with the ASGI middleware (one stored form)."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict

import django
import pytest
from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=["polylock.contrib.django.IdempotencyMiddleware"],
        INSTALLED_APPS=[],
        DATABASES={},
        SECRET_KEY="polylock-tests",
        POLYLOCK={},
        LOGGING_CONFIG=None,
    )
    django.setup()

from django.core.exceptions import ImproperlyConfigured  # noqa: E402
from django.http import HttpRequest, HttpResponse, JsonResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.urls import path  # noqa: E402

import polylock  # noqa: E402
from polylock import _polylock  # noqa: E402
from conftest import SERVER_URLS  # noqa: E402

STATE: Dict[str, int] = {"runs": 0, "flaky": 0}


def create(request: HttpRequest) -> HttpResponse:
    STATE["runs"] += 1
    body = {"id": uuid.uuid4().hex, "order": json.loads(request.body), "run": STATE["runs"]}
    response = JsonResponse(body, status=201)
    response["Location"] = f"/orders/{body['id']}"
    response.set_cookie("seen", "1")
    return response


def flaky(request: HttpRequest) -> HttpResponse:
    STATE["flaky"] += 1
    if STATE["flaky"] == 1:
        return JsonResponse({"error": "try again"}, status=500)
    return JsonResponse({"attempt": STATE["flaky"]}, status=201)


def boom(request: HttpRequest) -> HttpResponse:
    STATE["runs"] += 1
    if STATE["runs"] == 1:
        raise RuntimeError("the view failed")
    return JsonResponse({"run": STATE["runs"]})


def listing(request: HttpRequest) -> HttpResponse:
    STATE["runs"] += 1
    return JsonResponse({"run": STATE["runs"]})


urlpatterns = [
    path("orders", create),
    path("flaky", flaky),
    path("boom", boom),
    path("list", listing),
]


def backends():
    return ["sqlite"] + (["redis"] if "redis" in SERVER_URLS else [])


@pytest.fixture(params=backends())
def url(request, tmp_path):
    STATE.update(runs=0, flaky=0)
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/locks.db"
    return SERVER_URLS["redis"]


def key() -> str:
    return f"test-{uuid.uuid4()}"


def post(client: Client, where: str, body: Any, k: str, **extra: Any):
    return client.post(where, data=json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY=k, **extra)


def test_runs_once_replays_refuses_a_mismatch_and_passes_the_rest_through(url):
    with override_settings(POLYLOCK={"url": url}):
        http = Client()
        k = key()
        first = post(http, "/orders", {"sku": "A1"}, k)
        assert first.status_code == 201 and first.json()["order"] == {"sku": "A1"}
        assert "Idempotent-Replayed" not in first
        again = post(http, "/orders", {"sku": "A1"}, k)
        assert again.status_code == 201 and again.json() == first.json()
        assert again["Idempotent-Replayed"] == "true"
        assert again["Location"] == first["Location"] and again["Content-Type"] == "application/json"
        assert again.cookies["seen"].value == "1"
        mismatch = post(http, "/orders", {"sku": "B2"}, k)
        assert mismatch.status_code == 422 and mismatch["Content-Type"] == "application/problem+json"
        assert STATE["runs"] == 1
        # No key, a GET: not the middleware's.
        assert http.post("/orders", data="{}", content_type="application/json").status_code == 201
        assert http.get("/list", HTTP_IDEMPOTENCY_KEY=k).json() == {"run": 3}
        assert http.get("/list", HTTP_IDEMPOTENCY_KEY=k).json() == {"run": 4}
        assert STATE["runs"] == 4
        bad = post(http, "/orders", {}, "has space")
        assert bad.status_code == 400 and bad.json()["title"] == "Bad idempotency key"
        assert STATE["runs"] == 4


def test_a_server_error_or_a_raising_view_is_not_stored(url):
    with override_settings(POLYLOCK={"url": url}):
        http = Client(raise_request_exception=False)
        k = key()
        assert post(http, "/flaky", {}, k).status_code == 500
        second = post(http, "/flaky", {}, k)
        assert (second.status_code, second.json()) == (201, {"attempt": 2})
        assert post(http, "/flaky", {}, k)["Idempotent-Replayed"] == "true"
        k2 = key()
        assert post(http, "/boom", {}, k2).status_code == 500  # Django made it a 500
        retry = post(http, "/boom", {}, k2)
        assert retry.status_code == 200 and retry.json() == {"run": 2}


def test_a_request_under_way_elsewhere_is_409(url):
    k = key()
    with polylock.connect(url) as client, override_settings(POLYLOCK={"url": url}):
        # Another instance has begun this request (same key, same fingerprint) and not ended it.
        fingerprint = _polylock.http_fingerprint("POST", "/orders", b"{}")
        outcome = client.idempotency("http").begin(k, fingerprint)
        assert isinstance(outcome, polylock.Acquired)
        busy = post(Client(), "/orders", {}, k)
        assert busy.status_code == 409 and int(busy["Retry-After"]) >= 1
        outcome.ticket.abandon()
        assert post(Client(), "/orders", {}, k).status_code == 201
        assert STATE["runs"] == 1


def test_options_from_settings_and_unknown_ones_are_improperly_configured(tmp_path):
    url = f"sqlite://{tmp_path}/locks.db"
    STATE.update(runs=0)
    options = {"header": "X-Request-Id", "methods": ["POST"], "lifetime": 60, "namespace": "django-orders"}
    with override_settings(POLYLOCK={"url": url, "idempotency": options}):
        http = Client()
        k = key()
        one = http.post("/orders", data="{}", content_type="application/json", HTTP_X_REQUEST_ID=k)
        two = http.post("/orders", data="{}", content_type="application/json", HTTP_X_REQUEST_ID=k)
        assert two.json() == one.json() and two["Idempotent-Replayed"] == "true"
        assert STATE["runs"] == 1
    with polylock.connect(url) as client:
        assert isinstance(client.idempotency("django-orders").begin(k, b"x"), polylock.Mismatch)
    for config, message in (
        ({"url": url, "idempotence": {}}, "unknown key 'idempotence'"),
        ({"url": url, "idempotency": {"ttl": 5}}, "unknown idempotency middleware option 'ttl'"),
        ({"url": url, "idempotency": {"methods": ["GE T"]}}, "'methods'"),
    ):
        with override_settings(POLYLOCK=config):
            with pytest.raises(ImproperlyConfigured, match=message):
                Client().post("/orders", data="{}", content_type="application/json")


@pytest.mark.skipif("redis" not in SERVER_URLS, reason="needs the Redis of tests/services")
def test_records_are_shared_with_the_asgi_middleware():
    from starlette.testclient import TestClient

    from test_contrib_asgi import make_app

    url = SERVER_URLS["redis"]
    STATE.update(runs=0)
    app, state = make_app(url)
    asgi = TestClient(app)
    body = json.dumps({"sku": "S"})
    with override_settings(POLYLOCK={"url": url}):
        k1, k2 = key(), key()
        # Written by FastAPI, replayed by Django...
        first = asgi.post("/orders", content=body, headers={"Idempotency-Key": k1, "Content-Type": "application/json"})
        replay = Client().post("/orders", data=body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=k1)
        assert replay.status_code == 201 and replay.json() == first.json()
        assert replay["Location"] == first.headers["location"] and replay["Idempotent-Replayed"] == "true"
        # ...and written by Django, replayed by FastAPI.
        theirs = Client().post("/orders", data=body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=k2)
        mine = asgi.post("/orders", content=body, headers={"Idempotency-Key": k2, "Content-Type": "application/json"})
        assert mine.status_code == 201 and mine.json() == theirs.json()
        assert mine.headers["idempotent-replayed"] == "true"
    assert state["runs"] == 1 and STATE["runs"] == 1
