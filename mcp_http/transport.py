"""The API, called in process: an httpx transport that hands each request to Django.

The MCP tools are REST calls (memory_layer_client.tools), so on the server they call the
service itself, through the whole stack an agent's request goes through (the caller's key,
throttles, validation, idempotency) but with no socket. The key is not looked up a second
time: the ``/mcp`` request authenticated it, and vouches for it in the WSGI environ
(api.auth.VOUCHED, which no request from outside can set); the API still checks that the
call's token is that key. Each call is throttled and holds a concurrency slot as any API
request does (the ``/mcp`` request itself takes neither), so a tool call counts once.

The calls are made while the SDK's event loop stands still, on the loop's own thread
(mcp_http.exchange): a tool's request stops the loop and waits; ``answer_calls`` makes it
through Django with no loop running (Django's ORM refuses to run under a running loop), and
the loop goes on with the answer.

An API response is closed only once the ``/mcp`` answer has been sent (``after``): closing
it does the bookkeeping the API defers until its caller has the answer (a context's uses
and the run's given memories, api.responses), which must not delay the agent here either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import cache
from typing import Any

import httpx2 as httpx
from django.core.handlers.wsgi import WSGIHandler

from api.auth import VOUCHED, Vouched
from memories.models import ApiKey

Response = tuple[int, list[tuple[str, str]], bytes, Callable[[], None]]


@cache
def _django() -> WSGIHandler:
    return WSGIHandler()


def _call(request: httpx.Request, remote_addr: str, vouched: Vouched) -> Response:
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
        # The tools' requests waiting for the loop to stand still, with their futures.
        self.calls: list[tuple[httpx.Request, asyncio.Future[Response]]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        sync_request = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Response] = loop.create_future()
        self.calls.append((sync_request, answered))
        loop.stop()  # the loop's current turn ends, then answer_calls runs
        status, headers, content, close = await answered
        self.after.append(close)
        return httpx.Response(status, headers=headers, content=content)

    def answer_calls(self) -> None:
        """Make the calls the tools are waiting for (no event loop runs on this thread)."""
        calls, self.calls = self.calls, []
        for request, answered in calls:
            if answered.done():  # the tool was cancelled meanwhile
                continue
            try:
                answered.set_result(_call(request, self.remote_addr, self.vouched))
            except Exception as error:
                answered.set_exception(error)
