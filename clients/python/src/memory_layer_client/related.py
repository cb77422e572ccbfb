"""The MCP tool ``related``: what the project's memories connect to a name, or to what one
memory names (memory_layer_client.tools registers it like the others)."""

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from memory_layer_client import errors
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.types import EntityDetail

# A memory's entities asked for at most (each one a call).
MEMORY_ENTITIES = 5
SHOWN_MEMORIES = 5


def _text(entity: EntityDetail) -> str:
    lines = [f"{entity['name']} ({entity['kind']}, entity {entity['id']})"]
    if entity["neighbours"]:
        lines.append("  related:")
        for n in entity["neighbours"]:
            hop = f", {n['depth']} hops" if n["depth"] > 1 else ""
            lines.append(
                f"  - {n['name']} ({n['kind']}): {n['type']}, weight {n['weight']}{hop}"
                + (" (set by a reviewer)" if n["source"] == "reviewer" else "")
            )
    else:
        lines.append("  related: nothing yet")
    shown = entity["memories"][:SHOWN_MEMORIES]
    if shown:
        lines.append("  memories:")
        lines += [f"  - #{m['id']} [{m['type']}] {m['content']}" for m in shown]
    if len(entity["memories"]) > len(shown):
        lines.append(f"  ... and {len(entity['memories']) - len(shown)} more memories")
    return "\n".join(lines)


async def related(
    client: AsyncMemoryLayerClient,
    name: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=200,
            description="A name memories mention: a class, function, file, module, package"
            " or product, e.g. 'RetryQueue' or 'src/billing/queue.py'.",
        ),
    ] = None,
    memory_id: Annotated[
        int | None,
        Field(ge=1, description="Or a memory's id: the names it mentions, and theirs."),
    ] = None,
    depth: Annotated[
        int, Field(ge=1, le=3, description="Hops of related names (1 to 3; 20 per hop).")
    ] = 1,
) -> CallToolResult:
    """What the project's memories connect to a name (or to the names one memory mentions):
    the related names, heaviest first, with how many memories mention both and how they are
    related (defined_in: a code name and its file; imports; mentions), and the memories
    that mention it. Use it to find what else to read or change before touching something."""
    if (name is None) == (memory_id is None):
        raise ToolError("Give either `name` (an entity's name) or `memory_id`, not both.")
    if name is not None:
        page = await client.list_entities(q=name, limit=20)
        wanted = name.strip().lower()
        exact = [e for e in page["entities"] if e["name"].lower() == wanted]
        chosen = exact[:1] or page["entities"][:1]
        if not chosen:
            raise errors.NotFound(
                f"No memory of this project mentions a name like {name!r}: try a part of it"
                " (e.g. 'queue' for 'RetryQueue') or search_memories."
            )
    else:
        assert memory_id is not None
        page = await client.list_entities(memory_id=memory_id, limit=MEMORY_ENTITIES)
        chosen = page["entities"]
        if not chosen:
            try:
                await client.get_memory(memory_id)
            except errors.NotFound:
                raise errors.NotFound(f"No memory #{memory_id} in this project.") from None
            text = f"Memory #{memory_id} mentions no code name, path, package or marked word."
            return CallToolResult(
                content=[TextContent(type="text", text=text)],
                structured_content={"entities": []},
            )
    details = [await client.get_entity(entity["id"], depth=depth) for entity in chosen]
    text = "\n\n".join(_text(detail) for detail in details)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"entities": [dict(d) for d in details]},
    )
