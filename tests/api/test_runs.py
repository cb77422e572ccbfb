"""Runs and outcomes, and global memories, over the API."""

from __future__ import annotations

import pytest

from memories import services
from memories.actors import Actor
from memories.models import Memory, Run
from policies.staleness import memories_mark_changed
from tests.api.conftest import url

pytestmark = pytest.mark.django_db


def test_start_a_run(agent, project):
    body = {"externalId": "ci-42", "taskTitle": "Fix it", "writeScope": ["src/core/**"]}
    response = agent.post(url(project, "runs"), body, format="json")
    assert response.status_code == 201
    out = response.json()
    assert (out["externalId"], out["status"], out["writeScope"]) == (
        "ci-42",
        "running",
        ["src/core/**"],
    )
    again = agent.post(url(project, "runs"), body, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == out["id"]
    other = agent.post(url(project, "runs"), {**body, "taskTitle": "Other"}, format="json")
    assert other.status_code == 409
    assert Run.objects.count() == 1


def test_outcome_moves_the_confidence_of_what_the_run_was_given(agent, project, make_memory):
    given = make_memory(project=project)
    run_id = agent.post(url(project, "runs"), {"externalId": "r"}, format="json").json()["id"]
    services.run_give_memories(run=Run.objects.get(pk=run_id), ranked=[(given.pk, 0.5)])
    response = agent.post(
        url(project, "runs", run_id, "outcome"), {"outcome": "failed"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["recorded"] is True
    assert body["run"]["status"] == "failed"
    assert body["memories"] == [{"id": given.pk, "confidence": 0.4, "active": True}]
    again = agent.post(
        url(project, "runs", run_id, "outcome"), {"outcome": "failed"}, format="json"
    )
    assert (again.status_code, again.json()["recorded"], again.json()["memories"]) == (
        200,
        False,
        [],
    )
    conflict = agent.post(
        url(project, "runs", run_id, "outcome"), {"outcome": "succeeded"}, format="json"
    )
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "conflict"
    assert Memory.objects.get(pk=given.pk).confidence == 0.4


@pytest.mark.parametrize("outcome", ["running", "SUCCEEDED", 1, None])
def test_outcome_must_be_succeeded_or_failed(agent, project, outcome):
    run_id = agent.post(url(project, "runs"), {"externalId": "r"}, format="json").json()["id"]
    response = agent.post(
        url(project, "runs", run_id, "outcome"), {"outcome": outcome}, format="json"
    )
    assert response.status_code == 400
    assert "outcome" in response.json()["error"]["fields"]


def test_anyone_may_propose_a_global_memory_but_only_a_reviewer_activates_it(
    agent, reviewer_client
):
    proposal = agent.post(
        "/api/memories/global",
        {"type": "pattern", "content": "Never commit secrets"},
        format="json",
    )
    assert proposal.status_code == 201
    body = proposal.json()
    assert (body["scope"], body["projectId"], body["active"]) == ("global", None, False)
    assert agent.get("/api/memories/global").json()["memories"] == []
    pending = agent.get("/api/memories/global?active=false").json()["memories"]
    assert [m["id"] for m in pending] == [body["id"]]
    assert agent.patch(f"/api/memories/global/{body['id']}/approve").status_code == 403
    approved = reviewer_client.patch(f"/api/memories/global/{body['id']}/approve")
    assert approved.status_code == 200
    assert approved.json()["active"] is True
    assert [m["id"] for m in agent.get("/api/memories/global").json()["memories"]] == [body["id"]]


def test_global_reject(agent, reviewer_client):
    created = agent.post(
        "/api/memories/global", {"type": "pattern", "content": "Meh"}, format="json"
    ).json()
    rejected = reviewer_client.patch(
        f"/api/memories/global/{created['id']}/reject", {"reason": "no"}, format="json"
    )
    assert rejected.json()["reviewStatus"] == "rejected"
    assert (
        agent.patch(f"/api/memories/global/{created['id']}/reject", {}, format="json").status_code
        == 403
    )


def test_an_outcome_names_the_memories_used_and_the_run_keeps_each_items_score_parts(
    agent, project, make_memory
):
    first, second = (
        make_memory(project=project, content="One."),
        make_memory(project=project, content="Two, a different note."),
    )
    run_id = agent.post(url(project, "runs"), {"externalId": "r"}, format="json").json()["id"]
    context = agent.post(
        url(project, "context"), {"tokenBudget": 500, "runId": run_id}, format="json"
    ).json()
    assert {item["id"] for item in context["items"]} == {first.pk, second.pk}
    response = agent.post(
        url(project, "runs", run_id, "outcome"),
        {"outcome": "succeeded", "usedMemoryIds": [second.pk]},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["run"]["usedMemoryIds"] == [second.pk]
    detail = agent.get(url(project, "runs", run_id)).json()
    given = {g["memoryId"]: g for g in detail["given"]}
    assert (given[first.pk]["used"], given[second.pk]["used"]) == (False, True)
    by_id = {item["id"]: item for item in context["items"]}
    assert given[second.pk]["scoreParts"] == by_id[second.pk]["scoreParts"]
    assert "pathText" in given[second.pk]["scoreParts"]


@pytest.mark.parametrize("whose", ["unknown", "other project"])
def test_used_memories_must_be_the_projects_own(agent, project, other_project, make_memory, whose):
    given = make_memory(project=project)
    foreign = make_memory(project=other_project).pk if whose == "other project" else 999_999
    run_id = agent.post(url(project, "runs"), {"externalId": "r"}, format="json").json()["id"]
    services.run_give_memories(run=Run.objects.get(pk=run_id), ranked=[(given.pk, 0.5)])
    response = agent.post(
        url(project, "runs", run_id, "outcome"),
        {"outcome": "succeeded", "usedMemoryIds": [given.pk, foreign]},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error["fields"]) == {"usedMemoryIds"}
    assert str(foreign) in error["fields"]["usedMemoryIds"][0]
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.used_memory_ids) == ("running", None)  # nothing recorded
    assert Memory.objects.get(pk=given.pk).confidence == given.confidence


def test_used_memories_may_follow_in_a_repeat_of_the_outcome_once(agent, project, make_memory):
    memory = make_memory(project=project)
    run_id = agent.post(url(project, "runs"), {"externalId": "r"}, format="json").json()["id"]
    services.run_give_memories(run=Run.objects.get(pk=run_id), ranked=[(memory.pk, 0.5)])
    outcome = url(project, "runs", run_id, "outcome")
    assert agent.post(outcome, {"outcome": "failed"}, format="json").json()["recorded"] is True
    again = agent.post(outcome, {"outcome": "failed", "usedMemoryIds": [memory.pk]}, format="json")
    assert again.json()["recorded"] is False
    assert again.json()["run"]["usedMemoryIds"] == [memory.pk]
    later = agent.post(outcome, {"outcome": "failed", "usedMemoryIds": []}, format="json")
    assert later.json()["run"]["usedMemoryIds"] == [memory.pk]  # said once
    bad = agent.post(outcome, {"outcome": "failed", "usedMemoryIds": ["x"]}, format="json")
    assert bad.status_code == 400
    assert list(bad.json()["error"]["fields"]) == ["usedMemoryIds[0]"]


def _finish(agent, project, external_id, given, outcome):
    run_id = agent.post(url(project, "runs"), {"externalId": external_id}, format="json").json()[
        "id"
    ]
    services.run_give_memories(
        run=Run.objects.get(pk=run_id), ranked=[(memory.pk, 0.5) for memory in given]
    )
    response = agent.post(
        url(project, "runs", run_id, "outcome"), {"outcome": outcome}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("flagged_by", ["an agent", "a code change"])
def test_a_flagged_memory_gains_nothing_from_success_until_a_reviewer_approves_it(
    agent, reviewer_client, project, make_memory, flagged_by
):
    flagged = make_memory(project=project, tags=["src/db.py"])
    plain = make_memory(project=project, tags=["docs/"])
    if flagged_by == "an agent":
        path = url(project, "memories", flagged.pk, "flag")
        assert agent.post(path, {"reason": "The port moved."}, format="json").status_code == 200
    else:
        memories_mark_changed(
            project=project, paths=["src/db.py"], ref="abc123", actor=Actor.system("test")
        )
    before = Memory.objects.get(pk=flagged.pk).confidence

    body = _finish(agent, project, "won", [flagged, plain], "succeeded")

    # Paused: listed as such, and left where it was; the other memory gains as usual.
    assert Memory.objects.get(pk=flagged.pk).confidence == before
    assert [m["id"] for m in body["memories"]] == [plain.pk]
    assert body["paused"] == [flagged.pk]
    # It still loses from a failure.
    lost = _finish(agent, project, "lost", [flagged], "failed")
    assert lost["memories"] == [
        {"id": flagged.pk, "confidence": pytest.approx(before - 0.1), "active": True}
    ]
    assert lost["paused"] == []

    # A reviewer's approval ends the pause.
    approved = reviewer_client.patch(url(project, "memories", flagged.pk, "approve"))
    assert approved.status_code == 200, approved.content
    _finish(agent, project, "lost again", [flagged], "failed")
    gained = _finish(agent, project, "won again", [flagged], "succeeded")
    assert gained["paused"] == []
    assert gained["memories"] == [{"id": flagged.pk, "confidence": 1.0, "active": True}]
