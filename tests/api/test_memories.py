"""The memory endpoints: create, list with filters and cursors, read, update, delete, history."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from api.serializers.memories import MemoryCreatedOut, MemoryOut, memory_out
from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db


def create(client, project, **body):
    payload = {"type": "warning", "content": "Full test suite required when modifying src/core/."}
    return client.post(url(project, "memories"), {**payload, **body}, format="json")


def test_create_answers_camel_case_like_the_seed_example(agent, project):
    response = create(agent, project, tags=["src/core/**"], relevanceScore=0.9)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["projectId"] == project.pk
    assert body["relevanceScore"] == 0.9
    assert body["confidence"] == 0.5
    assert body["source"] == "run"
    assert body["reviewStatus"] == "pending"
    assert body["tags"] == ["src/core/**"]
    assert body["tokenCount"] == 9
    assert body["createdAt"].endswith("Z")
    assert set(body) == set(MemoryCreatedOut().fields)
    event = MemoryEvent.objects.get(memory_id=body["id"])
    assert event.actor_label == "api-key:agent"
    assert event.actor_api_key is not None


def test_plain_output_function_and_schema_serializer_agree(make_memory):
    assert set(memory_out(make_memory())) == set(MemoryOut().fields)


def test_create_with_source_run_and_expiry(agent, project, make_run):
    run = make_run(project=project)
    expires = (timezone.now() + timedelta(days=2)).isoformat()
    response = create(agent, project, sourceRunId=run.pk, expiresAt=expires, type="context")
    assert response.status_code == 201
    assert response.json()["sourceRunId"] == run.pk
    never = create(agent, project, expiresAt=None)
    assert never.json()["expiresAt"] is None


def test_an_agent_may_not_write_as_a_human(agent, project):
    response = create(agent, project, source="human")
    assert response.status_code == 403
    assert "source 'run' or 'learning'" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


def test_a_signed_in_reviewer_may_write_human_memories(reviewer_client, project):
    response = create(reviewer_client, project, source="human")
    assert response.status_code == 201
    assert (response.json()["confidence"], response.json()["reviewStatus"]) == (1.0, "approved")


def test_idempotent_create_never_makes_a_twin(agent, project):
    key = str(uuid.uuid4())
    first = agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "Retry me"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    again = agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "Retry me"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert first.status_code == again.status_code == 201
    assert first.content == again.content
    assert again["Idempotent-Replayed"] == "true"
    assert Memory.objects.count() == 1


def test_idempotency_key_reused_for_another_body_is_a_conflict(agent, project):
    agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "one"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    response = agent.post(
        url(project, "memories"),
        {"type": "pattern", "content": "two"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k1",
    )
    assert response.status_code == 409
    assert Memory.objects.count() == 1


def test_a_failed_create_does_not_burn_its_idempotency_key(agent, project):
    bad = agent.post(
        url(project, "memories"), {"type": "pattern", "content": ""}, format="json",
        HTTP_IDEMPOTENCY_KEY="k2",
    )  # fmt: skip
    assert bad.status_code == 400
    good = agent.post(
        url(project, "memories"), {"type": "pattern", "content": ""}, format="json",
        HTTP_IDEMPOTENCY_KEY="k2",
    )  # fmt: skip
    assert good.status_code == 400  # same bad body: evaluated again, not replayed
    fixed = agent.post(
        url(project, "memories"), {"type": "pattern", "content": "ok"}, format="json",
        HTTP_IDEMPOTENCY_KEY="k3",
    )  # fmt: skip
    assert fixed.status_code == 201


def test_list_defaults_to_active_newest_first(agent, project, make_memory):
    older = make_memory(project=project)
    newer = make_memory(project=project)
    inactive = make_memory(project=project)
    Memory.objects.filter(pk=inactive.pk).update(active=False)
    body = agent.get(url(project, "memories")).json()
    assert [m["id"] for m in body["memories"]] == [newer.pk, older.pk]
    assert body["next"] is None
    only_inactive = agent.get(url(project, "memories") + "?active=false").json()
    assert [m["id"] for m in only_inactive["memories"]] == [inactive.pk]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("type=warning", {"warning"}),
        ("tags=src/api/**,ops", {"api", "ops"}),
        ("source=learning", {"learned"}),
        ("reviewStatus=approved", {"approved"}),
        ("q=migrations", {"warning"}),
        ("q=lock -migrations", {"ops"}),
    ],
)
def test_list_filters(agent, project, make_memory, reviewer_actor, query, expected):
    names = {}
    names["warning"] = make_memory(
        project=project, type="warning", content="Migrations lock tables"
    )
    names["api"] = make_memory(project=project, tags=["src/api/**"], content="API errors shape")
    names["ops"] = make_memory(project=project, tags=["ops"], content="Lock the deploys on Friday")
    names["learned"] = make_memory(project=project, source="learning", content="Learned thing")
    names["approved"] = make_memory(project=project, content="Approved thing")
    services.memory_approve(memory=names["approved"], actor=reviewer_actor)
    by_id = {m.pk: name for name, m in names.items()}
    body = agent.get(url(project, "memories") + "?" + query).json()
    assert {by_id[m["id"]] for m in body["memories"]} == expected


def test_list_expiring_before(agent, project, make_memory):
    soon = make_memory(project=project, type="context")
    make_memory(project=project, type="pattern")
    horizon = (timezone.now() + timedelta(days=31)).isoformat().replace("+00:00", "Z")
    body = agent.get(url(project, "memories"), {"expiringBefore": horizon}).json()
    assert [m["id"] for m in body["memories"]] == [soon.pk]


def test_cursor_pagination_walks_every_memory_once(agent, project, make_memory):
    ids = {make_memory(project=project).pk for _ in range(7)}
    seen: list[int] = []
    next_url = url(project, "memories") + "?limit=3"
    while next_url:
        body = agent.get(next_url).json()
        assert len(body["memories"]) <= 3
        seen += [m["id"] for m in body["memories"]]
        next_url = body["next"]
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen))


def test_ordering_by_confidence(agent, project, make_memory):
    low = make_memory(project=project, source="learning")
    high = make_memory(project=project, source="run")
    body = agent.get(url(project, "memories") + "?ordering=-confidence").json()
    assert [m["id"] for m in body["memories"]] == [high.pk, low.pk]


def test_limit_is_capped(agent, project, make_memory):
    for _ in range(3):
        make_memory(project=project)
    assert len(agent.get(url(project, "memories") + "?limit=100000").json()["memories"]) == 3


@pytest.mark.parametrize("size", [3, 40])
def test_list_runs_a_fixed_number_of_queries(
    agent, project, make_memory, reviewer_actor, size, django_assert_num_queries
):
    for _ in range(size):
        services.memory_approve(memory=make_memory(project=project), actor=reviewer_actor)
    agent.get(url(project, "memories"))  # records the key's last use once a minute
    # key lookup (with its project), its concurrency slot taken, page, the slot given back
    with django_assert_num_queries(4):
        body = agent.get(url(project, "memories")).json()
    assert len(body["memories"]) == size
    assert all(m["approvedBy"] for m in body["memories"])


def test_detail_runs_a_fixed_number_of_queries(
    agent, project, make_memory, django_assert_num_queries
):
    memory = make_memory(project=project)
    agent.get(url(project, "memories", memory.pk))
    # key lookup (with its project), slot taken, memory, slot given back
    with django_assert_num_queries(4):
        assert agent.get(url(project, "memories", memory.pk)).json()["id"] == memory.pk


def test_history_runs_a_fixed_number_of_queries(
    agent, project, make_memory, system_actor, django_assert_num_queries
):
    memory = make_memory(project=project)
    for pinned in [True, False] * 10:
        services.memories_set_pinned(memory_ids=[memory.pk], pinned=pinned, actor=system_actor)
    agent.get(url(project, "memories", memory.pk, "history"))
    # key (with its project), slot taken, exists, page, slot given back
    with django_assert_num_queries(5):
        events = agent.get(url(project, "memories", memory.pk, "history")).json()["events"]
    assert len(events) == 21


def test_update_through_the_service_with_reason(agent, project, make_memory):
    memory = make_memory(project=project, content="old")
    response = agent.patch(
        url(project, "memories", memory.pk),
        {"content": "new words", "tags": ["src/**"], "relevanceScore": 0.8, "reason": "clearer"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["content"], body["tags"], body["relevanceScore"]) == ("new words", ["src/**"], 0.8)
    event = MemoryEvent.objects.get(memory_id=memory.pk, action="updated")
    assert event.reason == "clearer"
    assert event.changes["content"] == ["old", "new words"]


def test_update_with_nothing_to_change_is_a_no_op(agent, project, make_memory):
    memory = make_memory(project=project)
    for body in ({}, {"reason": "x"}):
        response = agent.patch(url(project, "memories", memory.pk), body, format="json")
        assert response.status_code == 200
        assert response.json()["content"] == memory.content
    assert MemoryEvent.objects.filter(memory_id=memory.pk).count() == 1


def test_update_cannot_touch_confidence(agent, project, make_memory):
    memory = make_memory(project=project)
    response = agent.patch(url(project, "memories", memory.pk), {"confidence": 1}, format="json")
    assert response.status_code == 400
    assert "confidence" in response.json()["error"]["fields"]
    assert Memory.objects.get(pk=memory.pk).confidence == 0.5


def test_delete_keeps_history_readable(agent, project, make_memory):
    memory = make_memory(project=project, content="bye")
    assert agent.delete(url(project, "memories", memory.pk)).status_code == 204
    assert agent.get(url(project, "memories", memory.pk)).status_code == 404
    history = agent.get(url(project, "memories", memory.pk, "history")).json()
    assert [e["action"] for e in history["events"]] == ["deleted", "created"]
    assert history["events"][0]["changes"]["content"] == ["bye", None]


def test_history_says_who_what_why(agent, project, make_memory, reviewer_actor):
    memory = make_memory(project=project)
    services.memory_reject(memory=memory, actor=reviewer_actor, reason="too vague")
    events = agent.get(url(project, "memories", memory.pk, "history")).json()["events"]
    rejected = events[0]
    assert rejected["action"] == "rejected"
    assert rejected["actor"]["kind"] == "user"
    assert rejected["reason"] == "too vague"
    assert rejected["changes"]["active"] == [True, False]
    assert events[1]["actor"] == {"kind": "system", "name": "tests"}


def test_export_streams_memories_and_runs_as_json_lines(agent, project, make_memory, make_run):
    import json

    memories = [make_memory(project=project) for _ in range(3)]
    run = make_run(project=project)
    services.run_give_memories(run=run, ranked=[(memories[0].pk, 0.7), (memories[1].pk, 0.2)])
    services.run_record_outcome(run=run, outcome="succeeded", actor=Actor.system("t"))
    response = agent.get(url(project, "export"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["kind"] for line in lines] == ["memory"] * 3 + ["run"]
    assert lines[-1]["status"] == "succeeded"
    assert [g["memoryId"] for g in lines[-1]["given"]] == [memories[0].pk, memories[1].pk]
    assert lines[0]["confidence"] == 0.6


def test_about_lists_the_memories_that_mention_a_name(agent, project, other_project):
    def create(client, content, where=project):
        answer = client.post(
            url(where, "memories"), {"type": "learning", "content": content}, format="json"
        )
        assert answer.status_code == 201, answer.json()
        return answer.json()["id"]

    named = create(agent, "RetryQueue drops a job after three failed attempts.")
    in_code = create(agent, "Call `RetryQueue.flush()` before shutting a worker down.")
    words = create(agent, "The retry queue is drained nightly.")
    create(agent, "Workers log to stdout.")
    create(client_with_key(other_project), "RetryQueue is ours too.", other_project)
    found = agent.get(url(project, "memories"), {"about": "RetryQueue"}).json()["memories"]
    assert {m["id"] for m in found} == {named, in_code}
    phrase = agent.get(url(project, "memories"), {"about": "retry queue"}).json()["memories"]
    assert words in {m["id"] for m in phrase}
    assert agent.get(url(project, "memories"), {"about": "x" * 201}).status_code == 400
