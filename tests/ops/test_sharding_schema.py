"""The schema is ready to be sharded by project (docs/scaling.md), read from the catalog.

Every table is a project's (it has a ``project_id``: distributed by it), or declared here as
a reference table (a copy on every node) or a table that stays on the coordinator, with why;
Django's own and its packages' tables stay on the coordinator, but for ``auth_user``. A new
table that is none of these fails. Between a project's tables, every foreign key includes
``project_id`` on both sides at the same place, and every unique constraint or index
includes it: Citus distributes only such tables. Their primary keys (``id`` alone) are the
one change left for the move, and docs/scaling.md says so."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.db import IntegrityError, connection
from django.db.transaction import atomic

from tests.factories import MemoryFactory
from tests.support import ROOT

pytestmark = pytest.mark.django_db

PRODUCT_APPS = {"memories", "knowledge", "people", "assembly", "policies", "api", "ops", "review"}
PROJECT = "project_id"

# A copy on every node: small, read with the rows of every project, or found before the
# project is known.
REFERENCE = {
    "memories_project": "the projects themselves: every project's table names one",
    "memories_memorypolicy": "one row per project, joined with the memories of every project "
    "by the lifecycle jobs",
    "memories_apikey": "a key is found by its prefix before its project is known (/mcp)",
    "project_members": "roles, read by the person's id across projects on every signed-in page",
    "knowledge_judge_answers": "the judge model's answers, keyed by the two texts' hashes and "
    "shared by every project",
    "auth_user": "people, named by the rows of every project (who approved, resolved, edited)",
}
# Bookkeeping of the service itself, never read with one project's rows.
COORDINATOR = {
    "policies_jobstate": "one row per lifecycle job",
    "policies_pendingcomparison": "the queue of memory ids the consolidation job drains, "
    "written after a change commits, never in a project's transaction",
    "api_slotlease": "the concurrency slots of each caller when no Redis keeps them",
    "django_migrations": "Django's record of the migrations applied",
}


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[int, str]  # attnum: name


def tables() -> dict[str, Table]:
    """The ordinary tables of the schema (no extension's), with their columns."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, a.attnum, a.attname
            FROM pg_class c
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
              AND NOT EXISTS (
                  SELECT 1 FROM pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
              )
            """
        )
        columns: dict[str, dict[int, str]] = defaultdict(dict)
        for table, number, column in cursor.fetchall():
            columns[table][number] = column
    return {name: Table(name, cols) for name, cols in columns.items()}


def projects_tables() -> set[str]:
    """The tables distributed by project: those with a ``project_id``, but the declared
    reference tables."""
    return {t.name for t in tables().values() if PROJECT in t.columns.values()} - set(REFERENCE)


def django_tables() -> set[str]:
    """The tables of Django and its packages (auth, sessions, admin, beat, axes...)."""
    return {
        model._meta.db_table
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label not in PRODUCT_APPS
    }


def shared_tables() -> set[str]:
    return set(REFERENCE) | set(COORDINATOR) | django_tables()


def test_every_table_is_a_projects_or_says_where_it_lives():
    found = tables()
    undeclared = sorted(set(found) - projects_tables() - shared_tables())
    assert not undeclared, (
        f"{undeclared}: give each a project_id (a project's rows, distributed by it) or"
        " declare it here as a reference table or one on the coordinator, with why"
    )
    gone = sorted((set(REFERENCE) | set(COORDINATOR)) - set(found))
    assert not gone, f"{gone}: declared here, but no such table"


def _foreign_keys() -> list[tuple[str, str, str, list[int], list[int]]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT conname, conrelid::regclass::text, confrelid::regclass::text,
                conkey::int[], confkey::int[]
            FROM pg_constraint
            WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
            ORDER BY 2, 1
            """
        )
        return cursor.fetchall()


def test_foreign_keys_between_a_projects_tables_include_the_project():
    found = tables()
    distributed = projects_tables()
    wrong = []
    for name, table, target, columns, targets in _foreign_keys():
        if table not in distributed or target not in distributed:
            continue
        mine = [found[table].columns[n] for n in columns]
        theirs = [found[target].columns[n] for n in targets]
        if (
            PROJECT not in mine
            or PROJECT not in theirs
            or mine.index(PROJECT) != theirs.index(PROJECT)
        ):
            wrong.append(f"{name}: {table}({', '.join(mine)}) -> {target}({', '.join(theirs)})")
    assert not wrong, "foreign keys without the project on both sides:\n" + "\n".join(wrong)


def test_no_foreign_key_crosses_where_citus_has_none():
    """A project's table may name a reference table, never one on the coordinator; a shared
    table never names a project's."""
    distributed = projects_tables()
    reference = set(REFERENCE)
    wrong = [
        f"{name}: {table} -> {target}"
        for name, table, target, _, _ in _foreign_keys()
        if (table in distributed and target not in distributed | reference)
        or (table not in distributed and target in distributed)
    ]
    assert not wrong, "\n".join(wrong)


def test_unique_constraints_and_indexes_of_a_projects_tables_include_the_project():
    found = tables()
    distributed = projects_tables()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text, i.indkey::int[]
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
            WHERE c.relnamespace = current_schema()::regnamespace
              AND i.indisunique AND NOT i.indisprimary
            ORDER BY 2, 1
            """
        )
        rows = cursor.fetchall()
    wrong = [
        f"{index} on {table}"
        for index, table, columns in rows
        if table in distributed
        and PROJECT not in [found[table].columns.get(n) for n in columns if n]
    ]
    assert not wrong, "unique without the project: " + ", ".join(wrong)


def test_the_primary_keys_are_the_change_left_for_the_move():
    """Each of a project's tables keeps its own key alone (Django's ``id``); the move makes it
    (project_id, id), as docs/scaling.md says of each table it names."""
    found = tables()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT conrelid::regclass::text, conkey::int[] FROM pg_constraint
            WHERE contype = 'p' AND connamespace = current_schema()::regnamespace
            """
        )
        keys = dict(cursor.fetchall())
    plan = (ROOT / "docs" / "scaling.md").read_text()
    for table in sorted(projects_tables()):
        assert PROJECT not in [found[table].columns[n] for n in keys[table]], (
            f"{table}: its primary key includes the project now: docs/scaling.md says it is"
            " left for the move"
        )
        assert f"`{table}`" in plan, f"docs/scaling.md does not name {table}"
    for table in REFERENCE:
        assert f"`{table}`" in plan, f"docs/scaling.md does not name {table}"


def test_a_reference_to_another_projects_row_is_refused(project, other_project, make_run):
    """The composite keys at work: a run's item that says it is another project's than its
    run's, and a memory whose run is another project's, are refused by the database."""
    run = make_run(project=project)
    theirs = MemoryFactory(project=other_project)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        with pytest.raises(IntegrityError, match="run_memory_run_in_project"), atomic():
            cursor.execute(
                "INSERT INTO memories_runmemory (project_id, run_id, memory_id, rank, score,"
                " parts, created_at) VALUES (%s, %s, %s, 1, 0, '{}', now())",
                [other_project.pk, run.pk, theirs.pk],
            )
        with pytest.raises(IntegrityError, match="memory_source_run_in_project"), atomic():
            cursor.execute(
                "UPDATE project_memories SET source_run_id = %s WHERE id = %s", [run.pk, theirs.pk]
            )
