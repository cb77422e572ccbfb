"""The typed REST client against the real service (and, for retries, a real HTTP server
that answers 503 first)."""

from __future__ import annotations

import inspect
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from memory_layer_client import (
    AsyncMemoryLayerClient,
    BadRequest,
    MemoryLayerClient,
    NotFound,
    Unauthorized,
    Unavailable,
    next_cursor,
)
from memory_layer_client.endpoints import Endpoints


def unique(text: str) -> str:
    return f"{text} ({uuid.uuid4().hex[:8]})"


def test_the_sync_client_has_every_endpoint() -> None:
    endpoints = {
        name
        for name, member in inspect.getmembers(Endpoints, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert endpoints  # the API is there
    missing = {name for name in endpoints if not callable(getattr(MemoryLayerClient, name, None))}
    assert not missing


def test_a_run_through_the_sync_client(service) -> None:
    with MemoryLayerClient(service.url, service.key) as memory:
        assert [p["slug"] for p in memory.projects()] == ["alpha"]
        run = memory.start_run(unique("sync-run"), write_scope=["src/billing/**"])
        content = unique("Invoices are rounded half-even, never half-up")
        created = memory.create_memory(
            "pattern", content, tags=["src/billing/**"], run_id=run["id"]
        )
        assert created["reviewStatus"] == "pending"
        assert created["sourceRunId"] == run["id"]
        assert memory.get_memory(created["id"])["content"] == content

        context = memory.context(
            500, write_scope=["src/billing/invoice.py"], intent="rounding", run_id=run["id"]
        )
        assert created["id"] in [item["id"] for item in context["items"]]
        assert f"- [pattern] {content}" in context["text"]

        outcome = memory.report_outcome(run["id"], "succeeded")
        assert outcome["recorded"] is True
        moved = {m["id"]: m["confidence"] for m in outcome["memories"]}
        assert moved[created["id"]] > created["confidence"]
        assert memory.get_memory(created["id"])["confidence"] == moved[created["id"]]
        again = memory.report_outcome(run["id"], "succeeded")
        assert again["recorded"] is False

        flagged = memory.flag_memory(created["id"], "the rounding rule changed in 2031")
        assert flagged["staleRef"] == "flagged"
        events = memory.memory_history(created["id"])["events"]
        assert {e["action"] for e in events} >= {"created", "stale"}


def test_search_and_paging(service) -> None:
    word = f"zebra{uuid.uuid4().hex[:6]}"
    with MemoryLayerClient(service.url, service.key) as memory:
        ids = [
            memory.create_memory("learning", f"The {word} cache holds {n} entries")["id"]
            for n in range(3)
        ]
        first = memory.list_memories(q=word, limit=2, ordering="createdAt")
        assert [m["id"] for m in first["memories"]] == ids[:2]
        rest = memory.list_memories(
            q=word, limit=2, ordering="createdAt", cursor=next_cursor(first["next"])
        )
        assert [m["id"] for m in rest["memories"]] == ids[2:]
        assert next_cursor(rest["next"]) is None


def test_errors_carry_the_apis_message_and_fields(service) -> None:
    with MemoryLayerClient(service.url, service.key) as memory:
        with pytest.raises(BadRequest) as bad:
            memory.create_memory("pattern", "   ")
        assert bad.value.status == 400
        assert "content" in bad.value.fields
        assert "visible character" in str(bad.value)
        with pytest.raises(NotFound):
            memory.get_memory(987_654_321)
    stranger = MemoryLayerClient(service.url, "ml_not_a_key")
    with stranger, pytest.raises(Unauthorized, match="Unknown or revoked API key"):
        stranger.project()


def test_another_projects_memory_is_not_found(service) -> None:
    with MemoryLayerClient(service.url, service.key) as alpha:
        secret = alpha.create_memory("context", unique("Alpha's staging host is st-7"))
    with MemoryLayerClient(service.url, service.other_key) as beta:
        with pytest.raises(NotFound):
            beta.get_memory(secret["id"])
        with pytest.raises(NotFound):
            beta.flag_memory(secret["id"], "looks wrong")
        assert beta.list_memories(q="staging host")["memories"] == []


def test_a_retried_create_is_made_once(service) -> None:
    key = uuid.uuid4().hex
    content = unique("Migrations run in a transaction")
    with MemoryLayerClient(service.url, service.key) as memory:
        first = memory.create_memory("pattern", content, idempotency_key=key)
        second = memory.create_memory("pattern", content, idempotency_key=key)
        assert first["id"] == second["id"]
        assert len(memory.list_memories(q=f'"{content}"')["memories"]) == 1


@pytest.mark.anyio
async def test_the_async_client(service) -> None:
    async with AsyncMemoryLayerClient(service.url, service.key) as memory:
        run = await memory.start_run(unique("async-run"))
        created = await memory.create_memory(
            "warning", unique("Never call the payments sandbox from CI"), run_id=run["id"]
        )
        fetched = await memory.get_memory(created["id"])
        assert fetched["id"] == created["id"]
        detail = await memory.get_run(run["id"])
        assert detail["status"] == "running"


def test_settings_come_from_the_environment(service, monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_LAYER_URL", service.url)
    monkeypatch.setenv("MEMORY_LAYER_KEY", service.key)
    with MemoryLayerClient() as memory:
        assert memory.project()["slug"] == "alpha"
    monkeypatch.delenv("MEMORY_LAYER_KEY")
    with pytest.raises(ValueError, match="MEMORY_LAYER_KEY"):
        MemoryLayerClient()


class _Flaky(BaseHTTPRequestHandler):
    """Answers the first ``failures`` requests with 503 and Retry-After, then 201."""

    failures = 1
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(dict(self.headers))
        if len(self.seen) <= self.failures:
            body = {"error": {"code": "unavailable", "message": "Try again.", "fields": {}}}
            self._answer(503, body, {"Retry-After": "0"})
        else:
            self._answer(201, {"id": 7, "reviewStatus": "pending"}, {})

    def _answer(self, status: int, body: object, headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[tuple[str, type[_Flaky]]]:
    handler = type("Handler", (_Flaky,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()


def test_a_503_is_retried_after_retry_after_with_the_same_idempotency_key(flaky) -> None:
    url, handler = flaky
    handler.failures = 2
    with MemoryLayerClient(url, "k", project="p", retries=3) as memory:
        assert memory.create_memory("pattern", "x")["id"] == 7
    keys = {seen["Idempotency-Key"] for seen in handler.seen}
    assert len(handler.seen) == 3
    assert len(keys) == 1


def test_retries_run_out_with_the_services_message(flaky) -> None:
    url, handler = flaky
    handler.failures = 5
    memory = MemoryLayerClient(url, "k", project="p", retries=2)
    with memory, pytest.raises(Unavailable, match=r"Try again\.") as error:
        memory.create_memory("pattern", "x")
    assert error.value.retry_after == 0.0
    assert len(handler.seen) == 3


def test_conversations_through_the_sync_client(service) -> None:
    user = f"user-{uuid.uuid4().hex[:6]}"
    with MemoryLayerClient(service.url, service.key) as memory:
        saved = memory.save_conversation(
            "helper",
            user,
            [{"role": "user", "content": "Always sign commits with the team key."}],
            title="Commits",
        )
        assert (saved["userId"], saved["title"], saved["messageCount"]) == (user, "Commits", 1)
        appended = memory.append_messages(
            saved["id"],
            [{"role": "assistant", "content": "Will do.", "sentAt": "2031-01-01T00:00:00Z"}],
        )
        assert [m["position"] for m in appended["messages"]] == [1]
        page = memory.get_conversation(saved["id"], limit=1)
        assert ([m["content"] for m in page["messages"]], page["nextAfter"]) == (
            ["Always sign commits with the team key."],
            0,
        )
        listed = memory.list_conversations(user_id=user)
        assert [c["id"] for c in listed["conversations"]] == [saved["id"]]
        found = memory.search_conversations("sign commits", user_id=user)
        assert found["conversations"][0]["matches"][0]["position"] == 0
        proposed = memory.distill_conversation(saved["id"])
        (learned,) = proposed["memories"]
        assert (learned["reviewStatus"], learned["active"]) == ("pending", False)
        again = memory.distill_conversation(saved["id"], ["Always sign commits with the team key."])
        assert (again["memories"], again["known"]) == (
            [],
            ["Always sign commits with the team key."],
        )
        with pytest.raises(BadRequest) as refused:
            memory.save_conversation(
                "helper", "no spaces please", [{"role": "user", "content": "x"}]
            )
        assert "userId" in str(refused.value)
    with MemoryLayerClient(service.url, service.other_key) as other, pytest.raises(NotFound):
        other.get_conversation(saved["id"])
