"""The logging configuration of config.settings: one line per record with the request id, or
one JSON object per line (ops.logs)."""

from __future__ import annotations

from typing import Any


def logging_settings(log_format: str, level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "ops.requestid.RequestIdFilter"},
            "client_errors": {"()": "ops.logs.ClientErrorsWithoutTraceback"},
        },
        "formatters": {
            "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
            "json": {"()": "ops.logs.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "filters": ["request_id"],
                "formatter": log_format,
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # A 403 or 404 is one line, without a traceback.
            "django.request": {"filters": ["client_errors"]},
            "pgserver": {"level": "WARNING"},
            # The MCP SDK says at INFO that it starts and stops each stateless exchange.
            "mcp": {"level": "WARNING"},
            # The MCP tools' in-process API calls: each is logged as a request of its own.
            "httpx2": {"level": "WARNING"},
        },
    }
