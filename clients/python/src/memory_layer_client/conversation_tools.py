"""The MCP tools of conversations: save one, append to it, read it, list or search them, and
distill one into memories for review. Registered by ``tools.build_server`` with its ``tool``
decorator, so they follow the same conventions: strict arguments, an output schema, the
API's JSON as structured content and text a model can read."""

from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired

from mcp_types import CallToolResult, TextContent
from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.transport import next_cursor
from memory_layer_client.types import (
    Conversation,
    ConversationDetail,
    ConversationFound,
    ConversationsFound,
    Distilled,
    MessagesAppended,
)


@with_config(ConfigDict(extra="forbid"))
class MessageArgument(TypedDict):
    role: Annotated[
        Literal["user", "assistant", "system", "tool"], Field(description="Who said it.")
    ]
    content: Annotated[str, Field(min_length=1, max_length=8000, description="What was said.")]
    sent_at: NotRequired[
        Annotated[str, Field(description="When, ISO 8601 with a time zone; default: now.")]
    ]


MessagesArgument = Annotated[
    list[MessageArgument],
    Field(min_length=1, max_length=100, description="1 to 100 messages, in the order said."),
]
ConversationId = Annotated[int, Field(ge=1, description="The conversation's id.")]
UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@+\-]*$",
        description="The user, as your system names them, e.g. 'user-42'.",
    ),
]


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def _messages(messages: list[MessageArgument]) -> list[dict[str, Any]]:
    return [
        {"role": m["role"], "content": m["content"], "sentAt": m.get("sent_at")} for m in messages
    ]


def _head(conversation: Conversation) -> str:
    title = f" {conversation['title']!r}" if conversation["title"] else ""
    return (
        f"Conversation #{conversation['id']}{title} of {conversation['userId']} with"
        f" {conversation['agentId']}: {conversation['messageCount']} messages, the last at"
        f" {conversation['lastMessageAt']}"
    )


def _said(message: Any) -> str:
    return f"  [{message['position']}] {message['role']}: {message['content']}"


def _found(conversation: ConversationFound) -> str:
    lines = [_head(conversation)]
    if "score" in conversation:
        lines[0] += f" (score {conversation['score']:.2f})"
    lines += [_said(match) for match in conversation.get("matches", [])]
    return "\n".join(lines)


def register(tool: Callable[..., Callable[[Any], Any]]) -> None:
    """Register the conversation tools with ``tool`` (tools.build_server's decorator)."""

    @tool("save_conversation", read_only=False, output=ConversationDetail)
    async def save_conversation(
        client: AsyncMemoryLayerClient,
        agent_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@+\-]*$",
                description="You, the agent, e.g. 'support-bot'.",
            ),
        ],
        user_id: UserId,
        messages: MessagesArgument,
        title: Annotated[str, Field(max_length=200, description="A title, if any.")] = "",
    ) -> CallToolResult:
        """Save a conversation you had with a user, with its messages, so that it can be
        read back, searched and resumed later (kept for the project's retention, 30 days by
        default). Secrets in messages are refused or redacted. Returns its id: pass it to
        append_messages as the conversation goes on."""
        saved = await client.save_conversation(agent_id, user_id, _messages(messages), title=title)
        text = f"Saved. {_head(saved)}. Append with conversation_id={saved['id']}."
        return _result(text, dict(saved))

    @tool("append_messages", read_only=False, output=MessagesAppended)
    async def append_messages(
        client: AsyncMemoryLayerClient,
        conversation_id: ConversationId,
        messages: MessagesArgument,
    ) -> CallToolResult:
        """Add messages to a saved conversation (from save_conversation), after its last one,
        as the conversation goes on."""
        appended = await client.append_messages(conversation_id, _messages(messages))
        positions = [m["position"] for m in appended["messages"]]
        text = (
            f"Appended {len(positions)} messages at positions {positions[0]} to"
            f" {positions[-1]}. {_head(appended['conversation'])}."
        )
        return _result(text, dict(appended))

    @tool("get_conversation", read_only=True, output=ConversationDetail)
    async def get_conversation(
        client: AsyncMemoryLayerClient,
        conversation_id: ConversationId,
        after: Annotated[
            int | None,
            Field(ge=-1, description="Messages after this position (from nextAfter)."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most messages to give.")] = 200,
    ) -> CallToolResult:
        """A saved conversation and its messages in order, one line each, to pick up where
        it left off."""
        found = await client.get_conversation(conversation_id, after=after, limit=limit)
        lines = [_head(found), *(_said(m) for m in found["messages"])]
        if found["nextAfter"] is not None:
            lines.append(f"More: call again with after={found['nextAfter']}.")
        return _result("\n".join(lines), dict(found))

    @tool("search_conversations", read_only=True, output=ConversationsFound)
    async def search_conversations(
        client: AsyncMemoryLayerClient,
        query: Annotated[
            str,
            Field(
                max_length=500,
                description="Words or a description of what was said (found by words and by"
                " meaning). Leave empty to list conversations, the most recent first.",
            ),
        ] = "",
        user_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=200,
                pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@+\-]*$",
                description="Only this user's conversations.",
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most conversations.")] = 10,
        cursor: Annotated[
            str | None, Field(description="Listing only: a previous answer's nextCursor.")
        ] = None,
    ) -> CallToolResult:
        """Find past conversations: with a query, those that match it best, each with its
        best matching messages; without one, the most recent first (of one user, if named)."""
        if query:
            page = await client.search_conversations(query, user_id=user_id, limit=limit)
        else:
            page = await client.list_conversations(user_id=user_id, limit=limit, cursor=cursor)
        found = page["conversations"]
        cursor_next = next_cursor(page["next"])
        lines = [_found(c) for c in found] or ["No conversation matched."]
        if cursor_next:
            lines.append(f"More: call again with cursor={cursor_next!r}.")
        return _result("\n".join(lines), {"conversations": found, "nextCursor": cursor_next})

    @tool("distill_conversation", read_only=False, output=Distilled)
    async def distill_conversation(
        client: AsyncMemoryLayerClient,
        conversation_id: ConversationId,
        learnings: Annotated[
            list[str] | None,
            Field(
                max_length=20,
                description="What the conversation taught, one self-contained statement each."
                " Leave out to take the user's sentences that read as lasting instructions or"
                " facts ('Always ...', 'We use ...').",
            ),
        ] = None,
    ) -> CallToolResult:
        """Propose what a conversation taught as memories of this project. They wait for a
        reviewer, and no agent is given them before one approves them."""
        result = await client.distill_conversation(conversation_id, learnings)
        lines = [
            f"Proposed #{m['id']} (pending review, not given to agents until approved):"
            f" {m['content']}"
            for m in result["memories"]
        ] or ["Nothing new to propose."]
        lines += [f"Already known: {text}" for text in result["known"]]
        return _result("\n".join(lines), dict(result))
