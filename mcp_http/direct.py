"""The common MCP request, answered by the SDK's single-exchange driver.

An agent's ``tools/call`` (or ``tools/list``) over stateless Streamable HTTP is one JSON-RPC
request answered by one JSON object. The SDK's session manager answers it by building, for
that one request, a transport with its memory streams, a JSON-RPC dispatcher and a task
that runs them: a few milliseconds of machinery around the handler. Here such a request goes
straight to the SDK's handler chain through ``serve_one`` (the driver the SDK itself uses for
one exchange), with the same born-ready connection and the same exception-to-error mapping
as the manager's stateless path; the answer is the same bytes (tests/mcp/test_direct.py
holds both paths to it).

Everything else is left to the manager (``None``): an ``initialize``, notifications and
responses, batches, a body that is not a JSON-RPC request, another media type, a client
that does not accept JSON, a protocol version the manager routes elsewhere, and every
method but POST.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic_core import from_json, to_json

logger = logging.getLogger(__name__)

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")
_HEADERS = [(b"content-type", b"application/json")]
_JSON = "application/json"
_JSON_TYPES = {_JSON, "application/*", "*/*"}


@dataclass
class _Exchange:
    """The dispatch context of one request answered with JSON: no stream to the client, so
    no request of the server's own and nowhere for a notification to go (as on the
    manager's stateless path in JSON mode)."""

    transport: TransportContext
    request_id: Any
    message_metadata: Any = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        return None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


def _plain(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The protocol version of a request the direct path may answer (JSON in, as the
    manager reads the media type; JSON accepted; a handshake-era version or none), else
    None."""
    content_type = accept = ""
    version = DEFAULT_NEGOTIATED_VERSION
    for name, value in headers:
        if name == b"content-type":
            content_type = value.decode("latin-1")
        elif name == b"accept":
            accept = value.decode("latin-1")
        elif name == _VERSION_HEADER:
            version = value.decode("latin-1")
    media_types = [part.strip() for part in content_type.split(";")[0].split(",")]
    if not content_type.lower().startswith(_JSON) or _JSON not in media_types:
        return None
    accepted = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    if not accepted & _JSON_TYPES or version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    return version


def _request(body: bytes) -> dict[str, Any] | None:
    """The body as one JSON-RPC request other than ``initialize``, else None."""
    if len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
        return None
    try:  # as the manager parses it: its parser's refusals are its to answer
        message = from_json(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if (
        message.get("jsonrpc") != "2.0"
        or type(request_id) not in (int, str)
        or not isinstance(method, str)
        or method == "initialize"
        or not (params is None or isinstance(params, dict))
    ):
        return None
    return message


def takes(scope: dict[str, Any], body: bytes) -> tuple[str, dict[str, Any]] | None:
    """The protocol version and the message of a request this path answers (a POST of
    one plain request), else None."""
    if scope["method"] != "POST":
        return None
    version = _plain(scope["headers"])
    message = None if version is None else _request(body)
    return None if version is None or message is None else (version, message)


async def answer(
    app: Server[Any], lifespan_state: Any, scope: dict[str, Any], body: bytes
) -> Answer | None:
    """The answer to a plain request (always a 200 in JSON), or None for the manager."""
    taken = takes(scope, body)
    if taken is None:
        return None
    version, message = taken
    request_id = message["id"]
    exchange = _Exchange(
        transport=TransportContext(kind="streamable-http", can_send_request=False),
        request_id=request_id,
    )
    connection = Connection.from_envelope(version, None, None)
    try:
        result = await serve_one(
            app,
            exchange,
            message["method"],
            message.get("params"),
            connection=connection,
            lifespan_state=lifespan_state,
        )
    except Exception as failure:
        data = handler_exception_to_error_data(failure)
        if data is None:  # as the manager's dispatcher answers an unmapped failure
            logger.exception("handler for %r raised", message["method"])
            data = ErrorData(code=0, message=str(failure))
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=data)
        return 200, _HEADERS, error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    # The result is the SDK's wire form already (``serve_one`` dumped and checked it): it is
    # written as JSONRPCResponse writes it, without validating it once more.
    return 200, _HEADERS, to_json({"jsonrpc": "2.0", "id": request_id, "result": result})
