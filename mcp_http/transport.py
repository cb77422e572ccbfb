"""The API, called in process: the tools' client hands each call to Django as a WSGI request.

The MCP tools are REST calls (memory_layer_client.tools), so on the server they call the
service itself, through what the API does with an agent's request (the caller's key,
throttles, validation, idempotency; of the site's middleware, what a call needs:
``CALL_MIDDLEWARE``) but with no socket and no HTTP client: the client's
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
from typing import Any, TypeVar, cast
from urllib.parse import unquote_to_bytes, urlencode

import httpx2 as httpx
from django.conf import settings
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_script_name
from django.http import HttpRequest
from django.urls import set_script_prefix
from django.utils.module_loading import import_string
from memory_layer_client.client import AsyncMemoryLayerClient
from memory_layer_client.transport import DEFAULT_TIMEOUT, Call, Settings, decode
from pydantic_core import from_json

from api.auth import VOUCHED, Vouched
from memories.models import ApiKey
from ops import requestid

T = TypeVar("T")


# What of the site's middleware an in-process call goes through: its request id (in its log
# lines and error bodies), giving back its concurrency slot, and, with read replicas,
# choosing where it reads. The rest is the ``/mcp`` request's own (metrics, the body limit)
# or has nothing to do with a call that never leaves the process (security headers, static
# files, sessions, CSRF, messages, sign-in lockouts).
CALL_MIDDLEWARE = (
    "ops.requestid.RequestIdMiddleware",
    "api.middleware.ReleaseSlotMiddleware",
    "memories.replicas.ReplicaReadsMiddleware",
)


class CallHandler(WSGIHandler):
    """Django's WSGI handler with only the middleware of ``CALL_MIDDLEWARE`` that the site
    installs, in the site's order (all of it synchronous, as this handler is)."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        self.middleware = [m for m in settings.MIDDLEWARE if m in CALL_MIDDLEWARE]
        for path in reversed(self.middleware):
            instance = import_string(path)(handler)
            if hasattr(instance, "process_view"):
                self._view_middleware.insert(0, instance.process_view)
            if hasattr(instance, "process_exception"):
                self._exception_middleware.append(instance.process_exception)
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler


@cache
def _django() -> CallHandler:
    return CallHandler()


class Answered:
    """What the API answered a call, and how to close the WSGI response once the ``/mcp``
    answer is sent."""

    def __init__(
        self, status: int, headers: list[tuple[str, str]], content: bytes, close: Callable[[], None]
    ) -> None:
        self.status = status
        self.headers = headers
        self.content = content
        self.close = close

    def decoded(self, call: Call[T]) -> T:
        """The answer as the client decodes it. A success with a body is the API's own JSON,
        read by pydantic's parser (a recall's answer in a third of the time); anything else
        goes through the client's decoding, errors and all."""
        if self.status in call.ok and self.status != 204 and self.content:
            return cast(T, from_json(self.content))
        return decode(call, httpx.Response(self.status, headers=self.headers, content=self.content))


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
        return answer.decoded(call)

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
    """One call through Django's handler. Not a request of its own to the database
    connections: it runs on the ``/mcp`` request's (mcp_http.exchange), which that request
    started and checked, so ``request_started`` (which would have them checked again) is not
    sent; ``request_finished`` is, when the call's response is closed."""
    set_script_prefix(get_script_name(environ))
    response = _django().get_response(WSGIRequest(environ))
    content = b"".join(response)
    return Answered(response.status_code, list(response.items()), content, response.close)
