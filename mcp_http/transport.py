"""The API, called in process: the tools' client hands each call to Django as a WSGI request.

The MCP tools are REST calls (memory_layer_client.tools), so on the server they call the
service itself, through the whole stack an agent's request goes through (the caller's key,
throttles, validation, idempotency) but with no socket and no HTTP client: the client's
endpoints are written once over ``_send`` (memory_layer_client.endpoints), and here
``_send`` makes a WSGI request of the call and decodes the answer as the client's own
does. The key is not looked up a second time: the ``/mcp`` request authenticated it, and
vouches for it in the WSGI environ (api.auth.VOUCHED, which no request from outside can
set); the API still checks that the call's token is that key. Each call is throttled and
holds a concurrency slot as any API request does (the ``/mcp`` request itself takes
neither), so a tool call counts once.

The calls are made while the SDK's event loop stands still, on the loop's own thread
(mcp_http.exchange): a tool's call stops the loop and waits; ``answer_calls`` makes it
through Django with no loop running (Django's ORM refuses to run under a running loop), and
the loop goes on with the answer.

An API response is closed only once the ``/mcp`` answer has been sent (``after``): closing
it does the bookkeeping the API defers until its caller has the answer (a context's uses
and the run's given memories, api.responses), which must not delay the agent here either.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes, urlencode

import httpx2 as httpx
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.transport import DEFAULT_TIMEOUT, Call, Settings, decode

from api.auth import VOUCHED, Vouched
from memories.models import ApiKey
from ops import requestid

T = TypeVar("T")


@cache
def _django() -> WSGIHandler:
    return WSGIHandler()


class Answered:
    """What the API answered a call: an ``httpx.Response`` for the client's own decoding, and
    how to close the WSGI response once the ``/mcp`` answer is sent."""

    def __init__(self, response: httpx.Response, close: Callable[[], None]) -> None:
        self.response = response
        self.close = close


class InProcessClient(AsyncMemoryLayerClient):
    """The tools' client for one ``/mcp`` request: the caller's key and project, its
    address and request id. Nothing of the HTTP client of ``AsyncMemoryLayerClient`` is
    made: ``_send`` (the one way the endpoints go out) hands the call to Django."""

    def __init__(self, request: HttpRequest, api_key: ApiKey, token: str, request_id: str):
        host = request.get_host()
        self._settings = Settings.of(
            f"{request.scheme}://{host}",
            token,
            api_key.project.slug,
            DEFAULT_TIMEOUT,
            0,  # no retries: a 429 or 503 is the tool's answer at once
            {requestid.HEADER: request_id},
        )
        # What every call's WSGI environ holds: the /mcp request's server and address, and
        # the client's headers (its key, what it accepts, the request id).
        self._environ: dict[str, Any] = {
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": request.scheme,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "SCRIPT_NAME": "",
            "SERVER_NAME": request.META.get("SERVER_NAME", "localhost"),
            "SERVER_PORT": str(request.META.get("SERVER_PORT", "80")),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": request.META.get("REMOTE_ADDR", "127.0.0.1"),
            "HTTP_HOST": host,
            **_http_headers(self._settings.client_options()["headers"].items()),
            VOUCHED: Vouched(api_key),
        }
        # The API responses to close once the /mcp answer is sent, in order.
        self.after: list[Callable[[], None]] = []
        # The calls waiting for the loop to stand still, with the futures of their answers.
        self.calls: list[tuple[dict[str, Any], asyncio.Future[Answered]]] = []

    async def _send(self, call: Call[T]) -> T:
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Answered] = loop.create_future()
        self.calls.append((self._environ_of(call), answered))
        loop.stop()  # the loop's current turn ends, then answer_calls runs
        answer = await answered
        self.after.append(answer.close)
        return decode(call, answer.response)

    def _environ_of(self, call: Call[Any]) -> dict[str, Any]:
        body = b""
        environ: dict[str, Any] = {
            **self._environ,
            "REQUEST_METHOD": call.method,
            # Decoded, as a WSGI server gives it (PEP 3333: its bytes as latin-1 characters);
            # a user id or a key may be quoted (ana%40example.com).
            "PATH_INFO": unquote_to_bytes(call.path).decode("latin-1"),
            "QUERY_STRING": urlencode(call.params or {}),
            **_http_headers(call.headers().items()),
        }
        if call.json is not None:  # as the HTTP client sends JSON
            body = json.dumps(call.json, ensure_ascii=False, separators=(",", ":")).encode()
            environ["CONTENT_TYPE"] = "application/json"
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["wsgi.input"] = io.BytesIO(body)
        return environ

    def answer_calls(self) -> None:
        """Make the calls the tools are waiting for (no event loop runs on this thread)."""
        calls, self.calls = self.calls, []
        for environ, answered in calls:
            if answered.done():  # the tool was cancelled meanwhile
                continue
            try:
                answered.set_result(_call(environ))
            except Exception as error:
                answered.set_exception(error)

    async def aclose(self) -> None:
        pass  # no connection to close


def _http_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers}


def _call(environ: dict[str, Any]) -> Answered:
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [int(status.split(" ", 1)[0]), headers]
        return lambda _: None

    result = _django()(environ, start_response)
    content = b"".join(result)
    status, headers = started
    close = getattr(result, "close", None) or (lambda: None)  # Django's response has one
    return Answered(httpx.Response(status, headers=headers, content=content), close)
