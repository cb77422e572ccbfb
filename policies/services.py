"""Lifecycle policies: set-based SQL in short batches, safe to run twice or at once.

Each batch is one statement in its own transaction: it picks a bounded set of rows through
the job's partial index, skips rows another worker holds (``FOR UPDATE SKIP LOCKED``),
re-checks the job's condition on the rows it changes, and writes their history in the same
statement. A batch is therefore applied whole or not at all; a second run, or a second
worker, finds nothing left to do and writes no second history row.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from assembly import cache as assembly_cache
from assembly.tokens import count_tokens
from memories import uses
from memories.candidates import scope_condition
from memories.models import Memory, MemoryEvent, MemoryPolicy, Project
from memories.text import content_hash
from ops.metrics import JOB_CHANGED, JOB_RUNS, JOB_SECONDS
from policies.compression import Compressor, configured_compressor
from policies.models import JobState, PendingComparison

BATCH_SIZE = 5000
# The memories a run of a job covers, by id: (after, up to]. Jobs that take one can run as
# several parts at once (``id_parts``), one per worker process.
IdRange = tuple[int, int]
ALL_IDS: IdRange = (0, 2**63 - 1)

MEMORIES = Memory._meta.db_table
EVENTS = MemoryEvent._meta.db_table
POLICIES = MemoryPolicy._meta.db_table
PENDING = PendingComparison._meta.db_table
# Every job reads a memory's project policy through this join; global memories (no
# project) and projects without a policy row get the field defaults (``policy_params``).
POLICY_JOIN = f"LEFT JOIN {POLICIES} p ON p.project_id = m.project_id"
_EVENT_COLUMNS = "(memory_id, project_id, action, changes, reason, actor_label, created_at)"


def policy(name: str) -> str:
    """SQL for policy field ``name`` of memory ``m`` (its default without a policy row)."""
    return f"coalesce(p.{name}, %(default_{name})s)"


def policy_params() -> dict[str, Any]:
    return {
        f"default_{f.attname}": f.get_default()
        for f in MemoryPolicy._meta.concrete_fields
        if not f.primary_key and f.attname != "project_id"
    }


# The time since memory ``m`` was last given to an agent (or created).
IDLE_SINCE = "coalesce(m.last_accessed_at, m.created_at)"


def _days(name: str) -> str:
    return f"make_interval(days => {policy(name)})"


@dataclass
class JobResult:
    """What a policy job changed, per project (None: global memories)."""

    job: str
    batches: int = 0
    changed: dict[int | None, int] = field(default_factory=dict)
    # False when the job stopped at its time budget with work left (the next run goes on).
    finished: bool = True
    deadline: float | None = None

    def out_of_time(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.finished = False
            return True
        return False

    @property
    def total(self) -> int:
        return sum(self.changed.values())

    def add(self, counts: dict[int | None, int]) -> None:
        self.batches += 1
        for project_id, count in counts.items():
            self.changed[project_id] = self.changed.get(project_id, 0) + count

    def summary(self) -> dict[str, int | bool]:
        return {"changed": self.total, "batches": self.batches, "finished": self.finished}


def _result(job: str, seconds: float | None) -> JobResult:
    """A job's result, with a deadline ``seconds`` from now: a job stops between batches
    once it has passed (each batch is whole), well before a task's time limit."""
    return JobResult(job, deadline=None if seconds is None else time.monotonic() + seconds)


def record_run(
    job: Callable[..., JobResult], *, name: str | None = None, **kwargs: Any
) -> JobResult:
    """Run a job and keep its last run in its JobState (started, finished, what changed),
    under ``name`` (by default the job's)."""
    name = name or job.__name__
    JobState.objects.update_or_create(name=name, defaults={"last_started_at": timezone.now()})
    started = time.monotonic()
    try:
        result = job(**kwargs)
    except Exception:
        JOB_RUNS.labels(job.__name__, "failed").inc()
        raise
    finally:
        JOB_SECONDS.labels(job.__name__).observe(time.monotonic() - started)
    JOB_RUNS.labels(job.__name__, "complete" if result.finished else "partial").inc()
    JOB_CHANGED.labels(job.__name__).inc(result.total)
    JobState.objects.filter(name=name).update(
        last_finished_at=timezone.now(),
        last_changed=result.total,
        last_batches=result.batches,
        last_complete=result.finished,
    )
    return result


def _params(now: datetime | None, batch_size: int, actor: str, **extra: Any) -> dict[str, Any]:
    return {
        **policy_params(),
        "now": now or timezone.now(),
        "batch_size": batch_size,
        "actor": actor,
        **extra,
    }


def _changed_counts(rows: Iterable[Sequence[Any]]) -> dict[int | None, int]:
    return {project_id: count for project_id, count in rows if count}


def _drain(job: str, sql: str, params: dict[str, Any], seconds: float | None) -> JobResult:
    """Run a batch statement whose rows leave its filter once changed, until a batch is not
    full. The statement returns (project_id, changed) rows."""
    result = _result(job, seconds)
    while not result.out_of_time():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            counts = _changed_counts(cursor.fetchall())
            assembly_cache.invalidate(counts)
        result.add(counts)
        if sum(counts.values()) < params["batch_size"]:
            break
    return result


# A window of the next ``batch_size`` rows of a walk, by id after the last window's end.
_WINDOW = """win AS (
    SELECT id FROM {table} WHERE {walk} AND id > %(after)s AND id <= %(ids_upto)s
    ORDER BY id LIMIT %(batch_size)s
)"""
# The last statement of a walk's batch: the window's end (NULL past the last row) and the
# changed rows per project.
_WALK_RESULT = """
SELECT (SELECT max(id) FROM win), c.project_id, c.n
FROM (SELECT 1) AS one LEFT JOIN (
    SELECT project_id, count(*) AS n FROM changed GROUP BY project_id
) AS c ON true
"""


def _walk(
    job: str,
    sql: str,
    params: dict[str, Any],
    seconds: float | None = None,
    *,
    invalidate: bool = True,
    resume: bool = False,
    ids: IdRange = ALL_IDS,
    into: JobResult | None = None,
) -> JobResult:
    """Run a batch statement over consecutive id windows of the job's partial index, within
    ``ids``: each statement reads at most ``batch_size`` rows, whatever the table's size.
    With ``resume`` the walk starts where the job's last walk ended (its JobState cursor),
    which each batch moves in its own transaction. ``into``: add to that result, within its
    deadline, instead of a new one."""
    result = into or _result(job, seconds)
    after = JobState.objects.get_or_create(name=job)[0].cursor if resume else ids[0]
    while not result.out_of_time():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, {**params, "after": after, "ids_upto": ids[1]})
            rows = cursor.fetchall()
            counts = _changed_counts((project_id, n) for _, project_id, n in rows)
            if resume and rows[0][0] is not None:
                JobState.objects.filter(name=job).update(cursor=rows[0][0])
            if invalidate:
                assembly_cache.invalidate(counts)
        result.add(counts)
        if rows[0][0] is None:
            break
        after = rows[0][0]
    return result


def id_parts(count: int) -> list[IdRange]:
    """``count`` ranges of ids that together cover every active memory, of about equal size
    (ids are dense): for a job run as parts at once."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id) - 1, max(id) FROM {MEMORIES} WHERE active")
        first, last = cursor.fetchone()
    if first is None or count <= 1:
        return [ALL_IDS]
    step = -(-(last - first) // count)
    bounds = [first + step * part for part in range(count)] + [ALL_IDS[1]]
    bounds[0] = ALL_IDS[0]
    return list(itertools.pairwise(bounds))


def _walk_statement(walk: str, body: str) -> str:
    window = _WINDOW.format(table=MEMORIES, walk=walk)
    return f"WITH {window}, {body}{_WALK_RESULT}"


# --- 1. expiry --------------------------------------------------------------------------------

_EXPIRE_BATCH = f"""
WITH batch AS (
    SELECT id FROM {MEMORIES}
    WHERE active AND expires_at IS NOT NULL AND expires_at <= %(now)s
        AND id > %(ids_after)s AND id <= %(ids_upto)s
    ORDER BY expires_at, id
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE {MEMORIES} AS m SET active = false, updated_at = %(now)s
    FROM batch WHERE m.id = batch.id AND m.active
    RETURNING m.id, m.project_id, m.expires_at
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'expired', '{{"active": [true, false]}}',
        'expired at ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        %(actor)s, %(now)s
    FROM changed
)
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""


def expire_memories(
    *,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    seconds: float | None = None,
    ids: IdRange = ALL_IDS,
) -> JobResult:
    """Memories whose ``expires_at`` has passed become inactive, each with an ``expired``
    history row. Batches run until none is full."""
    params = _params(now, batch_size, "system:expiry", ids_after=ids[0], ids_upto=ids[1])
    return _drain("expire_memories", _EXPIRE_BATCH, params, seconds)


# --- 2. confidence decay ----------------------------------------------------------------------


def _lowered(amount: str) -> str:
    """Memory ``m``'s confidence less ``amount``: never below 0, rounded like run outcomes."""
    return f"round(greatest(m.confidence - {amount}, 0)::numeric, 6)::float8"


# The history of a lowered confidence (rows with before, after, active).
_CONFIDENCE_CHANGES = (
    "jsonb_build_object('confidence', jsonb_build_array(before, after))"
    " || CASE WHEN active THEN '{}' ELSE '{\"active\": [true, false]}' END::jsonb"
)

_DECAY_BATCH = _walk_statement(
    "active",
    f"""due AS (
    SELECT m.id, m.confidence AS before,
        {_lowered(policy("decay_step"))} AS after,
        {policy("deactivate_below")} AS threshold,
        floor(extract(epoch FROM %(now)s - {IDLE_SINCE}) / 86400)::int AS idle_days
    FROM {MEMORIES} m JOIN win ON win.id = m.id {POLICY_JOIN}
    WHERE m.active AND m.confidence > 0 AND {policy("decay_step")} > 0
        AND {IDLE_SINCE} <= %(now)s - {_days("decay_after_days")}
        AND (m.decayed_at IS NULL OR m.decayed_at <= %(now)s - {_days("decay_period_days")})
        AND NOT (m.pinned AND {policy("decay_exempt_pinned")})
        AND NOT (m.review_status = 'approved' AND {policy("decay_exempt_approved")})
    FOR UPDATE OF m SKIP LOCKED
), changed AS (
    UPDATE {MEMORIES} m SET confidence = due.after, active = due.after >= due.threshold,
        decayed_at = %(now)s, updated_at = %(now)s
    FROM due WHERE m.id = due.id
    RETURNING m.id, m.project_id, m.active, due.before, due.after, due.idle_days
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'decayed',
        {_CONFIDENCE_CHANGES},
        'not given to an agent for ' || idle_days || ' days', %(actor)s, %(now)s
    FROM changed
)""",
)


def decay_memories(
    *,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    seconds: float | None = None,
    ids: IdRange = ALL_IDS,
) -> JobResult:
    """A memory not given to an agent for ``decay_after_days`` loses ``decay_step`` of
    confidence once per ``decay_period_days`` (never below 0); below the policy's
    deactivation threshold it becomes inactive. Pinned and human-approved memories are
    exempt unless the policy says otherwise. ``decayed_at`` makes a second run within the
    period a no-op."""
    uses.flush()  # decided by the last use: the noted ones first
    params = _params(now, batch_size, "system:decay")
    return _walk("decay_memories", _DECAY_BATCH, params, seconds, ids=ids)


# --- 7. tiers ---------------------------------------------------------------------------------

_TIER_BATCH = _walk_statement(
    "active",
    f"""due AS (
    SELECT m.id, CASE
        WHEN {IDLE_SINCE} > %(now)s - {_days("tier_hot_days")} THEN 'hot'
        WHEN {IDLE_SINCE} > %(now)s - {_days("tier_warm_days")} THEN 'warm'
        ELSE 'cold' END AS tier
    FROM {MEMORIES} m JOIN win ON win.id = m.id {POLICY_JOIN}
    WHERE m.active
), changed AS (
    UPDATE {MEMORIES} m SET tier = due.tier
    FROM due WHERE m.id = due.id AND m.active AND m.tier <> due.tier
    RETURNING m.id, m.project_id
)""",
)


def update_tiers(
    *, now: datetime | None = None, batch_size: int = BATCH_SIZE, seconds: float | None = None
) -> JobResult:
    """Active memories are hot, warm or cold by their last use (archived ones are frozen).
    Bookkeeping for the review pages and metrics: no history, nothing an agent is given
    changes, and the tier is in no index, so the updates stay HOT."""
    uses.flush()
    params = _params(now, batch_size, "system:tiers")
    return _walk("update_tiers", _TIER_BATCH, params, seconds, invalidate=False)


# --- 6. run scratch cleanup -------------------------------------------------------------------

_SCRATCH_BATCH = f"""
WITH batch AS (
    SELECT m.id, m.tier, r.external_id, r.status
    FROM {MEMORIES} m JOIN memories_run r ON r.id = m.source_run_id {POLICY_JOIN}
    WHERE m.active AND m.scope = 'run' AND r.status <> 'running'
        AND r.finished_at <= %(now)s - make_interval(hours => {policy("scratch_keep_hours")})
    ORDER BY m.id
    LIMIT %(batch_size)s
    FOR UPDATE OF m SKIP LOCKED
), changed AS (
    UPDATE {MEMORIES} m SET active = false, tier = 'frozen', archived_at = %(now)s,
        updated_at = %(now)s
    FROM batch WHERE m.id = batch.id AND m.active AND m.scope = 'run'
    RETURNING m.id, m.project_id, batch.tier, batch.external_id, batch.status
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'cleared',
        jsonb_build_object('active', '[true, false]'::jsonb,
                           'tier', jsonb_build_array(tier, 'frozen')),
        'scratch of run ' || external_id || ', which ' || status, %(actor)s, %(now)s
    FROM changed
)
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""


def clear_run_scratch(
    *, now: datetime | None = None, batch_size: int = BATCH_SIZE, seconds: float | None = None
) -> JobResult:
    """Memories of scope ``run`` are a run's scratch: ``scratch_keep_hours`` after the run
    finished they are archived (restorable), unless promoted to the project meanwhile."""
    params = _params(now, batch_size, "system:scratch")
    return _drain("clear_run_scratch", _SCRATCH_BATCH, params, seconds)


# --- 5. eviction ------------------------------------------------------------------------------

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
    SELECT m.id, m.tier FROM {MEMORIES} m JOIN victims ON victims.id = m.id
    WHERE m.active AND NOT m.pinned FOR UPDATE OF m
), changed AS (
    UPDATE {MEMORIES} m SET active = false, tier = 'frozen', archived_at = %(now)s,
        updated_at = %(now)s
    FROM locked WHERE m.id = locked.id
    RETURNING m.id, m.project_id, locked.tier
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'evicted',
        jsonb_build_object('active', '[true, false]'::jsonb,
                           'tier', jsonb_build_array(tier, 'frozen')),
        %(reason)s, %(actor)s, %(now)s
    FROM changed
)
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
    params = _params(now, batch_size, "system:eviction")
    result = _result("evict_memories", seconds)
    with connection.cursor() as cursor:
        cursor.execute(_OVER_LIMITS)
        limits = cursor.fetchall()
    for project_id, max_items, max_tokens in limits:
        reasons = [
            f"{max_items} memories" if max_items is not None else "",
            f"{max_tokens} tokens" if max_tokens is not None else "",
        ]
        batch = {
            **params,
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
                counts = _changed_counts(cursor.fetchall())
                assembly_cache.invalidate(counts)
            result.add(counts)
            if sum(counts.values()) < batch_size:
                break
    return result


# --- 3. compression ---------------------------------------------------------------------------

_COMPRESS_WINDOW = f"""
SELECT max(id) FROM (
    SELECT id FROM {MEMORIES} WHERE active AND id > %(after)s
    ORDER BY id LIMIT %(batch_size)s
) AS win
"""
_COMPRESS_CANDIDATES = f"""
SELECT m.id, m.content, m.token_count, m.content_hash, {policy("compression_ratio")}
FROM {MEMORIES} m {POLICY_JOIN}
WHERE m.active AND m.compressed_at IS NULL AND m.id > %(after)s AND m.id <= %(last)s
    AND m.created_at <= %(now)s - {_days("compress_age_days")}
    AND m.access_count < {policy("compress_access_threshold")}
    AND m.token_count > {policy("compress_min_tokens")}
ORDER BY m.id
"""
# Written only where the content is still the one compressed (a concurrent edit or a second
# worker wins, and this row is left alone); a NULL content marks a memory that cannot be
# shortened as handled.
_COMPRESS_WRITE = f"""
WITH d AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(before_hashes)s::text[], %(befores)s::text[],
        %(before_tokens)s::int[], %(contents)s::text[], %(tokens)s::int[], %(hashes)s::text[])
        AS d(id, before_hash, before, before_tokens, content, token_count, content_hash)
), changed AS (
    UPDATE {MEMORIES} m SET
        content = coalesce(d.content, m.content),
        token_count = coalesce(d.token_count, m.token_count),
        content_hash = coalesce(d.content_hash, m.content_hash),
        compressed_at = %(now)s,
        updated_at = CASE WHEN d.content IS NULL THEN m.updated_at ELSE %(now)s END
    FROM d WHERE m.id = d.id AND m.active AND m.compressed_at IS NULL
        AND m.content_hash = d.before_hash
    RETURNING m.id, m.project_id, d.before, d.before_tokens, d.content, d.token_count
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'compressed',
        jsonb_build_object('content', jsonb_build_array(before, content),
                           'token_count', jsonb_build_array(before_tokens, token_count)),
        'compressed from ' || before_tokens || ' to ' || token_count || ' tokens ('
            || %(compressor)s || ')',
        %(actor)s, %(now)s
    FROM changed WHERE content IS NOT NULL
)
SELECT project_id, count(*) FILTER (WHERE content IS NOT NULL) FROM changed GROUP BY project_id
"""


def compress_memories(
    *,
    now: datetime | None = None,
    batch_size: int = 1000,
    compressor: Compressor | None = None,
    seconds: float | None = None,
) -> JobResult:
    """Memories older than ``compress_age_days``, given to agents fewer than
    ``compress_access_threshold`` times and longer than ``compress_min_tokens`` get a
    shorter content at about ``compression_ratio`` of their tokens. The original stays in
    the ``compressed`` history row (``memories_restore_content`` brings it back); the search
    vector and match keys follow the content (generated columns).

    The compressor runs outside any transaction (it may call a remote model): each window's
    candidates are read, compressed, then written in one statement that re-checks each row."""
    uses.flush()
    compressor = compressor or configured_compressor()
    params = _params(now, batch_size, "system:compression", compressor=compressor.name)
    result = _result("compress_memories", seconds)
    after = 0
    while not result.out_of_time():
        with connection.cursor() as cursor:
            cursor.execute(_COMPRESS_WINDOW, {**params, "after": after})
            last = cursor.fetchone()[0]
            if last is None:
                break
            cursor.execute(_COMPRESS_CANDIDATES, {**params, "after": after, "last": last})
            candidates = cursor.fetchall()
        columns: dict[str, list[Any]] = {
            name: []
            for name in (
                "ids", "before_hashes", "befores", "before_tokens", "contents", "tokens", "hashes"
            )
        }  # fmt: skip
        for memory_id, content, tokens, digest, ratio in candidates:
            shorter = compressor.compress(content, max(1, round(tokens * ratio)))
            shortened = shorter != content
            short_tokens = count_tokens(shorter) if shortened else None
            for name, value in zip(
                columns,
                (
                    memory_id,
                    digest,
                    content,
                    tokens,
                    shorter if shortened else None,
                    short_tokens,
                    content_hash(shorter) if shortened else None,
                ),
                strict=True,
            ):
                columns[name].append(value)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_COMPRESS_WRITE, {**params, **columns})
            counts = _changed_counts(cursor.fetchall())
            assembly_cache.invalidate(counts)
        result.add(counts)
        after = last
    return result


# --- 8. code-change staleness -----------------------------------------------------------------

_STALE_BATCH = """
WITH batch AS (
    SELECT m.id, m.confidence AS before,
        {after} AS after,
        {threshold} AS threshold
    FROM {memories} m {policy_join}
    WHERE m.project_id = %(project_id)s AND m.active AND m.stale_ref <> %(ref)s
        AND {match}
    ORDER BY m.id LIMIT %(batch_size)s
    FOR UPDATE OF m
), changed AS (
    UPDATE {memories} m SET confidence = batch.after, active = batch.after >= batch.threshold,
        stale_at = %(now)s, stale_ref = %(ref)s, updated_at = %(now)s
    FROM batch WHERE m.id = batch.id
    RETURNING m.id, m.project_id, m.active, batch.before, batch.after
), events AS (
    INSERT INTO {events}
        (memory_id, project_id, action, changes, reason, actor_label, actor_user_id,
         actor_api_key_id, created_at)
    SELECT id, project_id, 'stale',
        {changes},
        %(reason)s, %(actor)s, %(actor_user_id)s, %(actor_api_key_id)s, %(now)s
    FROM changed
)
SELECT id FROM changed ORDER BY id
"""


@dataclass
class StaleResult:
    ref: str
    memory_ids: list[int]


def memories_mark_changed(
    *,
    project: Project,
    paths: Sequence[str],
    ref: str,
    actor: Any,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
) -> StaleResult:
    """A commit or merge (``ref``) changed ``paths``: every active memory of ``project``
    whose tags match one of them is flagged stale for re-review and loses the policy's
    ``staleness_penalty`` of confidence (inactive below the deactivation threshold), with
    a ``stale`` history row naming the ref. Posting the same ref again changes nothing."""
    match, match_params = scope_condition(str(project.pk), paths)
    sql = _STALE_BATCH.format(
        after=_lowered(policy("staleness_penalty")),
        changes=_CONFIDENCE_CHANGES,
        threshold=policy("deactivate_below"),
        memories=MEMORIES,
        policy_join=POLICY_JOIN,
        events=EVENTS,
        match=match,
    )
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    params = {
        **_params(now, batch_size, actor.label),
        **match_params,
        "project_id": project.pk,
        "ref": ref,
        "reason": f"code changed in {ref}: {shown}",
        "actor_user_id": actor.user.pk if actor.user else None,
        "actor_api_key_id": actor.api_key.pk if actor.api_key else None,
    }
    marked: list[int] = []
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            ids = [memory_id for (memory_id,) in cursor.fetchall()]
            if ids:
                assembly_cache.invalidate([project.pk])
        marked += ids
        if len(ids) < batch_size:
            return StaleResult(ref=ref, memory_ids=marked)


# --- 4. consolidation -------------------------------------------------------------------------

# Near-duplicates share most of their words: the candidates of a memory are those of its
# project that hold one of its longest (so rarer) words, looked up through the match-key
# index that assembly keeps anyway, and pg_trgm's similarity decides. A pair is missed only
# if each lacks all of the other's longest words, which a pair this similar never does.
PROBE_WORDS = 5

# Which of two near-duplicates survives: the most confident, then approved, then pinned,
# then the oldest.
_RANK = "ROW({m}.confidence, {m}.review_status = 'approved', {m}.pinned, -{m}.id)"
_CONSOLIDATE_BODY = f"""anchors AS MATERIALIZED (
    SELECT m.id, m.project_id, m.type, m.content, m.content_hash,
        cardinality(show_trgm(m.content)) AS trigrams,
        {policy("consolidate_similarity")} AS threshold,
        ARRAY(SELECT k FROM unnest(m.match_keys) AS k WHERE k LIKE m.project_id || ':w:%%'
              ORDER BY length(k) DESC, k LIMIT {PROBE_WORDS}) AS probe
    FROM {MEMORIES} m JOIN win ON win.id = m.id {POLICY_JOIN}
    WHERE m.active AND m.project_id IS NOT NULL
), nearby AS (
    -- Each anchor's candidates: the active memories of its project and type that hold one
    -- of its probe words, or its very content, looked up anchor by anchor through the
    -- indexes (OFFSET 0 keeps the planner from hashing the anchors against a scan of every
    -- memory).
    SELECT a.id AS anchor, d.id
    FROM anchors AS a, LATERAL (
        SELECT d.id FROM {MEMORIES} d
        WHERE d.project_id = a.project_id AND d.type = a.type AND d.active AND d.id <> a.id
            AND (d.match_keys && a.probe OR d.content_hash = a.content_hash)
        OFFSET 0
    ) AS d
), sizes AS MATERIALIZED (
    -- Each candidate's trigram count, once per batch however many anchors it is near.
    SELECT d.id, d.content, d.content_hash, d.confidence, d.review_status, d.pinned,
        cardinality(show_trgm(d.content)) AS trigrams
    FROM {MEMORIES} d WHERE d.id IN (SELECT id FROM nearby)
), compared AS (
    -- Two texts share at most the smaller count of trigrams and have at least the larger
    -- count between them, so a pair whose counts differ by more than the threshold allows
    -- cannot be similar enough: similarity() runs only on the others. The ratio is divided
    -- in real, as similarity() divides, so that rounding never drops a pair it would keep.
    SELECT n.anchor, s.id, s.confidence, s.review_status, s.pinned,
        CASE WHEN s.content_hash = a.content_hash THEN 1.0
            ELSE similarity(s.content, a.content) END AS similarity
    FROM nearby n JOIN anchors a ON a.id = n.anchor JOIN sizes s ON s.id = n.id
    WHERE s.content_hash = a.content_hash
        OR least(s.trigrams, a.trigrams)::real / greatest(s.trigrams, a.trigrams, 1)::real
            >= a.threshold
), pairs AS (
    -- Each near-duplicate pair once per anchor, its sides ordered by rank.
    SELECT CASE WHEN {_RANK.format(m="b")} > {_RANK.format(m="o")} THEN o.id ELSE b.id END
            AS loser,
        CASE WHEN {_RANK.format(m="b")} > {_RANK.format(m="o")} THEN b.id ELSE o.id END
            AS winner,
        greatest({_RANK.format(m="b")}, {_RANK.format(m="o")}) AS winner_rank,
        CASE WHEN {_RANK.format(m="b")} > {_RANK.format(m="o")} THEN o.pinned ELSE b.pinned END
            AS loser_pinned,
        o.similarity
    FROM compared AS o JOIN anchors AS a ON a.id = o.anchor JOIN {MEMORIES} b ON b.id = a.id
    WHERE o.similarity >= a.threshold
), edges AS (
    SELECT * FROM pairs WHERE NOT loser_pinned
), chosen AS (
    -- A memory that loses to another is no winner in this batch: its own losers wait.
    SELECT DISTINCT ON (loser) loser, winner, similarity FROM edges
    WHERE winner NOT IN (SELECT loser FROM edges)
    ORDER BY loser, winner_rank DESC, similarity DESC
), waiting AS (
    -- ... to be compared again by the next run, with whatever then survives.
    INSERT INTO {PENDING} (memory_id, queued_at)
    SELECT DISTINCT loser, %(now)s FROM edges WHERE loser NOT IN (SELECT loser FROM chosen)
    ON CONFLICT DO NOTHING
), losers AS (
    UPDATE {MEMORIES} m SET active = false, tier = 'frozen', archived_at = %(now)s,
        merged_into_id = chosen.winner, updated_at = %(now)s
    FROM chosen JOIN {MEMORIES} old ON old.id = chosen.loser
    WHERE m.id = chosen.loser AND m.active AND NOT m.pinned
    RETURNING m.id, m.project_id, chosen.winner, chosen.similarity, old.tier, m.tags,
        m.tag_patterns, m.tag_keys, m.access_count, m.confidence
), gains AS (
    SELECT winner, sum(access_count) AS access_count, max(confidence) AS confidence,
        array_agg(id ORDER BY id) AS absorbed,
        ARRAY(SELECT DISTINCT t FROM losers AS l, unnest(l.tags) AS t
              WHERE l.winner = losers.winner ORDER BY t) AS tags,
        ARRAY(SELECT DISTINCT p FROM losers AS l, unnest(l.tag_patterns) AS p
              WHERE l.winner = losers.winner ORDER BY p) AS patterns,
        ARRAY(SELECT DISTINCT k FROM losers AS l, unnest(l.tag_keys) AS k
              WHERE l.winner = losers.winner ORDER BY k) AS keys
    FROM losers GROUP BY winner
), winners AS (
    UPDATE {MEMORIES} m SET
        tags = m.tags || ARRAY(SELECT t FROM unnest(g.tags) t WHERE t <> ALL(m.tags)),
        tag_patterns = m.tag_patterns
            || ARRAY(SELECT p FROM unnest(g.patterns) p WHERE p <> ALL(m.tag_patterns)),
        tag_keys = ARRAY(SELECT DISTINCT k FROM unnest(m.tag_keys || g.keys) k ORDER BY k),
        access_count = m.access_count + g.access_count,
        confidence = greatest(m.confidence, g.confidence),
        updated_at = %(now)s
    FROM gains g JOIN {MEMORIES} old ON old.id = g.winner
    WHERE m.id = g.winner
    RETURNING m.id, m.project_id, g.absorbed, old.tags AS old_tags, m.tags,
        old.access_count AS old_access, m.access_count,
        old.confidence AS old_confidence, m.confidence
), events AS (
    INSERT INTO {EVENTS} {_EVENT_COLUMNS}
    SELECT id, project_id, 'merged',
        jsonb_build_object('active', '[true, false]'::jsonb,
                           'tier', jsonb_build_array(tier, 'frozen'),
                           'merged_into', jsonb_build_array(NULL, winner)),
        'merged into memory ' || winner || ' (similarity ' || round(similarity::numeric, 2)
            || ')',
        %(actor)s, %(now)s
    FROM losers
    UNION ALL
    SELECT id, project_id, 'merged',
        jsonb_build_object('absorbed', jsonb_build_array('[]'::jsonb, to_jsonb(absorbed)),
                           'access_count', jsonb_build_array(old_access, access_count))
            || CASE WHEN old_tags = tags THEN '{{}}'::jsonb
                ELSE jsonb_build_object('tags', jsonb_build_array(old_tags, tags)) END
            || CASE WHEN old_confidence = confidence THEN '{{}}'::jsonb
                ELSE jsonb_build_object('confidence',
                                        jsonb_build_array(old_confidence, confidence)) END,
        'absorbed ' || cardinality(absorbed) || ' near-duplicate(s)', %(actor)s, %(now)s
    FROM winners
), changed AS (
    SELECT id, project_id FROM losers
)"""
# The walk: each active memory once, in id order, from where the last run stopped.
_CONSOLIDATE_BATCH = _walk_statement("active", _CONSOLIDATE_BODY)
# The memories pending another comparison, a batch at a time, taken off the list.
_RECOMPARE_BATCH = f"""WITH win AS (
    DELETE FROM {PENDING} WHERE memory_id IN (
        SELECT memory_id FROM {PENDING} ORDER BY memory_id LIMIT %(batch_size)s
    )
    RETURNING memory_id AS id
), {_CONSOLIDATE_BODY}{_WALK_RESULT}"""
_CONSOLIDATION_LOCK = "consolidation"


def consolidate_memories(
    *, now: datetime | None = None, batch_size: int = 2000, seconds: float | None = None
) -> JobResult:
    """Near-duplicate active memories of the same project and type (equal content, or
    ``pg_trgm`` similarity at least the policy's ``consolidate_similarity``) merge: the
    survivor (most confident, then approved, pinned, oldest) keeps the highest confidence,
    the union of tags and the summed access counts; the others are archived with a pointer
    to it (``memories_restore`` reverses a merge). Pinned memories are never merged away.

    The memories pending another comparison (edited, reactivated, or whose merge had to
    wait) go first; then the walk over the active memories goes on from where it stopped, so
    each memory is compared once when new and again whenever its words change.

    One worker at a time (a session advisory lock; a second one returns at once): the pairs
    of a window are decided together, and a memory that loses in a window wins nothing in it.
    """
    params = _params(now, batch_size, "system:consolidation")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [_CONSOLIDATION_LOCK])
        if not cursor.fetchone()[0]:
            return JobResult("consolidate_memories")
        try:
            result = _walk("consolidate_memories", _RECOMPARE_BATCH, params, seconds)
            if result.finished:
                _walk("consolidate_memories", _CONSOLIDATE_BATCH, params, resume=True, into=result)
            return result
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [_CONSOLIDATION_LOCK])
