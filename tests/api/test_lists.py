"""The API's memory lists at any size: every order it offers is walked page by page through
one index range (memories.keyset), each memory once, ties and empty expiries included."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api.filters import CamelOrderingFilter
from memories.models import Memory
from tests.api.conftest import url

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


def _plan(sql: str, params: tuple) -> dict:
    """The plan PostgreSQL makes when it may not sort and may not read the table whole:
    a Sort node is then left only where no index gives the order."""
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        return cursor.fetchone()[0][0]["Plan"]


def _nodes(plan: dict) -> list[dict]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


def _list_statement(client, path: str) -> tuple[str, tuple]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content
    statements = [q["sql"] or "" for q in queries.captured_queries]
    listing = [s for s in statements if "LIMIT" in s and 'FROM "project_memories"' in s]
    assert listing, statements
    return listing[0], ()


@pytest.mark.parametrize("ordering", ORDERS)
def test_every_order_is_an_index_range_at_any_depth(agent, project, tied, ordering):
    first = agent.get(url(project, "memories") + f"?limit=3&ordering={ordering}").json()
    sql, params = _list_statement(agent, first["next"])
    nodes = _nodes(_plan(sql, params))
    kinds = {node["Node Type"] for node in nodes}
    assert "Sort" not in kinds, json.dumps(nodes, indent=1)
    scans = [n for n in nodes if n.get("Relation Name") == "project_memories"]
    assert [n.get("Index Name", "") for n in scans] == [scans[0].get("Index Name")]
    assert scans[0]["Index Name"].startswith("memory_list_"), scans[0]
    # The cursor's position is where the index range starts, not a filter over the rows.
    assert "ROW" not in scans[0].get("Filter", ""), scans[0]
    assert ">" in scans[0]["Index Cond"] or "<" in scans[0]["Index Cond"], scans[0]


def test_a_filtered_list_still_walks_an_index_in_its_order(agent, project, tied):
    path = url(project, "memories") + "?limit=3&type=warning&source=run&ordering=-confidence"
    sql, params = _list_statement(agent, path)
    kinds = {node["Node Type"] for node in _nodes(_plan(sql, params))}
    assert "Sort" not in kinds
