"""The candidate query's bounds: what it reads through the match keys, and what it skips."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from assembly import bm25, candidates
from assembly.candidates import Ranking, candidate_query, fetch_dicts, project_source
from assembly.packing import Weights
from memories import statistics
from memories.statistics import forget_common_words

pytestmark = pytest.mark.django_db


def ranked_contents(project, intent):
    sql, params = candidate_query(
        [project_source(project.pk)],
        write_scope=[],
        intent=intent,
        size=40,
        min_confidence=0.0,
        now=timezone.now(),
        columns="m.content",
        # The text alone ranks: what is tested is what the pool brings in.
        ranking=Ranking.of(Weights(quality=0.0, recency=0.0)),
    )
    return [row["content"] for row in fetch_dicts(sql, params)]


@pytest.fixture
def crowded_project(project, make_memory):
    """45 better memories without the intent's words, 30 weak ones saying "alpha", one weak
    one saying "beta": only the text lookup can bring the weak ones in."""
    for index in range(45):
        make_memory(project=project, content=f"Filler number {index}.", relevance_score=1.0)
    for index in range(30):
        make_memory(project=project, content=f"Alpha note {index}.", relevance_score=0.1)
    make_memory(project=project, content="Beta note.", relevance_score=0.1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE project_memories")
    forget_common_words()
    return project


def test_intent_words_bring_weak_memories_in(crowded_project, monkeypatch):
    monkeypatch.setattr(statistics, "COMMON_WORD_ROWS", 10_000)
    found = ranked_contents(crowded_project, "alpha beta")
    assert "Beta note." in found
    assert sum(content.startswith("Alpha") for content in found) == 30


def test_a_word_the_statistics_call_common_brings_no_candidates(crowded_project, monkeypatch):
    monkeypatch.setattr(statistics, "COMMON_WORD_ROWS", 10)
    found = ranked_contents(crowded_project, "alpha beta")
    assert "Beta note." in found
    assert not any(content.startswith("Alpha") for content in found)


def show_statement_timeout():
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


@pytest.mark.parametrize(
    "in_transaction", [pytest.param(False, marks=pytest.mark.django_db(transaction=True)), True]
)
def test_a_deadline_applies_to_its_statement_only(in_transaction):
    default = show_statement_timeout()
    rows = candidates.fetch_dicts(
        "SELECT current_setting('statement_timeout') AS during", {}, timeout_ms=1234
    )
    assert rows == [{"during": "1234ms"}]
    assert show_statement_timeout() == default
    with pytest.raises(candidates.Cancelled):
        candidates.fetch_dicts("SELECT pg_sleep(1)", {}, timeout_ms=20)
    assert show_statement_timeout() == default
    assert candidates.fetch_dicts("SELECT 1 AS one", {}) == [{"one": 1}]


def rows_read() -> int:
    """Rows of the memories table this transaction has read so far."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = 'project_memories'"
        )
        return cursor.fetchone()[0]


def test_the_bm25_statistics_of_a_large_project_read_a_bounded_sample(crowded_project, monkeypatch):
    monkeypatch.setattr(bm25, "OWNER_SAMPLE", 10)
    before = rows_read()
    docs, mean_length = bm25.owner_stats(str(crowded_project.pk))
    assert rows_read() - before <= 10
    # Beyond the sample, the number of memories is the planner's (after ANALYZE: exact here).
    assert docs == 76
    assert mean_length >= 2
    monkeypatch.setattr(bm25, "OWNER_SAMPLE", 1000)
    forget_common_words()
    assert bm25.owner_stats(str(crowded_project.pk))[0] == 76
