"""Trigram similarity for consolidation, on any PostgreSQL the service runs on.

Consolidation calls two functions of the ``pg_trgm`` extension: ``show_trgm(text)`` (a
text's trigrams) and ``similarity(text, text)`` (shared trigrams over all trigrams of the
two). Every PostgreSQL installation ships ``pg_trgm``, except the embedded server that
runs the service and its tests on a machine with no ``DATABASE_URL`` (``pgserver``), which
ships no contrib extension. There the migration installs the same two functions written in
SQL: words are the runs of letters and digits, lowercased and padded with two spaces in
front and one behind, as ``pg_trgm`` does, so both give the same trigrams and the same
similarity (``tests/policies/test_trigrams.py`` compares them). The SQL form is slower,
which only the demo's small store meets.
"""

from __future__ import annotations

from typing import Any

from django.db.migrations.operations import AddIndex
from django.db.migrations.operations.base import Operation

FUNCTIONS = ("show_trgm(text)", "similarity(text, text)")


def functions_sql(schema: str = "") -> list[str]:
    """``show_trgm`` and ``similarity`` in SQL, in ``schema`` (by default the first of the
    search path)."""
    prefix = f"{schema}." if schema else ""
    return [
        f"""CREATE OR REPLACE FUNCTION {prefix}show_trgm(text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT substr(w, i, 3) ORDER BY substr(w, i, 3)), '{{}}')
    FROM (
        SELECT '  ' || word || ' ' AS w
        FROM regexp_split_to_table(lower($1), '[^[:alnum:]]+') AS word
        WHERE word <> ''
    ) AS words, generate_series(1, length(w) - 2) AS i
$$""",
        # Divided in real, as pg_trgm divides: a pair at the threshold stays at it.
        f"""CREATE OR REPLACE FUNCTION {prefix}similarity(text, text) RETURNS real
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(a) = 0 OR cardinality(b) = 0 THEN 0::real
        ELSE shared::real / (cardinality(a) + cardinality(b) - shared)::real END
    FROM (SELECT {prefix}show_trgm($1) AS a, {prefix}show_trgm($2) AS b) AS sets,
        LATERAL (SELECT count(*)::int AS shared FROM unnest(a) AS t WHERE t = ANY (b)) AS s
$$""",
    ]


def _exists(schema_editor: Any, catalog: str, name: str) -> bool:
    column = "name" if catalog == "pg_available_extensions" else "extname"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {catalog} WHERE {column} = %s)", [name])
        return bool(cursor.fetchone()[0])


class OptionalExtension(Operation):
    """An extension created where the server ships it; elsewhere its stand-in, if any.
    The models' state is left as it is."""

    reversible = True

    def __init__(self, name: str) -> None:
        self.name = name

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _exists(schema_editor, "pg_available_extensions", self.name):
            schema_editor.execute(f"CREATE EXTENSION IF NOT EXISTS {self.name}")
        else:
            self.stand_in(schema_editor)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _exists(schema_editor, "pg_extension", self.name):
            schema_editor.execute(f"DROP EXTENSION {self.name}")
        else:
            self.remove_stand_in(schema_editor)

    def stand_in(self, schema_editor: Any) -> None:
        """What replaces the extension on a server without it (by default nothing: only
        ``AddIndexWithExtensions`` needs it)."""

    def remove_stand_in(self, schema_editor: Any) -> None:
        pass

    def describe(self) -> str:
        return f"Creates extension {self.name} where the server has it"


class Trigrams(OptionalExtension):
    """``pg_trgm`` where the server ships it; otherwise its two functions in SQL."""

    def __init__(self) -> None:
        super().__init__("pg_trgm")

    def stand_in(self, schema_editor: Any) -> None:
        for statement in functions_sql():
            schema_editor.execute(statement)

    def remove_stand_in(self, schema_editor: Any) -> None:
        for function in reversed(FUNCTIONS):
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}")

    def describe(self) -> str:
        return "Trigram similarity (pg_trgm, or its functions in SQL)"


class AddIndexWithExtensions(AddIndex):
    """An index built only where the extensions its operator classes come from are
    installed (a later migration drops it with IF EXISTS)."""

    def __init__(self, model_name: str, index: Any, extensions: tuple[str, ...]) -> None:
        super().__init__(model_name, index)
        self.extensions = extensions

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if all(_exists(schema_editor, "pg_extension", name) for name in self.extensions):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
