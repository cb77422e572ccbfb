"""Reading the entities memories mention, at write time (knowledge.receivers, in the writing
transaction) and for the store as it is (``manage.py read_entities``).

For the memories whose words are new, two statements whatever their number, both prepared
(planning them cost more than running them):

1. read their content, summary, tags and their project's marked words (EntityTerm);
2. in one statement: insert the entities not known yet (``ON CONFLICT DO NOTHING``, in key
   order, so that two writers of the same new names wait for each other in one order and
   never deadlock), delete the mentions no longer said and insert the new ones (in memory id
   order, memories.locks).

A statement sees the database as it was when it began: an entity another writer inserted and
committed while this one waited for it is not seen, and its mentions are missing. The
statement says how many it wrote; when some are missing, the mentions are written again by a
third statement, which sees it. No counter is kept anywhere: how often two entities are
mentioned together is counted when it is read (knowledge.graph), so concurrent writers never
update the same row. A memory that becomes inactive keeps its mentions (only active memories
count in the graph), so one that becomes active again needs no reading.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowledge import names as reading
from knowledge.models import Entity, EntityMention, EntityTerm
from memories.models import Memory
from memories.statements import server_cursor

MEMORIES = Memory._meta.db_table
ENTITIES = Entity._meta.db_table
MENTIONS = EntityMention._meta.db_table
TERMS = EntityTerm._meta.db_table
BATCH = 500
# Joins a name's parts (and a mention's imports) into one text per row: no name holds it.
SEP = "\x1f"

_READ = f"""
SELECT m.id, m.project_id, m.content, m.summary, m.tags,
    ARRAY(SELECT t.name FROM {TERMS} t WHERE t.project_id IS NOT DISTINCT FROM m.project_id)
FROM {MEMORIES} m WHERE m.id = ANY(%(ids)s::bigint[]) ORDER BY m.id
"""

_INPUT = """unnest(%(memories)s::bigint[], %(projects)s::bigint[], %(names)s::text[],
    %(keys)s::text[], %(kinds)s::text[], %(parts)s::text[], %(imports)s::text[])
    AS i(memory_id, project_id, name, key, kind, parts, imports)"""

_MENTIONS = f"""gone AS (
    DELETE FROM {MENTIONS} x WHERE x.memory_id = ANY(%(ids)s::bigint[])
    AND NOT EXISTS (
        SELECT 1 FROM said s WHERE s.memory_id = x.memory_id AND s.entity_id = x.entity_id
    )
), kept AS (
    INSERT INTO {MENTIONS} (memory_id, entity_id, project_id, imports)
    SELECT memory_id, entity_id, project_id, coalesce(imports, '{{}}') FROM said
    ORDER BY memory_id, entity_id
    ON CONFLICT (memory_id, entity_id, project_id) DO UPDATE SET imports = EXCLUDED.imports
    WHERE {MENTIONS}.imports IS DISTINCT FROM EXCLUDED.imports
)
SELECT count(*) FROM said"""

_WRITE = f"""
WITH new AS (
    INSERT INTO {ENTITIES} (project_id, name, key, kind, parts, created_at)
    SELECT DISTINCT ON (i.key, i.project_id) i.project_id, i.name, i.key, i.kind,
        string_to_array(i.parts, %(sep)s), now()
    FROM {_INPUT}
    WHERE NOT EXISTS (
        SELECT 1 FROM {ENTITIES} e
        WHERE e.key = i.key AND e.project_id IS NOT DISTINCT FROM i.project_id
    )
    ORDER BY i.key, i.project_id
    ON CONFLICT (key, project_id) DO NOTHING
    RETURNING id, key, project_id
), said AS (
    SELECT i.memory_id, e.id AS entity_id, i.project_id,
        string_to_array(nullif(i.imports, ''), %(sep)s) AS imports
    FROM {_INPUT}
    JOIN (
        SELECT id, key, project_id FROM {ENTITIES}
        UNION ALL SELECT id, key, project_id FROM new
    ) AS e ON e.key = i.key AND e.project_id IS NOT DISTINCT FROM i.project_id
), {_MENTIONS}
"""

# Again, when a concurrent writer's new entity was not seen: every entity exists now.
_REPLACE = f"""
WITH said AS (
    SELECT i.memory_id, e.id AS entity_id, i.project_id,
        string_to_array(nullif(i.imports, ''), %(sep)s) AS imports
    FROM {_INPUT}
    JOIN {ENTITIES} e ON e.key = i.key AND e.project_id IS NOT DISTINCT FROM i.project_id
), {_MENTIONS}
"""


def refresh(memory_ids: Sequence[int]) -> int:
    """Read again the entities of ``memory_ids`` (their words are new) and replace their
    mentions; how many mentions they have now. See the module for the statements."""
    ids = sorted(set(memory_ids))
    said = 0
    for start in range(0, len(ids), BATCH):
        said += _refresh(ids[start : start + BATCH])
    return said


def _refresh(ids: list[int]) -> int:
    with server_cursor(prepare=True) as cursor:
        cursor.execute(_READ, {"ids": ids})
        rows = cursor.fetchall()
        if not rows:
            return 0
        said: list[tuple[int, int | None, str, str, str, str, str]] = []
        for memory_id, project_id, content, summary, tags, terms in rows:
            found = reading.read_memory(content, summary or "", tags or [], terms)
            for key, (name, kind) in sorted(found.found.items()):
                imports = SEP.join(sorted(found.imports.get(key, ())))
                parts = SEP.join(reading.name_parts(name))
                said.append((memory_id, project_id, name, key, kind, parts, imports))
        params = {
            "ids": ids,
            "sep": SEP,
            **{
                column: [row[n] for row in said]
                for n, column in enumerate(
                    ("memories", "projects", "names", "keys", "kinds", "parts", "imports")
                )
            },
        }
        cursor.execute(_WRITE, params)
        (written,) = cursor.fetchone()
        if written < len(said):
            cursor.execute(_REPLACE, params)
            (written,) = cursor.fetchone()
    return int(written)


def refresh_all(*, project_id: int | None = None, batch: int = BATCH) -> int:
    """Read the entities of every memory (of one project): for memories written before
    entities were read, or after the project's marked words changed. In batches by id, each
    in its own short transaction when called outside one."""
    from django.db import transaction

    memories = Memory.objects.order_by("id")
    if project_id is not None:
        memories = memories.filter(project_id=project_id)
    after, said = 0, 0
    while True:
        ids = list(memories.filter(id__gt=after).values_list("id", flat=True)[:batch])
        if not ids:
            return said
        with transaction.atomic():
            said += _refresh(ids)
        after = ids[-1]
