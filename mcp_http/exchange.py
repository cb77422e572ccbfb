"""One MCP exchange through the official SDK, on an event loop kept for the next ones.

The SDK's session manager (``StreamableHTTPSessionManager``, stateless, answering JSON) is
made and started once per event loop, as the SDK asks (one instance, run for the life of
the application), not once per request. A plain request (one ``tools/call``,
``tools/list``...) goes to the SDK's handlers straight (mcp_http.direct); anything else is
one ``handle_request`` on a manager already running. Each loop has a thread of its own,
and a loop with its manager and thread is lent to one request at a time (``answer``), then
taken back: a process holds as many as it ever answered at once (one in a gunicorn sync
worker).

The request's thread hands the exchange to the loop's thread and waits (a hand-over there
and back costs about 0.1 ms). There the tools' API calls (mcp_http.transport) are answered
while the loop stands still: a call stops the loop, the thread makes it through Django
(whose ORM refuses to run on a thread whose loop is running) and lets the loop go on. So
one thread does the whole exchange, and the API answers on a shallow stack: the SDK's
coroutines are suspended, off the stack, and nothing of the ``/mcp`` request's own Django
stack is under it. (Made under that stack, the calls ran deep enough that CPython 3.11
mapped and unmapped a frame-stack chunk on many calls of the assembly's inner loops:
hundreds of page faults a request under gunicorn, a recall that assembles 2 ms slower.)
The calls use the request's own database connections, lent to the loop's thread while the
request's thread waits: a worker holds one connection, checked once a request.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import threading
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from mcp.server import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.tools import build_server

from mcp_http import direct, metrics
from mcp_http.transport import InProcessClient
from ops import requestid

# Status, headers and body of the SDK's answer.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]

# The client of the request being answered: the caller's key, project and address.
_client: contextvars.ContextVar[AsyncMemoryLayerClient] = contextvars.ContextVar("mcp_client")


@cache
def server() -> MCPServer:
    """The tools (made once per process: their schemas and argument models are built here)."""
    return build_server(_client.get, observe=metrics.observe)


class Loop:
    """An event loop with the SDK's session manager running on it, and the thread that runs
    it, for one request at a time."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp")
        self._busy = False
        self._thread.submit(self._start).result()

    def _start(self) -> None:
        self.loop = asyncio.new_event_loop()
        # The SDK's documented way to serve an MCPServer from another application.
        self.manager = StreamableHTTPSessionManager(
            app=server()._lowlevel_server, stateless=True, json_response=True
        )
        self._closing: asyncio.Future[None] = self.loop.create_future()
        started: asyncio.Future[None] = self.loop.create_future()
        self._running = self.loop.create_task(self._run(started))
        self.loop.run_until_complete(
            asyncio.wait([started, self._running], return_when=asyncio.FIRST_COMPLETED)
        )
        if self._running.done():
            self._running.result()  # it could not start: say why

    async def _run(self, started: asyncio.Future[None]) -> None:
        app = self.manager.app
        # The application's lifespan, entered once for the loop's life as the manager enters
        # it for its own requests: its state is what the direct path's handlers see.
        async with self.manager.run(), app.lifespan(app) as self.lifespan_state:
            started.set_result(None)
            await self._closing

    @property
    def usable(self) -> bool:
        """Not left in the middle of a request, and its manager still running."""
        return not self._busy and not self._running.done() and not self.loop.is_closed()

    def answer(self, scope: dict[str, Any], body: bytes, client: InProcessClient) -> Answer:
        """The SDK's answer to one HTTP request (its ASGI ``scope`` and ``body``), the
        tools calling the API with ``client``; made on the loop's thread."""
        self._busy = True
        # The request's database connections, lent to the loop's thread while this thread
        # waits (as Django's live server lends its own): the tools' API calls read and write
        # on them, with no connection of their own to open and check.
        shared = connections.all(initialized_only=True)
        for connection in shared:
            connection.inc_thread_sharing()
        try:
            done = self._thread.submit(
                self._answer, scope, body, client, requestid.current.get(), shared
            )
            try:
                return done.result()
            finally:
                if done.done():  # else the wait was interrupted: the loop is not lent again
                    self._busy = False
        finally:
            for connection in shared:
                connection.dec_thread_sharing()

    def _answer(
        self,
        scope: dict[str, Any],
        body: bytes,
        client: InProcessClient,
        request_id: str,
        shared: Sequence[BaseDatabaseWrapper],
    ) -> Answer:
        lent = {connection.alias for connection in shared}
        for own in connections.all(initialized_only=True):
            if own.alias in lent:
                own.close()  # opened here before, for a request that had not opened its own
            else:  # as a request's start has its connections checked (a replica's, say)
                own.close_if_unusable_or_obsolete()
        for connection in shared:
            connections[connection.alias] = connection
        try:
            return self._exchange_here(scope, body, client, request_id)
        finally:
            for connection in shared:
                del connections[connection.alias]

    def _exchange_here(
        self, scope: dict[str, Any], body: bytes, client: InProcessClient, request_id: str
    ) -> Answer:
        loop = self.loop
        task = loop.create_task(self._exchange(scope, body, client, request_id))
        task.add_done_callback(lambda _: loop.stop())
        while True:
            loop.run_forever()
            if task.done():
                return task.result()
            client.answer_calls()  # the loop stands still

    async def _exchange(
        self, scope: dict[str, Any], body: bytes, client: AsyncMemoryLayerClient, request_id: str
    ) -> Answer:
        started: dict[str, Any] = {"status": 500, "headers": []}
        chunks: list[bytes] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started["status"] = message["status"]
                started["headers"] = message.get("headers", [])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        # In this task's context, which the SDK's tasks for the request copy: the client, and
        # the request's id for their log lines. (The thread's own context is the one its
        # Django calls run in, keeping what Django keeps per context, the cache's
        # connections: in a copy of the request's, each call would connect again.)
        _client.set(client)
        requestid.current.set(request_id)
        answered = await direct.answer(self.manager.app, self.lifespan_state, scope, body)
        if answered is not None:
            return answered
        await self.manager.handle_request(scope, receive, send)
        return started["status"], started["headers"], b"".join(chunks)

    def close(self) -> None:
        """Stop the manager (its tasks end), close the loop, and end the thread with its
        database connection."""
        if self._busy:
            self._thread.shutdown(wait=False)
            return
        try:
            self._thread.submit(self._close, connections.close_all).result()
        except RuntimeError:  # the thread has ended already (the interpreter is exiting)
            self._close(lambda: None)
        self._thread.shutdown()

    def _close(self, then: Callable[[], None]) -> None:
        try:
            if not self.loop.is_closed():
                if not self._closing.done():
                    self._closing.set_result(None)
                if not self._running.done():
                    self.loop.run_until_complete(self._running)
                self.loop.close()
        finally:
            then()


class Pool:
    """Loops lent to one request at a time; made when none is free."""

    def __init__(self) -> None:
        self._idle: list[Loop] = []
        self._lock = threading.Lock()
        self.made = 0  # in this process: as many as requests answered at once

    def take(self) -> Loop:
        with self._lock:
            while self._idle:
                loop = self._idle.pop()
                if loop.usable:
                    return loop
                loop.close()
            if not self.made:
                atexit.register(self.close)  # the managers stop with the process
            self.made += 1
        return Loop()

    def give_back(self, loop: Loop) -> None:
        if loop.usable:
            with self._lock:
                self._idle.append(loop)

    def close(self) -> None:
        """Close the idle loops (tests, so that their database can be dropped; the
        process's exit)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for loop in idle:
            loop.close()


loops = Pool()


def answer(scope: dict[str, Any], body: bytes, client: InProcessClient) -> Answer:
    """One HTTP request through the SDK, on a loop of the pool (see Loop)."""
    loop = loops.take()
    try:
        return loop.answer(scope, body, client)
    finally:
        loops.give_back(loop)
