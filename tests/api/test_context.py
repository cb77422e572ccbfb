"""POST /api/projects/:id/context: the assembly over HTTP, its cache replay and its errors."""

from __future__ import annotations

import pytest

from memories import services
from memories.actors import Actor
from memories.models import Memory, Run
from memories.tokens import count_tokens
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")


def test_work_after_the_response_that_fails_is_logged_not_raised(caplog):
    from api.responses import ThenResponse

    ran = []

    def broken():
        raise RuntimeError("database went away")

    response = ThenResponse({}, then=[broken, lambda: ran.append(True)])
    response.close()
    assert ran == [True]
    assert "Work after the response failed" in caplog.text


def test_an_api_repeat_is_answered_from_the_cache_before_validation(
    project, make_memory, make_run, monkeypatch, django_capture_on_commit_callbacks
):
    from api import context

    memory = make_memory(project=project, content="Replayed.")
    run = make_run(project=project)
    agent = client_with_key(project)
    body = {"tokenBudget": 500, "intent": "replay", "runId": run.pk}
    first = agent.post(url(project, "context"), body, format="json").json()
    assert first["metadata"]["cacheHit"] is False

    def never(*args, **kwargs):
        raise AssertionError("a repeat was validated again")

    monkeypatch.setattr(context.ContextIn, "is_valid", never)
    # Keys in another order are the same request.
    again = agent.post(url(project, "context"), dict(reversed(body.items())), format="json")
    assert again.status_code == 200
    assert again["Content-Type"] == "application/json"
    repeat = again.json()
    assert repeat["metadata"]["cacheHit"] is True
    assert list(repeat["metadata"])[-2:] == ["cacheHit", "assemblyTimeMs"]
    for answer in (first, repeat):
        del answer["metadata"]["cacheHit"], answer["metadata"]["assemblyTimeMs"]
    assert repeat == first
    # Recorded as an assembly records: the run was given it, and the access counted.
    assert list(run.given.values_list("memory_id", flat=True)) == [memory.pk]
    memory.refresh_from_db()
    assert memory.access_count == 2
    # A finished run refuses a repeat as it refuses the first request.
    services.run_record_outcome(run=run, outcome="succeeded", actor=SYSTEM)
    assert agent.post(url(project, "context"), body, format="json").status_code == 409
    # A write makes the repeat a new assembly (and validates it).
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_update(memory=memory, actor=SYSTEM, content="Changed.")
    fresh = agent.post(url(project, "context"), {**body, "runId": None}, format="json").json()
    assert fresh["metadata"]["cacheHit"] is False
    assert "Changed." in fresh["text"]


def test_a_repeat_names_its_run_only_when_the_run_is_a_source(project, make_memory, make_run):
    make_memory(project=project)
    agent = client_with_key(project)
    runs = [make_run(project=project) for _ in range(2)]
    without_run = {"tokenBudget": 500, "sources": ["project", "global"]}
    hits = [
        agent.post(url(project, "context"), {**without_run, "runId": run.pk}, format="json").json()[
            "metadata"
        ]["cacheHit"]
        for run in runs
    ]
    assert hits == [False, True]
    assert all(run.given.count() == 1 for run in runs)
    with_run = [
        agent.post(
            url(project, "context"), {"tokenBudget": 500, "runId": run.pk}, format="json"
        ).json()["metadata"]["cacheHit"]
        for run in runs
    ]
    assert with_run == [False, False]  # each run's own memories are part of the answer


def test_a_repeat_naming_a_run_removed_since_is_refused(project, make_memory, make_run):
    make_memory(project=project)
    run = make_run(project=project)
    agent = client_with_key(project)
    body = {"tokenBudget": 500, "runId": run.pk}
    assert agent.post(url(project, "context"), body, format="json").status_code == 200
    Run.objects.filter(pk=run.pk).delete()
    response = agent.post(url(project, "context"), body, format="json")
    assert response.status_code == 400
    assert "runId" in response.json()["error"]["fields"]


def test_context_endpoint(project, make_memory, make_run):
    agent = client_with_key(project)
    make_memory(project=project, tags=["src/core/**"], content="Run the full suite.")
    run = make_run(project=project)
    body = {
        "writeScope": ["src/core/db.py"],
        "intent": "fix the database layer",
        "tokenBudget": 200,
        "responseReserve": 50,
        "runId": run.pk,
        "encoding": "cl100k_base",
        "lod": "atomic",
    }
    response = agent.post(url(project, "context"), body, format="json")
    assert response.status_code == 200, response.json()
    out = response.json()
    assert out["text"] == "## Memories\n- [pattern] Run the full suite."
    assert out["metadata"]["totalTokens"] == count_tokens(out["text"], "cl100k_base") <= 150
    assert out["metadata"]["budget"] == 150
    assert out["metadata"]["cacheHit"] is False


def test_lines_name_their_memories_ids_when_asked_and_count_them(project, make_memory):
    agent = client_with_key(project)
    memory = make_memory(project=project, tags=["src/core/**"], content="Run the full suite.")
    body = {"writeScope": ["src/core/db.py"], "tokenBudget": 200, "lod": "atomic"}
    plain = agent.post(url(project, "context"), body, format="json").json()
    named = agent.post(url(project, "context"), {**body, "ids": True}, format="json").json()
    assert plain["text"] == "## Memories\n- [pattern] Run the full suite."
    assert named["text"] == f"## Memories\n- [pattern #{memory.pk}] Run the full suite."
    assert named["metadata"]["totalTokens"] == count_tokens(named["text"], "o200k_base")
    assert named["metadata"]["totalTokens"] > plain["metadata"]["totalTokens"]
    assert named["metadata"]["promptHash"] != plain["metadata"]["promptHash"]
    # A budget that fits the plain line but not the line with its id gives nothing.
    tight = plain["metadata"]["totalTokens"]
    assert agent.post(url(project, "context"), {**body, "tokenBudget": tight, "ids": True},
                      format="json").json()["items"] == []  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tokenBudget": 0}, "tokenBudget"),
        ({"responseReserve": 100}, "responseReserve"),
        ({"lod": "huge"}, "lod"),
        ({"encoding": "p50k_base"}, "encoding"),
        ({"sources": ["elsewhere"]}, "sources[0]"),
        ({"sources": []}, "sources"),
        ({"shares": {"run": {"fixed": 10, "auto": 1}}}, "shares.run.nonFieldErrors"),
        ({"runId": 999999}, "runId"),
        ({"extra": 1}, "extra"),
        ({"ids": "yes"}, "ids"),
        ({"ids": 1}, "ids"),
    ],
)
def test_context_input_errors(project, change, field):
    agent = client_with_key(project)
    response = agent.post(url(project, "context"), {"tokenBudget": 100, **change}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"], response.json()


def test_a_finished_run_cannot_be_given_more(project, make_memory, make_run):
    agent = client_with_key(project)
    make_memory(project=project)
    run = make_run(project=project)
    services.run_record_outcome(run=run, outcome="failed", actor=SYSTEM)
    response = agent.post(
        url(project, "context"), {"tokenBudget": 100, "runId": run.pk}, format="json"
    )
    assert response.status_code == 409
    assert Memory.objects.get().access_count == 0  # the refused request recorded nothing


def test_the_cache_keeps_the_api_answer_as_sent_and_ignores_entries_it_did_not_write(
    project, make_memory
):
    """A repeat over the API is served from the encoded answer alone (nothing to decode),
    and an entry of another shape under the same key (a process of another release sharing
    the cache) is a miss, never an error."""
    from django.core.cache import caches

    from api.context import _identity
    from assembly import cache
    from assembly.requests import identity_digest

    make_memory(project=project, content="Cached as sent.")
    agent = client_with_key(project)
    body = {"tokenBudget": 300}
    assert agent.post(url(project, "context"), body, format="json").status_code == 200
    identity, _ = _identity(body)
    key = cache._entry_key(project.pk, identity_digest(identity, project.policy))
    store = caches[cache.CACHE_ALIAS]
    entry = store.get(key)
    assert entry["answer"].result is None
    assert entry["answer"].body.startswith(b'{"text":"## Memories')
    assert agent.post(url(project, "context"), body, format="json").json()["metadata"]["cacheHit"]
    store.set(key, {"versions": entry["versions"], "answer": {"body": "another shape"}})
    again = agent.post(url(project, "context"), body, format="json")
    assert again.status_code == 200
    assert again.json()["metadata"]["cacheHit"] is False


def test_the_context_answer_has_every_documented_field_in_camel_case(project, make_memory):
    """The API spells the plain result as the schema says (ContextOut), key by key."""
    from api.context import ContextOut

    make_memory(project=project, tags=["src/**"], content="Lock the invoice row.")
    for index in range(12):
        make_memory(project=project, content=f"Other note {index} " + "word " * 30)
    response = client_with_key(project).post(
        url(project, "context"),
        {"writeScope": ["src/a.py"], "intent": "invoice lock", "tokenBudget": 120},
        format="json",
    )
    body = response.json()
    assert set(body) == {"text", "items", "dropped", "preferences", "metadata"}
    assert body["preferences"] == []  # no user named
    assert set(body["items"][0]) == {
        "id", "source", "type", "rank", "detail", "tokens", "score", "scoreParts",
    }  # fmt: skip
    assert set(body["items"][0]["scoreParts"]) == {
        "tagMatch", "scope", "entities", "textRelevance", "pathText", "semantic", "quality",
        "recency",
    }  # fmt: skip
    assert set(body["dropped"][0]) == {"id", "source", "reason"}
    assert list(body["metadata"]) == [
        "totalTokens", "budget", "encoding", "lod", "promptHash", "qualityAchieved",
        "coherence", "sourceCoverage", "warnings", "cacheHit", "assemblyTimeMs",
    ]  # fmt: skip
    assert set(body["metadata"]["sourceCoverage"]["project"]) == {
        "candidates", "chosen", "tokens", "allocated", "latencyMs", "timedOut",
    }  # fmt: skip
    assert set(ContextOut().fields) == set(body)


def test_a_dropped_near_repeat_names_the_memory_it_repeats(project, make_memory):
    rule = "API errors use the shape {error: {code, message, fields}}."
    first = make_memory(project=project, content=rule, relevance_score=0.9)
    again = make_memory(project=project, content=rule + " (seen again in run-002)")
    body = (
        client_with_key(project)
        .post(url(project, "context"), {"tokenBudget": 300, "lod": "atomic"}, format="json")
        .json()
    )
    assert [item["id"] for item in body["items"]] == [first.pk]
    assert body["dropped"] == [
        {"id": again.pk, "source": "project", "reason": "similar", "repeats": first.pk}
    ]


def test_entities_are_accepted_and_bounded(project, make_memory):
    memory = make_memory(project=project, content="Use url_for to build links.")
    agent = client_with_key(project)
    body = agent.post(
        url(project, "context"), {"tokenBudget": 300, "entities": ["url_for"]}, format="json"
    ).json()
    assert body["items"][0]["id"] == memory.pk
    assert body["items"][0]["scoreParts"]["entities"] == 1.0
    response = agent.post(
        url(project, "context"), {"tokenBudget": 300, "entities": ["x"] * 51}, format="json"
    )
    assert response.status_code == 400
    assert "entities" in response.json()["error"]["fields"]
