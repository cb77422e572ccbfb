"""The assembly cache and its invalidation.

Every write to a project's memories gives the project a new random version
token (after commit); cached assemblies are keyed by it, so any write makes
them unreachable. Global memories have their own token, part of every key.
Bookkeeping of use (access counts) is not a change of what can be chosen and
does not invalidate.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.core.cache import caches
from django.db import transaction

CACHE_ALIAS = "assembly"
GLOBAL = "global"


def _version_key(scope: int | str) -> str:
    return f"assembly:version:{scope}"


def versions(project_id: int) -> tuple[str, str]:
    cache = caches[CACHE_ALIAS]
    found = cache.get_many([_version_key(project_id), _version_key(GLOBAL)])
    return (
        found.get(_version_key(project_id), "0"),
        found.get(_version_key(GLOBAL), "0"),
    )


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


def get(key: str) -> dict | None:
    return caches[CACHE_ALIAS].get(key)


def put(key: str, value: dict, timeout: int) -> None:
    caches[CACHE_ALIAS].set(key, value, timeout=timeout)
