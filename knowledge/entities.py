"""Reading the entities memories mention, at write time (knowledge.receivers, in the writing
transaction) and for the store as it is (``manage.py read_entities``).

For the memories whose words are new, three statements whatever their number:

1. read their content, summary, tags and their project's marked words (EntityTerm);
2. insert the entities not known yet (``ON CONFLICT DO NOTHING``, in key order, so that two
   writers of the same new names wait for each other in one order and never deadlock);
3. replace their mentions: delete those no longer said, insert the new ones (in memory id
   order, memories.locks), in one statement.

Statement 3 is a statement of its own so that it sees an entity another writer committed
while statement 2 waited for it. No counter is kept anywhere: how often two entities are
mentioned together is counted when it is read (knowledge.graph), so concurrent writers never
update the same row. A memory that becomes inactive keeps its mentions (only active memories
count in the graph), so one that becomes active again needs no reading.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from knowledge import names as reading
from knowledge.models import Entity, EntityMention, EntityTerm
from memories.models import Memory

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

_INSERT = f"""
INSERT INTO {ENTITIES} (project_id, name, key, kind, parts, created_at)
SELECT DISTINCT ON (i.key, i.project_id) i.project_id, i.name, i.key, i.kind,
    string_to_array(i.parts, %(sep)s), now()
FROM unnest(%(projects)s::bigint[], %(names)s::text[], %(keys)s::text[], %(kinds)s::text[],
    %(parts)s::text[]) AS i(project_id, name, key, kind, parts)
WHERE NOT EXISTS (
    SELECT 1 FROM {ENTITIES} e
    WHERE e.key = i.key AND e.project_id IS NOT DISTINCT FROM i.project_id
)
ORDER BY i.key, i.project_id
ON CONFLICT (key, project_id) DO NOTHING
"""

_REPLACE = f"""
WITH said AS (
    SELECT i.memory_id, e.id AS entity_id,
        string_to_array(nullif(i.imports, ''), %(sep)s) AS imports
    FROM unnest(%(memories)s::bigint[], %(projects)s::bigint[], %(keys)s::text[],
        %(imports)s::text[]) AS i(memory_id, project_id, key, imports)
    JOIN {ENTITIES} e ON e.key = i.key AND e.project_id IS NOT DISTINCT FROM i.project_id
), gone AS (
    DELETE FROM {MENTIONS} x WHERE x.memory_id = ANY(%(ids)s::bigint[])
    AND NOT EXISTS (
        SELECT 1 FROM said s WHERE s.memory_id = x.memory_id AND s.entity_id = x.entity_id
    )
)
INSERT INTO {MENTIONS} (memory_id, entity_id, imports)
SELECT memory_id, entity_id, coalesce(imports, '{{}}') FROM said ORDER BY memory_id, entity_id
ON CONFLICT (memory_id, entity_id) DO UPDATE SET imports = EXCLUDED.imports
WHERE {MENTIONS}.imports IS DISTINCT FROM EXCLUDED.imports
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
    with connection.cursor() as cursor:
        cursor.execute(_READ, {"ids": ids})
        rows = cursor.fetchall()
        if not rows:
            return 0
        mentions: list[tuple[int, int | None, str, str]] = []
        entities: dict[tuple[str, int | None], tuple[str, str]] = {}
        for memory_id, project_id, content, summary, tags, terms in rows:
            found = reading.read_memory(content, summary or "", tags or [], terms)
            for key, (name, kind) in found.found.items():
                entities.setdefault((key, project_id), (name, kind))
                imports = SEP.join(sorted(found.imports.get(key, ())))
                mentions.append((memory_id, project_id, key, imports))
        if entities:
            ordered = sorted(entities.items(), key=lambda item: (item[0][0], item[0][1] or 0))
            cursor.execute(
                _INSERT,
                {
                    "projects": [project for (_, project), _ in ordered],
                    "names": [name for _, (name, _) in ordered],
                    "keys": [key for (key, _), _ in ordered],
                    "kinds": [kind for _, (_, kind) in ordered],
                    "sep": SEP,
                    "parts": [SEP.join(reading.name_parts(name)) for _, (name, _) in ordered],
                },
            )
        cursor.execute(
            _REPLACE,
            {
                "ids": ids,
                "memories": [m[0] for m in mentions],
                "projects": [m[1] for m in mentions],
                "keys": [m[2] for m in mentions],
                "imports": [m[3] for m in mentions],
                "sep": SEP,
            },
        )
    return len(mentions)


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
