"""The API's memory lists at any size: every order it offers is walked page by page through
one index range (memories.keyset), each memory once, ties and empty expiries included."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from api.filters import CamelOrderingFilter
from memories.models import Memory
from tests.api.conftest import url
from tests.plans import memories_scans, nodes, page_statement, plan_without_sorting

pytestmark = pytest.mark.django_db

ORDERS = [sign + name for name in CamelOrderingFilter.fields for sign in ("", "-")]


def walk(client, path: str) -> list[int]:
    seen: list[int] = []
    next_url = path
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["memories"]) <= 3
        seen += [m["id"] for m in body["memories"]]
        next_url = body["next"]
    return seen


@pytest.fixture
def tied(project, make_memory):
    """Eleven memories whose every key ties with another's: one creation time, confidence
    0.5 or 0.7, an expiry on some and none on others."""
    moment = timezone.now() - timedelta(days=1)
    memories = [make_memory(project=project) for _ in range(11)]
    for index, memory in enumerate(memories):
        Memory.objects.filter(pk=memory.pk).update(
            created_at=moment,
            updated_at=moment + timedelta(seconds=index % 2),
            confidence=0.5 if index % 3 else 0.7,
            expires_at=None if index % 2 else moment + timedelta(days=index % 4),
        )
    return list(Memory.objects.filter(pk__in=[m.pk for m in memories]))


def expected(memories: list[Memory], ordering: str) -> list[int]:
    name = CamelOrderingFilter.fields[ordering.lstrip("-")]
    far = timezone.now() + timedelta(days=365 * 1000)

    def key(memory: Memory):
        value = getattr(memory, name)
        return (far if value is None else value, memory.pk)

    return [m.pk for m in sorted(memories, key=key, reverse=ordering.startswith("-"))]


@pytest.mark.parametrize("ordering", ORDERS)
def test_every_order_walks_each_memory_once_in_its_order(agent, project, tied, ordering):
    seen = walk(agent, url(project, "memories") + f"?limit=3&ordering={ordering}")
    assert seen == expected(tied, ordering)


def test_a_page_never_skips_a_memory_written_meanwhile(agent, project, make_memory):
    older = [make_memory(project=project).pk for _ in range(4)]
    first = agent.get(url(project, "memories") + "?limit=2&ordering=createdAt").json()
    make_memory(project=project)  # a newer one lands at the end, not in the middle
    rest = walk(agent, first["next"])
    assert [m["id"] for m in first["memories"]] + rest[:2] == older


@pytest.mark.parametrize("ordering", ORDERS)
def test_every_order_is_an_index_range_at_any_depth(agent, project, tied, ordering):
    first = agent.get(url(project, "memories") + f"?limit=3&ordering={ordering}").json()
    plan = plan_without_sorting(page_statement(agent, first["next"]))
    kinds = {node["Node Type"] for node in nodes(plan)}
    assert "Sort" not in kinds, json.dumps(plan, indent=1)
    scans = memories_scans(plan)
    assert [n.get("Index Name", "") for n in scans] == [scans[0].get("Index Name")]
    assert scans[0]["Index Name"].startswith("memory_list_"), scans[0]
    # The cursor's position is where the index range starts, not a filter over the rows.
    assert "ROW" not in scans[0].get("Filter", ""), scans[0]
    assert ">" in scans[0]["Index Cond"] or "<" in scans[0]["Index Cond"], scans[0]


def test_a_filtered_list_still_walks_an_index_in_its_order(agent, project, tied):
    path = url(project, "memories") + "?limit=3&type=warning&source=run&ordering=-confidence"
    kinds = {node["Node Type"] for node in nodes(plan_without_sorting(page_statement(agent, path)))}
    assert "Sort" not in kinds
