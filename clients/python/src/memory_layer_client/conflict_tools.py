"""The MCP tools of pairs of memories that contradict or repeat each other: list them, read
one side by side, decide one (memory_layer_client.tools registers them like the others)."""

from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from memory_layer_client import errors
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.results import answer, memory_line, page_of, pair_line


async def list_conflicts(
    client: AsyncMemoryLayerClient,
    kind: Annotated[
        Literal["conflict", "repeat"] | None,
        Field(description="Only contradictions (conflict) or restatements (repeat)."),
    ] = None,
    status: Annotated[
        Literal["open", "resolved", "dismissed"] | None,
        Field(description="Only pairs in this state (default: open)."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Most pairs to list.")] = 20,
    cursor: Annotated[
        str | None, Field(description="From a previous answer's nextCursor: the next page.")
    ] = None,
) -> CallToolResult:
    """Pairs of this project's memories found to contradict or repeat each other,
    waiting for a decision (get_conflict shows both sides; resolve_conflict decides)."""
    page = await client.list_conflicts(kind=kind, status=status, limit=limit, cursor=cursor)
    return page_of(page, "conflicts", pair_line, "No pair matched.")


async def get_conflict(
    client: AsyncMemoryLayerClient,
    conflict_id: Annotated[int, Field(ge=1, description="The pair's id (list_conflicts).")],
) -> CallToolResult:
    """One pair of memories that contradict or repeat each other, with both memories in
    full, so you can judge them side by side."""
    pair = await client.get_conflict(conflict_id)
    lines = [pair_line(pair)]
    for memory_id in pair["memoryIds"]:
        try:
            lines.append(memory_line(await client.get_memory(memory_id)))
        except errors.NotFound:
            lines.append(f"#{memory_id}: not readable with this key (a global memory?)")
    return answer("\n".join(lines), dict(pair))


async def resolve_conflict(
    client: AsyncMemoryLayerClient,
    conflict_id: Annotated[int, Field(ge=1, description="The pair's id (list_conflicts).")],
    action: Annotated[
        Literal["keep", "merge", "dismiss", "reject"],
        Field(
            description="keep memory_id (the other is superseded by it), merge (one new"
            " memory says both; content optional), dismiss (no conflict: keep both),"
            " reject memory_id (reviewers only)."
        ),
    ],
    memory_id: Annotated[
        int | None, Field(ge=1, description="For keep and reject: which memory.")
    ] = None,
    content: Annotated[
        str | None, Field(min_length=1, description="For merge: the merged statement.")
    ] = None,
    reason: Annotated[
        str, Field(max_length=500, description="Why, for the memories' history.")
    ] = "",
) -> CallToolResult:
    """Decide a pair as a reviewer would on the review page. With an agent's key this
    works only where no approved or global memory changes; otherwise the answer says a
    reviewer must decide."""
    options: dict[str, Any] = {"memoryId": memory_id, "reason": reason}
    if content is not None:
        options["content"] = content
    pair = await client.resolve_conflict(conflict_id, action, **options)
    return answer(f"Decided: {pair_line(pair)}", dict(pair))
