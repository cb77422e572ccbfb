"""Each policy job finds its rows through a partial index of its own filter, so a batch
reads only what it may change however large the table grows. Checked on the planner's
plans, with sequential scans ruled out as they would be at scale."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memories.actors import Actor
from policies import runner
from policies.compression import _COMPRESS_WINDOW
from policies.consolidation import _CONSOLIDATE_BATCH
from policies.decay import _DECAY_BATCH
from policies.expiry import _EXPIRE_BATCH
from policies.runner import ALL_IDS
from policies.scratch import _SCRATCH_BATCH
from policies.tiers import _TIER_BATCH

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def store(project):
    """A project of 2,000 memories, a fifth of them inactive and a tenth expiring, with
    the planner's statistics: the shape of a real store rather than an empty table."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO project_memories (project_id, scope, type, content, summary, source,
                tags, tag_patterns, tag_keys, relevance_score, confidence, active, expires_at,
                review_status, pinned, tier, token_count, access_count, content_hash,
                created_at, updated_at)
            SELECT %s, 'project', 'learning', 'memory number ' || i || ' about topic ' || i %% 97,
                '', 'human', '{}', '{}', '{}', 0.5, 0.5, i %% 5 <> 0,
                CASE WHEN i %% 10 = 0 THEN now() + interval '1 day' END,
                'pending', false, 'hot', 8, 0, md5(i::text), now(), now()
            FROM generate_series(1, 2000) AS i
            """,
            [project.pk],
        )
        cursor.execute("ANALYZE project_memories")


def index_scans(sql: str, params: dict[str, Any]) -> set[str]:
    """The indexes the plan of ``sql`` reads."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    found: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            found.add(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


def params(**extra: Any) -> dict[str, Any]:
    return {
        **runner.params(timezone.now(), 100, Actor.system("tests")),
        "after": 0,
        "ids_after": 0,
        "ids_upto": ALL_IDS[1],
        **extra,
    }


@pytest.mark.parametrize(
    ("sql", "index"),
    [
        (_EXPIRE_BATCH, "memory_expiry_idx"),
        (_DECAY_BATCH, "memory_active_walk_idx"),
        (_TIER_BATCH, "memory_active_walk_idx"),
        (_COMPRESS_WINDOW, "memory_active_walk_idx"),
        (_CONSOLIDATE_BATCH, "memory_active_walk_idx"),
        (_SCRATCH_BATCH, "memory_run_scratch_idx"),
    ],
    ids=["expiry", "decay", "tiers", "compression", "consolidation", "run scratch"],
)
def test_each_job_walks_its_partial_index(sql, index):
    assert index in index_scans(sql, params())


def test_consolidation_finds_equal_content_through_the_active_hash_index():
    """A memory's near-duplicates come through the match-key index, equal ones (even
    without a word to probe by) through the hash index of active memories."""
    scans = index_scans(_CONSOLIDATE_BATCH, params())
    assert {"memory_match_keys_gin", "memory_active_hash_idx"} <= scans


def test_history_rows_keep_their_project_without_a_constraint_to_check():
    """The project of a history row is its memory's, whose key is constrained: the policy
    jobs' history rows (a million in a decay run) are not checked again at commit."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint"
            " WHERE conrelid = 'memories_memoryevent'::regclass AND contype = 'f'"
            " AND conkey = ARRAY[(SELECT attnum FROM pg_attribute"
            "  WHERE attrelid = 'memories_memoryevent'::regclass AND attname = 'project_id')]"
        )
        assert cursor.fetchall() == []
