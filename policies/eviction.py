"""Eviction: a project over its limits archives its lowest-value memories until it fits."""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction

from memories import history
from memories.actors import Actor
from memories.models import EventAction
from memories.services import uses
from policies.runner import (
    BATCH_SIZE,
    IDLE_SINCE,
    MEMORIES,
    POLICIES,
    POLICY_JOIN,
    JobResult,
    changed_counts,
    params,
    policy,
    start,
    task,
)

# A memory's value to keep: recent use (halving every recency half-life) and quality.
VALUE = (
    f"{policy('lru_weight')} * power(0.5, extract(epoch FROM %(now)s - {IDLE_SINCE}) / 86400.0"
    f" / greatest({policy('recency_half_life_days')}, 1))"
    f" + {policy('quality_weight')} * m.confidence * m.relevance_score"
)
_OVER_LIMITS = f"""
SELECT project_id, max_items, max_total_tokens FROM {POLICIES}
WHERE max_items IS NOT NULL OR max_total_tokens IS NOT NULL ORDER BY project_id
"""
# Per (job, project) advisory locks: a second worker skips a project the first one holds.
_JOB_LOCK = "SELECT pg_try_advisory_xact_lock(hashtext(%s), %s)"
# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments=history.ARCHIVE,
    source="locked",
    where="m.id = locked.id",
    returning="m.id, m.project_id, locked.tier",
)
_EVENTS = history.insert_events(
    "events", history.Rows("changed", EventAction.EVICTED, history.archived(), "%(reason)s")
)
_EVICT_BATCH = f"""
WITH totals AS (
    SELECT count(*) AS items, coalesce(sum(token_count), 0) AS tokens
    FROM {MEMORIES} WHERE project_id = %(project_id)s AND active
), ranked AS (
    SELECT m.id, row_number() OVER w AS k, sum(m.token_count) OVER w - m.token_count AS before
    FROM {MEMORIES} m {POLICY_JOIN}
    WHERE m.project_id = %(project_id)s AND m.active AND NOT m.pinned
    WINDOW w AS (ORDER BY {VALUE}, m.id)
), victims AS (
    SELECT ranked.id FROM ranked, totals
    WHERE totals.items - (ranked.k - 1) > %(max_items)s
        OR totals.tokens - ranked.before > %(max_tokens)s
    ORDER BY ranked.k LIMIT %(batch_size)s
), locked AS (
    -- In id order, as every writer locks memories (memories.locks).
    SELECT m.id, m.tier FROM {MEMORIES} m JOIN victims ON victims.id = m.id
    WHERE m.active AND NOT m.pinned ORDER BY m.id FOR NO KEY UPDATE OF m
), {_CHANGED}, {_EVENTS}
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""
# Larger than any project can reach: "no limit" in the comparisons above.
_NO_LIMIT = 2**62


def evict_memories(
    *, now: datetime | None = None, batch_size: int = BATCH_SIZE, seconds: float | None = None
) -> JobResult:
    """A project over ``max_items`` active memories or ``max_total_tokens`` archives its
    lowest-value memories (tier frozen, restorable) until it fits; pinned ones never go."""
    uses.flush()
    common = params(now, batch_size, Actor.system("eviction"))
    result = start("evict_memories", seconds)
    with connection.cursor() as cursor:
        cursor.execute(_OVER_LIMITS)
        limits = cursor.fetchall()
    for project_id, max_items, max_tokens in limits:
        reasons = [
            f"{max_items} memories" if max_items is not None else "",
            f"{max_tokens} tokens" if max_tokens is not None else "",
        ]
        batch = {
            **common,
            "project_id": project_id,
            "max_items": _NO_LIMIT if max_items is None else max_items,
            "max_tokens": _NO_LIMIT if max_tokens is None else max_tokens,
            "reason": "over the project's limit of " + " and ".join(r for r in reasons if r),
        }
        while not result.out_of_time():
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(_JOB_LOCK, ["eviction", project_id])
                if not cursor.fetchone()[0]:
                    break
                cursor.execute(_EVICT_BATCH, batch)
                counts = changed_counts(cursor.fetchall())
                history.written(counts)
            result.add(counts)
            if sum(counts.values()) < batch_size:
                break
    return result


evict_memories_task = task("policies.evict_memories", evict_memories)
