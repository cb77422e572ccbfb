"""Consolidation: near-duplicate memories of a project merge into one, the others archived
pointing at it (restorable)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import connection

from memories import history
from memories.actors import Actor
from memories.hooks import MemoriesChanged
from memories.locks import lock_ids
from memories.models import EventAction, ReviewStatus
from memories.models.choices import sql_literal
from policies.models import PendingComparison
from policies.runner import (
    MEMORIES,
    POLICY_JOIN,
    WALK_RESULT,
    JobResult,
    params,
    policy,
    task,
    walk,
    walk_statement,
)

PENDING = PendingComparison._meta.db_table


# Near-duplicates share most of their words: the candidates of a memory are those of its
# project that hold one of its longest (so rarer) words, looked up through the match-key
# index that assembly keeps anyway, and pg_trgm's similarity decides. A pair is missed only
# if each lacks all of the other's longest words, which a pair this similar never does.
PROBE_WORDS = 5

# Which of two near-duplicates survives: the most confident, then approved, then pinned,
# then the oldest.
_RANK = (
    "ROW({m}.confidence, {m}.review_status = "
    + sql_literal(ReviewStatus.APPROVED)
    + ", {m}.pinned, -{m}.id)"
)
# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_LOSERS = history.update_memories(
    "losers",
    assignments={**history.ARCHIVE, "merged_into_id": "chosen.winner"},
    source=f"chosen JOIN locked ON locked.id = chosen.loser JOIN {MEMORIES} old"
    " ON old.id = chosen.loser",
    where="m.id = chosen.loser AND m.active AND NOT m.pinned",
    returning="m.id, m.project_id, chosen.winner, chosen.similarity, old.tier, m.tags,"
    " m.tag_patterns, m.tag_keys, m.access_count, m.confidence",
)
_WINNERS = history.update_memories(
    "winners",
    assignments={
        "tags": "m.tags || ARRAY(SELECT t FROM unnest(g.tags) t WHERE t <> ALL(m.tags))",
        "tag_patterns": "m.tag_patterns"
        " || ARRAY(SELECT p FROM unnest(g.patterns) p WHERE p <> ALL(m.tag_patterns))",
        "tag_keys": "ARRAY(SELECT DISTINCT k FROM unnest(m.tag_keys || g.keys) k ORDER BY k)",
        "access_count": "m.access_count + g.access_count",
        "confidence": "greatest(m.confidence, g.confidence)",
        "updated_at": "%(now)s",
    },
    source=f"gains g JOIN locked ON locked.id = g.winner JOIN {MEMORIES} old ON old.id = g.winner",
    where="m.id = g.winner",
    returning="m.id, m.project_id, g.absorbed, old.tags AS old_tags, m.tags,"
    " old.access_count AS old_access, m.access_count,"
    " old.confidence AS old_confidence, m.confidence",
)
_EVENTS = history.insert_events(
    "events",
    history.Rows(
        "losers",
        EventAction.MERGED,
        history.changes(history.archived(), history.change("merged_into", "NULL", "winner")),
        "'merged into memory ' || winner || ' (similarity ' || round(similarity::numeric, 2)"
        " || ')'",
    ),
    history.Rows(
        "winners",
        EventAction.MERGED,
        history.changes(
            history.change(history.ABSORBED, "'[]'::jsonb", "to_jsonb(absorbed)"),
            history.change("access_count", "old_access", "access_count"),
            history.change_if("old_tags <> tags", history.change("tags", "old_tags", "tags")),
            history.change_if(
                "old_confidence <> confidence",
                history.change("confidence", "old_confidence", "confidence"),
            ),
        ),
        "'absorbed ' || cardinality(absorbed) || ' near-duplicate(s)'",
    ),
)
# The losers and the winners, locked in id order (memories.locks) before either is written.
_LOCKED = lock_ids("locked", "id IN (SELECT loser FROM chosen UNION SELECT winner FROM chosen)")
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
), {_LOCKED}, {_LOSERS}, gains AS (
    SELECT winner, sum(access_count) AS access_count, max(confidence) AS confidence,
        array_agg(id ORDER BY id) AS absorbed,
        ARRAY(SELECT DISTINCT t FROM losers AS l, unnest(l.tags) AS t
              WHERE l.winner = losers.winner ORDER BY t) AS tags,
        ARRAY(SELECT DISTINCT p FROM losers AS l, unnest(l.tag_patterns) AS p
              WHERE l.winner = losers.winner ORDER BY p) AS patterns,
        ARRAY(SELECT DISTINCT k FROM losers AS l, unnest(l.tag_keys) AS k
              WHERE l.winner = losers.winner ORDER BY k) AS keys
    FROM losers GROUP BY winner
), {_WINNERS}, {_EVENTS}, changed AS (
    SELECT id, project_id FROM losers
)"""
# The walk: each active memory once, in id order, from where the last run stopped.
_CONSOLIDATE_BATCH = walk_statement("active", _CONSOLIDATE_BODY)
# The memories pending another comparison, a batch at a time, taken off the list.
_RECOMPARE_BATCH = f"""WITH win AS (
    DELETE FROM {PENDING} WHERE memory_id IN (
        SELECT memory_id FROM {PENDING} ORDER BY memory_id LIMIT %(batch_size)s
    )
    RETURNING memory_id AS id
), {_CONSOLIDATE_BODY}{WALK_RESULT}"""
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
    batch = params(now, batch_size, Actor.system("consolidation"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [_CONSOLIDATION_LOCK])
        if not cursor.fetchone()[0]:
            return JobResult("consolidate_memories")
        try:
            result = walk("consolidate_memories", _RECOMPARE_BATCH, batch, seconds)
            if result.finished:
                walk("consolidate_memories", _CONSOLIDATE_BATCH, batch, resume=True, into=result)
            return result
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [_CONSOLIDATION_LOCK])


consolidate_memories_task = task("policies.consolidate_memories", consolidate_memories)


def _compare_again(changes: Mapping[str, list[Any]]) -> bool:
    """Whether a change makes a memory one to compare again: its words or type changed, or
    it became active again other than back from the archive (a memory whose merge a person
    undid is not merged again unless its words change)."""
    if "content" in changes or "type" in changes:
        return True
    return changes.get("active") == [False, True] and "archived_at" not in changes


def queue_comparisons(*, change: MemoriesChanged, **kwargs: Any) -> None:
    """Subscriber of memories.hooks: the memories a committed change makes ones to compare
    again wait in PendingComparison for the next run."""
    ids = sorted(memory_id for memory_id, diff in change.changes.items() if _compare_again(diff))
    PendingComparison.objects.bulk_create(
        [PendingComparison(memory_id=memory_id) for memory_id in ids], ignore_conflicts=True
    )
