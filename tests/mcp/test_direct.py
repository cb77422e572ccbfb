"""A plain MCP request goes to the SDK's handlers straight (mcp_http.direct): the answer is
the one the SDK's session manager gives, byte for byte, and what the direct path does not
take on is left to the manager."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from mcp_http import direct
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {
    "HTTP_ACCEPT": "application/json, text/event-stream",
    "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18",
}


def post(client: Any, key: str, body: Any, **headers: str) -> Any:
    return client.post(
        "/mcp",
        data=body if isinstance(body, str) else json.dumps(body),
        content_type=headers.pop("content_type", "application/json"),
        HTTP_AUTHORIZATION=f"Bearer {key}",
        **{**HEADERS, **headers},
    )


def call(number: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def both_ways(client: Any, key: str, body: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The answers of the direct path and of the manager to the same request."""
    answers = [post(client, key, body)]
    with monkeypatch.context() as patched:

        async def declined(*args: Any) -> None:
            return None

        patched.setattr(direct, "answer", declined)
        answers.append(post(client, key, body))
    return answers


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The session managers that answer a request from now on, one entry a request."""
    seen: list[object] = []
    original = StreamableHTTPSessionManager.handle_request

    async def counted(self: Any, *args: Any) -> None:
        seen.append(self)
        await original(self, *args)

    monkeypatch.setattr(StreamableHTTPSessionManager, "handle_request", counted)
    return seen


def test_the_direct_path_answers_what_the_manager_answers_byte_for_byte(
    client, alpha, monkeypatch, handled
):
    project, key = alpha
    memory = MemoryFactory(project=project, content="Totals are rounded once, at checkout.")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "two", "method": "ping"},
        call(3, "get_memory", {"memory_id": memory.pk}),
        call(4, "get_memory", {"memory_id": 10**9}),  # the API's 404, as a tool error
        call(5, "recall", {"writeScope": ["src/"]}),  # unknown argument
        call(6, "recall", {"budget": 0}),  # a value error
        call(7, "no_such_tool", {}),
        {"jsonrpc": "2.0", "id": 8, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": {}}},
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": 5}},
    ]
    for request in requests:
        handled.clear()
        straight, managed = both_ways(client, key, request, monkeypatch)
        assert handled == [handled[0]], request  # only the second went through the manager
        assert (straight.status_code, straight.content) == (managed.status_code, managed.content)
        assert straight["Content-Type"] == managed["Content-Type"] == "application/json"
        assert json.loads(straight.content)["id"] == request["id"]


def test_a_recall_answers_the_same_both_ways(client, alpha, monkeypatch):
    project, key = alpha
    MemoryFactory(project=project, content="Checkout totals are rounded once.", tags=["checkout"])
    answers = both_ways(client, key, call(1, "recall", {"intent": "checkout totals"}), monkeypatch)

    def without_timings(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: without_timings(v)
                for k, v in value.items()
                if k not in ("assemblyTimeMs", "latencyMs", "cacheHit")
            }
        if isinstance(value, list):
            return [without_timings(v) for v in value]
        return value

    straight, managed = (without_timings(json.loads(a.content)) for a in answers)
    assert straight == managed
    assert straight["result"]["structuredContent"]["ids"]


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, {}),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
        ([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], {}),  # a batch
        ("{not json", {}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"HTTP_ACCEPT": "text/plain"}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"content_type": "text/plain"}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "extra": 1}, {}),
        ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, {}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"HTTP_MCP_PROTOCOL_VERSION": "x"}),
        # What the manager's parser and its media-type check refuse, the direct path leaves
        # to it: a byte-order mark, a lone surrogate, a media type in capitals.
        ('\ufeff{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {}),
        ('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', {}),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"content_type": "Application/JSON"}),
    ],
)
def test_what_the_direct_path_does_not_take_on_goes_to_the_manager(
    client, alpha, handled, body, headers
):
    _, key = alpha
    post(client, key, body, **headers)
    assert len(handled) == 1


def test_a_failure_the_sdk_does_not_map_is_answered_as_the_manager_answers_it(
    client, alpha, monkeypatch
):
    from mcp.server.runner import ServerRunner

    _, key = alpha

    def broken(*args: Any) -> None:
        raise RuntimeError("shape of the answer")

    monkeypatch.setattr(ServerRunner, "_serialize", broken)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    straight, managed = both_ways(client, key, request, monkeypatch)
    assert (straight.status_code, straight.content) == (managed.status_code, managed.content)
    assert json.loads(straight.content)["error"]["code"] == 0
