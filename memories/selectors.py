"""Reads of the memory store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from memories.candidates import candidate_query, global_source, project_source
from memories.keys import secret_matches, split_token
from memories.models import ApiKey, Memory, MemoryEvent, Project

# Memory columns for model instances built from the candidate query (not the generated ones).
_MODEL_COLUMNS = ", ".join(f"m.{f.column}" for f in Memory._meta.concrete_fields if not f.generated)


def memories_for_task(
    *,
    project: Project,
    write_scope: Sequence[str],
    limit: int | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The selection at run start: the project's and the global usable memories, those whose
    tags match the write scope first, then by confidence x relevance_score; ties by higher
    confidence, then older first. One query (memories.candidates)."""
    sql, params = candidate_query(
        [project_source(project.pk), global_source()],
        write_scope=write_scope,
        intent="",
        size=limit or project.policy.selection_limit,
        min_confidence=project.policy.min_confidence,
        now=now or timezone.now(),
        columns=_MODEL_COLUMNS,
    )
    return list(Memory.objects.raw(sql, params))


def memory_history(*, memory_id: int) -> QuerySet[MemoryEvent]:
    return MemoryEvent.objects.filter(memory_id=memory_id).select_related("actor_user", "run")


def api_key_for_token(token: str) -> ApiKey | None:
    """The active key a bearer token proves, or None. Constant-time on the secret."""
    parts = split_token(token)
    if parts is None:
        return None
    prefix, secret = parts
    api_key = (
        ApiKey.objects.select_related("project__policy")
        .filter(prefix=prefix, revoked_at=None)
        .first()
    )
    if api_key is None or not secret_matches(secret, api_key.secret_hash):
        return None
    return api_key
