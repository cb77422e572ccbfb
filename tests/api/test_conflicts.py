"""Repeats and conflicts through the API: listed, decided, superseded, and as a write finds them."""

from __future__ import annotations

import pytest

from knowledge import supersedes
from knowledge.models import MemoryPair
from memories import services
from memories.models import Memory
from tests.api.conftest import url

pytestmark = pytest.mark.django_db

TEN = "Calls to the payments API time out after 10 seconds."
THIRTY = "Calls to the payments API time out after 30 seconds."


def create(client, project, content, **fields):
    return client.post(
        url(project, "memories"), {"type": "pattern", "content": content, **fields}, format="json"
    )


def test_a_write_names_the_conflicts_it_found(agent, project):
    first = create(agent, project, TEN).json()
    body = create(agent, project, THIRTY).json()
    [conflict] = body["conflicts"]
    assert conflict["kind"] == "conflict"
    assert conflict["memoryIds"] == [first["id"], body["id"]]
    assert conflict["status"] == "open"
    assert conflict["evidence"]["differs"][0]["class"] == "quantity"
    assert body["superseded"] == {"done": [], "waiting": []}


def test_the_list_filters_by_kind_and_status(agent, reviewer_client, project):
    create(agent, project, TEN)
    create(agent, project, THIRTY)
    create(agent, project, "Deploys need a green CI run on main.")
    create(agent, project, "Deploys need a green CI run on main. (seen again in run-7)")
    listed = agent.get(url(project, "conflicts")).json()["conflicts"]
    assert sorted(c["kind"] for c in listed) == ["conflict", "repeat"]
    only = agent.get(url(project, "conflicts") + "?kind=repeat").json()["conflicts"]
    assert [c["kind"] for c in only] == ["repeat"]
    conflict = next(c for c in listed if c["kind"] == "conflict")
    response = reviewer_client.post(
        url(project, "conflicts", conflict["id"], "resolve"), {"action": "dismiss"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "dismissed"
    assert len(agent.get(url(project, "conflicts")).json()["conflicts"]) == 1
    dismissed = agent.get(url(project, "conflicts") + "?status=dismissed").json()["conflicts"]
    assert [c["id"] for c in dismissed] == [conflict["id"]]
    assert len(agent.get(url(project, "conflicts") + "?status=any").json()["conflicts"]) == 2


@pytest.mark.parametrize(
    ("query", "field"), [("kind=maybe", "kind"), ("status=closed", "status"), ("limit=0", "limit")]
)
def test_bad_filters_say_what_to_use(agent, project, query, field):
    response = agent.get(url(project, "conflicts") + "?" + query)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_supersedes_on_create_replaces_a_pending_memory_at_once(agent, project):
    old = create(agent, project, TEN).json()
    body = create(agent, project, THIRTY, supersedes=[old["id"]]).json()
    assert body["superseded"] == {"done": [old["id"]], "waiting": []}
    stored = agent.get(url(project, "memories", old["id"])).json()
    assert (stored["active"], stored["supersededBy"], stored["liveSuccessor"]) == (
        False, body["id"], body["id"],
    )  # fmt: skip
    assert stored["supersededActor"] == "api-key:agent"
    # The pair between them was decided by the supersede.
    assert agent.get(url(project, "conflicts")).json()["conflicts"] == []


def test_an_agents_supersede_of_an_approved_memory_answers_202_and_waits(
    agent, reviewer_client, project
):
    old = create(agent, project, TEN).json()
    reviewer_client.patch(url(project, "memories", old["id"], "approve"))
    new = create(agent, project, THIRTY).json()
    response = agent.post(
        url(project, "memories", old["id"], "supersede"),
        {"by": new["id"], "reason": "measured in run 12"},
        format="json",
    )
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "waiting"
    assert body["conflict"]["evidence"]["supersede"]["by"] == new["id"]
    assert Memory.objects.get(pk=old["id"]).active
    # The agent cannot decide it either; a reviewer can.
    resolve = url(project, "conflicts", body["conflict"]["id"], "resolve")
    keep = {"action": "keep", "memoryId": new["id"]}
    assert agent.post(resolve, keep, format="json").status_code == 403
    assert reviewer_client.post(resolve, keep, format="json").status_code == 200
    stored = Memory.objects.get(pk=old["id"])
    assert (stored.active, stored.superseded_by_id) == (False, new["id"])


def test_a_reviewers_supersede_answers_200_and_restore_undoes_it(reviewer_client, project):
    old = create(reviewer_client, project, TEN, source="human").json()
    new = create(reviewer_client, project, THIRTY, source="human").json()
    response = reviewer_client.post(
        url(project, "memories", old["id"], "supersede"), {"by": new["id"]}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["supersededBy"] == new["id"]
    again = reviewer_client.post(
        url(project, "memories", old["id"], "supersede"), {"by": new["id"]}, format="json"
    )
    assert again.status_code == 409
    assert "already superseded" in again.json()["error"]["message"]
    restored = reviewer_client.post(url(project, "memories", old["id"], "restore"))
    assert restored.status_code == 200
    assert (restored.json()["active"], restored.json()["supersededBy"]) == (True, None)


@pytest.mark.parametrize(
    ("body", "field"),
    [({"by": "x"}, "by"), ({}, "by"), ({"by": 10**12}, "by"), ({"by": 1, "extra": 1}, "extra")],
)
def test_a_bad_supersede_says_what_to_fix(agent, project, make_memory, body, field):
    memory = make_memory(project=project)
    response = agent.post(url(project, "memories", memory.pk, "supersede"), body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert Memory.objects.get(pk=memory.pk).active


def test_supersede_by_another_projects_memory_is_refused(agent, project, other_project,
                                                         make_memory):  # fmt: skip
    mine = make_memory(project=project)
    theirs = make_memory(project=other_project)
    response = agent.post(
        url(project, "memories", mine.pk, "supersede"), {"by": theirs.pk}, format="json"
    )
    assert response.status_code == 400
    assert "No memory" in response.json()["error"]["fields"]["by"][0]


def test_resolve_needs_the_memory_it_names(reviewer_client, project, make_memory):
    make_memory(project=project, content=TEN)
    make_memory(project=project, content=THIRTY)
    pair = MemoryPair.objects.get()
    resolve = url(project, "conflicts", pair.pk, "resolve")
    missing = reviewer_client.post(resolve, {"action": "keep"}, format="json")
    assert missing.status_code == 400
    assert "memoryId" in missing.json()["error"]["fields"]
    wrong = reviewer_client.post(resolve, {"action": "keep", "memoryId": 1}, format="json")
    assert wrong.status_code == 400
    merged = reviewer_client.post(
        resolve, {"action": "merge", "content": "Payments API calls time out after 30 s."},
        format="json",
    )  # fmt: skip
    assert merged.status_code == 200, merged.json()
    body = merged.json()
    assert (body["status"], body["resolution"]) == ("resolved", "merged")
    assert Memory.objects.get(pk=body["outcomeMemoryId"]).active
    assert reviewer_client.post(resolve, {"action": "dismiss"}, format="json").status_code == 409


def test_live_successor_follows_a_chain(reviewer_client, project, make_memory, reviewer_actor):
    a, b, c = (make_memory(project=project) for _ in range(3))
    supersedes.memory_supersede(memory=a, by=b, actor=reviewer_actor)
    supersedes.memory_supersede(memory=b, by=c, actor=reviewer_actor)
    body = reviewer_client.get(url(project, "memories", a.pk)).json()
    assert (body["supersededBy"], body["liveSuccessor"]) == (b.pk, c.pk)
    listed = reviewer_client.get(url(project, "memories") + "?active=false").json()["memories"]
    assert {m["id"]: m["liveSuccessor"] for m in listed} == {a.pk: c.pk, b.pk: c.pk}


def test_a_conflict_with_a_global_memory_is_the_projects_and_only_a_reviewer_changes_it(
    agent, reviewer_client, project, system_actor, reviewer_actor
):
    shared = services.memory_create(
        project=None, type="pattern", content=TEN, source="run", actor=system_actor,
        tags=["payments"],
    )  # fmt: skip
    services.memory_approve(memory=shared, actor=reviewer_actor)
    mine = create(agent, project, THIRTY, tags=["payments"]).json()
    [conflict] = agent.get(url(project, "conflicts")).json()["conflicts"]
    assert conflict["memoryIds"] == [shared.pk, mine["id"]]
    resolve = url(project, "conflicts", conflict["id"], "resolve")
    keep_mine = {"action": "keep", "memoryId": mine["id"]}
    refused = agent.post(resolve, keep_mine, format="json")
    assert refused.status_code == 403
    assert "global" in refused.json()["error"]["message"]
    assert Memory.objects.get(pk=shared.pk).active
    assert reviewer_client.post(resolve, keep_mine, format="json").status_code == 200
    assert Memory.objects.get(pk=shared.pk).superseded_by_id == mine["id"]
