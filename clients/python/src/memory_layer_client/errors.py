"""The service's error shape as exceptions: each carries the API's message and fields."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx


class MemoryLayerError(Exception):
    """A request the service refused or could not answer.

    ``message`` says what went wrong and what to fix (the API's own words), ``code`` is its
    stable machine-readable code, ``fields`` maps each wrong input to what is wrong with it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "error",
        fields: dict[str, list[str]] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields = fields or {}
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        """The message, and each field's problems that it does not already say."""
        missing = [
            f"{name}: {' '.join(problems)}"
            for name, problems in self.fields.items()
            if not all(problem in self.message for problem in problems)
        ]
        return " ".join([self.message, *missing])


class BadRequest(MemoryLayerError):
    """400: the input is wrong; ``fields`` says where."""


class Unauthorized(MemoryLayerError):
    """401: no key, or an unknown or revoked one."""


class Forbidden(MemoryLayerError):
    """403: the key may not do this (approval, for one, is for people)."""


class NotFound(MemoryLayerError):
    """404: no such thing in this key's project."""


class Conflict(MemoryLayerError):
    """409: the request clashes with the current state (e.g. an idempotency key reused)."""


class RateLimited(MemoryLayerError):
    """429: too many requests for this key; ``retry_after`` says when to try again."""


class Unavailable(MemoryLayerError):
    """503: the service cannot answer now; ``retry_after`` says when to try again."""


class ServerError(MemoryLayerError):
    """Any other 5xx."""


class TransportError(MemoryLayerError):
    """The service could not be reached (connection refused, timeout)."""


_BY_STATUS: dict[int, type[MemoryLayerError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def retry_after(response: httpx.Response) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds, or None."""
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def from_response(response: httpx.Response) -> MemoryLayerError:
    """The exception for a response that is not a success, with the API's message."""
    error: dict[str, Any] = {}
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
    except ValueError:
        pass
    status = response.status_code
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else MemoryLayerError)
    message = error.get("message") or f"HTTP {status}: {response.reason_phrase or 'error'}"
    return kind(
        str(message),
        status=status,
        code=str(error.get("code") or "error"),
        fields={str(k): [str(p) for p in v] for k, v in (error.get("fields") or {}).items()},
        request_id=response.headers.get("X-Request-ID"),
        retry_after=retry_after(response),
    )
