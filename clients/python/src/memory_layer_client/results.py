"""What every MCP tool answers: text a model can read and the API's JSON as structured content,
a line per memory, event or pair, and a page of a list with how to ask for the next one."""

from collections.abc import Callable
from typing import Any

from mcp_types import CallToolResult, TextContent

from memory_layer_client.transport import next_cursor
from memory_layer_client.types import Conflict, Event, Memory


def answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def memory_line(memory: Memory) -> str:
    status = memory["reviewStatus"]
    flags = [status, f"confidence {memory['confidence']:.2f}"]
    if not memory["active"]:
        flags.append("inactive")
    if memory.get("staleAt"):
        flags.append("flagged for re-review")
    if memory.get("supersededBy"):
        flags.append(f"superseded by #{memory.get('liveSuccessor') or memory['supersededBy']}")
    tags = f" tags: {', '.join(memory['tags'])}" if memory["tags"] else ""
    return f"#{memory['id']} [{memory['type']}] ({'; '.join(flags)}){tags}\n  {memory['content']}"


def page_of(page: Any, key: str, line: Callable[[Any], str], none: str) -> CallToolResult:
    """A page of a list: a line each (or ``none``) and how to ask for the next page."""
    found = page[key]
    cursor_next = next_cursor(page["next"])
    lines = [line(item) for item in found] or [none]
    if cursor_next:
        lines.append(f"More: call again with cursor={cursor_next!r}.")
    return answer("\n".join(lines), {key: found, "nextCursor": cursor_next})


def event_line(event: Event) -> str:
    line = f"{event['createdAt']} {event['action']} by {event['actor'].get('label', '?')}"
    line += f": {event['reason']}" if event["reason"] else ""
    return line + (f" (run {event['runId']})" if event["runId"] else "")


def pair_line(pair: Conflict) -> str:
    memories = " and ".join(f"#{i}" for i in pair["memoryIds"])
    decided = f", {pair['resolution']}" if pair.get("resolution") else ""
    return f"pair {pair['id']}: {pair['kind']} between {memories} ({pair['status']}{decided})"
