"""The assembly cache and its invalidation.

Every write to a project's memories gives the project a new random version
token once it commits (the store announces it: memories.hooks); a cached
assembly is stored with the tokens it was assembled at and served only while
they are still the current ones, so any write makes it stale. Global memories
have their own token, checked too. Bookkeeping of use (access counts) is not a
change of what can be chosen and does not invalidate.

The cache is an accelerator, never a dependency: when it cannot be reached, requests are
assembled without it. A process that saw it fail trusts nothing it holds for the cache's
lifetime (``ASSEMBLY_CACHE_SECONDS``), since version bumps may have been lost meanwhile.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import caches

from assembly.metrics import CACHE_ERRORS
from assembly.results import Context
from memories import replicas
from memories.hooks import MemoriesChanged

logger = logging.getLogger(__name__)

CACHE_ALIAS = "assembly"
GLOBAL = "global"
# Versions of a lookup made while the cache is distrusted: never stored under.
UNKNOWN = ("", "")
_distrusted_until = 0.0


def _failed(operation: str, exc: Exception) -> None:
    global _distrusted_until
    _distrusted_until = time.monotonic() + max(settings.ASSEMBLY_CACHE_SECONDS, 1)
    CACHE_ERRORS.inc()
    logger.warning("The assembly cache failed to %s (%s); assembling without it", operation, exc)


def _trusted() -> bool:
    return time.monotonic() >= _distrusted_until


def _version_key(scope: int | str) -> str:
    return f"assembly:version:{scope}"


def invalidate(project_ids: Iterable[int | None]) -> None:
    """Make cached assemblies of these projects stale (None: a global memory changed).

    With read replicas, a version names the primary's WAL position after the write
    (``<token>@<position>``): an answer assembled on a replica that had not replayed it yet
    is not stored under it (``put``), so no reader is served the memories from before the
    write under the version after it."""
    scopes = {GLOBAL if pid is None else pid for pid in project_ids}
    if not scopes:
        return
    try:
        position = replicas.primary_position()
        suffix = "" if position is None else f"@{position}"
        caches[CACHE_ALIAS].set_many(
            {_version_key(scope): uuid.uuid4().hex + suffix for scope in scopes}, timeout=None
        )
    except Exception as exc:  # the write is committed; the cache must not undo its answer
        _failed("invalidate", exc)


def on_memories_changed(*, change: MemoriesChanged, **kwargs: Any) -> None:
    """Subscriber of memories.hooks: a committed change of a project's memories."""
    invalidate(change.project_ids)


@dataclass(frozen=True)
class Answer:
    """A cached assembly: the result, or the caller's encoding of it when it gave one (the
    API's JSON without the per-response metadata that ends it: a repeat is sent as it is,
    never decoded), and what recording a repeat needs without reading either."""

    result: Context | None
    body: bytes | None
    given: list[tuple[int, float, dict[str, float]]]
    prompt_hash: str
    request: dict[str, Any] | None = None


@dataclass(frozen=True)
class Lookup:
    """What the cache holds for a request, and the versions it was read at (the ones to store
    a fresh result under)."""

    answer: Answer | None
    versions: tuple[str, str]


# The shape of a stored Answer: a new shape is a new key, so processes of two releases that
# share the cache (a rolling deploy) never read each other's entries.
ENTRY_FORMAT = 5


def versions(project_id: int) -> dict[str, str] | None:
    """The current versions of a project's memories and of the global ones, by owner (the
    project's id as text, and "g"), or None when the cache cannot say."""
    if not _trusted():
        return None
    keys = [_version_key(project_id), _version_key(GLOBAL)]
    try:
        found = caches[CACHE_ALIAS].get_many(keys)
    except Exception as exc:
        _failed("read", exc)
        return None
    return owners(project_id, (found.get(keys[0], "0"), found.get(keys[1], "0")))


def owners(project_id: int, read: tuple[str, str]) -> dict[str, str] | None:
    """Versions as a lookup read them, by owner (None when they are unknown)."""
    if read == UNKNOWN:
        return None
    return {str(project_id): read[0], "g": read[1]}


def _entry_key(project_id: int, digest: str) -> str:
    return f"context:{ENTRY_FORMAT}:{project_id}:{digest}"


def get(project_id: int, digest: str) -> Lookup:
    """The cached result of a request, if no write happened since: one round trip reads the
    two versions and the entry, which holds the versions it was stored under."""
    if not _trusted():
        return Lookup(None, UNKNOWN)
    keys = [_version_key(project_id), _version_key(GLOBAL), _entry_key(project_id, digest)]
    try:
        found = caches[CACHE_ALIAS].get_many(keys)
    except Exception as exc:
        _failed("read", exc)
        return Lookup(None, UNKNOWN)
    versions = (found.get(keys[0], "0"), found.get(keys[1], "0"))
    entry = found.get(keys[2])
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("answer"), Answer)
        or tuple(entry.get("versions", ())) != versions
    ):
        return Lookup(None, versions)  # none, stale, or not one this release wrote
    return Lookup(entry["answer"], versions)


def _saw(versions: tuple[str, str]) -> bool:
    """Whether this request's reads saw the writes that made ``versions`` (see invalidate)."""
    seen = replicas.read_position()
    if seen is None:
        return True
    written = [int(v.rpartition("@")[2]) for v in versions if "@" in v]
    return seen >= max(written, default=0)


def put(project_id: int, digest: str, lookup: Lookup, answer: Answer, timeout: int) -> None:
    """Store an answer under the versions read before it was assembled: if a write committed
    meanwhile, the versions moved and the entry is never served."""
    if lookup.versions == UNKNOWN or not _trusted() or not _saw(lookup.versions):
        return
    entry = {"versions": lookup.versions, "answer": answer}
    try:
        caches[CACHE_ALIAS].set(_entry_key(project_id, digest), entry, timeout=timeout)
    except Exception as exc:
        _failed("store", exc)
