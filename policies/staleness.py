"""Code-change staleness: memories about paths a commit changed are flagged for re-review."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from memories import history
from memories.actors import Actor
from memories.locks import retried
from memories.matching import scope_condition
from memories.models import EventAction, Project
from memories.services.validation import scrubbed, secrets_mode
from memories.text import clean_changed_paths
from policies.runner import (
    BATCH_SIZE,
    MEMORIES,
    POLICY_JOIN,
    lowered,
    params,
    policy,
)

# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments={
        "confidence": "batch.after",
        "active": "batch.after >= batch.threshold",
        "stale_at": "%(now)s",
        "stale_ref": "%(ref)s",
        "updated_at": "%(now)s",
    },
    source="batch",
    where="m.id = batch.id",
    returning="m.id, m.project_id, m.active, batch.before, batch.after",
)
_EVENTS = history.insert_events(
    "events", history.Rows("changed", EventAction.STALE, history.CONFIDENCE_CHANGES, "%(reason)s")
)


def _stale_batch(match: str) -> str:
    """One batch of the memories of ``%(project_id)s`` whose tags ``match`` the paths."""
    return f"""
WITH batch AS (
    SELECT m.id, m.confidence AS before,
        {lowered(policy("staleness_penalty"))} AS after,
        {policy("deactivate_below")} AS threshold
    FROM {MEMORIES} m {POLICY_JOIN}
    WHERE m.project_id = %(project_id)s AND m.active AND m.stale_ref <> %(ref)s
        AND {match}
    ORDER BY m.id LIMIT %(batch_size)s
    FOR NO KEY UPDATE OF m
), {_CHANGED}, {_EVENTS}
SELECT id FROM changed ORDER BY id
"""


@retried
def _mark_batch(sql: str, batch: dict[str, Any], project: Project) -> list[int]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, batch)
        ids = [memory_id for (memory_id,) in cursor.fetchall()]
        if ids:
            history.written([project.pk])
    return ids


@dataclass
class StaleResult:
    ref: str
    memory_ids: list[int]


def memories_mark_changed(
    *,
    project: Project,
    paths: Sequence[str],
    ref: str,
    actor: Actor,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
) -> StaleResult:
    """A commit or merge (``ref``) changed ``paths``: every active memory of ``project``
    whose tags match one of them is flagged stale for re-review and loses the policy's
    ``staleness_penalty`` of confidence (inactive below the deactivation threshold), with
    a ``stale`` history row naming the ref. Posting the same ref again changes nothing."""
    paths = clean_changed_paths(list(paths))
    scanned = scrubbed({"ref": ref, "paths": paths}, secrets_mode(project))
    ref, paths = scanned["ref"], scanned["paths"]
    match, match_params = scope_condition(str(project.pk), paths)
    sql = _stale_batch(match)
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    batch = {
        **params(now, batch_size, actor),
        **match_params,
        "project_id": project.pk,
        "ref": ref,
        "reason": f"code changed in {ref}: {shown}",
    }
    marked: list[int] = []
    while True:
        ids = _mark_batch(sql, batch, project)
        marked += ids
        if len(ids) < batch_size:
            return StaleResult(ref=ref, memory_ids=marked)
