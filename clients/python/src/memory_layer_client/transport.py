"""How a call travels: what a request is (``Call``), the client's settings, query
parameters as the API reads them, the answer decoded or turned into an exception
(``memory_layer_client.errors``), and how long to wait before a retry.

Every write carries an ``Idempotency-Key`` (the same one on its retries, so a retried
create never makes a twin); a 503 or 429 is retried after the ``Retry-After`` the service
sends, up to ``retries`` times.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import httpx2 as httpx

from memory_layer_client import errors

T = TypeVar("T")


DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
# A Retry-After longer than this is not waited for: the error is raised instead.
MAX_RETRY_WAIT = 60.0
_WRITES = {"POST", "PATCH", "PUT", "DELETE"}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: what to send and the status codes that mean success."""

    method: str
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    idempotency_key: str | None = None
    ok: tuple[int, ...] = (200, 201, 202)

    def headers(self) -> dict[str, str]:
        if self.method in _WRITES:
            return {"Idempotency-Key": self.idempotency_key or uuid.uuid4().hex}
        return {}


def encode_query(params: Mapping[str, Any] | None) -> dict[str, str]:
    """Query parameters as the API reads them: lists joined by commas, booleans in lower
    case, absent values left out."""
    out: dict[str, str] = {}
    for name, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = str(value)
    return out


def next_cursor(next_url: str | None) -> str | None:
    """The cursor of a page's ``next`` link, to pass as ``cursor=``."""
    if not next_url:
        return None
    return parse_qs(urlsplit(next_url).query).get("cursor", [None])[0]


def decode(call: Call[T], response: httpx.Response) -> T:
    if response.status_code not in call.ok:
        raise errors.from_response(response)
    if response.status_code == 204 or not response.content:
        return cast(T, None)
    return cast(T, response.json())


def retry_delay(response: httpx.Response, attempt: int, retries: int) -> float | None:
    """Seconds to wait before retrying this response, or None to give it back as it is."""
    if response.status_code not in (429, 503) or attempt >= retries:
        return None
    delay = errors.retry_after(response)
    if delay is None:
        delay = min(2.0**attempt * 0.5, 8.0)
    return delay if delay <= MAX_RETRY_WAIT else None


def unreachable(error: httpx.HTTPError) -> errors.TransportError:
    return errors.TransportError(
        f"The Memory Layer service could not be reached: {error}. Check the URL and that"
        " the service is running."
    )


@dataclass
class Settings:
    base_url: str
    api_key: str
    project: str | None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        base_url: str | None,
        api_key: str | None,
        project: str | None,
        timeout: float,
        retries: int,
        headers: Mapping[str, str] | None,
    ) -> Settings:
        base_url = base_url or os.environ.get("MEMORY_LAYER_URL")
        api_key = api_key or os.environ.get("MEMORY_LAYER_KEY")
        if not base_url:
            raise ValueError("Give the service's URL (base_url=, or MEMORY_LAYER_URL).")
        if not api_key:
            raise ValueError("Give the project's API key (api_key=, or MEMORY_LAYER_KEY).")
        return cls(
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            project=project or os.environ.get("MEMORY_LAYER_PROJECT") or None,
            timeout=timeout,
            retries=retries,
            headers=dict(headers or {}),
        )

    def client_options(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "headers": {
                "Authorization": f"Bearer {self.api_key}",
                "Accept": "application/json",
                "User-Agent": "memory-layer-client/0.1",
                **self.headers,
            },
            "timeout": self.timeout,
        }
