"""The API, called in process: an httpx transport that hands each request to Django.

The MCP tools are REST calls (memory_layer_client.tools), so on the server they call the
service itself, through the whole stack an agent's request goes through (authentication
with the caller's key, throttles, validation, idempotency) but with no socket. The request
runs on the thread of the ``/mcp`` request (asgiref's thread-sensitive executor), with its
database connection.
"""

from __future__ import annotations

from functools import cache

import httpx2 as httpx
from asgiref.sync import sync_to_async
from django.core.handlers.wsgi import WSGIHandler


@cache
def _django() -> WSGIHandler:
    return WSGIHandler()


def _call(request: httpx.Request, remote_addr: str) -> tuple[int, list[tuple[str, str]], bytes]:
    transport = httpx.WSGITransport(app=_django(), remote_addr=remote_addr)
    response = transport.handle_request(request)
    try:
        return response.status_code, response.headers.multi_items(), response.read()
    finally:
        response.close()


class InProcessTransport(httpx.AsyncBaseTransport):
    def __init__(self, remote_addr: str) -> None:
        self.remote_addr = remote_addr

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        sync_request = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        status, headers, content = await sync_to_async(_call)(sync_request, self.remote_addr)
        return httpx.Response(status, headers=headers, content=content)
