"""The MCP server, end to end, from the official TypeScript SDK (``@modelcontextprotocol/sdk``)
as well as the Python one: a Node script (ts_client.mjs) lists the tools and calls every one
over Streamable HTTP (/mcp on a live server) and over stdio (the client package's
``memory-layer-mcp``), and this test reads the effects back from the database.

The SDK checks each result's structured content against the tool's output schema, so a
schema the server advertises but does not keep fails here.

The SDK is installed once, with npm, into var/node (git-ignored). Without node and npm the
test is skipped, unless CI is set: CI must run it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowledge.models import MemoryPair
from memories.models import Memory, MemoryEvent, Run
from people.models import Conversation
from tests.mcp.test_mcp import MEMORY_LAYER_MCP, TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = Path(__file__).with_name("ts_client.mjs")


@pytest.fixture(scope="session")
def typescript_client(typescript_sdk: tuple[str, Path]) -> Callable[..., dict[str, Any]]:
    """Runs the script, next to an installed SDK (so its imports resolve as in any Node
    project), with the given arguments, and answers what it printed."""
    node, folder = typescript_sdk
    script = folder / SCRIPT.name
    shutil.copyfile(SCRIPT, script)

    def drive(**arguments: Any) -> dict[str, Any]:
        ran = subprocess.run(
            [node, str(script), json.dumps(arguments)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=folder,
        )
        assert ran.returncode == 0, f"the TypeScript client failed:\n{ran.stderr}"
        seen: dict[str, Any] = json.loads(ran.stdout)
        return seen

    return drive


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_typescript_sdk_calls_every_tool(
    transport, typescript_client, live_server, alpha, rest_of_the_api
):
    project, key = alpha
    cached, pair, _, _ = rest_of_the_api
    assert MEMORY_LAYER_MCP, "memory-layer-mcp is not installed (make install)"

    seen = typescript_client(
        transport=transport,
        url=live_server.url,
        key=key,
        command=MEMORY_LAYER_MCP,
        conflictId=pair.pk,
        changedMemoryId=cached.pk,
    )

    tools = {tool["name"]: tool for tool in seen["tools"]}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool["inputSchema"]["type"] == "object", name
        assert tool["inputSchema"]["additionalProperties"] is False, name
        assert tool["outputSchema"]["type"] == "object", name
    calls = seen["calls"]
    # Every tool was called, and none refused by the SDK (a result outside its output schema).
    assert set(calls) == TOOLS | {"unknown_argument"}
    refused = {name: call["thrown"] for name, call in calls.items() if "thrown" in call}
    assert not refused, refused
    for name in TOOLS:
        call = calls[name]
        assert not call["isError"], (name, call["content"])
        assert call["content"][0]["type"] == "text", name
        assert call["content"][0]["text"], name
        assert isinstance(call["structuredContent"], dict), name

    memory = Memory.objects.get(pk=seen["memoryId"])
    assert memory.project_id == project.pk
    assert memory.review_status == "pending"
    assert memory.source_run_id == seen["runId"]
    recall = calls["recall"]
    assert memory.pk in recall["structuredContent"]["ids"]
    line = f"- [warning #{memory.pk}] Never run migrations against the read replica."
    assert line in recall["content"][0]["text"]
    assert f"#{memory.pk}" in calls["search_memories"]["content"][0]["text"]
    assert calls["get_memory"]["structuredContent"]["content"] == memory.content
    assert memory.stale_ref == "flagged"
    assert MemoryEvent.objects.get(memory=memory, action="stale").reason == (
        "The replica was retired."
    )
    run_row = Run.objects.get(pk=seen["runId"])
    assert run_row.status == "succeeded"
    assert run_row.used_memory_ids == [memory.pk]
    outcome = calls["report_outcome"]["structuredContent"]
    # Flagged before the run succeeded: paused, it waits for a reviewer instead of gaining.
    assert outcome["paused"] == [memory.pk]
    assert memory.confidence == 0.5
    assert memory.pk not in [moved["id"] for moved in outcome["memories"]]

    assert calls["report_changes"]["structuredContent"]["memoryIds"] == [cached.pk]
    assert Memory.objects.get(pk=cached.pk).stale_at is not None
    listed = calls["list_conflicts"]["structuredContent"]["conflicts"]
    assert [p["id"] for p in listed] == [pair.pk]
    both = calls["get_conflict"]["content"][0]["text"]
    assert "Deploy on Tuesdays only." in both
    assert "Deploy on Fridays only." in both
    assert calls["resolve_conflict"]["structuredContent"]["status"] == "dismissed"
    assert MemoryPair.objects.get(pk=pair.pk).status == "dismissed"
    events = calls["memory_history"]["structuredContent"]["events"]
    assert "stale" in [e["action"] for e in events]

    listed = calls["get_preferences"]["structuredContent"]["preferences"]
    assert [(p["key"], p["value"]) for p in listed] == [("language", {"answers": "de"})]
    assert calls["set_preference"]["structuredContent"]["category"] == "style"
    related = calls["related"]["structuredContent"]["entities"]
    assert related[0]["name"] == "src/db"
    assert [m["id"] for m in related[0]["memories"]] == [memory.pk]

    conversation = Conversation.objects.get(pk=seen["conversationId"])
    assert (conversation.project_id, conversation.user_ref, conversation.message_count) == (
        project.pk,
        "user-7",
        2,
    )
    assert calls["get_conversation"]["structuredContent"]["messages"][1]["content"] == (
        "Noted: reports read the staging replica."
    )
    found = calls["search_conversations"]["structuredContent"]["conversations"]
    assert [c["id"] for c in found] == [conversation.pk]
    (proposed,) = calls["distill_conversation"]["structuredContent"]["memories"]
    assert Memory.objects.get(pk=proposed["id"]).content == (
        "Always use the staging replica for reports."
    )
    assert (proposed["reviewStatus"], proposed["active"]) == ("pending", False)

    guessed = calls["unknown_argument"]
    assert guessed["isError"]
    text = guessed["content"][0]["text"]
    assert "unknown argument `writeScope`; did you mean `write_scope`?" in text
