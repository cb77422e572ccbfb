"""Code-change staleness and restoring archived or compressed memories, through the API."""

from __future__ import annotations

import pytest

from memories import services as memory_services
from memories.models import EventAction, Memory, MemoryEvent, MemoryPolicy
from policies.compression import compress_memories
from policies.eviction import evict_memories
from tests.api.conftest import client_with_key, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(project):
    return client_with_key(project)


def test_a_change_flags_the_memories_about_its_paths(project, other_project, agent, make_memory):
    about = make_memory(project=project, tags=["src/billing/**"])
    by_file = make_memory(project=project, tags=["src/billing/models.py"])
    keyword = make_memory(project=project, tags=["billing"])
    elsewhere = make_memory(project=project, tags=["src/auth/**"])
    other = make_memory(project=other_project, tags=["src/billing/**"])
    response = agent.post(
        url(project, "changes"),
        {"paths": ["src/billing/models.py", "README.md"], "ref": "abc123"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    flagged = sorted(m.pk for m in (about, by_file, keyword))
    assert response.json() == {"ref": "abc123", "marked": 3, "memoryIds": flagged}
    for memory in Memory.objects.filter(pk__in=flagged):
        assert (memory.stale_ref, memory.stale_at is not None) == ("abc123", True)
        assert memory.confidence == pytest.approx(0.4)
    assert Memory.objects.get(pk=elsewhere.pk).stale_at is None
    assert Memory.objects.get(pk=other.pk).stale_at is None
    event = MemoryEvent.objects.get(memory_id=about.pk, action=EventAction.STALE)
    assert event.reason == "code changed in abc123: src/billing/models.py, README.md"
    assert event.changes == {"confidence": [0.5, pytest.approx(0.4)]}
    assert event.actor_api_key_id is not None
    again = agent.post(
        url(project, "changes"),
        {"paths": ["src/billing/models.py"], "ref": "abc123"},
        format="json",
    )
    assert again.json()["marked"] == 0
    assert MemoryEvent.objects.filter(action=EventAction.STALE).count() == 3


def test_the_penalty_comes_from_the_policy_and_can_deactivate(project, agent, make_memory):
    memory = make_memory(project=project, tags=["src/a.py"])
    MemoryPolicy.objects.filter(project=project).update(staleness_penalty=0.4)
    agent.post(url(project, "changes"), {"paths": ["src/a.py"], "ref": "r1"}, format="json")
    memory = Memory.objects.get(pk=memory.pk)
    assert memory.confidence == pytest.approx(0.1)
    assert memory.active is False


def test_a_review_settles_the_flag(project, agent, make_memory, reviewer_actor):
    memory = make_memory(project=project, tags=["src/a.py"])
    agent.post(url(project, "changes"), {"paths": ["src/a.py"], "ref": "r1"}, format="json")
    memory_services.memories_approve(memory_ids=[memory.pk], actor=reviewer_actor)
    assert Memory.objects.get(pk=memory.pk).stale_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ref": "r1"}, "paths"),
        ({"paths": [], "ref": "r1"}, "paths"),
        ({"paths": "src/a.py", "ref": "r1"}, "paths"),
        ({"paths": ["src/a.py"]}, "ref"),
        ({"paths": ["src/a.py"], "ref": "x" * 201}, "ref"),
        ({"paths": ["src/a.py"] * 501, "ref": "r1"}, "paths"),
    ],
)
def test_a_bad_change_report_says_what_to_fix(project, agent, body, field):
    response = agent.post(url(project, "changes"), body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_an_evicted_memory_is_restored_through_the_api(project, agent, make_memory):
    memories = [make_memory(project=project) for _ in range(3)]
    MemoryPolicy.objects.filter(project=project).update(max_items=2)
    evict_memories()
    (evicted,) = Memory.objects.filter(archived_at__isnull=False)
    response = agent.post(url(project, "memories", evicted.pk, "restore"))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["active"], body["tier"], body["archivedAt"]) == (True, "warm", None)
    assert len(memories) == Memory.objects.filter(active=True).count()
    assert MemoryEvent.objects.filter(memory_id=evicted.pk, action="restored").exists()
    again = agent.post(url(project, "memories", evicted.pk, "restore"))
    assert again.status_code == 409
    assert "not archived" in again.json()["error"]["message"]


def test_a_compressed_memory_gets_its_original_back_through_the_api(project, agent, make_memory):
    from tests.policies.test_compression import LONG

    memory = make_memory(project=project, content=LONG)
    assert agent.post(url(project, "memories", memory.pk, "restore-content")).status_code == 409
    Memory.objects.filter(pk=memory.pk).update(created_at="2020-01-01T00:00:00Z")
    MemoryPolicy.objects.filter(project=project).update(compress_min_tokens=20)
    assert compress_memories().total == 1
    response = agent.post(url(project, "memories", memory.pk, "restore-content"))
    assert response.status_code == 200
    assert response.json()["content"] == LONG
