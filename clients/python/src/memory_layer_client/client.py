"""A typed client for the whole REST API, asynchronous and synchronous.

Every endpoint is written once, as a coroutine of ``_Endpoints`` that hands a ``Call`` to
``self._send``. ``AsyncMemoryLayerClient`` sends it with an ``httpx2.AsyncClient``;
``MemoryLayerClient`` sends it with an ``httpx2.Client`` and answers at once, so the same
coroutine runs to its end without ever suspending and its value is the synchronous result.

Both retry a 503 or 429 after the ``Retry-After`` the service sends (up to ``retries``
times), send an ``Idempotency-Key`` with every write (the same one on its retries, so a
retried create never makes a twin), and turn the API's error shape into exceptions
(``memory_layer_client.errors``) that carry its message and fields.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import httpx2 as httpx

from memory_layer_client import errors
from memory_layer_client.types import (
    Changes,
    Conflict,
    ConflictPage,
    Context,
    CreatedMemory,
    EntityDetail,
    EntityPage,
    EventPage,
    Memory,
    MemoryPage,
    MemoryType,
    Outcome,
    OutcomeResult,
    Project,
    ReviewStatus,
    Run,
    RunDetail,
)

T = TypeVar("T")
P = ParamSpec("P")

DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
# A Retry-After longer than this is not waited for: the error is raised instead.
MAX_RETRY_WAIT = 60.0
_WRITES = {"POST", "PATCH", "PUT", "DELETE"}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: what to send and the status codes that mean success."""

    method: str
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    idempotency_key: str | None = None
    ok: tuple[int, ...] = (200, 201, 202)

    def headers(self) -> dict[str, str]:
        if self.method in _WRITES:
            return {"Idempotency-Key": self.idempotency_key or uuid.uuid4().hex}
        return {}


def _query(params: Mapping[str, Any] | None) -> dict[str, str]:
    """Query parameters as the API reads them: lists joined by commas, booleans in lower
    case, absent values left out."""
    out: dict[str, str] = {}
    for name, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = str(value)
    return out


def _cursor(next_url: str | None) -> str | None:
    """The cursor of a page's ``next`` link, to pass as ``cursor=``."""
    if not next_url:
        return None
    return parse_qs(urlsplit(next_url).query).get("cursor", [None])[0]


def _decode(call: Call[T], response: httpx.Response) -> T:
    if response.status_code not in call.ok:
        raise errors.from_response(response)
    if response.status_code == 204 or not response.content:
        return cast(T, None)
    return cast(T, response.json())


def _wait(response: httpx.Response, attempt: int, retries: int) -> float | None:
    """Seconds to wait before retrying this response, or None to give it back as it is."""
    if response.status_code not in (429, 503) or attempt >= retries:
        return None
    delay = errors.retry_after(response)
    if delay is None:
        delay = min(2.0**attempt * 0.5, 8.0)
    return delay if delay <= MAX_RETRY_WAIT else None


def _unreachable(error: httpx.HTTPError) -> errors.TransportError:
    return errors.TransportError(
        f"The Memory Layer service could not be reached: {error}. Check the URL and that"
        " the service is running."
    )


@dataclass
class _Settings:
    base_url: str
    api_key: str
    project: str | None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        base_url: str | None,
        api_key: str | None,
        project: str | None,
        timeout: float,
        retries: int,
        headers: Mapping[str, str] | None,
    ) -> _Settings:
        base_url = base_url or os.environ.get("MEMORY_LAYER_URL")
        api_key = api_key or os.environ.get("MEMORY_LAYER_KEY")
        if not base_url:
            raise ValueError("Give the service's URL (base_url=, or MEMORY_LAYER_URL).")
        if not api_key:
            raise ValueError("Give the project's API key (api_key=, or MEMORY_LAYER_KEY).")
        return cls(
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            project=project or os.environ.get("MEMORY_LAYER_PROJECT") or None,
            timeout=timeout,
            retries=retries,
            headers=dict(headers or {}),
        )

    def client_options(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "headers": {
                "Authorization": f"Bearer {self.api_key}",
                "Accept": "application/json",
                "User-Agent": "memory-layer-client/0.1",
                **self.headers,
            },
            "timeout": self.timeout,
        }


class _Endpoints:
    """Every endpoint of the API, once. ``self._send`` makes the request."""

    _settings: _Settings

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
        """A page of memories; ``q`` searches the text (web-search syntax). Pass the page's
        ``next_cursor(page)`` as ``cursor`` for the next one."""
        params = {
            "q": q,
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
        return await self._send(Call[MemoryPage]("GET", path, params=_query(params)))

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
        params = _query({"limit": limit, "cursor": cursor})
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
            Call[MemoryPage]("GET", "/api/memories/global", params=_query(params))
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
        params = _query({"kind": kind, "status": status, "limit": limit, "cursor": cursor})
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
        **options: Any,
    ) -> Context:
        """The memories that matter for a task, fitted into ``token_budget`` tokens.

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
        path = f"{await self._project_path()}/context"
        return await self._send(Call[Context]("POST", path, json=body, ok=(200,)))

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
        params = _query(
            {"q": q, "kind": kind, "memory": memory_id, "limit": limit, "cursor": cursor}
        )
        path = f"{await self._project_path()}/entities"
        return await self._send(Call[EntityPage]("GET", path, params=params))

    async def get_entity(self, entity_id: int, *, depth: int = 1) -> EntityDetail:
        """One entity, the memories that mention it, and its neighbours ``depth`` hops out."""
        path = f"{await self._project_path()}/entities/{int(entity_id)}"
        return await self._send(Call[EntityDetail]("GET", path, params={"depth": str(depth)}))

    async def report_changes(self, ref: str, paths: Iterable[str]) -> Changes:
        """A commit's changed paths: the memories about them are flagged for re-review."""
        path = f"{await self._project_path()}/changes"
        return await self._send(
            Call[Changes]("POST", path, json={"ref": ref, "paths": list(paths)})
        )


class AsyncMemoryLayerClient(_Endpoints):
    """The API for asyncio code::

    async with AsyncMemoryLayerClient("http://127.0.0.1:8000", api_key) as memory:
        context = await memory.context(2000, write_scope=["src/api/"], intent="fix login")
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        project: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._settings = _Settings.of(base_url, api_key, project, timeout, retries, headers)
        self._http = httpx.AsyncClient(**self._settings.client_options(), transport=transport)

    async def _send(self, call: Call[T]) -> T:
        headers = call.headers()  # the same idempotency key on every attempt
        for attempt in range(self._settings.retries + 1):
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, params=call.params, headers=headers
                )
            except httpx.TransportError as error:
                raise _unreachable(error) from error
            delay = _wait(response, attempt, self._settings.retries)
            if delay is None:
                return _decode(call, response)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryLayerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Ready(Generic[T]):
    """An awaitable that is already done: awaiting it never suspends."""

    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, T]:
        return self.value
        yield  # a generator that returns at once


def _blocking(
    endpoint: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Any, P], T]:
    """The synchronous form of an endpoint: its coroutine, driven to its end at once."""

    def call(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        coroutine = endpoint(self, *args, **kwargs)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return cast(T, done.value)
        coroutine.close()
        raise RuntimeError(f"{endpoint.__name__} waited for something other than the service")

    call.__name__ = endpoint.__name__
    call.__doc__ = endpoint.__doc__
    return call


class MemoryLayerClient:
    """The API for synchronous code::

    with MemoryLayerClient("http://127.0.0.1:8000", api_key) as memory:
        run = memory.start_run("build-42", write_scope=["src/api/"])
    """

    _project_path = _Endpoints._project_path
    _memory_path = _Endpoints._memory_path

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        project: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._settings = _Settings.of(base_url, api_key, project, timeout, retries, headers)
        self._http = httpx.Client(**self._settings.client_options(), transport=transport)

    def _send(self, call: Call[T]) -> _Ready[T]:
        headers = call.headers()
        for attempt in range(self._settings.retries + 1):
            try:
                response = self._http.request(
                    call.method, call.path, json=call.json, params=call.params, headers=headers
                )
            except httpx.TransportError as error:
                raise _unreachable(error) from error
            delay = _wait(response, attempt, self._settings.retries)
            if delay is None:
                return _Ready(_decode(call, response))
            time.sleep(delay)
        raise AssertionError("unreachable")

    projects = _blocking(_Endpoints.projects)
    project = _blocking(_Endpoints.project)
    create_memory = _blocking(_Endpoints.create_memory)
    list_memories = _blocking(_Endpoints.list_memories)
    get_memory = _blocking(_Endpoints.get_memory)
    update_memory = _blocking(_Endpoints.update_memory)
    delete_memory = _blocking(_Endpoints.delete_memory)
    approve_memory = _blocking(_Endpoints.approve_memory)
    reject_memory = _blocking(_Endpoints.reject_memory)
    flag_memory = _blocking(_Endpoints.flag_memory)
    restore_memory = _blocking(_Endpoints.restore_memory)
    restore_content = _blocking(_Endpoints.restore_content)
    supersede_memory = _blocking(_Endpoints.supersede_memory)
    memory_history = _blocking(_Endpoints.memory_history)
    list_global_memories = _blocking(_Endpoints.list_global_memories)
    create_global_memory = _blocking(_Endpoints.create_global_memory)
    get_global_memory = _blocking(_Endpoints.get_global_memory)
    list_conflicts = _blocking(_Endpoints.list_conflicts)
    get_conflict = _blocking(_Endpoints.get_conflict)
    resolve_conflict = _blocking(_Endpoints.resolve_conflict)
    start_run = _blocking(_Endpoints.start_run)
    get_run = _blocking(_Endpoints.get_run)
    report_outcome = _blocking(_Endpoints.report_outcome)
    context = _blocking(_Endpoints.context)
    report_changes = _blocking(_Endpoints.report_changes)
    list_entities = _blocking(_Endpoints.list_entities)
    get_entity = _blocking(_Endpoints.get_entity)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryLayerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


next_cursor = _cursor
