"""Semantic ranking: the task's meaning against each memory's, with the real offline model;
with pgvector's index, also the memories that share no word or tag with the task."""

from __future__ import annotations

import os

import pytest

from assembly.requests import ContextRequest
from assembly.services import context_assemble
from knowledge import embeddings
from memories.actors import Actor
from memories.models import MemoryPolicy
from tests.support import require

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")

# No word of the intent (stemmed) is in any of these.
INTENT = "request timeouts"
RELATED = "HTTP client calls time out after 10 seconds."
UNRELATED = ["Use pnpm for installs.", "Cookies default to SameSite Lax.", "Keep views thin."]


def assemble(project, **kwargs):
    kwargs.setdefault("token_budget", 2000)
    return context_assemble(project=project, request=ContextRequest(**kwargs), actor=SYSTEM)


def ranked(result) -> list[str]:
    return [item.id for item in result.items]


@pytest.fixture
def four(project, make_memory):
    # The related memory has the lowest quality: only its meaning can lift it.
    related = make_memory(project=project, content=RELATED, relevance_score=0.3)
    others = [make_memory(project=project, content=c, relevance_score=0.6) for c in UNRELATED]
    return related, others


def test_the_memory_that_means_what_the_task_is_about_ranks_first(project, four):
    related, others = four
    result = assemble(project, intent=INTENT)
    assert ranked(result)[0] == related.pk
    parts = {item.id: item.score_parts for item in result.items}
    assert all(p["text_relevance"] == 0 for p in parts.values())
    assert parts[related.pk]["semantic"] > 0.3
    assert all(parts[related.pk]["semantic"] > parts[o.pk]["semantic"] for o in others)


def test_entities_carry_meaning_too(project, four):
    related, _ = four
    assert ranked(assemble(project, entities=["network timeouts"]))[0] == related.pk


def test_the_semantic_weight_is_the_projects(project, four):
    related, _ = four
    MemoryPolicy.objects.filter(project=project).update(weight_semantic=0)
    project.refresh_from_db()
    result = assemble(project, intent=INTENT)
    assert ranked(result)[-1] == related.pk
    assert result.items[-1].score_parts["semantic"] > 0.3  # shown, weighing nothing


def test_with_the_model_off_nothing_is_embedded_and_the_part_is_zero(project, four, settings):
    settings.MEMORY_EMBEDDINGS = "off"
    result = assemble(project, intent=INTENT)
    assert {item.score_parts["semantic"] for item in result.items} == {0.0}
    assert ranked(result)[-1] == four[0].pk


def crowd(project, make_memory, related_tags=()):
    """A related memory of low quality among 60 better ones that share nothing with it: the
    candidate pool by words and quality (40 rows for a limit of 10) leaves it out."""
    related = make_memory(project=project, content=RELATED, relevance_score=0.3)
    for n in range(60):
        make_memory(
            project=project, content=f"Invoice rule {n}: round totals.", relevance_score=0.5
        )
    return related


def test_without_pgvector_meaning_ranks_the_bounded_pool(project, make_memory, monkeypatch):
    related = crowd(project, make_memory)
    monkeypatch.setattr(embeddings, "nearest_index", lambda: None)
    result = assemble(project, intent=INTENT)
    assert related.pk not in ranked(result)
    assert related.pk not in {d.id for d in result.dropped}


@pytest.fixture
def nearest(db):
    """The pgvector index of the model (the migrations built it where the extension exists)."""
    require(
        embeddings.nearest_index() is not None,
        "this PostgreSQL has no pgvector (make test runs these on the embedded one)",
        strict=bool(os.environ.get("REQUIRE_PGVECTOR")),
    )
    return embeddings.nearest_index()


@pytest.mark.pgvector
def test_with_pgvector_the_nearest_in_meaning_join_the_pool(project, make_memory, nearest):
    model, dimensions = nearest
    assert (model, dimensions) == ("wordllama/l2_supercat/256", 256)
    related = crowd(project, make_memory)
    result = assemble(project, intent=INTENT)
    assert ranked(result)[0] == related.pk
    assert result.items[0].score_parts["semantic"] > 0.3


@pytest.mark.pgvector
def test_with_pgvector_another_projects_memories_stay_out(
    project, other_project, make_memory, nearest
):
    theirs = make_memory(project=other_project, content=RELATED)
    crowd(project, make_memory)
    assert theirs.pk not in ranked(assemble(project, intent=INTENT))
