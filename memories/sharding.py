"""Migration operations that put the project into the keys of a project's tables, so that
they can be distributed by project (docs/scaling.md), on tables of any size.

- ``unique``: a unique constraint or index with new columns, built CONCURRENTLY (writes go
  on), then swapped in for the old one in one short ALTER TABLE (or a DROP and a RENAME).
- ``project_foreign_key``: ``(project_id, x_id) REFERENCES parent (project_id, id)``, added
  NOT VALID (no scan under the lock) then validated (a scan that lets writes go on). Django
  has no composite foreign key: the field keeps its relation (and Django its deletion rule)
  with ``db_constraint=False``, and this constraint is the database's check. It is
  DEFERRABLE INITIALLY DEFERRED, as Django's own, and MATCH SIMPLE: a row whose
  ``project_id`` is NULL (a global memory's) is not checked.
- ``copy_project`` and ``project_not_null``: a denormalised ``project_id`` filled in batches
  of ids (each its own transaction), then NOT NULL through a validated CHECK, so that SET NOT
  NULL does not scan the table under its lock.

Each needs a migration with ``atomic = False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import migrations

BATCH = 20_000


def _quoted(columns: Sequence[str]) -> str:
    return ", ".join(column if "(" in column else f'"{column}"' for column in columns)


def _build(
    table: str,
    name: str,
    columns: Sequence[str],
    *,
    nulls_distinct: bool,
    condition: str,
    constraint: bool,
    replaces: str,
    replaces_constraint: bool,
) -> list[str]:
    """Build unique ``name`` under a temporary name, then put it in place of ``replaces``.
    The new index holds the rows unique from the moment it is valid: no moment is without."""
    new = f"{name}_new"
    index = (
        f'CREATE UNIQUE INDEX CONCURRENTLY "{new}" ON "{table}" ({_quoted(columns)})'
        + ("" if nulls_distinct else " NULLS NOT DISTINCT")
        + (f" WHERE {condition}" if condition else "")
    )
    # A build that failed half way leaves an invalid index behind: it goes first.
    statements = [f'DROP INDEX CONCURRENTLY IF EXISTS "{new}"', index]
    add = f'ADD CONSTRAINT "{name}" UNIQUE USING INDEX "{new}"'
    if replaces and replaces_constraint and constraint:
        return [*statements, f'ALTER TABLE "{table}" DROP CONSTRAINT "{replaces}", {add}']
    if replaces and replaces_constraint:
        statements.append(f'ALTER TABLE "{table}" DROP CONSTRAINT "{replaces}"')
    elif replaces:
        statements.append(f'DROP INDEX CONCURRENTLY "{replaces}"')
    if constraint:
        statements.append(f'ALTER TABLE "{table}" {add}')
    else:
        statements.append(f'ALTER INDEX "{new}" RENAME TO "{name}"')
    return statements


def unique(
    *,
    table: str,
    name: str,
    columns: Sequence[str],
    old_columns: Sequence[str] = (),
    nulls_distinct: bool = True,
    condition: str = "",
    constraint: bool = True,
    replaces: str = "",
    old_constraint: bool | None = None,
) -> migrations.RunSQL:
    """Unique ``name`` on ``columns`` (a constraint; a partial index when ``condition`` says
    which rows), in place of the one of the same name on ``old_columns`` (or of the
    constraint or index ``replaces``, when the name changes). The reverse builds the old one
    again the same way; with no old columns, it drops the new one. ``nulls_distinct=False``:
    rows with no project are unique among themselves as before."""
    old_name = replaces or name
    old_constraint = constraint if old_constraint is None else old_constraint
    if not old_columns:
        forward = _build(
            table,
            name,
            columns,
            nulls_distinct=nulls_distinct,
            condition=condition,
            constraint=constraint,
            replaces="",
            replaces_constraint=False,
        )
        drop = (
            f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"'
            if constraint
            else f'DROP INDEX CONCURRENTLY "{name}"'
        )
        return migrations.RunSQL(tuple(forward), (drop,))
    forward = _build(
        table,
        name,
        columns,
        nulls_distinct=nulls_distinct,
        condition=condition,
        constraint=constraint,
        replaces=old_name,
        replaces_constraint=old_constraint,
    )
    backward = _build(
        table,
        old_name,
        old_columns,
        nulls_distinct=True,
        condition=condition,
        constraint=old_constraint,
        replaces=name,
        replaces_constraint=constraint,
    )
    return migrations.RunSQL(tuple(forward), tuple(backward))


def project_foreign_key(
    *, table: str, name: str, column: str, parent: str, parent_column: str = "id"
) -> migrations.RunSQL:
    """``(project_id, column) REFERENCES parent (project_id, parent_column)``, checked
    without holding a lock through the scan."""
    return migrations.RunSQL(
        [
            f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" FOREIGN KEY ("project_id", "{column}")'
            f' REFERENCES "{parent}" ("project_id", "{parent_column}") MATCH SIMPLE'
            " DEFERRABLE INITIALLY DEFERRED NOT VALID",
            f'ALTER TABLE "{table}" VALIDATE CONSTRAINT "{name}"',
        ],
        [f'ALTER TABLE "{table}" DROP CONSTRAINT IF EXISTS "{name}"'],
    )


def copy_project(
    *, table: str, sql: str, key: str = "id", batch: int = BATCH
) -> migrations.RunPython:
    """Fill ``table``'s ``project_id`` by ``sql``, an UPDATE of the rows whose ``key`` lies
    in ``[%(low)s, %(high)s)``, one batch at a time, each committed alone."""

    def forward(apps: Any, schema_editor: Any) -> None:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f'SELECT min("{key}"), max("{key}") FROM "{table}"')
            low, top = cursor.fetchone()
            if low is None:
                return
            while low <= top:
                cursor.execute(sql, {"low": low, "high": low + batch})
                low += batch

    return migrations.RunPython(forward, migrations.RunPython.noop, elidable=False)


def project_not_null(*, table: str, catch_up: str = "") -> migrations.RunSQL:
    """``project_id`` NOT NULL without a scan under the table's lock: a CHECK added NOT VALID
    and validated (writes go on), which SET NOT NULL then trusts. ``catch_up``, an UPDATE,
    first fills the rows written since the batches (by a process of the previous release)."""
    check = f"{table}_project_set"
    return migrations.RunSQL(
        [
            *([catch_up] if catch_up else []),
            f'ALTER TABLE "{table}" ADD CONSTRAINT "{check}"'
            ' CHECK ("project_id" IS NOT NULL) NOT VALID',
            f'ALTER TABLE "{table}" VALIDATE CONSTRAINT "{check}"',
            f'ALTER TABLE "{table}" ALTER COLUMN "project_id" SET NOT NULL',
            f'ALTER TABLE "{table}" DROP CONSTRAINT "{check}"',
        ],
        [f'ALTER TABLE "{table}" ALTER COLUMN "project_id" DROP NOT NULL'],
    )
