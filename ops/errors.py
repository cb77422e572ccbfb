"""The one error shape of every API answer that is not a success."""

from __future__ import annotations


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


# How a client passes its key: what every 401 says, on the API and on /mcp.
PASS_KEY = "send the project's API key as 'Authorization: Bearer <key>'"
# The challenge of a 401. Not a Bearer challenge: an MCP client that follows the
# authorization spec reads one as "get an OAuth token" and goes looking for an authorization
# server, and this server has none (its keys are made by ``manage.py create_api_key``).
CHALLENGE = 'ApiKey realm="memory-layer"'
# Where OAuth clients look for metadata (RFC 9728, RFC 8414, OpenID discovery): a 404 there
# says "no OAuth here", and its message says what to do instead.
OAUTH_METADATA = ("/.well-known/oauth-", "/.well-known/openid-configuration")
NO_OAUTH = f"This server does not use OAuth: {PASS_KEY}."


def answers_in_json(path: str) -> bool:
    """Paths whose every answer, errors included, is JSON in the error shape: the API's, the
    MCP endpoint's (clients there read JSON, never a page) and OAuth's metadata paths."""
    return path.startswith(("/api/", "/mcp/", *OAUTH_METADATA)) or path in {"/api", "/mcp"}


def body_too_large(limit: int, size: int | None = None) -> str:
    """What a 413 says: the limit, and the body's size when it is known."""
    told = f"The body is {size:,} bytes" if size is not None else "The body is too large"
    return f"{told}; this server takes at most {limit:,} bytes."
