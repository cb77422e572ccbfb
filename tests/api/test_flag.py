"""POST .../memories/:id/flag: an agent tells reviewers a memory looks wrong or stale."""

from __future__ import annotations

import pytest

from memories.models import Memory, MemoryEvent
from tests.api.conftest import url

pytestmark = pytest.mark.django_db


def test_a_flag_waits_for_re_review_with_its_reason_in_history(agent, project, make_memory):
    memory = make_memory(project=project)
    confidence = memory.confidence

    response = agent.post(
        url(project, "memories", memory.pk, "flag"),
        {"reason": "The port is 5433 since the move."},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["staleAt"] is not None
    assert body["staleRef"] == "flagged"
    assert body["confidence"] == confidence  # an opinion: a reviewer decides
    event = MemoryEvent.objects.filter(memory=memory).latest("id")
    assert event.action == "stale"
    assert event.reason == "The port is 5433 since the move."
    assert event.actor_label.startswith("api-key:")


def test_flagging_again_keeps_the_first_time(agent, project, make_memory):
    memory = make_memory(project=project)
    path = url(project, "memories", memory.pk, "flag")
    first = agent.post(path, {"reason": "stale"}, format="json").json()["staleAt"]
    again = agent.post(path, {"reason": "still stale"}, format="json")
    assert again.status_code == 200
    assert again.json()["staleAt"] == first
    assert MemoryEvent.objects.filter(memory=memory, action="stale").count() == 1


def test_an_approval_clears_the_flag(agent, reviewer_client, project, make_memory):
    memory = make_memory(project=project)
    agent.post(url(project, "memories", memory.pk, "flag"), {"reason": "x"}, format="json")
    reviewer_client.patch(url(project, "memories", memory.pk, "approve"))
    memory.refresh_from_db()
    assert memory.stale_at is None


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": "x" * 1001}])
def test_a_flag_needs_a_reason(agent, project, make_memory, body):
    memory = make_memory(project=project)
    response = agent.post(url(project, "memories", memory.pk, "flag"), body, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["error"]["fields"]
    assert Memory.objects.get(pk=memory.pk).stale_at is None
