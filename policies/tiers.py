"""Storage tiers: active memories are hot, warm or cold by their last use."""

from __future__ import annotations

from datetime import datetime

from memories import history
from memories.actors import Actor
from memories.models import Tier
from memories.models.choices import sql_literal
from memories.services import uses
from policies.runner import (
    BATCH_SIZE,
    IDLE_SINCE,
    MEMORIES,
    POLICY_JOIN,
    JobResult,
    days,
    params,
    task,
    walk,
    walk_statement,
)

# What the statement writes, as the store builds it (memories.history); tiers keep no history.
_CHANGED = history.update_memories(
    "changed",
    assignments={"tier": "due.tier"},
    source="due",
    where="m.id = due.id AND m.active AND m.tier <> due.tier",
    returning="m.id, m.project_id",
)
_TIER_BATCH = walk_statement(
    "active",
    f"""due AS (
    SELECT m.id, CASE
        WHEN {IDLE_SINCE} > %(now)s - {days("tier_hot_days")} THEN {sql_literal(Tier.HOT)}
        WHEN {IDLE_SINCE} > %(now)s - {days("tier_warm_days")} THEN {sql_literal(Tier.WARM)}
        ELSE {sql_literal(Tier.COLD)} END AS tier
    FROM {MEMORIES} m JOIN win ON win.id = m.id {POLICY_JOIN}
    WHERE m.active
    -- A row another writer holds gets its tier next time: this job never waits on one.
    FOR NO KEY UPDATE OF m SKIP LOCKED
), {_CHANGED}""",
)


def update_tiers(
    *, now: datetime | None = None, batch_size: int = BATCH_SIZE, seconds: float | None = None
) -> JobResult:
    """Active memories are hot, warm or cold by their last use (archived ones are frozen).
    Bookkeeping for the review pages and metrics: no history, nothing an agent is given
    changes (so nothing is announced), and the tier is in no index, so the updates stay
    HOT."""
    uses.flush()
    batch = params(now, batch_size, Actor.system("tiers"))
    return walk("update_tiers", _TIER_BATCH, batch, seconds, announce=False)


update_tiers_task = task("policies.update_tiers", update_tiers)
