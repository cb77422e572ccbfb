"""The one error shape of every API answer that is not a success."""

from __future__ import annotations


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}
