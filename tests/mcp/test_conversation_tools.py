"""The conversation tools over MCP (Streamable HTTP and stdio): save, append, read, search
and distill, their effect read back from the database; strict arguments down to each
message; another project's conversation does not exist for a key."""

from __future__ import annotations

from typing import Any

import pytest

from memories.models import Memory
from people import conversations
from people.conversations import NewMessage
from people.models import Conversation
from tests.factories import ProjectFactory
from tests.mcp.test_mcp import SESSIONS, run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def beta():
    return ProjectFactory(slug="beta")


@pytest.mark.parametrize("transport", SESSIONS)
def test_save_append_read_search_and_distill(transport, live_server, alpha):
    project, key = alpha
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            saved = await client.call_tool(
                "save_conversation",
                {
                    "agent_id": "helper",
                    "user_id": "user-9",
                    "title": "Reports",
                    "messages": [
                        {"role": "user", "content": "We use Metabase for every dashboard."},
                        {
                            "role": "assistant",
                            "content": "Understood.",
                            "sent_at": "2031-01-01T10:00:00Z",
                        },
                    ],
                },
            )
            conversation_id = saved.structured_content["id"]
            return {
                "saved": saved,
                "appended": await client.call_tool(
                    "append_messages",
                    {
                        "conversation_id": conversation_id,
                        "messages": [{"role": "user", "content": "Thanks!"}],
                    },
                ),
                "read": await client.call_tool(
                    "get_conversation", {"conversation_id": conversation_id, "limit": 2}
                ),
                "searched": await client.call_tool(
                    "search_conversations", {"query": "dashboards", "user_id": "user-9"}
                ),
                "listed": await client.call_tool("search_conversations", {"limit": 1}),
                "distilled": await client.call_tool(
                    "distill_conversation", {"conversation_id": conversation_id}
                ),
                "given": await client.call_tool(
                    "distill_conversation",
                    {"conversation_id": conversation_id, "learnings": ["Reports run nightly."]},
                ),
            }

    seen = run(scenario)

    for name, result in seen.items():
        assert not result.is_error, (name, result.content)
        assert result.content[0].text, name
    conversation = Conversation.objects.get(pk=seen["saved"].structured_content["id"])
    assert (conversation.project_id, conversation.agent_id, conversation.title) == (
        project.pk,
        "helper",
        "Reports",
    )
    assert [m.content for m in conversation.messages.order_by("position")] == [
        "We use Metabase for every dashboard.",
        "Understood.",
        "Thanks!",
    ]
    assert seen["appended"].structured_content["messages"][0]["position"] == 2
    read = seen["read"]
    assert read.structured_content["nextAfter"] == 1
    assert "[1] assistant: Understood." in read.content[0].text
    assert "call again with after=1" in read.content[0].text
    found = seen["searched"].structured_content["conversations"]
    assert [c["id"] for c in found] == [conversation.pk]
    assert found[0]["matches"][0]["content"] == "We use Metabase for every dashboard."
    assert [c["id"] for c in seen["listed"].structured_content["conversations"]] == [
        conversation.pk
    ]
    (proposed,) = seen["distilled"].structured_content["memories"]
    assert "not given to agents until approved" in seen["distilled"].content[0].text
    memory = Memory.objects.get(pk=proposed["id"])
    assert (memory.content, memory.review_status, memory.active) == (
        "We use Metabase for every dashboard.",
        "pending",
        False,
    )
    assert seen["given"].structured_content["memories"][0]["content"] == "Reports run nightly."


@pytest.mark.parametrize("transport", SESSIONS)
def test_arguments_are_strict_and_other_projects_conversations_do_not_exist(
    transport, live_server, alpha, beta
):
    _, key = alpha
    other = beta
    theirs, _ = conversations.conversation_save(
        project=other, user_id="u", agent_id="a", messages=[NewMessage("user", "Beta's plans")]
    )
    session = SESSIONS[transport]

    async def scenario() -> dict[str, Any]:
        async with session(live_server.url, key) as client:
            return {
                "extra": await client.call_tool(
                    "save_conversation",
                    {
                        "agent_id": "a",
                        "user_id": "u",
                        "messages": [{"role": "user", "content": "hi", "time": "now"}],
                    },
                ),
                "user": await client.call_tool(
                    "save_conversation",
                    {
                        "agent_id": "a",
                        "user_id": "a b",
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                ),
                "read": await client.call_tool("get_conversation", {"conversation_id": theirs.pk}),
                "append": await client.call_tool(
                    "append_messages",
                    {"conversation_id": theirs.pk, "messages": [{"role": "user", "content": "x"}]},
                ),
                "distill": await client.call_tool(
                    "distill_conversation", {"conversation_id": theirs.pk}
                ),
                "search": await client.call_tool("search_conversations", {"query": "plans"}),
            }

    seen = run(scenario)

    assert seen["extra"].is_error
    assert "time" in seen["extra"].content[0].text
    assert seen["user"].is_error
    assert "user_id" in seen["user"].content[0].text
    for name in ("read", "append", "distill"):
        assert seen[name].is_error, name
        assert f"No conversation {theirs.pk}" in seen[name].content[0].text
    assert seen["search"].structured_content["conversations"] == []
    assert Conversation.objects.count() == 1
    assert theirs.messages.count() == 1
