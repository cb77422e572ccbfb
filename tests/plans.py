"""The plan PostgreSQL makes for a page's statement, read in tests: does an index give the
order, or is the table read whole and sorted?"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext


def plan_without_sorting(sql: str) -> dict[str, Any]:
    """The plan when PostgreSQL may not sort and may not read the table whole: a Sort node
    (or a sequential scan) is then left only where no index can give the rows in order. On
    a test database of a few rows the planner would otherwise rightly prefer both."""
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        return cursor.fetchone()[0][0]["Plan"]


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in nodes(child))]


def page_statement(client: Any, path: str, table: str = "project_memories") -> str:
    """The statement that reads a page's rows of ``table`` (the one with a LIMIT)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, response.content
    statements = [q["sql"] or "" for q in queries.captured_queries]
    reading = [
        s
        for s in statements
        if "LIMIT" in s and f'FROM "{table}"' in s and not s.startswith("SELECT COUNT")
    ]
    assert reading, statements
    return reading[0]


def memories_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in nodes(plan) if n.get("Relation Name") == "project_memories"]
