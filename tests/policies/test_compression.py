"""Compression: old, rarely used, long memories get shorter; the original stays."""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge.models import MemoryEmbedding
from memories import services as memory_services
from memories.models import EventAction, Memory
from memories.text import content_hash
from policies.compression import compress_memories
from policies.compressors import ExtractiveCompressor
from tests.policies.support import SYSTEM, events, fresh, set_policy
from tests.support import json_endpoint

pytestmark = pytest.mark.django_db


LONG = (
    "The importer reads Excel files from the shared folder every night. "
    "Excel files with merged cells break the importer, so the importer unmerges cells first. "
    "The weather was nice when this was written. "
    "Dates in Excel files are serial numbers: the importer converts them to UTC dates. "
    "Someone mentioned lunch. "
    "The importer logs every skipped row with the file name and the row number."
)


def test_extractive_compression_keeps_the_sentences_that_carry_most_in_order():
    shorter = ExtractiveCompressor().compress(LONG, 40)
    assert shorter == ExtractiveCompressor().compress(LONG, 40)
    assert "weather" not in shorter
    assert "lunch" not in shorter
    assert shorter.startswith("The importer reads Excel files")
    kept = [sentence for sentence in LONG.split(". ") if sentence.rstrip(".") in shorter]
    assert [shorter.index(s.rstrip(".")) for s in kept] == sorted(
        shorter.index(s.rstrip(".")) for s in kept
    )
    assert ExtractiveCompressor().compress("One sentence only.", 1) == "One sentence only."


def test_old_rarely_used_long_memories_are_compressed_and_restorable(project, make_memory, age):
    memory = make_memory(project=project, content=LONG)
    young = make_memory(project=project, content=LONG + " Young.")
    used = make_memory(project=project, content=LONG + " Used.")
    short = make_memory(project=project, content="Keep it short.")
    age([memory, short], created=100)
    age([used], created=100, access_count=10)
    set_policy(project, compress_min_tokens=20)
    before = fresh(memory)
    assert compress_memories().changed == {project.pk: 1}
    after = fresh(memory)
    assert after.token_count <= round(before.token_count * 0.5) + 5
    assert after.token_count < before.token_count
    assert after.content_hash != before.content_hash
    assert after.compressed_at is not None
    assert "weather" not in after.content
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector::text FROM project_memories WHERE id = %s", [memory.pk]
        )
        assert "weather" not in cursor.fetchone()[0]
    for other in (young, used, short):
        assert fresh(other).content == other.content
    (event,) = events(memory, EventAction.COMPRESSED)
    assert event.changes["content"] == [LONG, after.content]
    assert compress_memories().total == 0
    memory_services.memories_restore_content(memory_ids=[memory.pk], actor=SYSTEM)
    assert fresh(memory).content == LONG
    assert fresh(memory).token_count == before.token_count
    # A restored original is not compressed again.
    assert compress_memories().total == 0


def test_compression_leaves_a_memory_edited_meanwhile(project, make_memory, age):
    memory = make_memory(project=project, content=LONG)
    age([memory], created=100)
    set_policy(project, compress_min_tokens=20)

    class EditingCompressor(ExtractiveCompressor):
        def compress(self, text, target_tokens):
            Memory.objects.filter(pk=memory.pk).update(content="Edited.", content_hash="x")
            return super().compress(text, target_tokens)

    assert compress_memories(compressor=EditingCompressor()).total == 0
    assert fresh(memory).content == "Edited."
    assert not events(memory, EventAction.COMPRESSED)


def test_a_compressed_memory_is_embedded_again(project, make_memory, age):
    memory = make_memory(project=project, content=LONG)
    age([memory], created=100)
    set_policy(project, compress_min_tokens=20)
    assert compress_memories().total == 1
    assert (
        MemoryEmbedding.objects.get(memory_id=memory.pk).content_hash
        == fresh(memory).content_hash
        != content_hash(LONG)
    )


@pytest.fixture
def chat_endpoint():
    """A local OpenAI-compatible chat completions server answering ``answer["content"]``."""
    answer = {"content": "Unmerge Excel cells; convert serial dates to UTC.", "status": 200}

    def reply(path, body):
        message = {"role": "assistant", "content": answer["content"]}
        return answer["status"], {"choices": [{"message": message}]}

    with json_endpoint(reply) as (base, seen):
        yield base, seen, answer


def test_an_openai_compatible_endpoint_can_compress_and_falls_back_when_it_fails(chat_endpoint):
    from policies.compressors import ChatCompletionsCompressor

    base, seen, answer = chat_endpoint
    compressor = ChatCompletionsCompressor(base, "small-model", "secret", timeout=5)
    assert compressor.compress(LONG, 20) == answer["content"]
    (request,) = seen
    assert (request["path"], request["auth"], request["model"]) == (
        "/v1/chat/completions",
        "Bearer secret",
        "small-model",
    )
    assert "at most 20 tokens" in request["messages"][0]["content"]
    assert request["messages"][1]["content"] == LONG
    extractive = ExtractiveCompressor().compress(LONG, 20)
    answer["status"] = 500
    assert compressor.compress(LONG, 20) == extractive
    answer.update(status=200, content=LONG + " And more.")
    assert compressor.compress(LONG, 20) == extractive
