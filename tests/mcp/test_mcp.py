"""The MCP server, end to end: the SDK's own client session over Streamable HTTP (/mcp on a
live server) and over stdio (the client package's ``memory-layer-mcp``, calling the live
server), every tool called and its effect read back from the database."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from knowledge.models import MemoryPair
from memories import services
from memories.models import Memory, MemoryEvent, Run
from people.models import Preference
from tests.factories import MemoryFactory, ProjectFactory, RunFactory

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "recall",
    "remember",
    "start_run",
    "report_outcome",
    "search_memories",
    "get_memory",
    "flag_memory",
    "report_changes",
    "list_conflicts",
    "get_conflict",
    "resolve_conflict",
    "memory_history",
    "related",
    "get_preferences",
    "set_preference",
    "save_conversation",
    "append_messages",
    "get_conversation",
    "search_conversations",
    "distill_conversation",
}
MEMORY_LAYER_MCP = shutil.which("memory-layer-mcp", path=str(Path(sys.executable).parent))


@pytest.fixture(autouse=True)
def _generous_limits(settings):
    settings.API_THROTTLE_RATE = "100000/min"


@asynccontextmanager
async def over_http(base_url: str, key: str) -> AsyncIterator[Client]:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as c:
        yield c


@asynccontextmanager
async def over_stdio(base_url: str, key: str) -> AsyncIterator[Client]:
    assert MEMORY_LAYER_MCP, "memory-layer-mcp is not installed (make install)"
    params = StdioServerParameters(
        command=MEMORY_LAYER_MCP, args=["--url", base_url, "--key", key], env={"PATH": ""}
    )
    async with Client(params) as c:
        yield c


SESSIONS: dict[str, Callable[[str, str], Any]] = {"http": over_http, "stdio": over_stdio}


def run(coroutine_function: Callable[[], Any]) -> Any:
    """Run a client session on a thread of its own (the browser tests' Playwright keeps an
    event loop running in this one)."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(anyio.run, coroutine_function).result()


@pytest.fixture
def alpha():
    project = ProjectFactory(slug="alpha")
    _, key = services.api_key_create(project=project, name="agent")
    return project, key


@pytest.fixture
def beta():
    project = ProjectFactory(slug="beta")
    _, key = services.api_key_create(project=project, name="agent")
    return project, key


@pytest.mark.parametrize("transport", SESSIONS)
def test_every_tool_works_and_writes_what_it_says(transport, live_server, alpha):
    project, key = alpha
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with session(live_server.url, key) as client:
            listed = (await client.list_tools()).tools
            seen["tools"] = {t.name: t for t in listed}
            started = await client.call_tool(
                "start_run", {"external_id": "task-1", "write_scope": ["src/db/**"]}
            )
            run_id = started.structured_content["id"]
            stored = await client.call_tool(
                "remember",
                {
                    "type": "warning",
                    "content": "Never run migrations against the read replica.",
                    "tags": ["src/db/**"],
                    "run_id": run_id,
                },
            )
            memory_id = stored.structured_content["id"]
            seen["recall"] = await client.call_tool(
                "recall",
                {
                    "intent": "add a migration",
                    "write_scope": ["src/db/models.py"],
                    "run_id": run_id,
                },
            )
            seen["search"] = await client.call_tool("search_memories", {"query": "replica"})
            seen["get"] = await client.call_tool("get_memory", {"memory_id": memory_id})
            seen["flag"] = await client.call_tool(
                "flag_memory", {"memory_id": memory_id, "reason": "The replica was retired."}
            )
            seen["outcome"] = await client.call_tool(
                "report_outcome",
                {"run_id": run_id, "outcome": "succeeded", "used_memory_ids": [memory_id]},
            )
            seen["related"] = await client.call_tool("related", {"name": "src/db"})
            seen.update(started=started, stored=stored, run_id=run_id, memory_id=memory_id)
        return seen

    seen = run(scenario)

    assert set(seen["tools"]) == TOOLS
    for tool in seen["tools"].values():
        assert len(tool.description or "") > 60, tool.name  # written for a model to read
        assert "\n " not in (tool.description or ""), tool.name  # no docstring indentation
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.output_schema, tool.name
        assert tool.output_schema["type"] == "object", tool.name
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
    for name in ("started", "stored", "recall", "search", "get", "flag", "outcome", "related"):
        result = seen[name]
        assert not result.is_error, (name, result.content)
        assert result.content[0].type == "text"
        assert result.content[0].text
        assert isinstance(result.structured_content, dict)

    memory = Memory.objects.get(pk=seen["memory_id"])
    assert memory.project_id == project.pk
    assert memory.review_status == "pending"  # as from any agent
    assert memory.source_run_id == seen["run_id"]
    recall = seen["recall"]
    assert recall.structured_content["ids"] == [memory.pk]
    line = f"- [warning #{memory.pk}] Never run migrations against the read replica."
    assert line in recall.content[0].text  # the id to name back, on the memory's own line
    assert f"#{memory.pk}" in seen["search"].content[0].text
    assert seen["get"].structured_content["content"] == memory.content
    assert memory.stale_at is not None
    assert memory.stale_ref == "flagged"
    assert MemoryEvent.objects.get(memory=memory, action="stale").reason == (
        "The replica was retired."
    )
    related = seen["related"].structured_content["entities"]
    assert related[0]["name"] == "src/db"  # the literal part of its tag's glob
    assert [m["id"] for m in related[0]["memories"]] == [memory.pk]
    run_row = Run.objects.get(pk=seen["run_id"])
    assert run_row.status == "succeeded"
    assert list(run_row.given.values_list("memory_id", "used")) == [(memory.pk, True)]
    assert run_row.used_memory_ids == [memory.pk]  # what the agent used, for the ranking
    # Flagged before the run succeeded: paused, it waits for a reviewer instead of gaining.
    assert memory.confidence == 0.5
    assert seen["outcome"].structured_content["memories"] == []
    assert seen["outcome"].structured_content["paused"] == [memory.pk]
    assert f"flagged for re-review until a reviewer approves: #{memory.pk}" in (
        seen["outcome"].content[0].text
    )


@pytest.mark.parametrize("transport", SESSIONS)
def test_the_rest_of_the_api_has_tools(transport, live_server, alpha, rest_of_the_api):
    """Changed files, conflicts and a memory's history: what the REST API can do, an agent
    can do through MCP, with the same key and roles."""
    _, key = alpha
    cached, pair, first, second = rest_of_the_api
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            return {
                "changes": await client.call_tool(
                    "report_changes", {"ref": "a1b2c3d", "paths": ["src/cache/client.py"]}
                ),
                "conflicts": await client.call_tool("list_conflicts", {}),
                "conflict": await client.call_tool("get_conflict", {"conflict_id": pair.pk}),
                "resolved": await client.call_tool(
                    "resolve_conflict",
                    {"conflict_id": pair.pk, "action": "dismiss", "reason": "Two services."},
                ),
                "history": await client.call_tool("memory_history", {"memory_id": cached.pk}),
            }

    seen = run(scenario)

    for name, result in seen.items():
        assert not result.is_error, (name, result.content)
        assert isinstance(result.structured_content, dict), name
    assert seen["changes"].structured_content["memoryIds"] == [cached.pk]
    assert Memory.objects.get(pk=cached.pk).stale_at is not None
    assert [p["id"] for p in seen["conflicts"].structured_content["conflicts"]] == [pair.pk]
    assert f"pair {pair.pk}: conflict between #{first.pk} and #{second.pk}" in (
        seen["conflicts"].content[0].text
    )
    both = seen["conflict"].content[0].text
    assert "Deploy on Tuesdays only." in both
    assert "Deploy on Fridays only." in both
    assert MemoryPair.objects.get(pk=pair.pk).status == "dismissed"
    assert seen["resolved"].structured_content["status"] == "dismissed"
    actions = [e["action"] for e in seen["history"].structured_content["events"]]
    assert "stale" in actions  # the changed file flagged it, and its history says so


@pytest.mark.parametrize("transport", SESSIONS)
def test_an_agent_keeps_a_users_preferences_and_recalls_with_them(transport, live_server, alpha):
    project, key = alpha
    MemoryFactory(project=project, content="Answers cite the file they change.")
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            return {
                "set": await client.call_tool(
                    "set_preference",
                    {"user_id": "ana@example.com", "key": "language", "value": "de"},
                ),
                "again": await client.call_tool(
                    "set_preference",
                    {
                        "user_id": "ana@example.com",
                        "key": "answer.length",
                        "value": {"max_sentences": 3},
                        "category": "style",
                    },
                ),
                "styles": await client.call_tool(
                    "get_preferences", {"user_id": "ana@example.com", "category": "style"}
                ),
                "recall": await client.call_tool(
                    "recall", {"intent": "answer", "user_id": "ana@example.com", "budget": 200}
                ),
                "bad": await client.call_tool(
                    "set_preference", {"user_id": "ana smith", "key": "language", "value": "de"}
                ),
                "guess": await client.call_tool("get_preferences", {"userId": "ana@example.com"}),
                "about": await client.call_tool("search_memories", {"about": "cite the file"}),
            }

    seen = run(scenario)

    for name in ("set", "again", "styles", "recall"):
        assert not seen[name].is_error, (name, seen[name].content)
    assert Preference.objects.get(project=project, key="language").value == "de"
    styles = seen["styles"].structured_content["preferences"]
    assert [(p["key"], p["value"]) for p in styles] == [("answer.length", {"max_sentences": 3})]
    text = seen["recall"].content[0].text
    assert text.startswith(
        '## Preferences\n- answer.length: {"max_sentences": 3}\n- language: de\n\n## Memories'
    )
    given = seen["recall"].structured_content["preferences"]
    assert [p["rank"] for p in given] == [1, 2]
    assert seen["bad"].is_error
    assert "user_id" in seen["bad"].content[0].text
    assert [m["content"] for m in seen["about"].structured_content["memories"]] == [
        "Answers cite the file they change."
    ]
    assert seen["guess"].is_error
    assert "did you mean `user_id`" in seen["guess"].content[0].text


@pytest.mark.parametrize("transport", SESSIONS)
def test_tools_refuse_arguments_they_do_not_understand(transport, live_server, alpha):
    """An argument guessed from the REST API's names is an error that names the right one,
    never silently dropped; a bad value says what to fix, not a library's internals."""
    project, key = alpha
    MemoryFactory(project=project, content="Views validate input.", tags=["src/api/**"])
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            return {
                "names": await client.call_tool(
                    "recall",
                    {"intent": "validate", "writeScope": ["src/api/views.py"], "tokenBudget": 100},
                ),
                "typo": await client.call_tool("get_memory", {"memory": 1}),
                "zero": await client.call_tool("recall", {"intent": "validate", "budget": 0}),
                "kind": await client.call_tool(
                    "remember", {"type": "rule", "content": "Always lint."}
                ),
                "missing": await client.call_tool("flag_memory", {"memory_id": 1}),
            }

    seen = run(scenario)

    for result in seen.values():
        assert result.is_error
        text = result.content[0].text
        for internal in ("validation error", "pydantic", "Arguments", "errors.pydantic.dev"):
            assert internal not in text, text
    names = seen["names"].content[0].text
    assert "unknown argument `tokenBudget`; did you mean `budget`?" in names
    assert "unknown argument `writeScope`; did you mean `write_scope`?" in names
    assert "Accepted arguments: intent, write_scope, entities, budget, run_id, user_id." in names
    assert "unknown argument `memory`; did you mean `memory_id`?" in seen["typo"].content[0].text
    assert "`budget` must be at least 1 (got 0)" in seen["zero"].content[0].text
    assert "`type` must be one of 'pattern', 'warning', 'learning' or 'context'" in (
        seen["kind"].content[0].text
    )
    assert "`reason` is required" in seen["missing"].content[0].text
    assert Memory.objects.filter(content="Always lint.").count() == 0


@pytest.mark.parametrize("transport", SESSIONS)
def test_another_projects_memories_do_not_exist_for_a_key(transport, live_server, alpha, beta):
    _, key = alpha
    other, _ = beta
    secret = MemoryFactory(project=other, content="Beta's deploy password rotates on Fridays.")
    other_run = RunFactory(project=other)
    before = Memory.objects.get(pk=secret.pk)
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            return {
                "get": await client.call_tool("get_memory", {"memory_id": secret.pk}),
                "flag": await client.call_tool(
                    "flag_memory", {"memory_id": secret.pk, "reason": "x"}
                ),
                "search": await client.call_tool("search_memories", {"query": "deploy password"}),
                "recall": await client.call_tool(
                    "recall", {"intent": "deploy password rotates Fridays", "budget": 4000}
                ),
                "recall_run": await client.call_tool(
                    "recall", {"intent": "deploy", "run_id": other_run.pk}
                ),
                "outcome": await client.call_tool(
                    "report_outcome", {"run_id": other_run.pk, "outcome": "failed"}
                ),
                "supersede": await client.call_tool(
                    "remember",
                    {
                        "type": "context",
                        "content": "Passwords never rotate.",
                        "supersedes": [secret.pk],
                    },
                ),
            }

    seen = run(scenario)

    for name in ("get", "flag", "recall_run", "outcome", "supersede"):
        assert seen[name].is_error, name
        assert "Traceback" not in seen[name].content[0].text
    assert "No memory" in seen["get"].content[0].text
    assert not seen["search"].is_error
    assert seen["search"].structured_content["memories"] == []
    assert seen["recall"].structured_content["ids"] == []
    assert "Beta" not in seen["recall"].content[0].text
    after = Memory.objects.get(pk=secret.pk)
    assert (after.stale_at, after.active, after.superseded_by_id, after.confidence) == (
        before.stale_at,
        before.active,
        before.superseded_by_id,
        before.confidence,
    )
    assert Run.objects.get(pk=other_run.pk).status == "running"
    assert not Memory.objects.filter(content="Passwords never rotate.").exists()


@pytest.mark.parametrize("transport", SESSIONS)
def test_a_tool_error_carries_the_apis_message(transport, live_server, alpha):
    _, key = alpha
    session = SESSIONS[transport]

    async def scenario() -> Any:
        async with session(live_server.url, key) as client:
            return await client.call_tool("remember", {"type": "warning", "content": "   "})

    result = run(scenario)

    assert result.is_error
    text = result.content[0].text
    assert "content: Must contain a visible character." in text  # what to fix, in the API's words
    assert "Traceback" not in text
    assert "File " not in text
    assert Memory.objects.count() == 0


def test_a_missing_or_revoked_key_is_refused_over_http(live_server, alpha):
    project, key = alpha
    assert httpx.post(f"{live_server.url}/mcp", json={}).status_code == 401
    assert (
        httpx.post(
            f"{live_server.url}/mcp", json={}, headers={"Authorization": "Bearer nope"}
        ).status_code
        == 401
    )

    async def scenario() -> None:
        async with over_http(live_server.url, key) as client:
            await client.list_tools()

    run(scenario)  # the key works
    services.api_key_revoke(api_key=project.api_keys.get())

    refused = httpx.post(
        f"{live_server.url}/mcp", json={}, headers={"Authorization": f"Bearer {key}"}
    )
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == (
        "Unknown or revoked API key: send the project's API key as 'Authorization: Bearer"
        " <key>' (a current key of the project, as made by manage.py create_api_key)."
    )
    assert refused.headers["WWW-Authenticate"] == 'ApiKey realm="memory-layer"'
    missing = httpx.post(f"{live_server.url}/mcp", json={})
    assert missing.json()["error"]["message"] == (
        "No API key was sent: send the project's API key as 'Authorization: Bearer <key>'."
    )
    with pytest.raises(Exception, match="unhandled errors"):  # the SDK's client gives up
        run(scenario)


def test_the_stateless_server_offers_no_event_stream_and_no_session(live_server, alpha):
    _, key = alpha
    headers = {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-06-18"}
    stream = httpx.get(f"{live_server.url}/mcp", headers={**headers, "Accept": "text/event-stream"})
    assert stream.status_code == 405
    assert httpx.delete(f"{live_server.url}/mcp", headers=headers).status_code == 405


def test_a_revoked_key_gets_the_apis_message_over_stdio(live_server, alpha):
    project, key = alpha
    services.api_key_revoke(api_key=project.api_keys.get())

    async def scenario() -> Any:
        async with over_stdio(live_server.url, key) as client:
            return await client.call_tool("search_memories", {})

    result = run(scenario)
    assert result.is_error
    assert "Unknown or revoked API key" in result.content[0].text


def test_tool_calls_are_in_the_metrics_by_name_with_latency(live_server, alpha, settings):
    _, key = alpha
    settings.METRICS_TOKEN = "scrape-" + "x" * 30

    async def scenario() -> None:
        async with over_http(live_server.url, key) as client:
            await client.call_tool("recall", {"intent": "anything"})
            await client.call_tool("get_memory", {"memory_id": 999_999})

    run(scenario)
    metrics = httpx.get(
        f"{live_server.url}/metrics",
        headers={"Authorization": f"Bearer {settings.METRICS_TOKEN}"},
    ).text
    assert 'mcp_tool_calls_total{outcome="ok",tool="recall"}' in metrics
    assert 'mcp_tool_calls_total{outcome="error",tool="get_memory"}' in metrics
    assert 'mcp_tool_duration_seconds_count{tool="recall"}' in metrics


def test_tools_refuse_a_disguised_secret_and_store_nothing(live_server, alpha):
    project, key = alpha
    memory = MemoryFactory(project=project, content="The replica is at db-2.")
    events = MemoryEvent.objects.count()
    hidden = "ghp_Xb7kQ2mP9w\u200bR4tY6uI8oL1zC3vN5aS0dF7gH2"  # a zero width space inside
    split = "AKIAIOSF ODNN7EXAMPLE"  # an AWS access key split by one space

    async def scenario() -> dict[str, Any]:
        async with over_http(live_server.url, key) as client:
            return {
                ("remember", "AWS Access Key"): await client.call_tool(
                    "remember", {"type": "warning", "content": f"Use {split} for S3."}
                ),
                ("start_run", "GitHub Token"): await client.call_tool(
                    "start_run", {"external_id": "t-1", "task_title": f"deploy with {hidden}"}
                ),
                ("flag_memory", "GitHub Token"): await client.call_tool(
                    "flag_memory", {"memory_id": memory.pk, "reason": f"the token is {hidden}"}
                ),
            }

    for (tool, kind), result in run(scenario).items():
        assert result.is_error, tool
        text = result.content[0].text
        assert kind in text, (tool, text)
        assert "ghp_" not in text, (tool, text)
        assert "ODNN7EXAMPLE" not in text, (tool, text)
    assert list(Memory.objects.values_list("pk", flat=True)) == [memory.pk]
    assert not Run.objects.exists()
    assert Memory.objects.get(pk=memory.pk).stale_at is None
    assert MemoryEvent.objects.count() == events
