"""The one error shape of every API answer that is not a success."""

from __future__ import annotations


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def answers_in_json(path: str) -> bool:
    """Paths whose every answer, errors included, is JSON in the error shape: the API's and
    the MCP endpoint's (clients there read JSON, never a page)."""
    return path.startswith(("/api/", "/mcp/")) or path in {"/api", "/mcp"}


def body_too_large(limit: int, size: int | None = None) -> str:
    """What a 413 says: the limit, and the body's size when it is known."""
    told = f"The body is {size:,} bytes" if size is not None else "The body is too large"
    return f"{told}; this server takes at most {limit:,} bytes."
