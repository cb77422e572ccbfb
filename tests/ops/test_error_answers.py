"""Every error under /api/ and /mcp answers JSON in the error shape, through the real web
server (gunicorn with config/gunicorn.conf.py, started here): oversized bodies, request lines
and headers, malformed requests, unknown paths and wrong methods."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from contextlib import suppress

import pytest

from memories import services
from tests.factories import ProjectFactory
from tests.support import gunicorn_server

# The test database is made for marked tests only; the data the server reads is the module
# fixture's (committed), each test's own transaction holds nothing.
pytestmark = pytest.mark.django_db

API_LIMIT = 65536  # API_MAX_BODY_BYTES's default


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    """One server for the module, and a project's key (committed, so that it sees it)."""
    with django_db_blocker.unblock():
        project = ProjectFactory()
        _, key = services.api_key_create(project=project, name="errors")
        try:
            with gunicorn_server(tmp_path_factory.mktemp("errors"), workers=1) as port:
                yield port, project.slug, key
        finally:
            project.delete()


def _exchange(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """One request as raw bytes (so that nothing client-side limits it); the status, headers
    and body of the answer. The body goes from a thread while the answer is read, as a client
    does that reads an early answer (the server may answer before it has read the body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:

        def send() -> None:
            # The server may answer and close before it has taken the whole body.
            with suppress(OSError):
                connection.sendall(head.encode("latin-1") + body)

        sender = threading.Thread(target=send)
        sender.start()
        answer = http.client.HTTPResponse(connection)
        answer.begin()
        content = answer.read()
        sender.join(timeout=20)
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, content


def _error(answer: tuple[int, dict[str, str], bytes]) -> tuple[int, str, str]:
    status, headers, body = answer
    assert headers["content-type"].startswith("application/json"), (status, headers, body)
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message", "fields"}
    return status, error["code"], error["message"]


def _request(method: str, path: str, *headers: str, length: int | None = None) -> str:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return "\r\n".join(lines) + "\r\n\r\n"


@pytest.mark.parametrize("where", ["api", "mcp"])
def test_a_body_over_the_limit_is_a_413_naming_the_limit(server, where):
    port, slug, key = server
    path = f"/api/projects/{slug}/memories" if where == "api" else "/mcp"
    body = b"x" * (3 * 1024 * 1024)
    head = _request(
        "POST",
        path,
        f"Authorization: Bearer {key}",
        "Content-Type: application/json",
        length=len(body),
    )
    status, code, message = _error(_exchange(port, head, body))
    assert (status, code) == (413, "too_large")
    assert f"{API_LIMIT:,} bytes" in message


def test_a_body_over_the_limit_is_a_413_on_a_page_too(server):
    port, _, _ = server
    body = b"username=" + b"x" * (3 * 1024 * 1024)
    head = _request(
        "POST",
        "/accounts/login/",
        "Content-Type: application/x-www-form-urlencoded",
        # With a CSRF cookie, the CSRF check reads the form (without one it refuses first).
        "Cookie: csrftoken=" + "a" * 32,
        length=len(body),
    )
    status, _, page = _exchange(port, head, body)
    assert status == 413
    assert b"2,621,440 bytes" in page  # DATA_UPLOAD_MAX_MEMORY_SIZE, Django's default


def test_a_request_line_over_the_limit_is_a_414_in_json(server):
    port, _, _ = server
    head = _request("GET", "/api/projects/?q=" + "a" * 9000)
    status, code, message = _error(_exchange(port, head))
    assert (status, code) == (414, "request_line_too_long")
    assert "8,190 bytes" in message


@pytest.mark.parametrize(
    ("headers", "limit"),
    [
        (["X-Big: " + "a" * 20_000], "8,190 bytes"),
        ([f"X-Many-{n}: a" for n in range(120)], "100 headers"),
    ],
)
def test_headers_over_the_limits_are_a_431_in_json(server, headers, limit):
    port, _, _ = server
    status, code, message = _error(_exchange(port, _request("GET", "/api/projects/", *headers)))
    assert (status, code) == (431, "headers_too_large")
    assert limit in message


def test_a_malformed_request_is_a_400_in_json(server):
    port, _, _ = server
    status, code, _ = _error(_exchange(port, "GET /api/projects/ HTTP/1.1 extra\r\n\r\n"))
    assert (status, code) == (400, "malformed_request")


@pytest.mark.parametrize("path", ["/mcp/anything", "/api/nothing/here"])
def test_unknown_paths_are_a_404_in_json(server, path):
    port, _, key = server
    head = _request("GET", path, f"Authorization: Bearer {key}")
    assert _error(_exchange(port, head))[:2] == (404, "not_found")


@pytest.mark.parametrize("path", ["/mcp", "/api/projects/"])
def test_a_wrong_method_is_a_405_in_json(server, path):
    port, _, key = server
    head = _request("PUT", path, f"Authorization: Bearer {key}", length=0)
    assert _error(_exchange(port, head))[:2] == (405, "method_not_allowed")


def test_a_host_the_server_does_not_serve_is_a_400_in_json(server):
    port, _, _ = server
    head = "GET /api/projects/ HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n"
    assert _error(_exchange(port, head))[:2] == (400, "bad_request")
