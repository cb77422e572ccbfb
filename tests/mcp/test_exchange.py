"""How an MCP request is answered (mcp_http.exchange): on a loop whose session manager runs
already, made once and lent request after request, and the tools' API calls made on a
shallow stack with no loop running."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

import httpx2 as httpx
import pytest
from django.core.cache import caches
from django.db import connections
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from api.context import ContextView
from mcp_http import exchange
from memories import services
from tests.factories import MemoryFactory, ProjectFactory

# The tools' API calls run on the loop's own thread, with a database connection of its own.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token():
    project = ProjectFactory(slug="alpha")
    MemoryFactory(project=project, content="Checkout totals are rounded once.", tags=["checkout"])
    return services.api_key_create(project=project, name="agent")[1]


def recall(client: Any, token: str, number: int) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"intent": "checkout totals"}},
    }
    answer = client.post(
        "/mcp",
        data=json.dumps(message),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
    )
    assert answer.status_code == 200, answer.content
    result = json.loads(answer.content)["result"]
    assert not result.get("isError"), result
    return result


def counting(monkeypatch: pytest.MonkeyPatch, cls: type, method: str) -> list[object]:
    """The instances of ``cls`` on which ``method`` is called from now on."""
    seen: list[object] = []
    original = getattr(cls, method)

    def counted(self: object, *args: Any, **kwargs: Any) -> Any:
        seen.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, method, counted)
    return seen


def test_one_running_session_manager_answers_request_after_request(client, token, monkeypatch):
    managers = counting(monkeypatch, StreamableHTTPSessionManager, "__init__")
    started = counting(monkeypatch, StreamableHTTPSessionManager, "run")
    handled = counting(monkeypatch, StreamableHTTPSessionManager, "handle_request")
    http_clients = counting(monkeypatch, httpx.AsyncClient, "__init__")
    exchange.loops.close()  # none lent before (whatever ran first)
    loops_before = exchange.loops.made

    for number in range(1, 6):
        assert recall(client, token, number)["structuredContent"]["ids"]

    # Made and started once, for the first request; a plain call goes to the SDK's handlers
    # straight (mcp_http.direct), not through the manager's per-request transport.
    assert len(managers) == len(started) == 1
    assert handled == []
    assert exchange.loops.made == loops_before + 1
    # The tools' API calls go to Django in process: no HTTP client is made for them.
    assert http_clients == []


def test_the_api_answers_tools_on_a_shallow_stack_with_no_loop_running(client, token, monkeypatch):
    """The call runs on the loop's thread while the loop stands still: Django's ORM may run
    (no loop is running on the thread), and neither the ``/mcp`` request's Django stack nor
    the SDK's frames are under it (CPython 3.11 mapped and unmapped frame-stack chunks under
    that depth, on every call of the assembly's inner loops)."""
    calls: list[dict[str, Any]] = []
    post = ContextView.post

    def watched(self: ContextView, request: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        frames = []
        frame = sys._getframe()
        while frame is not None:
            frames.append(frame.f_code.co_filename)
            frame = frame.f_back
        calls.append(
            {
                "thread": threading.current_thread(),
                "loop running": running,
                "files": frames,
                "cache": caches["default"],
                "connection": connections["default"],
            }
        )
        return post(self, request, *args, **kwargs)

    monkeypatch.setattr(ContextView, "post", watched)

    recall(client, token, 1)
    recall(client, token, 2)

    assert len(calls) == 2
    assert calls[0]["thread"] is calls[1]["thread"]  # the loop's, lent again
    # In the thread's own context: what Django keeps per context (the cache and its
    # connections) is made once, not again for each request.
    assert calls[0]["cache"] is calls[1]["cache"]
    assert calls[0]["thread"] is not threading.current_thread()
    # On the request's own database connection, lent for the exchange and taken back.
    assert calls[0]["connection"] is calls[1]["connection"] is connections["default"]
    assert connections["default"].allow_thread_sharing is False
    for call in calls:
        assert not call["loop running"]
        files = call["files"]
        assert not [f for f in files if f.endswith("mcp_http/views.py")], files
        assert not [f for f in files if "/site-packages/mcp/" in f], files
        assert not [f for f in files if "/django/test/" in f], files  # this thread's stack


def test_a_tools_api_call_goes_through_the_middleware_a_call_needs_only(settings):
    from mcp_http.transport import CallHandler

    settings.MIDDLEWARE = [
        "ops.requestid.RequestIdMiddleware",
        "ops.middleware.MetricsMiddleware",
        "django.middleware.security.SecurityMiddleware",
        "api.middleware.ReleaseSlotMiddleware",
        "memories.replicas.ReplicaReadsMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
    ]
    handler = CallHandler()
    handler.load_middleware()
    assert handler.middleware == [
        "ops.requestid.RequestIdMiddleware",
        "api.middleware.ReleaseSlotMiddleware",
        "memories.replicas.ReplicaReadsMiddleware",
    ]
    # Where a replica is chosen is a view hook: it is kept.
    assert len(handler._view_middleware) == 1


def test_the_loops_own_connections_are_checked_at_each_exchange(monkeypatch):
    """A connection the loop's thread opened itself (for an alias the request had not
    opened: a replica's, say) is checked as a request's start checks its own: one that
    failed and no longer answers is closed, not used again."""
    loop = exchange.loops.take()
    try:

        def broken_connection() -> Any:
            connection = connections["default"]
            connection.ensure_connection()
            connection.errors_occurred = True
            monkeypatch.setattr(connection, "is_usable", lambda: False)
            return connection

        own = loop._thread.submit(broken_connection).result()
        assert own.connection is not None
        scope = {
            "type": "http",
            "method": "POST",
            "headers": [(b"content-type", b"application/json"), (b"accept", b"application/json")],
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        answered: list[Any] = []
        # From a thread that has opened no connection: nothing is lent.
        request = threading.Thread(target=lambda: answered.append(loop.answer(scope, body, None)))
        request.start()
        request.join()
        assert answered
        assert answered[0][0] == 200
        assert own.connection is None
    finally:
        exchange.loops.give_back(loop)
