"""Helpers for tests that start real processes and servers: the project's own (gunicorn, a
Celery worker) and the endpoints it calls."""

from __future__ import annotations

import gzip
import http.client
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection


def require(available: bool, missing: str, *, strict: bool) -> None:
    """Go on when the real service a test needs is there; otherwise skip, or fail when
    ``strict`` (CI, or a run told to have it) says it must be there."""
    if available:
        return
    if strict:
        pytest.fail(f"{missing}: this run must have it.")
    pytest.skip(missing)


def database_url() -> str:
    """The test database as a ``DATABASE_URL`` for a process a test starts: over TCP, or
    through the Unix socket folder of the embedded server (as libpq's ``host`` option)."""
    database = connection.settings_dict
    user = quote(database["USER"], safe="")
    password = f":{quote(database['PASSWORD'], safe='')}" if database["PASSWORD"] else ""
    name = quote(database["NAME"], safe="")
    host = database["HOST"] or "127.0.0.1"
    if host.startswith("/"):
        return f"postgres://{user}{password}@/{name}?host={quote(host, safe='')}"
    port = f":{database['PORT']}" if database["PORT"] else ""
    return f"postgres://{user}{password}@{host}{port}/{name}"


@contextmanager
def json_endpoint(
    reply: Callable[[str, dict], tuple[int, dict]],
) -> Iterator[tuple[str, list[dict]]]:
    """A real local HTTP server for the OpenAI-compatible endpoints the service can call:
    each POST's JSON body (with its path and Authorization header) is kept in the list, and
    ``reply(path, body)`` gives the status and JSON answer. Yields its ``/v1`` base URL."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers["Authorization"], **body})
            status, answer = reply(self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def otlp_collector() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real local OTLP/HTTP endpoint, as a collector's port 4318 answers: each POST to
    ``/v1/traces`` is decoded as OpenTelemetry's ``ExportTraceServiceRequest`` and each of its
    spans kept as a dict (``name``, ``kind`` as ``SERVER``, ``CLIENT`` ..., ``trace_id``,
    ``span_id`` and ``parent_id`` in hex, ``attributes``, the ``resource``'s attributes).
    Yields its base URL (for ``OTEL_EXPORTER_OTLP_ENDPOINT``) and the list of spans."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    spans: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            export = ExportTraceServiceRequest.FromString(body)
            for batch in export.resource_spans:
                resource = {a.key: _any_value(a.value) for a in batch.resource.attributes}
                for scoped in batch.scope_spans:
                    spans.extend(
                        {
                            "name": span.name,
                            "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_id": span.parent_span_id.hex(),
                            "scope": scoped.scope.name,
                            "attributes": {a.key: _any_value(a.value) for a in span.attributes},
                            "resource": resource,
                        }
                        for span in scoped.spans
                    )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", spans
    finally:
        server.shutdown()
        server.server_close()


def _any_value(value: Any) -> Any:
    """An OTLP attribute value as plain Python."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_get(port: int, path: str, **headers: str) -> tuple[int, str, dict[str, str]]:
    """A GET on loopback: its status, body and headers."""
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        client.request("GET", path, headers=headers)
        response = client.getresponse()
        return response.status, response.read().decode(), dict(response.getheaders())
    finally:
        client.close()


@contextmanager
def gunicorn_server(
    var_dir: Path, workers: int = 3, *, start_script: bool = False, **env: str
) -> Iterator[int]:
    """The production web server (config/gunicorn.conf.py) on a free loopback port, with
    ``workers`` worker processes, against the test database; yields the port once it answers.
    With ``start_script``, through ``config/start-web`` as the container starts it
    (collectstatic into ``STATIC_ROOT``, default ``var_dir/static``; migrate; gunicorn)."""
    port = free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "SECRET_KEY": "server-test-only-secret-key-0123456789abcdefghijklmnop",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "PROMETHEUS_MULTIPROC_DIR": str(var_dir / "metrics"),
        "VAR_DIR": str(var_dir),
        "STATIC_ROOT": str(var_dir / "static"),
        "WEB_CONCURRENCY": str(workers),
        "BIND": f"127.0.0.1:{port}",
        "PYTHON": sys.executable,
        **env,
    }
    command = (
        [str(ROOT / "config" / "start-web")]
        if start_script
        else [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"]
    )
    server = subprocess.Popen(command, cwd=ROOT, env=environment, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                pytest.fail(f"The server exited ({server.returncode}) before it answered.")
            try:
                if http_get(port, "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("The server did not answer /healthz within 120 s.")
            time.sleep(0.05)
        yield port
    finally:
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
