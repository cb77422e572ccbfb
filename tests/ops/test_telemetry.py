"""Traces (ops.telemetry): with an OTLP endpoint named, a request reaches it as one trace,
with the context path's spans and the database's statements; without one, nothing is set."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured

from memories import services
from memories.services import uses
from ops import telemetry
from tests.conftest import USES_REDIS
from tests.support import (
    ROOT,
    database_url,
    gunicorn_server,
    http_get,
    otlp_collector,
    require,
)

Spans = list[dict[str, Any]]
CONTEXT_STAGES = ("context.candidates", "context.rank", "context.pack", "context.render")
BROKER = os.environ.get("TEST_CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")
# Nothing of the machine's own OpenTelemetry settings reaches a process a test starts.
UNSET = {name: "" for name in os.environ if name.startswith("OTEL_")}


def _wait_for(spans: Spans, found: Callable[[Spans], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not found(list(spans)):
        if time.monotonic() > deadline:
            names = sorted({span["name"] for span in spans})
            pytest.fail(f"Not received within {seconds} s; received: {names}")
        time.sleep(0.05)


def _named(spans: Spans, name: str) -> list[dict[str, Any]]:
    return [span for span in spans if span["name"] == name]


def _post(port: int, path: str, body: dict, token: str) -> tuple[int, dict]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        client.request("POST", path, json.dumps(body), headers)
        response = client.getresponse()
        return response.status, json.loads(response.read())
    finally:
        client.close()


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_a_context_request_reaches_an_otlp_endpoint_as_one_trace(tmp_path, project, make_memory):
    memory = make_memory(
        project=project, content="Run the migrations before the tests.", tags=["src/db/*"]
    )
    _, key = services.api_key_create(project=project, name="traced")
    body = {"tokenBudget": 400, "responseReserve": 100, "writeScope": ["src/db/models.py"]}
    path = f"/api/projects/{project.slug}/context"
    with (
        otlp_collector() as (endpoint, spans),
        gunicorn_server(
            tmp_path,
            workers=1,
            **UNSET,
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_SERVICE_NAME="memory-layer-under-test",
            OTEL_BSP_SCHEDULE_DELAY="200",
        ) as port,
    ):
        sent = time.monotonic()
        status, answer = _post(port, path, body, key)
        assert status == 200, answer
        assert [item["id"] for item in answer["items"]] == [memory.pk]
        _wait_for(spans, lambda got: bool(_named(got, "context.render")), seconds=5)
        assert time.monotonic() - sent < 5, "a trace reaches the endpoint within seconds"
        # The same request again: the cache answers it before validation.
        status, again = _post(port, path, body, key)
        assert status == 200
        assert again["metadata"]["cacheHit"] is True
        _wait_for(spans, lambda got: bool(_named(got, "context.replay")), seconds=5)
        # The work after each response (the access counts) was sent too.
        _wait_for(spans, lambda got: sum("access_count" in _statement(s) for s in got) == 2)
        # A query string is not kept (the access log keeps none either).
        listed = f"/api/projects/{project.slug}/memories?tag=kept-out-of-traces"
        assert http_get(port, listed, Authorization=f"Bearer {key}")[0] == 200
        _wait_for(spans, lambda got: any("memories" in str(s["attributes"]) for s in got))
        assert "kept-out-of-traces" not in str(spans)
        # Probes are not traced.
        assert not [s for s in spans if "healthz" in str(s["attributes"])]

    (assemble,) = _named(spans, "context.assemble")
    trace_id = assemble["trace_id"]
    servers = [s for s in spans if s["kind"] == "SERVER"]
    (server,) = [s for s in servers if s["trace_id"] == trace_id]
    assert assemble["parent_id"] == server["span_id"]
    assert server["resource"]["service.name"] == "memory-layer-under-test"
    assert server["attributes"]["memory.project"] == project.slug
    assert server["attributes"]["memory.project_id"] == project.pk
    assert server["attributes"]["http.status_code"] == 200
    assert "context" in str(server["attributes"].get("http.route"))
    assert assemble["attributes"] == {
        "memory.project": project.slug,
        "memory.project_id": project.pk,
        "context.token_budget": 300,
        "context.tokens_used": answer["metadata"]["totalTokens"],
        "context.candidates": 1,
        "context.items_chosen": 1,
        "context.cache_hit": False,
    }
    stages = {name: _named(spans, name) for name in CONTEXT_STAGES}
    assert all(len(found) == 1 for found in stages.values()), stages
    for (stage,) in stages.values():
        assert (stage["trace_id"], stage["parent_id"]) == (trace_id, assemble["span_id"])
    assert stages["context.candidates"][0]["attributes"]["context.candidates"] == 1
    assert stages["context.pack"][0]["attributes"] == {
        "context.token_budget": 300,
        "context.tokens_used": answer["metadata"]["totalTokens"],
        "context.items_chosen": 1,
    }
    # The database's statements, in the request's trace: the candidate query under its stage
    # (on this thread or a helper's), and the access count written after the response.
    statements = [s for s in spans if s["attributes"].get("db.system") == "postgresql"]
    assert statements
    # None is a trace of its own (a helper thread's query, the work after a response).
    assert not [_statement(s) for s in statements if not s["parent_id"]]
    mine = [s for s in statements if s["trace_id"] == trace_id]
    candidates_id = stages["context.candidates"][0]["span_id"]
    assert any(
        s["parent_id"] == candidates_id and "project_memories" in _statement(s) for s in mine
    ), [_statement(s)[:80] for s in mine]
    (counted,) = [s for s in mine if "access_count" in _statement(s)]
    assert counted["kind"] == "CLIENT"
    assert counted["parent_id"] == server["span_id"]
    # No parameter is recorded with a statement.
    assert not [s for s in statements if "Run the migrations" in str(s["attributes"])]

    # The first request looked in the cache before validation too, and missed; the second
    # was answered there.
    (missed,) = [s for s in _named(spans, "context.replay") if s["trace_id"] == trace_id]
    assert missed["parent_id"] == server["span_id"]
    assert missed["attributes"]["context.cache_hit"] is False
    (replay,) = [s for s in _named(spans, "context.replay") if s["trace_id"] != trace_id]
    assert replay["attributes"] == {
        "memory.project": project.slug,
        "memory.project_id": project.pk,
        "context.cache_hit": True,
        "context.items_chosen": 1,
    }
    (second,) = [s for s in servers if s["trace_id"] == replay["trace_id"]]
    assert second["attributes"]["memory.project"] == project.slug
    assert second["trace_id"] != trace_id
    # Each request's access counts, in its own trace.
    assert any(
        s["trace_id"] == second["trace_id"] and "access_count" in _statement(s) for s in statements
    )


def _statement(span: dict[str, Any]) -> str:
    attributes = span["attributes"]
    return str(attributes.get("db.statement") or attributes.get("db.query.text") or "")


@pytest.mark.transactional
@pytest.mark.django_db(transaction=True)
def test_a_worker_traces_its_task_with_its_redis_commands_and_statements(
    project, make_memory, buffered
):
    _require_redis()
    memory = make_memory(project=project)
    uses.record([memory.pk])  # noted in Redis, for the task to write
    queue = f"test-traces-{os.getpid()}"
    with otlp_collector() as (endpoint, spans):
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
             "--without-heartbeat", "--without-mingle", "--without-gossip",
             "--loglevel", "WARNING", "--queues", queue],
            cwd=ROOT,
            env={
                **os.environ,
                **UNSET,
                "CELERY_BROKER_URL": BROKER,
                "DATABASE_URL": database_url(),
                "MEMORY_USES_URL": USES_REDIS,
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "200",
            },
        )  # fmt: skip
        try:
            # Sent by a traced process of the service, inside a span of its own.
            sent = subprocess.run(
                [sys.executable, "-c", _SEND % {"broker": BROKER, "queue": queue}],
                cwd=ROOT,
                env={
                    **os.environ,
                    **UNSET,
                    "DATABASE_URL": database_url(),
                    "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                },
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert sent.returncode == 0, sent.stderr
            _wait_for(
                spans,
                lambda got: (
                    bool(_named(got, "run/policies.flush_memory_uses"))
                    and any("access_count" in _statement(s) for s in got)
                ),
                seconds=60,
            )
        finally:
            worker.terminate()
            worker.wait(timeout=30)

    (task,) = _named(spans, "run/policies.flush_memory_uses")
    assert task["kind"] == "CONSUMER"
    # The run continues the trace of the process that sent it.
    (sender,) = _named(spans, "test.sender")
    (published,) = _named(spans, "apply_async/policies.flush_memory_uses")
    assert published["kind"] == "PRODUCER"
    assert published["parent_id"] == sender["span_id"]
    assert (task["trace_id"], task["parent_id"]) == (sender["trace_id"], published["span_id"])
    assert task["resource"]["service.name"] == "memory-layer"
    inside = [s for s in spans if s["trace_id"] == task["trace_id"] and s is not task]
    assert any(s["attributes"].get("db.system") == "redis" for s in inside), inside
    assert any("access_count" in _statement(s) for s in inside)
    memory.refresh_from_db()
    assert memory.access_count == 1


_SEND = """
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from ops import telemetry
assert telemetry.configure()
from opentelemetry import trace
from config.celery import app
with trace.get_tracer("tests").start_as_current_span("test.sender"):
    with app.connection_for_write("%(broker)s") as broker:
        app.send_task("policies.flush_memory_uses", queue="%(queue)s", connection=broker)
telemetry.shutdown()
"""


def _require_redis() -> None:
    try:
        reachable = bool(redis.Redis.from_url(BROKER, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        reachable = False
    missing = f"No Redis at {BROKER} (start one, or set TEST_CELERY_BROKER_URL)"
    require(reachable, missing, strict=bool(os.environ.get("CI")))


# --- without an endpoint, and the settings --------------------------------------------------

_PROBE = """
import json, sys
import config.wsgi
import psycopg
from django.conf import settings
from opentelemetry import trace
print(json.dumps({
    "sdk": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk.trace")),
    "instrumentations": sorted(
        m for m in sys.modules if m.startswith("opentelemetry.instrumentation.")
    ),
    "provider": type(trace.get_tracer_provider()).__name__,
    "middleware": [m for m in settings.MIDDLEWARE if "opentelemetry" in m],
    "connect": type(psycopg.connect).__name__,
}))
"""


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SERVICE_NAME": "memory-layer", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"},
    ],
    ids=["nothing", "no-endpoint", "sdk-disabled"],
)
def test_without_an_endpoint_nothing_is_loaded_set_or_wrapped(env):
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        env={**os.environ, **UNSET, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout.splitlines()[-1])
    assert state == {
        "sdk": [],
        "instrumentations": [],
        "provider": "ProxyTracerProvider",
        "middleware": [],
        "connect": "method",
    }


def test_an_endpoint_is_what_turns_traces_on():
    assert not telemetry.enabled({})
    assert not telemetry.enabled({"OTEL_SERVICE_NAME": "memory-layer"})
    assert telemetry.enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert telemetry.enabled({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    for off in ("true", "TRUE", " true "):
        assert not telemetry.enabled(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": off}
        )


def test_the_protocol_is_http_protobuf_unless_another_is_named(monkeypatch):
    for name in UNSET:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = telemetry.exporter({})
    assert isinstance(exporter, OTLPSpanExporter)
    assert exporter._endpoint == "http://collector:4318/v1/traces"
    assert isinstance(
        telemetry.exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "HTTP/protobuf"}), OTLPSpanExporter
    )
    if importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is None:
        with pytest.raises(ImproperlyConfigured, match="opentelemetry-exporter-otlp-proto-grpc"):
            telemetry.exporter({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"})
    with pytest.raises(ImproperlyConfigured, match="'http/json' is not supported here"):
        telemetry.exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
