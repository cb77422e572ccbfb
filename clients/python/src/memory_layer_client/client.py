"""A typed client for the whole REST API, asynchronous and synchronous.

Every endpoint is written once, as a coroutine of ``Endpoints``
(memory_layer_client.endpoints) that hands a ``Call`` to ``self._send``.
``AsyncMemoryLayerClient`` sends it with an ``httpx2.AsyncClient``; ``MemoryLayerClient``
sends it with an ``httpx2.Client`` and answers at once, so the same coroutine runs to its
end without ever suspending and its value is the synchronous result.

Both retry a 503 or 429 after the ``Retry-After`` the service sends (up to ``retries``
times), send an ``Idempotency-Key`` with every write (the same one on its retries, so a
retried create never makes a twin), and turn the API's error shape into exceptions
(``memory_layer_client.errors``) that carry its message and fields
(memory_layer_client.transport).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Generator, Mapping
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

import httpx2 as httpx

from memory_layer_client.endpoints import Endpoints
from memory_layer_client.transport import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    Call,
    Settings,
    decode,
    retry_delay,
    unreachable,
)

T = TypeVar("T")
P = ParamSpec("P")


class AsyncMemoryLayerClient(Endpoints):
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
        self._settings = Settings.of(base_url, api_key, project, timeout, retries, headers)
        self._http = httpx.AsyncClient(**self._settings.client_options(), transport=transport)

    async def _send(self, call: Call[T]) -> T:
        headers = call.headers()  # the same idempotency key on every attempt
        for attempt in range(self._settings.retries + 1):
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, params=call.params, headers=headers
                )
            except httpx.TransportError as error:
                raise unreachable(error) from error
            delay = retry_delay(response, attempt, self._settings.retries)
            if delay is None:
                return decode(call, response)
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

    _project_path = Endpoints._project_path
    _memory_path = Endpoints._memory_path
    _user_path = Endpoints._user_path
    _conversations_path = Endpoints._conversations_path

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
        self._settings = Settings.of(base_url, api_key, project, timeout, retries, headers)
        self._http = httpx.Client(**self._settings.client_options(), transport=transport)

    def _send(self, call: Call[T]) -> _Ready[T]:
        headers = call.headers()
        for attempt in range(self._settings.retries + 1):
            try:
                response = self._http.request(
                    call.method, call.path, json=call.json, params=call.params, headers=headers
                )
            except httpx.TransportError as error:
                raise unreachable(error) from error
            delay = retry_delay(response, attempt, self._settings.retries)
            if delay is None:
                return _Ready(decode(call, response))
            time.sleep(delay)
        raise AssertionError("unreachable")

    projects = _blocking(Endpoints.projects)
    project = _blocking(Endpoints.project)
    create_memory = _blocking(Endpoints.create_memory)
    list_memories = _blocking(Endpoints.list_memories)
    get_memory = _blocking(Endpoints.get_memory)
    update_memory = _blocking(Endpoints.update_memory)
    delete_memory = _blocking(Endpoints.delete_memory)
    approve_memory = _blocking(Endpoints.approve_memory)
    reject_memory = _blocking(Endpoints.reject_memory)
    flag_memory = _blocking(Endpoints.flag_memory)
    restore_memory = _blocking(Endpoints.restore_memory)
    restore_content = _blocking(Endpoints.restore_content)
    supersede_memory = _blocking(Endpoints.supersede_memory)
    memory_history = _blocking(Endpoints.memory_history)
    list_global_memories = _blocking(Endpoints.list_global_memories)
    create_global_memory = _blocking(Endpoints.create_global_memory)
    get_global_memory = _blocking(Endpoints.get_global_memory)
    list_conflicts = _blocking(Endpoints.list_conflicts)
    get_conflict = _blocking(Endpoints.get_conflict)
    resolve_conflict = _blocking(Endpoints.resolve_conflict)
    start_run = _blocking(Endpoints.start_run)
    get_run = _blocking(Endpoints.get_run)
    report_outcome = _blocking(Endpoints.report_outcome)
    context = _blocking(Endpoints.context)
    report_changes = _blocking(Endpoints.report_changes)
    list_entities = _blocking(Endpoints.list_entities)
    get_entity = _blocking(Endpoints.get_entity)
    set_preference = _blocking(Endpoints.set_preference)
    get_preference = _blocking(Endpoints.get_preference)
    get_preferences = _blocking(Endpoints.get_preferences)
    delete_preference = _blocking(Endpoints.delete_preference)
    preference_history = _blocking(Endpoints.preference_history)
    forget_user = _blocking(Endpoints.forget_user)
    propose_global_preference = _blocking(Endpoints.propose_global_preference)
    save_conversation = _blocking(Endpoints.save_conversation)
    append_messages = _blocking(Endpoints.append_messages)
    get_conversation = _blocking(Endpoints.get_conversation)
    list_conversations = _blocking(Endpoints.list_conversations)
    search_conversations = _blocking(Endpoints.search_conversations)
    distill_conversation = _blocking(Endpoints.distill_conversation)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryLayerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
