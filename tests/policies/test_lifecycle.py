"""Decay, tiers, run scratch cleanup, eviction, compression and consolidation: each rule and
its exemptions, a second run that changes nothing, and two workers at once."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories import services as memory_services
from memories.actors import Actor
from memories.models import EventAction, Memory, MemoryEvent, MemoryPolicy, RunStatus
from memories.services import uses
from policies.compression import compress_memories
from policies.compressors import ExtractiveCompressor
from policies.consolidation import consolidate_memories
from policies.decay import decay_memories
from policies.eviction import evict_memories
from policies.expiry import expire_memories
from policies.models import JobState, PendingComparison
from policies.runner import ALL_IDS, id_parts, record_run
from policies.scratch import clear_run_scratch
from policies.tiers import update_tiers

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")


def fresh(memory):
    return Memory.objects.get(pk=memory.pk)


def events(memory, action):
    return list(MemoryEvent.objects.filter(memory_id=memory.pk, action=action))


def set_policy(project, **fields):
    MemoryPolicy.objects.filter(project=project).update(**fields)


# --- decay --------------------------------------------------------------------------------------


def test_an_unused_memory_loses_a_step_once_per_period(project, make_memory, age):
    idle, used, young = (make_memory(project=project) for _ in range(3))
    age([idle], created=100, accessed=40)
    age([used], created=100, accessed=2)
    age([young], created=5)
    start = fresh(idle).confidence
    assert decay_memories().changed == {project.pk: 1}
    assert fresh(idle).confidence == pytest.approx(start - 0.05)
    assert fresh(used).confidence == fresh(young).confidence == start
    (event,) = events(idle, EventAction.DECAYED)
    assert event.changes == {"confidence": [start, pytest.approx(start - 0.05)]}
    assert event.reason == "not given to an agent for 40 days"
    # Within the same period nothing more; a period later, one more step.
    assert decay_memories().total == 0
    later = timezone.now() + timedelta(days=7, minutes=1)
    assert decay_memories(now=later).total == 1
    assert fresh(idle).confidence == pytest.approx(start - 0.10)


def test_approved_and_pinned_memories_are_exempt_unless_the_policy_says_otherwise(
    project, make_memory, age, reviewer_actor
):
    approved, pinned = make_memory(project=project), make_memory(project=project)
    memory_services.memories_approve(memory_ids=[approved.pk], actor=reviewer_actor)
    memory_services.memories_set_pinned(memory_ids=[pinned.pk], pinned=True, actor=SYSTEM)
    age([approved, pinned], created=90)
    assert decay_memories().total == 0
    set_policy(project, decay_exempt_approved=False, decay_exempt_pinned=False)
    assert decay_memories().total == 2


def test_decay_stops_at_zero_and_deactivates_below_the_threshold(project, make_memory, age):
    memory = make_memory(project=project)
    age([memory], created=90, confidence=0.22)
    set_policy(project, decay_step=0.5)
    decay_memories()
    memory = fresh(memory)
    assert memory.confidence == 0.0
    assert memory.active is False
    (event,) = events(memory, EventAction.DECAYED)
    assert event.changes["active"] == [True, False]


def test_global_memories_decay_by_the_default_policy(make_memory, age):
    memory = make_memory(project=None, scope="global")
    age([memory], created=90, active=True)
    assert decay_memories().changed == {None: 1}


@pytest.mark.django_db(transaction=True)
def test_two_decay_workers_at_once_step_each_memory_once(project, make_memory, age, two_at_once):
    memories = age([make_memory(project=project) for _ in range(30)], created=90)
    totals = two_at_once(lambda: decay_memories(batch_size=4).total)
    assert sum(totals) == 30
    assert MemoryEvent.objects.filter(action=EventAction.DECAYED).count() == 30
    assert [fresh(m).confidence for m in memories] == [pytest.approx(0.45)] * 30


# --- tiers --------------------------------------------------------------------------------------


def test_tiers_follow_the_last_use_without_history(project, make_memory, age):
    hot, warm, cold = (make_memory(project=project) for _ in range(3))
    age([hot], created=200, accessed=1)
    age([warm], created=200, accessed=10)
    age([cold], created=200, accessed=100)
    Memory.objects.update(tier="hot")
    assert update_tiers().total == 2
    assert [fresh(m).tier for m in (hot, warm, cold)] == ["hot", "warm", "cold"]
    assert not MemoryEvent.objects.exclude(action=EventAction.CREATED).exists()
    assert update_tiers().total == 0


# --- run scratch --------------------------------------------------------------------------------


def test_a_finished_runs_scratch_is_archived_unless_promoted(project, make_run, make_memory):
    finished, running = make_run(project=project), make_run(project=project)
    scratch = [
        make_memory(project=project, scope="run", source_run=run) for run in (finished, running)
    ]
    promoted = make_memory(project=project, scope="run", source_run=finished)
    memory_services.memories_promote(memory_ids=[promoted.pk], actor=SYSTEM)
    ended = timezone.now() - timedelta(hours=25)
    type(finished).objects.filter(pk=finished.pk).update(
        status=RunStatus.SUCCEEDED, finished_at=ended
    )
    assert clear_run_scratch().total == 1
    gone, kept = (fresh(m) for m in scratch)
    assert (gone.active, gone.tier, gone.archived_at is not None) == (False, "frozen", True)
    assert (kept.active, fresh(promoted).active) == (True, True)
    (event,) = events(gone, EventAction.CLEARED)
    assert event.reason == f"scratch of run {finished.external_id}, which succeeded"
    assert clear_run_scratch().total == 0
    memory_services.memories_restore(memory_ids=[gone.pk], actor=SYSTEM)
    assert (fresh(gone).active, fresh(gone).archived_at) == (True, None)


def test_a_runs_scratch_is_kept_for_the_policys_hours(project, make_run, make_memory):
    run = make_run(project=project)
    make_memory(project=project, scope="run", source_run=run)
    type(run).objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, finished_at=timezone.now() - timedelta(hours=2)
    )
    assert clear_run_scratch().total == 0
    set_policy(project, scratch_keep_hours=1)
    assert clear_run_scratch().total == 1


# --- eviction -----------------------------------------------------------------------------------


def test_a_project_over_its_limit_archives_its_lowest_value_memories(project, make_memory, age):
    memories = [make_memory(project=project) for _ in range(6)]
    for rank, memory in enumerate(memories):
        age([memory], created=300, accessed=200 - rank * 30, confidence=0.3 + rank * 0.1)
    memory_services.memories_set_pinned(memory_ids=[memories[0].pk], pinned=True, actor=SYSTEM)
    set_policy(project, max_items=3)
    assert evict_memories().changed == {project.pk: 3}
    active = set(Memory.objects.filter(active=True).values_list("id", flat=True))
    # The pinned one stays although it is worth least; the next three lowest go.
    assert active == {memories[0].pk, memories[4].pk, memories[5].pk}
    evicted = fresh(memories[1])
    assert (evicted.tier, evicted.archived_at is not None) == ("frozen", True)
    assert events(evicted, EventAction.EVICTED)[0].reason == (
        "over the project's limit of 3 memories"
    )
    assert evict_memories().total == 0


def test_a_project_over_its_token_limit_sheds_until_it_fits(project, make_memory):
    memories = [make_memory(project=project) for _ in range(5)]
    each = fresh(memories[0]).token_count
    Memory.objects.update(token_count=each)
    set_policy(project, max_total_tokens=each * 2)
    assert evict_memories().total == 3
    assert Memory.objects.filter(active=True).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_eviction_workers_evict_only_what_is_over(project, make_memory, two_at_once, state):
    for _ in range(12):
        make_memory(project=project)
    set_policy(project, max_items=5)
    two_at_once(lambda: evict_memories(batch_size=3))
    assert Memory.objects.filter(active=True).count() == 5
    assert MemoryEvent.objects.filter(action=EventAction.EVICTED).count() == 7


# --- compression --------------------------------------------------------------------------------

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


# --- consolidation ------------------------------------------------------------------------------

NOTE = "Always lock the invoice row before updating its total, or two workers lose updates."


def test_near_duplicates_merge_into_the_most_confident(project, make_memory):
    first = make_memory(project=project, content=NOTE, tags=["billing"])
    second = make_memory(project=project, content=NOTE.replace("Always", "Please always"))
    third = make_memory(project=project, content=NOTE, tags=["src/billing/**"])
    other_type = make_memory(project=project, content=NOTE, type="warning")
    unrelated = make_memory(project=project, content="Use UTC for every stored time.")
    Memory.objects.filter(pk=first.pk).update(access_count=2, confidence=0.6)
    Memory.objects.filter(pk=second.pk).update(access_count=3, confidence=0.9)
    Memory.objects.filter(pk=third.pk).update(access_count=4, confidence=0.5)
    result = consolidate_memories()
    assert result.total == 2
    survivor = fresh(second)
    assert survivor.active
    assert survivor.confidence == 0.9
    assert survivor.access_count == 9
    assert sorted(survivor.tags) == ["billing", "src/billing/**"]
    assert sorted(survivor.tag_keys) == sorted(
        set(fresh(first).tag_keys) | set(fresh(third).tag_keys)
    )
    for merged in (first, third):
        merged = fresh(merged)
        assert (merged.active, merged.tier, merged.merged_into_id) == (False, "frozen", second.pk)
    assert (fresh(other_type).active, fresh(unrelated).active) == (True, True)
    (event,) = events(survivor, EventAction.MERGED)
    assert event.changes["absorbed"] == [[], sorted([first.pk, third.pk])]
    # The survivor is found through its write scope now.
    from memories.tags import tag_matches_scope

    assert any(tag_matches_scope(t, ["src/billing/models.py"]) for t in survivor.tags)
    assert consolidate_memories().total == 0


def test_a_merge_is_reversible(project, make_memory):
    keep = make_memory(project=project, content=NOTE, tags=["billing"])
    merged = make_memory(project=project, content=NOTE + " ", tags=["ledger"])
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9, access_count=1)
    Memory.objects.filter(pk=merged.pk).update(confidence=0.5, access_count=5)
    consolidate_memories()
    assert fresh(keep).tags == ["billing", "ledger"]
    memory_services.memories_restore(memory_ids=[merged.pk], actor=SYSTEM)
    merged, keep = fresh(merged), fresh(keep)
    assert (merged.active, merged.merged_into_id, merged.archived_at) == (True, None, None)
    assert merged.tier == "warm"
    assert keep.tags == ["billing"]
    assert keep.access_count == 1


def test_a_merge_never_points_at_a_memory_merged_itself(project, make_memory):
    """A is near B and B near C, but A is not near C: B merges into A; C waits, and is not
    merged into B (which is gone)."""
    a = make_memory(project=project, content="Lock the invoice row before updating totals")
    b = make_memory(
        project=project,
        content="Lock the invoice row before updating totals in the ledger service",
    )
    c = make_memory(
        project=project, content="Before updating totals in the ledger service run the checks"
    )
    Memory.objects.filter(pk=a.pk).update(confidence=0.9)
    Memory.objects.filter(pk=b.pk).update(confidence=0.7)
    Memory.objects.filter(pk=c.pk).update(confidence=0.5)
    set_policy(project, consolidate_similarity=0.6)
    assert consolidate_memories().total == 1
    assert fresh(b).merged_into_id == a.pk
    assert fresh(c).active
    assert not Memory.objects.filter(merged_into__active=False).exists()
    # C is compared again with what survived, and stays: it is not near A.
    assert pending() == {c.pk}
    assert consolidate_memories().total == 0
    assert pending() == set()
    assert fresh(c).active


def test_pinned_memories_are_never_merged_away(project, make_memory):
    pinned = make_memory(project=project, content=NOTE)
    make_memory(project=project, content=NOTE)
    Memory.objects.filter(pk=pinned.pk).update(confidence=0.1)
    memory_services.memories_set_pinned(memory_ids=[pinned.pk], pinned=True, actor=SYSTEM)
    consolidate_memories()
    assert fresh(pinned).active


def test_consolidation_goes_on_from_where_it_stopped(project, make_memory):
    make_memory(project=project, content=NOTE)
    consolidate_memories()
    reached = JobState.objects.get(name="consolidate_memories").cursor
    late = make_memory(project=project, content=NOTE)
    assert reached < late.pk
    assert consolidate_memories().total == 1


def pending():
    return set(PendingComparison.objects.values_list("memory_id", flat=True))


def test_a_memory_edited_into_a_near_duplicate_is_compared_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    edited = make_memory(project=project, content="Use UTC for every stored time.")
    assert consolidate_memories().total == 0  # the walk has passed both
    with django_capture_on_commit_callbacks(execute=True):  # queued once the edit commits
        memory_services.memory_update(memory=edited, actor=SYSTEM, content=NOTE + " Really.")
    assert pending() == {edited.pk}
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().changed == {project.pk: 1}
    assert fresh(edited).merged_into_id == keep.pk
    assert pending() == set()
    assert consolidate_memories().total == 0


def test_a_memory_whose_type_changed_or_that_became_active_again_is_compared_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    warning = make_memory(project=project, content=NOTE, type="warning")
    paused = make_memory(project=project, content=NOTE + " ")
    memory_services.memories_set_active(memory_ids=[paused.pk], active=False, actor=SYSTEM)
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().total == 0
    with django_capture_on_commit_callbacks(execute=True):
        memory_services.memories_change_type(memory_ids=[warning.pk], type="pattern", actor=SYSTEM)
        memory_services.memories_set_active(memory_ids=[paused.pk], active=True, actor=SYSTEM)
    assert pending() == {warning.pk, paused.pk}
    assert consolidate_memories().total == 2
    assert fresh(warning).merged_into_id == fresh(paused).merged_into_id == keep.pk


def test_a_merge_a_person_undid_is_not_merged_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    merged = make_memory(project=project, content=NOTE + " ")
    assert consolidate_memories().total == 1
    restored = fresh(merged) if fresh(merged).merged_into_id else fresh(keep)
    with django_capture_on_commit_callbacks(execute=True) as announced:
        memory_services.memories_restore(memory_ids=[restored.pk], actor=SYSTEM)
    assert announced  # the restore was announced, and its subscribers queued nothing
    assert pending() == set()
    assert consolidate_memories().total == 0
    assert fresh(restored).active
    # Until its words change.
    with django_capture_on_commit_callbacks(execute=True):
        memory_services.memory_update(
            memory=restored, actor=SYSTEM, content=NOTE.replace("Always", "Please always")
        )
    assert consolidate_memories().total == 1


@pytest.mark.django_db(transaction=True)
def test_two_consolidation_workers_merge_each_duplicate_once(project, make_memory, two_at_once):
    for i in range(6):
        make_memory(project=project, content=NOTE + " " * i)
    two_at_once(lambda: consolidate_memories(batch_size=2))
    assert Memory.objects.filter(active=True).count() == 1
    assert (
        MemoryEvent.objects.filter(action=EventAction.MERGED, changes__has_key="active").count()
        == 5
    )


# --- the record of each run ---------------------------------------------------------------------


def test_each_run_is_recorded_for_the_dashboard(project, make_memory, age):
    age([make_memory(project=project)], created=90)
    result = record_run(decay_memories)
    job = JobState.objects.get(name="decay_memories")
    assert job.last_changed == result.total == 1
    assert job.last_complete is True
    assert job.last_finished_at >= job.last_started_at


def test_a_job_stops_between_batches_at_its_time_budget(project, make_memory, age):
    age([make_memory(project=project) for _ in range(3)], created=90)
    result = decay_memories(batch_size=1, seconds=0)
    assert (result.batches, result.finished) == (0, False)
    assert decay_memories(batch_size=1).total == 3


@pytest.fixture
def chat_endpoint():
    """A local OpenAI-compatible chat completions server answering ``answer["content"]``."""
    import http.server
    import json
    import threading

    seen: list[dict] = []
    answer = {"content": "Unmerge Excel cells; convert serial dates to UTC.", "status": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers["Authorization"], **body})
            reply = {"choices": [{"message": {"role": "assistant", "content": answer["content"]}}]}
            data = json.dumps(reply).encode()
            self.send_response(answer["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1", seen, answer
    server.shutdown()


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


def test_decay_counts_the_noted_uses_first(make_memory, age, buffered):
    used, idle = age([make_memory(), make_memory()], created=90, accessed=60)
    uses.record([used.pk])
    decay_memories()
    used.refresh_from_db()
    idle.refresh_from_db()
    assert (used.access_count, used.decayed_at) == (1, None)
    assert idle.decayed_at is not None


def test_a_job_in_parts_ends_as_the_whole_job_does(project, make_memory, age, state):
    memories = age([make_memory(project=project) for _ in range(9)], created=90)
    age(memories[:3], created=400, expires_at=timezone.now() - timedelta(days=1))
    parts = id_parts(3)
    # Consecutive ranges from the first id to the last possible one: every memory is in one.
    assert [first for first, _ in parts[1:]] == [last for _, last in parts[:-1]]
    assert (parts[0][0], parts[-1][1]) == ALL_IDS
    assert all(sum(first < m.pk <= last for first, last in parts) == 1 for m in memories)
    now = timezone.now()
    changed = [
        (
            expire_memories(now=now, ids=ids).total,
            decay_memories(now=now, ids=ids).total,
        )
        for ids in parts
    ]
    assert sum(expired for expired, _ in changed) == 3
    assert sum(decayed for _, decayed in changed) == 6
    assert all(expired + decayed > 0 for expired, decayed in changed)  # each part did some
    in_parts = state()
    # Done again whole, nothing is left to do.
    assert expire_memories(now=now).total == decay_memories(now=now).total == 0
    assert state() == in_parts


def test_a_range_of_ids_bounds_a_job(project, make_memory, age):
    first, second = age([make_memory(project=project), make_memory(project=project)], created=90)
    assert decay_memories(ids=(first.pk - 1, first.pk)).total == 1
    second.refresh_from_db()
    assert second.decayed_at is None


def test_near_duplicates_that_differ_in_their_longest_words_still_merge(project, make_memory):
    """Candidates are found through a memory's longest words; a duplicate that changed some
    of them is still found (through the ones it kept, or from its own side)."""
    keep = make_memory(project=project, content=NOTE)
    # "invoice" is one of NOTE's longest words; the edit has it no more.
    edited = make_memory(project=project, content=NOTE.replace("invoice", "ledger"))
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().total == 1
    assert fresh(edited).merged_into_id == keep.pk


def test_a_pair_exactly_at_the_threshold_merges(project, make_memory):
    """Only pairs whose trigram counts allow the threshold are compared: the bound must
    keep a pair whose similarity is the threshold itself. Here one text's trigrams hold the
    other's, so the similarity is the ratio of their counts (72 / 78), which real division
    rounds up: a bound computed in double precision would drop this pair."""
    keep = make_memory(project=project, content=NOTE)
    longer = make_memory(project=project, content=NOTE + " zebra")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT similarity(%s, %s)::float8,"
            " cardinality(show_trgm(%s)), cardinality(show_trgm(%s))",
            [NOTE, longer.content, NOTE, longer.content],
        )
        similarity, shorter_count, longer_count = cursor.fetchone()
    assert similarity > shorter_count / longer_count  # rounded up: the edge case
    set_policy(project, consolidate_similarity=math.nextafter(similarity, 2))
    assert consolidate_memories().total == 0
    set_policy(project, consolidate_similarity=similarity)
    JobState.objects.filter(name="consolidate_memories").update(cursor=0)  # a new pass
    assert consolidate_memories().total == 1
    assert fresh(longer).merged_into_id == keep.pk or fresh(keep).merged_into_id == longer.pk


def test_consolidation_compares_within_one_project(project, other_project, make_memory):
    mine = make_memory(project=project, content=NOTE)
    theirs = make_memory(project=other_project, content=NOTE)
    assert consolidate_memories().total == 0
    assert fresh(mine).active
    assert fresh(theirs).active
