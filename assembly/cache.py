"""The assembly cache and its invalidation.

Every write to a project's memories gives the project a new random version
token (after commit); a cached assembly is stored with the tokens it was
assembled at and served only while they are still the current ones, so any
write makes it stale. Global memories have their own token, checked too.
Bookkeeping of use (access counts) is not a change of what can be chosen and
does not invalidate.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.cache import caches
from django.db import transaction

CACHE_ALIAS = "assembly"
GLOBAL = "global"


def _version_key(scope: int | str) -> str:
    return f"assembly:version:{scope}"


def invalidate(project_ids: Iterable[int | None]) -> None:
    """After the current transaction commits, make cached assemblies of these projects stale
    (None: a global memory changed)."""
    scopes = {GLOBAL if pid is None else pid for pid in project_ids}
    if not scopes:
        return

    def bump() -> None:
        caches[CACHE_ALIAS].set_many(
            {_version_key(scope): uuid.uuid4().hex for scope in scopes}, timeout=None
        )

    transaction.on_commit(bump)


@dataclass(frozen=True)
class Answer:
    """A cached assembly: its JSON (as the API sends it, without the per-response metadata
    that ends it), and what recording a repeat needs without reading it."""

    body: bytes
    given: list[tuple[int, float]]
    prompt_hash: str


@dataclass(frozen=True)
class Lookup:
    """What the cache holds for a request, and the versions it was read at (the ones to store
    a fresh result under)."""

    answer: Answer | None
    versions: tuple[str, str]


def _entry_key(project_id: int, digest: str) -> str:
    return f"context:{project_id}:{digest}"


def get(project_id: int, digest: str) -> Lookup:
    """The cached result of a request, if no write happened since: one round trip reads the
    two versions and the entry, which holds the versions it was stored under."""
    keys = [_version_key(project_id), _version_key(GLOBAL), _entry_key(project_id, digest)]
    found = caches[CACHE_ALIAS].get_many(keys)
    versions = (found.get(keys[0], "0"), found.get(keys[1], "0"))
    entry = found.get(keys[2])
    if entry is None or tuple(entry["versions"]) != versions:
        return Lookup(None, versions)
    return Lookup(entry["answer"], versions)


def put(project_id: int, digest: str, lookup: Lookup, answer: Answer, timeout: int) -> None:
    """Store an answer under the versions read before it was assembled: if a write committed
    meanwhile, the versions moved and the entry is never served."""
    entry = {"versions": lookup.versions, "answer": answer}
    caches[CACHE_ALIAS].set(_entry_key(project_id, digest), entry, timeout=timeout)
