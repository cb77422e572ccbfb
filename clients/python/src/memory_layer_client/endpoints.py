"""Every endpoint of the REST API, written once, as a coroutine of ``Endpoints`` that hands
a ``Call`` to ``self._send`` (memory_layer_client.client sends it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, TypeVar, cast

from memory_layer_client import errors
from memory_layer_client.preferences import PreferenceEndpoints
from memory_layer_client.transport import Call, Settings, encode_query
from memory_layer_client.types import (
    Changes,
    Conflict,
    ConflictPage,
    Context,
    ConversationDetail,
    ConversationPage,
    CreatedMemory,
    Distilled,
    EntityDetail,
    EntityPage,
    EventPage,
    Memory,
    MemoryPage,
    MemoryType,
    MessagesAppended,
    Outcome,
    OutcomeResult,
    Project,
    ReviewStatus,
    Run,
    RunDetail,
)

T = TypeVar("T")


def message_body(message: Any) -> dict[str, Any]:
    """A message as the API takes it: a mapping with ``role``, ``content`` and perhaps
    ``sentAt`` (or ``sent_at``), or any object with ``role`` and ``content`` attributes (the
    history window's ``Message``)."""
    if isinstance(message, Mapping):
        body = {"role": message["role"], "content": message["content"]}
        sent_at = message.get("sentAt", message.get("sent_at"))
        return {**body, "sentAt": sent_at} if sent_at is not None else body
    return {"role": message.role, "content": message.content}


class Endpoints(PreferenceEndpoints):
    """Every endpoint of the API, once (users' preferences in PreferenceEndpoints).
    ``self._send`` makes the request."""

    _settings: Settings

    def _send(self, call: Call[T]) -> Awaitable[T]:
        raise NotImplementedError

    async def _project_path(self) -> str:
        if self._settings.project is None:
            projects = await self._send(Call[dict[str, Any]]("GET", "/api/projects/"))
            found = projects.get("projects", [])
            if len(found) != 1:
                raise errors.MemoryLayerError(
                    "This key sees more than one project: pass project= (its slug)."
                )
            self._settings.project = str(found[0]["slug"])
        return f"/api/projects/{self._settings.project}"

    async def _memory_path(self, memory_id: int) -> str:
        return f"{await self._project_path()}/memories/{int(memory_id)}"

    # --- projects -------------------------------------------------------------------------

    async def projects(self) -> list[Project]:
        """The projects this key (or user) may read."""
        page = await self._send(Call[dict[str, Any]]("GET", "/api/projects/"))
        return cast(list[Project], page["projects"])

    async def project(self) -> dict[str, Any]:
        """This project, with its policy."""
        return await self._send(Call[dict[str, Any]]("GET", await self._project_path()))

    # --- memories -------------------------------------------------------------------------

    async def create_memory(
        self,
        type: MemoryType,
        content: str,
        *,
        tags: Iterable[str] = (),
        run_id: int | None = None,
        source: str | None = None,
        scope: str | None = None,
        relevance_score: float | None = None,
        expires_at: str | None = None,
        summary: str | None = None,
        supersedes: Iterable[int] = (),
        idempotency_key: str | None = None,
    ) -> CreatedMemory:
        """Store a memory (pending review, as from any agent). ``supersedes``: ids it replaces."""
        body: dict[str, Any] = {"type": type, "content": content, "tags": list(tags)}
        optional = {
            "sourceRunId": run_id,
            "source": source,
            "scope": scope,
            "relevanceScore": relevance_score,
            "summary": summary,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        if expires_at is not None:
            body["expiresAt"] = expires_at
        if supersedes:
            body["supersedes"] = [int(i) for i in supersedes]
        path = f"{await self._project_path()}/memories"
        return await self._send(
            Call[CreatedMemory]("POST", path, json=body, idempotency_key=idempotency_key)
        )

    async def list_memories(
        self,
        *,
        q: str | None = None,
        about: str | None = None,
        type: MemoryType | None = None,
        tags: Iterable[str] | None = None,
        review_status: ReviewStatus | None = None,
        active: bool | None = None,
        source: str | None = None,
        expiring_before: str | None = None,
        ordering: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> MemoryPage:
        """A page of memories; ``q`` searches the text (web-search syntax), ``about`` finds
        those that mention a name (an entity such as ``RetryQueue``, or a phrase). Pass the
        page's ``next_cursor(page)`` as ``cursor`` for the next one."""
        params = {
            "q": q,
            "about": about,
            "type": type,
            "tags": list(tags) if tags is not None else None,
            "reviewStatus": review_status,
            "active": active,
            "source": source,
            "expiringBefore": expiring_before,
            "ordering": ordering,
            "limit": limit,
            "cursor": cursor,
        }
        path = f"{await self._project_path()}/memories"
        return await self._send(Call[MemoryPage]("GET", path, params=encode_query(params)))

    async def get_memory(self, memory_id: int) -> Memory:
        return await self._send(Call[Memory]("GET", await self._memory_path(memory_id)))

    async def update_memory(self, memory_id: int, *, reason: str = "", **changes: Any) -> Memory:
        """Change a memory: ``content``, ``type``, ``tags``, ``relevanceScore``, ``expiresAt``."""
        body = {**changes, **({"reason": reason} if reason else {})}
        path = await self._memory_path(memory_id)
        return await self._send(Call[Memory]("PATCH", path, json=body))

    async def delete_memory(self, memory_id: int) -> None:
        path = await self._memory_path(memory_id)
        await self._send(Call[None]("DELETE", path, ok=(204,)))

    async def approve_memory(self, memory_id: int) -> Memory:
        path = f"{await self._memory_path(memory_id)}/approve"
        return await self._send(Call[Memory]("PATCH", path))

    async def reject_memory(self, memory_id: int, reason: str) -> Memory:
        path = f"{await self._memory_path(memory_id)}/reject"
        return await self._send(Call[Memory]("PATCH", path, json={"reason": reason}))

    async def flag_memory(self, memory_id: int, reason: str) -> Memory:
        """Tell reviewers the memory looks wrong or stale: it is flagged for re-review."""
        path = f"{await self._memory_path(memory_id)}/flag"
        return await self._send(Call[Memory]("POST", path, json={"reason": reason}))

    async def restore_memory(self, memory_id: int) -> Memory:
        path = f"{await self._memory_path(memory_id)}/restore"
        return await self._send(Call[Memory]("POST", path))

    async def restore_content(self, memory_id: int, event_id: int) -> Memory:
        path = f"{await self._memory_path(memory_id)}/restore-content"
        return await self._send(Call[Memory]("POST", path, json={"eventId": event_id}))

    async def supersede_memory(self, memory_id: int, by: int, reason: str = "") -> Memory:
        """Say memory ``by`` replaces ``memory_id``. For an approved or global memory an
        agent's supersede waits for a reviewer (the answer then has ``status: waiting``)."""
        path = f"{await self._memory_path(memory_id)}/supersede"
        body = {"by": int(by), **({"reason": reason} if reason else {})}
        return await self._send(Call[Memory]("POST", path, json=body))

    async def memory_history(
        self, memory_id: int, *, limit: int | None = None, cursor: str | None = None
    ) -> EventPage:
        path = f"{await self._memory_path(memory_id)}/history"
        params = encode_query({"limit": limit, "cursor": cursor})
        return await self._send(Call[EventPage]("GET", path, params=params))

    # --- global memories ------------------------------------------------------------------

    async def list_global_memories(
        self,
        *,
        q: str | None = None,
        type: MemoryType | None = None,
        tags: Iterable[str] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> MemoryPage:
        params = {
            "q": q,
            "type": type,
            "tags": list(tags) if tags is not None else None,
            "limit": limit,
            "cursor": cursor,
        }
        return await self._send(
            Call[MemoryPage]("GET", "/api/memories/global", params=encode_query(params))
        )

    async def create_global_memory(
        self, type: MemoryType, content: str, *, tags: Iterable[str] = ()
    ) -> Memory:
        """Propose a memory for every project: inactive until a reviewer approves it."""
        body = {"type": type, "content": content, "tags": list(tags)}
        return await self._send(Call[Memory]("POST", "/api/memories/global", json=body))

    async def get_global_memory(self, memory_id: int) -> Memory:
        return await self._send(Call[Memory]("GET", f"/api/memories/global/{int(memory_id)}"))

    # --- conflicts ------------------------------------------------------------------------

    async def list_conflicts(
        self,
        *,
        kind: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ConflictPage:
        """Pairs of memories found to repeat or contradict each other (open ones by default)."""
        params = encode_query({"kind": kind, "status": status, "limit": limit, "cursor": cursor})
        path = f"{await self._project_path()}/conflicts"
        return await self._send(Call[ConflictPage]("GET", path, params=params))

    async def get_conflict(self, conflict_id: int) -> Conflict:
        path = f"{await self._project_path()}/conflicts/{int(conflict_id)}"
        return await self._send(Call[Conflict]("GET", path))

    async def resolve_conflict(self, conflict_id: int, action: str, **options: Any) -> Conflict:
        """``keep`` (with ``memoryId``), ``merge`` (``content``...), ``dismiss`` or ``reject``."""
        path = f"{await self._project_path()}/conflicts/{int(conflict_id)}/resolve"
        return await self._send(Call[Conflict]("POST", path, json={"action": action, **options}))

    # --- runs and context -----------------------------------------------------------------

    async def start_run(
        self, external_id: str, *, task_title: str = "", write_scope: Iterable[str] = ()
    ) -> Run:
        """Start a run (or get the running one with this external id)."""
        body = {"externalId": external_id, "taskTitle": task_title, "writeScope": list(write_scope)}
        path = f"{await self._project_path()}/runs"
        return await self._send(Call[Run]("POST", path, json=body))

    async def get_run(self, run_id: int) -> RunDetail:
        path = f"{await self._project_path()}/runs/{int(run_id)}"
        return await self._send(Call[RunDetail]("GET", path))

    async def report_outcome(
        self, run_id: int, outcome: Outcome, *, used_memory_ids: Iterable[int] | None = None
    ) -> OutcomeResult:
        """``succeeded`` or ``failed``: moves the confidence of what the run was given.
        ``used_memory_ids``: the memories the agent actually used (the project's ranking
        learns from them)."""
        path = f"{await self._project_path()}/runs/{int(run_id)}/outcome"
        body: dict[str, Any] = {"outcome": outcome}
        if used_memory_ids is not None:
            body["usedMemoryIds"] = [int(memory_id) for memory_id in used_memory_ids]
        return await self._send(Call[OutcomeResult]("POST", path, json=body))

    async def context(
        self,
        token_budget: int,
        *,
        write_scope: Iterable[str] = (),
        intent: str = "",
        entities: Iterable[str] = (),
        run_id: int | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> Context:
        """The memories that matter for a task, fitted into ``token_budget`` tokens; with
        ``user_id``, that user's preferences first.

        ``options`` are the API's other fields as it names them (``responseReserve``,
        ``limit``, ``lod``, ``sources``, ``shares``, ``format``, ``encoding``...)."""
        body: dict[str, Any] = {
            "tokenBudget": int(token_budget),
            "writeScope": list(write_scope),
            "intent": intent,
            "entities": list(entities),
            **options,
        }
        if run_id is not None:
            body["runId"] = int(run_id)
        if user_id is not None:
            body["userId"] = user_id
        path = f"{await self._project_path()}/context"
        return await self._send(Call[Context]("POST", path, json=body, ok=(200,)))

    async def report_changes(self, ref: str, paths: Iterable[str]) -> Changes:
        """A commit's changed paths: the memories about them are flagged for re-review."""
        path = f"{await self._project_path()}/changes"
        return await self._send(
            Call[Changes]("POST", path, json={"ref": ref, "paths": list(paths)})
        )

    # --- entities -------------------------------------------------------------------------

    async def list_entities(
        self,
        *,
        q: str | None = None,
        kind: str | None = None,
        memory_id: int | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> EntityPage:
        """The names the project's memories mention: by name (prefix or word part), kind, or
        those one memory mentions."""
        params = encode_query(
            {"q": q, "kind": kind, "memory": memory_id, "limit": limit, "cursor": cursor}
        )
        path = f"{await self._project_path()}/entities"
        return await self._send(Call[EntityPage]("GET", path, params=params))

    async def get_entity(self, entity_id: int, *, depth: int = 1) -> EntityDetail:
        """One entity, the memories that mention it, and its neighbours ``depth`` hops out."""
        path = f"{await self._project_path()}/entities/{int(entity_id)}"
        return await self._send(Call[EntityDetail]("GET", path, params={"depth": str(depth)}))

    # --- conversations --------------------------------------------------------------------

    async def _conversations_path(self, conversation_id: int | None = None) -> str:
        path = f"{await self._project_path()}/conversations"
        return path if conversation_id is None else f"{path}/{int(conversation_id)}"

    async def save_conversation(
        self, agent_id: str, user_id: str, messages: Iterable[Any], *, title: str = ""
    ) -> ConversationDetail:
        """Save a conversation of ``agent_id`` with ``user_id``: messages as mappings with
        ``role`` (user, assistant, system, tool), ``content`` and perhaps ``sentAt``."""
        body: dict[str, Any] = {
            "agentId": agent_id,
            "userId": user_id,
            "messages": [message_body(m) for m in messages],
        }
        if title:
            body["title"] = title
        path = await self._conversations_path()
        return await self._send(Call[ConversationDetail]("POST", path, json=body, ok=(201,)))

    async def append_messages(
        self, conversation_id: int, messages: Iterable[Any]
    ) -> MessagesAppended:
        """Add messages after the conversation's last one."""
        path = f"{await self._conversations_path(conversation_id)}/messages"
        body = {"messages": [message_body(m) for m in messages]}
        return await self._send(Call[MessagesAppended]("POST", path, json=body, ok=(201,)))

    async def get_conversation(
        self, conversation_id: int, *, after: int | None = None, limit: int | None = None
    ) -> ConversationDetail:
        """A conversation and its messages in order, from the one after position ``after``;
        ``nextAfter`` says where the next page starts."""
        path = await self._conversations_path(conversation_id)
        params = encode_query({"after": after, "limit": limit})
        return await self._send(Call[ConversationDetail]("GET", path, params=params))

    async def list_conversations(
        self, *, user_id: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> ConversationPage:
        """A user's (or the project's) conversations, the most recently active first."""
        params = encode_query({"userId": user_id, "limit": limit, "cursor": cursor})
        path = await self._conversations_path()
        return await self._send(Call[ConversationPage]("GET", path, params=params))

    async def search_conversations(
        self, q: str, *, user_id: str | None = None, limit: int | None = None
    ) -> ConversationPage:
        """Conversations that match ``q`` by words or by meaning, best first, each with its
        best matching messages (``matches``)."""
        params = encode_query({"q": q, "userId": user_id, "limit": limit})
        path = await self._conversations_path()
        return await self._send(Call[ConversationPage]("GET", path, params=params))

    async def distill_conversation(
        self, conversation_id: int, learnings: Iterable[str] | None = None
    ) -> Distilled:
        """Propose what a conversation taught as memories, pending review (inactive until a
        reviewer approves them): ``learnings`` as given, or, without them, the user's
        sentences that read as lasting instructions or facts."""
        path = f"{await self._conversations_path(conversation_id)}/distill"
        body = None if learnings is None else {"learnings": list(learnings)}
        return await self._send(Call[Distilled]("POST", path, json=body, ok=(201,)))
