"""``/mcp``: the Model Context Protocol over Streamable HTTP, with the project's API key.

The protocol is the official SDK's (``StreamableHTTPSessionManager``), stateless and
answering JSON: each POST is one exchange, so any web worker (gunicorn's, or runserver's)
answers any request and no session lives in a process. The request is authenticated here
as the API authenticates it (``Authorization: Bearer <key>``; a missing, unknown or revoked
key is a 401 before the protocol is spoken), then handed to the SDK as an ASGI request, on
an event loop whose session manager is already running (``mcp_http.exchange``; asgiref's
bridge would start a thread and a loop for each). Each tool calls the API in process with
the same key (``mcp_http.transport``): another project's memories do not exist for it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from api.auth import ApiKeyAuthentication, api_key_of
from api.responses import ThenJSONResponse
from mcp_http import exchange
from mcp_http.transport import InProcessClient
from ops import requestid

# Headers the WSGI server sets itself (a WSGI application may not).
HOP_BY_HOP = {
    b"content-length",
    b"connection",
    b"keep-alive",
    b"transfer-encoding",
    b"te",
    b"trailer",
    b"upgrade",
    b"proxy-authenticate",
    b"proxy-authorization",
}


def _scope(request: Request) -> dict[str, Any]:
    """The ASGI scope of a Django request (what the SDK's transport reads)."""
    raw = request._request  # the HttpRequest
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in raw.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": raw.method,
        "scheme": raw.scheme,
        "path": raw.path,
        "raw_path": raw.path.encode(),
        "root_path": "",
        "query_string": raw.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (raw.META.get("REMOTE_ADDR", ""), 0),
        "server": (raw.get_host(), 0),
    }


class McpEndpoint(APIView):
    """Streamable HTTP (POST one JSON-RPC message; GET and DELETE answer as the SDK says)."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAuthenticated]
    # The tools' own API calls are throttled per key as any; the endpoint adds nothing.
    throttle_classes: list[Any] = []
    schema = None  # not part of the REST API's OpenAPI document
    # Its own reads are few; each tool's API call is routed as that call (memories.replicas).
    replica_reads = True

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # The SDK answers what the client accepts (JSON, or 405 for an event stream this
        # stateless server does not offer); an error of this view (a 401) is JSON.
        return JSONRenderer(), "application/json"

    def _answer(self, request: Request) -> HttpResponse:
        api_key = api_key_of(request)
        assert api_key is not None  # IsAuthenticated with key authentication only
        raw = request._request
        request_id = getattr(raw, "request_id", requestid.NONE)
        token = raw.headers["Authorization"].split(None, 1)[1]
        client = InProcessClient(raw, api_key, token, request_id)
        try:
            status, headers, body = exchange.answer(_scope(request), raw.body, client)
        except BaseException:
            for close in client.after:  # the API calls made so far end now
                close()
            raise
        # The API calls' own after-work runs once this answer is sent (mcp_http.transport).
        response = ThenJSONResponse(body, then=client.after)
        response.status_code = status
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                response.headers[name.decode("latin-1")] = value.decode("latin-1")
        return response

    def post(self, request: Request) -> HttpResponse:
        return self._answer(request)

    def get(self, request: Request) -> HttpResponse:
        # A stateless server holds no stream open for server-sent messages: the spec's
        # answer for that is a 405.
        body = (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"This server is'
            b' stateless: it offers no event stream. POST each message."}}'
        )
        response = HttpResponse(body, status=405, content_type="application/json")
        response["Allow"] = "POST, DELETE"
        return response

    def delete(self, request: Request) -> HttpResponse:
        return self._answer(request)
