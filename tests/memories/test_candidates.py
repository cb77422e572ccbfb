"""The candidate query's bounds: what it reads through the match keys, and what it skips."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from memories import candidates
from memories.candidates import candidate_query, fetch_dicts, project_source

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
    candidates.forget_common_words()
    return project


def test_intent_words_bring_weak_memories_in(crowded_project, monkeypatch):
    monkeypatch.setattr(candidates, "COMMON_WORD_ROWS", 10_000)
    found = ranked_contents(crowded_project, "alpha beta")
    assert "Beta note." in found
    assert sum(content.startswith("Alpha") for content in found) == 30


def test_a_word_the_statistics_call_common_brings_no_candidates(crowded_project, monkeypatch):
    monkeypatch.setattr(candidates, "COMMON_WORD_ROWS", 10)
    found = ranked_contents(crowded_project, "alpha beta")
    assert "Beta note." in found
    assert not any(content.startswith("Alpha") for content in found)
