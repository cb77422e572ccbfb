"""Reads of the memory store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from memories.candidates import candidate_query, global_source, project_source
from memories.keys import secret_matches, split_token
from memories.models import ApiKey, Memory, MemoryEvent, MemoryPolicy, Project
from memories.statements import server_cursor

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


# The key with its project and the project's policy, in one hand-written statement: every
# API request runs it, and compiling it through the ORM took as long as running it.
_KEY_MODELS = (ApiKey, Project, MemoryPolicy)
_KEY_SQL = (
    "SELECT "
    + ", ".join(
        f'{alias}."{f.column}"'
        for alias, model in zip(("k", "p", "policy"), _KEY_MODELS, strict=True)
        for f in model._meta.concrete_fields
    )
    + f" FROM {ApiKey._meta.db_table} k"
    f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
    f" LEFT JOIN {MemoryPolicy._meta.db_table} policy ON policy.project_id = p.id"
    " WHERE k.prefix = %s AND k.revoked_at IS NULL"
)


def api_key_for_token(token: str) -> ApiKey | None:
    """The active key a bearer token proves, with its project and policy loaded, or None.
    Constant-time on the secret."""
    parts = split_token(token)
    if parts is None:
        return None
    prefix, secret = parts
    with server_cursor(prepare=True) as cursor:  # one plan for every request
        cursor.execute(_KEY_SQL, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key, project, policy = _instances(row)
    if not secret_matches(secret, api_key.secret_hash):
        return None
    api_key.project = project
    if policy.pk is not None:
        project.policy = policy
    return api_key


def _instances(row: Sequence[Any]) -> list[Any]:
    instances = []
    start = 0
    for model in _KEY_MODELS:
        names = [f.attname for f in model._meta.concrete_fields]
        instances.append(model.from_db(connection.alias, names, row[start : start + len(names)]))
        start += len(names)
    return instances
