"""The walk for conflicts with a judge model: the pairs no rule decides are asked of a real
HTTP server speaking the chat completions protocol, outside the comparing transaction;
what it answers is kept as a pair; its report says what was compared and why."""

from __future__ import annotations

import pytest

from knowledge.models import MemoryPair
from policies.conflicts import JOB, find_conflicts
from policies.models import JobState
from policies.runner import record_run
from tests.knowledge.test_judge import MODEL, Server, chat, verdict

pytestmark = pytest.mark.django_db

# About the same thing, and no rule can tell how they relate (signed / encrypted).
SIGNED = "Session cookies are signed with the Django secret key."
ENCRYPTED = "Session cookies are encrypted with a key from the vault."


@pytest.fixture
def server():
    running = Server()
    yield running
    running.stop()


@pytest.fixture
def judged(settings, server):
    settings.CONFLICT_JUDGE_URL = server.base
    settings.CONFLICT_JUDGE_MODEL = MODEL
    settings.CONFLICT_JUDGE_TIMEOUT = 2
    settings.CONFLICT_JUDGE_CALLS = 5
    return server


def answer(kind: str = "conflict") -> dict:
    return chat(
        verdict(
            kind,
            first_span="signed with the Django secret key",
            second_span="encrypted with a key from the vault",
            reason="One signs the cookies, the other encrypts them with another key.",
        )
    )


def test_without_a_judge_the_undecided_pair_stays_unopened_and_the_report_says_why(
    project, make_memory
):
    make_memory(project=project, content=SIGNED)
    make_memory(project=project, content=ENCRYPTED)
    record_run(find_conflicts)
    assert not MemoryPair.objects.exists()
    report = JobState.objects.get(name=JOB).last_report
    assert report["compared"] >= 1
    assert report["related, no rule decides"] >= 1
    assert "asked of the judge" not in report


def test_writing_never_asks_the_judge(judged, project, make_memory):
    make_memory(project=project, content=SIGNED)
    make_memory(project=project, content=ENCRYPTED)
    assert judged.received == []
    assert not MemoryPair.objects.exists()


def test_the_walk_asks_the_judge_and_keeps_its_conflict_with_spans(judged, project, make_memory):
    first = make_memory(project=project, content=SIGNED)
    second = make_memory(project=project, content=ENCRYPTED)
    judged.script((200, answer("conflict")))
    record_run(find_conflicts)
    pair = MemoryPair.objects.get()
    assert (pair.first_id, pair.second_id, pair.kind) == (first.pk, second.pk, "conflict")
    assert pair.evidence["class"] == "judge"
    assert pair.evidence["judge"]["model"] == MODEL
    [differs] = pair.evidence["differs"]
    assert SIGNED[slice(*differs["firstSpan"])] == "signed with the Django secret key"
    assert ENCRYPTED[slice(*differs["secondSpan"])] == "encrypted with a key from the vault"
    assert pair.priority > 0
    # Asked once (the pair is read from both sides in one walk), its answer cached.
    assert len(judged.received) == 1
    report = JobState.objects.get(name=JOB).last_report
    assert (report["asked of the judge"], report["opened by the judge"]) == (1, 1)
    # Again: the open pair is read again, the judge not asked again (the cache).
    MemoryPair.objects.all().delete()
    record_run(find_conflicts)
    assert MemoryPair.objects.get().kind == "conflict"
    assert len(judged.received) == 1


def test_compatible_answers_and_a_judge_that_fails_open_nothing(judged, project, make_memory):
    make_memory(project=project, content=SIGNED)
    make_memory(project=project, content=ENCRYPTED)
    judged.script((500, {"error": "model not loaded"}))
    record_run(find_conflicts)
    assert not MemoryPair.objects.exists()
    judged.script((200, answer("compatible")))
    record_run(find_conflicts)
    assert not MemoryPair.objects.exists()


def test_the_budget_bounds_the_questions_of_a_run(judged, settings, project, make_memory):
    settings.CONFLICT_JUDGE_CALLS = 1
    make_memory(project=project, content=SIGNED)
    make_memory(project=project, content=ENCRYPTED)
    make_memory(project=project, content="Session cookies are hashed with a key from Redis.")
    judged.script((200, answer("compatible")))
    record_run(find_conflicts)
    assert len(judged.received) == 1
