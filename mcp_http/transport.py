"""The API, called in process: an httpx transport that hands each request to Django.

The MCP tools are REST calls (memory_layer_client.tools), so on the server they call the
service itself, through the whole stack an agent's request goes through (the caller's key,
throttles, validation, idempotency) but with no socket. The key is not looked up a second
time: the ``/mcp`` request authenticated it, and vouches for it in the WSGI environ
(api.auth.VOUCHED, which no request from outside can set); the API still checks that the
call's token is that key. Each call is throttled and holds a concurrency slot as any API
request does (the ``/mcp`` request itself takes neither), so a tool call counts once.

The calls run on one long-lived thread of the process (with its own persistent database
connection), not on the ``/mcp`` request's: there they would run under two request stacks
and the SDK's, deep enough that CPython 3.11 maps and unmaps a frame-stack chunk on many
calls of the assembly's inner loops (a page fault each: the assembly took 50 % longer).

An API response is closed only once the ``/mcp`` answer has been sent (``after``): closing
it does the bookkeeping the API defers until its caller has the answer (a context's uses
and the run's given memories, api.responses), which must not delay the agent here either.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import httpx2 as httpx
from django.core.handlers.wsgi import WSGIHandler
from django.db import connections

from api.auth import VOUCHED, Vouched
from memories.models import ApiKey

# Threads answering the tools' API calls: gunicorn's sync workers answer one request at a
# time; runserver's threads may ask together.
THREADS = 4


@cache
def _django() -> WSGIHandler:
    return WSGIHandler()


@cache
def _threads() -> ThreadPoolExecutor:
    # Made on first use, in the process that answers (never before gunicorn forks).
    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="mcp-api")


def stop_threads() -> None:
    """End the threads, closing their database connections (tests; a process's exit)."""
    if _threads.cache_info().currsize:
        executor = _threads()
        _threads.cache_clear()
        barrier = threading.Barrier(THREADS)
        for _ in range(THREADS):
            executor.submit(_close_connections, barrier)
        executor.shutdown(wait=True)


def _close_connections(barrier: threading.Barrier) -> None:
    connections.close_all()
    barrier.wait(timeout=5)  # one task on each thread


def _call(
    request: httpx.Request, remote_addr: str, vouched: Vouched
) -> tuple[int, list[tuple[str, str]], bytes, Callable[[], None]]:
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        environ[VOUCHED] = vouched
        return _django()(environ, start_response)

    transport = httpx.WSGITransport(app=app, remote_addr=remote_addr)
    response = transport.handle_request(request)
    content = response.read()
    return response.status_code, response.headers.multi_items(), content, response.close


class InProcessTransport(httpx.AsyncBaseTransport):
    def __init__(self, remote_addr: str, api_key: ApiKey) -> None:
        self.remote_addr = remote_addr
        self.vouched = Vouched(api_key)
        # The API responses to close once the /mcp answer is sent, in order.
        self.after: list[Callable[[], None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        sync_request = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        status, headers, content, close = await asyncio.get_running_loop().run_in_executor(
            _threads(), functools.partial(_call, sync_request, self.remote_addr, self.vouched)
        )
        self.after.append(close)
        return httpx.Response(status, headers=headers, content=content)
