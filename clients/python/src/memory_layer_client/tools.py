"""The MCP tools of the Memory Layer, on the official SDK (``mcp.server.MCPServer``).

One set of tools serves both transports: ``memory-layer-mcp`` (stdio, this package) calls a
service over HTTP, and the service's own ``/mcp`` endpoint calls itself in process. Each
tool is a REST call through ``AsyncMemoryLayerClient``, so it has exactly the API's
permissions, isolation and validation; the API's error message comes back as the tool's
error (what to fix), never a stack trace.

Each result is text a model can read plus the API's JSON as structured content.
"""

import inspect
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from memory_layer_client import conflict_tools, conversation_tools, errors, preference_tools
from memory_layer_client.arguments import INVALID, strict, without_client
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.related import related
from memory_layer_client.results import answer, event_line, memory_line, page_of
from memory_layer_client.types import (
    Changes,
    Conflict,
    ConflictsFound,
    CreatedMemory,
    History,
    MemoriesFound,
    Memory,
    OutcomeResult,
    Preference,
    Preferences,
    Recalled,
    Related,
    Run,
)

ClientFor = Callable[[], AsyncMemoryLayerClient]
# Told of every call: the tool's name, its seconds, and "ok" or "error".
Observer = Callable[[str, float, str], None]

INSTRUCTIONS = """\
Long-term memory of this project, kept honest by human review. Before working on a task,
call `recall` with the paths you will change and what you intend to do: it returns the
memories that matter (patterns, warnings, learnings, context), best first, within a token
budget. Call `start_run` first if you will report how the task went: pass its run id to
`recall` and `remember`, then `report_outcome`, so that memories that helped gain
confidence and those that misled lose it. `remember` what the next agent should know (it
waits for review). If a memory is wrong or out of date, `flag_memory` it with the reason."""

MemoryTypeName = Literal["pattern", "warning", "learning", "context"]


def build_server(client_for: ClientFor, *, observe: Observer | None = None) -> MCPServer:
    """The MCP server of the tools below; ``client_for()`` gives the client of the current
    request (the caller's key and project)."""
    tools: list[Tool] = []

    def tool(
        name: str, *, read_only: bool, output: Any, idempotent: bool = False
    ) -> Callable[[Any], Any]:
        """Register ``fn`` as tool ``name``: strict arguments (see StrictArguments), the
        answer's structured content declared by ``output`` (a TypedDict) and checked."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            async def run(**arguments: Any) -> CallToolResult:
                started = time.perf_counter()
                outcome = "error"
                try:
                    if INVALID in arguments:
                        raise ToolError(arguments[INVALID])
                    result: CallToolResult = await fn(client_for(), **arguments)
                    outcome = "ok"
                    return result
                except errors.MemoryLayerError as error:
                    raise ToolError(str(error)) from error
                finally:
                    if observe is not None:
                        observe(name, time.perf_counter() - started, outcome)

            run.__signature__ = without_client(fn)  # type: ignore[attr-defined]
            run.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "client"}
            made = Tool.from_function(
                run,
                name=name,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=ToolAnnotations(
                    read_only_hint=read_only,
                    destructive_hint=False,
                    idempotent_hint=idempotent or read_only,
                ),
                structured_output=False,
            )
            tools.append(strict(made, output))
            return fn

        return register

    @tool("recall", read_only=True, output=Recalled)
    async def recall(
        client: AsyncMemoryLayerClient,
        intent: Annotated[
            str, Field(description="What you are about to do, in a sentence or two.")
        ] = "",
        write_scope: Annotated[
            list[str],
            Field(description="Paths or globs you will change, e.g. ['src/api/views.py']."),
        ] = [],  # noqa: B006 (the SDK reads the default into the schema; never mutated)
        entities: Annotated[
            list[str],
            Field(description="Names the task is about: functions, services, settings."),
        ] = [],  # noqa: B006
        budget: Annotated[
            int, Field(ge=1, le=200_000, description="Most tokens the memories may take.")
        ] = 2000,
        run_id: Annotated[
            int | None, Field(description="The run from start_run, so it is credited.")
        ] = None,
        user_id: Annotated[
            preference_tools.UserId | None,
            Field(description="The user you work for: their preferences come first."),
        ] = None,
    ) -> CallToolResult:
        """The project's memories that matter for a task, best first, within a token budget.

        Matches come first: memories about the paths in write_scope, then by relevance to
        the intent and entities, confidence and recency. The answer is a '## Memories'
        section, one '- [type #id] content' line each: name those ids to flag_memory,
        get_memory, remember(supersedes=...) and report_outcome(used_memory_ids=...). With
        user_id, a '## Preferences' section of what that user prefers comes first."""
        context = await client.context(
            budget,
            write_scope=write_scope,
            intent=intent,
            entities=entities,
            run_id=run_id,
            user_id=user_id,
            ids=True,
        )
        ids = [item["id"] for item in context["items"]]
        meta = context["metadata"]
        lines = [context["text"].rstrip() or "## Memories\n(none matched)"]
        left_out = len(context["dropped"])
        lines.append(
            f"{meta.get('totalTokens', 0)} of {meta.get('budget', budget)} tokens;"
            f" {left_out} left out (budget, limit, repeats, conflicts, low confidence)."
        )
        lines += [f"Warning {w['code']}: {w['message']}" for w in meta.get("warnings", [])]
        structured = {
            "text": context["text"],
            "ids": ids,
            "items": context["items"],
            "dropped": context["dropped"],
            "preferences": context.get("preferences", []),  # an older service has none
            "metadata": meta,
            "runId": run_id,
        }
        return answer("\n".join(lines), structured)

    @tool("remember", read_only=False, output=CreatedMemory)
    async def remember(
        client: AsyncMemoryLayerClient,
        type: Annotated[
            MemoryTypeName,
            Field(
                description="pattern (how things are done here), warning (a trap to avoid),"
                " learning (found out while working), context (background facts)."
            ),
        ],
        content: Annotated[
            str, Field(description="One self-contained statement a later agent can act on.")
        ],
        tags: Annotated[
            list[str],
            Field(description="Paths, globs or keywords it is about, e.g. ['src/db/**']."),
        ] = [],  # noqa: B006
        supersedes: Annotated[
            list[int], Field(description="Ids of memories this one replaces (out of date).")
        ] = [],  # noqa: B006
        run_id: Annotated[int | None, Field(description="The run that learned it.")] = None,
    ) -> CallToolResult:
        """Store a memory for this project. It waits for human review like any agent's.

        If it repeats or contradicts a memory, the answer says which (a reviewer decides).
        An approved memory it supersedes is replaced only once a reviewer agrees."""
        created = await client.create_memory(
            type, content, tags=tags, supersedes=supersedes, run_id=run_id
        )
        lines = [
            f"Stored memory #{created['id']} ({created['reviewStatus']}, confidence"
            f" {created['confidence']:.2f}): waits for review."
        ]
        for pair in created.get("conflicts", []):
            other = [i for i in pair["memoryIds"] if i != created["id"]]
            lines.append(
                f"Possible {pair['kind']} with #{other[0] if other else '?'}"
                f" (pair {pair['id']}): a reviewer will decide."
            )
        superseded = created.get("superseded") or {"done": [], "waiting": []}
        if superseded["done"]:
            lines.append("Superseded now: " + ", ".join(f"#{i}" for i in superseded["done"]))
        if superseded["waiting"]:
            lines.append(
                "Supersede waits for a reviewer: "
                + ", ".join(f"#{i}" for i in superseded["waiting"])
            )
        return answer("\n".join(lines), dict(created))

    @tool("start_run", read_only=False, idempotent=True, output=Run)
    async def start_run(
        client: AsyncMemoryLayerClient,
        external_id: Annotated[
            str, Field(description="Your id for this task or session, e.g. 'fix-login-2031'.")
        ],
        task_title: Annotated[str, Field(description="What the task is, in a line.")] = "",
        write_scope: Annotated[
            list[str], Field(description="Paths or globs the task will change.")
        ] = [],  # noqa: B006
    ) -> CallToolResult:
        """Start a run: the memories recalled for it are remembered, and report_outcome
        then moves their confidence. Starting again with the same external_id gives the
        same run."""
        run = await client.start_run(external_id, task_title=task_title, write_scope=write_scope)
        text = (
            f"Run #{run['id']} ({run['status']}). Pass run_id={run['id']} to recall and"
            " remember, and call report_outcome when the task is done."
        )
        return answer(text, dict(run))

    @tool("report_outcome", read_only=False, idempotent=True, output=OutcomeResult)
    async def report_outcome(
        client: AsyncMemoryLayerClient,
        run_id: Annotated[int, Field(description="The run from start_run.")],
        outcome: Annotated[Literal["succeeded", "failed"], Field(description="How the task went.")],
        used_memory_ids: Annotated[
            list[int] | None,
            Field(
                description="The ids of the recalled memories you actually used (recall lists"
                " them): ranking learns to put such memories first. Leave out if unsure."
            ),
        ] = None,
    ) -> CallToolResult:
        """Report how a run went: the memories it was given gain confidence when it
        succeeded (except those flagged for re-review) and lose it when it failed. Name the
        memories you actually used, so that recall ranks such memories first next time.
        Reporting twice changes nothing."""
        result = await client.report_outcome(run_id, outcome, used_memory_ids=used_memory_ids)
        if not result["recorded"]:
            text = f"Run #{run_id} already had its outcome: nothing changed."
        elif result["memories"]:
            moved = ", ".join(
                f"#{m['id']} now {m['confidence']:.2f}" + ("" if m["active"] else " (inactive)")
                for m in result["memories"]
            )
            text = f"Run #{run_id} {outcome}. Confidence moved: {moved}."
        else:
            text = f"Run #{run_id} {outcome}. It was given no memory whose confidence moves."
        if paused := result.get("paused"):
            ids = ", ".join(f"#{memory_id}" for memory_id in paused)
            text += f" Unchanged, flagged for re-review until a reviewer approves: {ids}."
        return answer(text, dict(result))

    @tool("search_memories", read_only=True, output=MemoriesFound)
    async def search_memories(
        client: AsyncMemoryLayerClient,
        query: Annotated[
            str,
            Field(description='Words to find (web-search syntax: "exact phrase", -not, or).'),
        ] = "",
        about: Annotated[
            str | None,
            Field(
                max_length=200,
                description="Only memories that mention this name, e.g. 'RetryQueue' or"
                " 'billing/invoice.py': what do we know about it?",
            ),
        ] = None,
        type: Annotated[MemoryTypeName | None, Field(description="Only this type.")] = None,
        tags: Annotated[list[str], Field(description="Only memories with any of these tags.")] = [],  # noqa: B006
        review_status: Annotated[
            Literal["pending", "approved", "rejected"] | None,
            Field(description="Only memories in this review state."),
        ] = None,
        include_inactive: Annotated[
            bool, Field(description="Search inactive (rejected, archived) memories instead.")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=100, description="Most memories to list.")] = 20,
        cursor: Annotated[
            str | None, Field(description="From a previous answer's nextCursor: the next page.")
        ] = None,
    ) -> CallToolResult:
        """Search and filter this project's memories by their full text, the names they
        mention (about), type, tags and review state, newest first."""
        page = await client.list_memories(
            q=query or None,
            about=about,
            type=type,
            tags=tags or None,
            review_status=review_status,
            active=not include_inactive,
            ordering="-createdAt",
            limit=limit,
            cursor=cursor,
        )
        return page_of(page, "memories", memory_line, "No memory matched.")

    @tool("get_memory", read_only=True, output=Memory)
    async def get_memory(
        client: AsyncMemoryLayerClient,
        memory_id: Annotated[int, Field(ge=1, description="The memory's id, e.g. 42 for #42.")],
    ) -> CallToolResult:
        """One memory in full: its content, tags, review state, confidence, and whether it
        is flagged or superseded. Global memories (shared by all projects) too."""
        try:
            memory = await client.get_memory(memory_id)
        except errors.NotFound:
            try:
                memory = await client.get_global_memory(memory_id)
            except errors.NotFound:
                raise errors.NotFound(
                    f"No memory #{memory_id} in this project or among the global memories."
                ) from None
        return answer(memory_line(memory), dict(memory))

    @tool("flag_memory", read_only=False, idempotent=True, output=Memory)
    async def flag_memory(
        client: AsyncMemoryLayerClient,
        memory_id: Annotated[int, Field(ge=1, description="The memory that looks wrong.")],
        reason: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1000,
                description="What is wrong or stale, with the evidence, for the reviewer.",
            ),
        ],
    ) -> CallToolResult:
        """Tell the reviewers a memory looks wrong or out of date. It is flagged for
        re-review with your reason; a reviewer decides. To replace it with what is true
        now, remember the new fact with supersedes=[its id] as well."""
        memory = await client.flag_memory(memory_id, reason)
        text = f"Flagged #{memory['id']} for re-review: {reason}"
        return answer(text, dict(memory))

    @tool("report_changes", read_only=False, idempotent=True, output=Changes)
    async def report_changes(
        client: AsyncMemoryLayerClient,
        ref: Annotated[
            str,
            Field(min_length=1, max_length=200, description="The commit or merge, e.g. 'a1b2c3d'."),
        ],
        paths: Annotated[
            list[str],
            Field(
                min_length=1,
                max_length=500,
                description="The files it changed, e.g. ['src/api/views.py'] (up to 500).",
            ),
        ],
    ) -> CallToolResult:
        """Say which files a commit changed: the memories about them are flagged for
        re-review, since what they say may no longer hold. Reporting the same ref again
        flags nothing twice."""
        changes = await client.report_changes(ref, paths)
        ids = ", ".join(f"#{i}" for i in changes["memoryIds"])
        text = (
            f"{changes['marked']} memories about those files flagged for re-review: {ids}."
            if changes["marked"]
            else "No memory about those files needed re-review."
        )
        return answer(text, dict(changes))

    tool("list_conflicts", read_only=True, output=ConflictsFound)(conflict_tools.list_conflicts)
    tool("get_conflict", read_only=True, output=Conflict)(conflict_tools.get_conflict)
    tool("resolve_conflict", read_only=False, output=Conflict)(conflict_tools.resolve_conflict)
    tool("get_preferences", read_only=True, output=Preferences)(preference_tools.get_preferences)
    tool("set_preference", read_only=False, idempotent=True, output=Preference)(
        preference_tools.set_preference
    )

    @tool("memory_history", read_only=True, output=History)
    async def memory_history(
        client: AsyncMemoryLayerClient,
        memory_id: Annotated[int, Field(ge=1, description="The memory's id, e.g. 42 for #42.")],
        limit: Annotated[int, Field(ge=1, le=100, description="Most changes to list.")] = 20,
        cursor: Annotated[
            str | None, Field(description="From a previous answer's nextCursor: the next page.")
        ] = None,
    ) -> CallToolResult:
        """What happened to a memory, newest first: created, edited, approved, flagged,
        superseded, confidence moved by runs, each with who and why."""
        page = await client.memory_history(memory_id, limit=limit, cursor=cursor)
        return page_of(page, "events", event_line, f"No history for #{memory_id}.")

    tool("related", read_only=True, output=Related)(related)
    conversation_tools.register(tool)

    return MCPServer(
        "memory-layer",
        title="Memory Layer",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=tools,
    )
