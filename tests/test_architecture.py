"""The store has one writer: every write of a memory or of a history row is made by the store's
services (memories/services/) or its history module (memories/history.py). Any other module
of the product that writes them, in SQL or through the ORM, fails here.

The layers themselves (imports point down) are checked by import-linter (``make lint``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memories.models import Memory, MemoryEvent

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("config", "memories", "assembly", "policies", "api", "review", "ops")
WRITERS = ("memories/history.py", "memories/services/")

TABLES = {Memory._meta.db_table, MemoryEvent._meta.db_table}
# How code names those tables in SQL it builds: literally, or through the history module's
# constants and the models' metadata.
TABLE_NAMES = TABLES | {"MEMORIES", "EVENTS", "Memory._meta.db_table", "MemoryEvent._meta.db_table"}
_SQL_WRITE = re.compile(r"\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+([{\"']?[\w.]+)", re.I)
MODELS = {"Memory", "MemoryEvent"}
ORM_WRITES = {
    "create",
    "bulk_create",
    "bulk_update",
    "update",
    "update_or_create",
    "get_or_create",
    "delete",
}


def sql_writes(text: str) -> list[str]:
    """The statements in ``text`` that write the memories or history tables."""
    found = []
    for match in _SQL_WRITE.finditer(text):
        target = match.group(1).lstrip("{\"'")
        if target in TABLE_NAMES:
            found.append(match.group(0))
    return found


def _receiver_model(node: ast.expr) -> str | None:
    """The model a chain like ``Memory.objects.filter(...).update`` starts from."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if (
                node.attr == "objects"
                and isinstance(node.value, ast.Name)
                and node.value.id in MODELS
            ):
                return node.value.id
            node = node.value
        else:
            return None


def orm_writes(text: str) -> list[str]:
    """The calls in ``text`` that write memories or history rows through a model manager."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ORM_WRITES
        ):
            model = _receiver_model(node.func.value)
            if model:
                found.append(f"{model}.objects...{node.func.attr}() at line {node.lineno}")
    return found


def product_modules() -> list[Path]:
    return sorted(
        path
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_detectors_see_writes_in_sql_and_through_the_orm():
    assert sql_writes('f"UPDATE {MEMORIES} m SET active = false"')
    assert sql_writes("INSERT INTO memories_memoryevent (memory_id) VALUES (1)")
    assert sql_writes("DELETE FROM project_memories WHERE id = 1")
    assert not sql_writes("UPDATE policies_jobstate SET cursor = 1")
    assert not sql_writes("SELECT id FROM project_memories")
    assert orm_writes("Memory.objects.filter(pk=1).update(active=False)")
    assert orm_writes("MemoryEvent.objects.bulk_create(rows)")
    assert orm_writes("Memory.objects.select_for_update().filter(\n  id=1\n).delete()")
    assert not orm_writes("Memory.objects.filter(pk=1).values_list('id')")


@pytest.mark.parametrize("path", product_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_store_writes_memories_and_their_history(path):
    relative = path.relative_to(ROOT).as_posix()
    if relative.startswith(WRITERS):
        return
    text = path.read_text()
    writes = sql_writes(text) + orm_writes(text)
    assert not writes, (
        f"{relative} writes memories or history rows itself: {writes}. Call a service of "
        "memories.services, or build the statement with memories.history."
    )


def test_the_writers_exist():
    """The allowed writers are real files (a rename must update this test)."""
    for writer in WRITERS:
        assert (ROOT / writer).exists(), writer
