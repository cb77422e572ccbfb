"""Python client of the Memory Layer service.

- ``MemoryLayerClient`` / ``AsyncMemoryLayerClient``: the whole REST API, typed.
- ``MemoryLayer``, ``ProjectMemoryLayer``, ``HistoryWindow`` and ``assemble_view``: the
  slot-based memory layer of an agent loop.
- ``memory-layer-mcp``: an MCP server on stdio for local agents (``memory_layer_client.stdio``).
"""

from memory_layer_client.client import AsyncMemoryLayerClient, MemoryLayerClient, next_cursor
from memory_layer_client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    MemoryLayerError,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "AsyncMemoryLayerClient",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "MemoryLayerClient",
    "MemoryLayerError",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "next_cursor",
]
