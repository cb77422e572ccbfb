"""Embeddings: written with the words, fresh or ignored, from the offline model or an endpoint."""

from __future__ import annotations

import hashlib
import math
import time

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from knowledge import embeddings
from knowledge.models import MemoryEmbedding
from memories import services
from memories.text import content_hash
from tests.policies.support import SYSTEM, fresh
from tests.support import json_endpoint

pytestmark = pytest.mark.django_db

TIMEOUT = "HTTP client calls time out after 10 seconds."


def stored(memory) -> MemoryEmbedding | None:
    return MemoryEmbedding.objects.filter(memory_id=memory.pk).first()


def test_the_offline_model_places_meaning_near_meaning():
    vectors = embeddings.configured().embed(
        [TIMEOUT, "Requests to remote servers give up after thirty seconds.", "Use pnpm."]
    )
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > 0.4 > vectors[0] @ vectors[2]


def test_a_new_memory_is_embedded_with_its_words(project, make_memory):
    memory = make_memory(project=project, content=TIMEOUT)
    row = stored(memory)
    assert row is not None
    assert (row.model, row.project_id) == ("wordllama/l2_supercat/256", project.pk)
    assert row.content_hash == content_hash(TIMEOUT)
    expected = embeddings.configured().embed([TIMEOUT])[0]
    assert np.allclose(row.vector, expected, atol=1e-4)


def test_new_words_get_a_new_vector_and_other_changes_keep_it(project, make_memory):
    memory = make_memory(project=project, content=TIMEOUT)
    before = stored(memory).vector
    services.memory_update(memory=fresh(memory), tags=["http"], actor=SYSTEM)
    assert stored(memory).vector == before
    services.memory_update(memory=fresh(memory), content="Use pnpm.", actor=SYSTEM)
    after = stored(memory)
    assert after.content_hash == content_hash("Use pnpm.")
    assert np.allclose(after.vector, embeddings.configured().embed(["Use pnpm."])[0], atol=1e-4)


def test_a_stale_vector_is_never_read_and_the_command_renews_it(project, make_memory, settings):
    memory = make_memory(project=project, content=TIMEOUT)
    MemoryEmbedding.objects.filter(memory_id=memory.pk).update(content_hash="old words")
    query = embeddings.configured().embed(["network timeouts"])[0]
    from assembly.candidates import Meaning, candidate_query, fetch_dicts, project_source

    def read():
        sql, params = candidate_query(
            [project_source(project.pk)], write_scope=[], intent="", size=5,
            min_confidence=0.0, now=memory.created_at, columns="m.id",
            meaning=Meaning(embeddings.configured().name),
        )  # fmt: skip
        (row,) = fetch_dicts(sql, params)
        return embeddings.similarities(query, [row["embedding"]])[0]

    assert read() == 0.0
    call_command("embed_memories", "--no-index", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert read() > 0.3


def test_the_command_fills_in_what_was_written_with_the_model_off(project, make_memory, settings):
    settings.MEMORY_EMBEDDINGS = "off"
    memories = [make_memory(project=project, content=f"Fact {n} about caching.") for n in range(3)]
    assert not MemoryEmbedding.objects.exists()
    settings.MEMORY_EMBEDDINGS = "local"
    assert list(embeddings.backfill(batch=2)) == [2, 1]
    assert MemoryEmbedding.objects.filter(memory__in=[m.pk for m in memories]).count() == 3
    assert list(embeddings.backfill()) == []


def hashed_words(text: str, dimensions: int = 16) -> list[float]:
    """A toy model a local server serves: each word adds to one dimension."""
    vector = [0.0] * dimensions
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.strip(".,").encode()).hexdigest(), 16) % dimensions] += 1
    return vector


@pytest.fixture
def embeddings_endpoint(settings):
    state = {"status": 200, "delay": 0.0}

    def reply(path, body):
        time.sleep(state["delay"])
        data = [
            {"index": i, "object": "embedding", "embedding": hashed_words(text)}
            for i, text in enumerate(body["input"])
        ]
        return state["status"], {"object": "list", "data": data, "model": body["model"]}

    with json_endpoint(reply) as (base, seen):
        settings.MEMORY_EMBEDDINGS = "openai"
        settings.MEMORY_EMBEDDINGS_URL = base
        settings.MEMORY_EMBEDDINGS_MODEL = "toy-embed"
        settings.MEMORY_EMBEDDINGS_API_KEY = "secret"
        yield base, seen, state


def test_an_openai_compatible_endpoint_replaces_the_model(
    project, make_memory, embeddings_endpoint
):
    base, seen, _ = embeddings_endpoint
    memory = make_memory(project=project, content="Caching the invoice list.")
    row = stored(memory)
    assert row.model == f"toy-embed@{base}"
    expected = np.array(hashed_words("Caching the invoice list."))
    assert np.allclose(row.vector, expected / np.linalg.norm(expected), atol=1e-4)
    (request,) = seen
    assert (request["path"], request["auth"], request["model"]) == (
        "/v1/embeddings",
        "Bearer secret",
        "toy-embed",
    )
    assert request["input"] == ["Caching the invoice list."]
    # The intent is embedded by the same endpoint, and the memory's vector is compared.
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble

    result = context_assemble(
        project=project, request=ContextRequest(token_budget=500, intent="invoice caching"),
        actor=SYSTEM,
    )  # fmt: skip
    assert seen[-1]["input"] == ["invoice caching"]
    assert math.isclose(result.items[0].score_parts["semantic"], 2 / math.sqrt(2 * 4), rel_tol=1e-3)


def test_an_endpoint_that_fails_never_fails_a_write(project, make_memory, embeddings_endpoint):
    base, _, state = embeddings_endpoint
    state["status"] = 503
    memory = make_memory(project=project, content="Caching the invoice list.")
    assert fresh(memory).content == "Caching the invoice list."
    assert stored(memory) is None
    with pytest.raises(CommandError, match="The embedding model failed after 0 memories"):
        call_command("embed_memories", "--no-index")
    state["status"] = 200
    call_command("embed_memories", "--no-index", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert stored(memory).model == f"toy-embed@{base}"


def test_vectors_of_another_model_are_stale(project, make_memory, embeddings_endpoint, settings):
    memory = make_memory(project=project, content="Caching the invoice list.")
    settings.MEMORY_EMBEDDINGS = "local"
    assert embeddings.refresh([memory.pk]) == 1
    assert stored(memory).model == "wordllama/l2_supercat/256"
    assert len(stored(memory).vector) == 256


def test_a_task_the_endpoint_failed_to_embed_is_asked_again(
    project, make_memory, embeddings_endpoint
):
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble

    _, _, state = embeddings_endpoint
    make_memory(project=project, content="Caching the invoice list.")
    request = ContextRequest(token_budget=500, intent="invoice caching")

    def semantic():
        result = context_assemble(project=project, request=request, actor=SYSTEM, record=False)
        return result.items[0].score_parts["semantic"]

    state["status"] = 503
    assert semantic() == 0.0
    state["status"] = 200
    assert semantic() > 0.5  # neither the failure nor the answer without meaning was kept


def test_a_slow_endpoint_cannot_hold_a_request_past_its_time_budget(
    project, make_memory, embeddings_endpoint
):
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble

    _, _, state = embeddings_endpoint
    make_memory(project=project, content="Caching the invoice list.")
    state["delay"] = 3.0
    started = time.monotonic()
    result = context_assemble(
        project=project,
        request=ContextRequest(token_budget=500, intent="slow invoice caching", time_budget_ms=400),
        actor=SYSTEM,
        record=False,
    )
    assert time.monotonic() - started < 1.5
    assert result.items[0].score_parts["semantic"] == 0.0
    assert [w.code for w in result.metadata.warnings] == ["SEMANTIC_UNAVAILABLE"]
