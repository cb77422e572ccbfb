"""Runs and outcomes, and global memories, over the API."""

from __future__ import annotations

import pytest

from memories import services
from memories.models import Memory, Run
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
