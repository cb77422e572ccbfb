"""Python client of the Memory Layer service.

- ``MemoryLayerClient`` / ``AsyncMemoryLayerClient``: the whole REST API, typed.
- ``MemoryLayer``, ``ProjectMemoryLayer``, ``HistoryWindow`` and ``assemble_view``: the
  slot-based memory layer of an agent loop.
- ``memory-layer-mcp``: an MCP server on stdio for local agents (``memory_layer_client.stdio``).
"""

from memory_layer_client.client import AsyncMemoryLayerClient, MemoryLayerClient
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
from memory_layer_client.history import HistoryWindow, Message
from memory_layer_client.layers import (
    Diagnostic,
    LayerInitError,
    LayerOutput,
    LayerStack,
    MemoryLayer,
    ProjectMemoryLayer,
    View,
    assemble_view,
)
from memory_layer_client.transport import next_cursor

__all__ = [
    "AsyncMemoryLayerClient",
    "BadRequest",
    "Conflict",
    "Diagnostic",
    "Forbidden",
    "HistoryWindow",
    "LayerInitError",
    "LayerOutput",
    "LayerStack",
    "MemoryLayer",
    "MemoryLayerClient",
    "MemoryLayerError",
    "Message",
    "NotFound",
    "ProjectMemoryLayer",
    "RateLimited",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "View",
    "assemble_view",
    "next_cursor",
]
