"""The entity graph, read from the mentions (knowledge.entities) when it is asked for, and the
relationships reviewers add or remove (EntityLink), which override what the mentions say.

Two entities are neighbours when active memories mention both; the ``weight`` is how many
(counted among each entity's SAMPLE newest active memories, so that a name every memory
mentions costs no more than one a thousand do), and the ``type``:

* ``imports`` when one of those memories says "X imports Y";
* ``defined_in`` between a code name (or a module) and a path mentioned together;
* ``mentions`` otherwise.

Each hop keeps the FAN_OUT heaviest neighbours not seen yet; a reviewer's link is a
neighbour with its type (and its weight counted), a removed one is no neighbour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from knowledge.models import Entity, EntityKind, EntityLink, EntityMention, LinkType
from memories.actors import Actor
from memories.models import Memory, Project

MEMORIES = Memory._meta.db_table
ENTITIES = Entity._meta.db_table
MENTIONS = EntityMention._meta.db_table
LINKS = EntityLink._meta.db_table
FAN_OUT = 20
MAX_DEPTH = 3
SAMPLE = 1000
MEMORIES_SHOWN = 50
SNIPPET = 160
NAMED = {EntityKind.CODE, EntityKind.MODULE}


@dataclass(frozen=True)
class Neighbour:
    id: int
    name: str
    kind: str
    weight: int
    type: str
    source: str  # "mentions" (read from the memories) or "reviewer" (an EntityLink)
    depth: int
    via: int


@dataclass(frozen=True)
class Mentioned:
    id: int
    type: str
    content: str


def active_mention(entity_ref: str = "pk") -> Exists:
    return Exists(EntityMention.objects.filter(entity_id=OuterRef(entity_ref), memory__active=True))


def entities_search(
    *, project: Project | None, q: str = "", kind: str | None = None, memory_id: int | None = None
) -> QuerySet[Entity]:
    """A project's entities that active memories mention, by key: those whose name starts
    with ``q`` or holds it as a word part (``queue`` finds ``RetryQueue``,
    ``src/billing/queue.py``), in any case; both through indexes (the key's b-tree, the parts'
    GIN index). ``memory_id``: those that memory mentions."""
    entities = Entity.objects.filter(project=project).filter(active_mention())
    if q:
        key = q.strip().lower()
        entities = entities.filter(Q(key__startswith=key) | Q(parts__contains=[key]))
    if kind:
        entities = entities.filter(kind=kind)
    if memory_id is not None:
        entities = entities.filter(mentions__memory_id=memory_id)
    return entities.only("id", "name", "kind", "key", "project_id")


def entity_memories(*, entity_id: int, limit: int = MEMORIES_SHOWN) -> list[Mentioned]:
    """The active memories that mention an entity, newest first, their content cut short."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT m.id, m.type, left(m.content, %(cut)s) || CASE
                    WHEN length(m.content) > %(cut)s THEN '…' ELSE '' END
            FROM {MENTIONS} x JOIN {MEMORIES} m ON m.id = x.memory_id AND m.active
            WHERE x.entity_id = %(entity)s ORDER BY x.memory_id DESC LIMIT %(limit)s""",
            {"entity": entity_id, "limit": limit, "cut": SNIPPET},
        )
        return [Mentioned(*row) for row in cursor.fetchall()]


def memory_entities(*, memory_id: int) -> list[Entity]:
    """The entities one memory mentions, by kind and name."""
    return list(
        Entity.objects.filter(mentions__memory_id=memory_id)
        .only("id", "name", "kind", "project_id")
        .order_by("kind", "key")
    )


_COMPUTED = f"""
SELECT n.via, n.entity_id, e.name, e.kind, n.weight, n.imports, f.kind
FROM unnest(%(ids)s::bigint[]) AS q(id)
JOIN {ENTITIES} f ON f.id = q.id
CROSS JOIN LATERAL (
    SELECT q.id AS via, o.entity_id, count(*) AS weight,
        bool_or(o.imports @> ARRAY[f.key]::varchar[] OR me.imports @> ARRAY[oe.key]::varchar[])
            AS imports
    FROM (
        SELECT x.memory_id, x.imports FROM {MENTIONS} x
        JOIN {MEMORIES} m ON m.id = x.memory_id AND m.active
        WHERE x.entity_id = q.id ORDER BY x.memory_id DESC LIMIT {SAMPLE}
    ) AS me
    JOIN {MENTIONS} o ON o.memory_id = me.memory_id AND o.entity_id <> q.id
    JOIN {ENTITIES} oe ON oe.id = o.entity_id
    WHERE NOT (o.entity_id = ANY(%(seen)s::bigint[]))
    GROUP BY o.entity_id ORDER BY count(*) DESC, o.entity_id LIMIT %(fan)s
) AS n
JOIN {ENTITIES} e ON e.id = n.entity_id
"""

# The reviewers' links of the frontier, with the other side and its weight.
_LINKS = f"""
SELECT q.id, o.id, o.name, o.kind, l.type, l.removed, (
    SELECT count(*) FROM {MENTIONS} a
    JOIN {MENTIONS} b ON b.memory_id = a.memory_id AND b.entity_id = o.id
    JOIN {MEMORIES} m ON m.id = a.memory_id AND m.active
    WHERE a.entity_id = q.id
)
FROM unnest(%(ids)s::bigint[]) AS q(id)
JOIN {LINKS} l ON l.first_id = q.id OR l.second_id = q.id
JOIN {ENTITIES} o ON o.id = CASE WHEN l.first_id = q.id THEN l.second_id ELSE l.first_id END
"""


def _type(kind: str, other: str, imports: bool) -> str:
    if imports:
        return LinkType.IMPORTS
    if {kind, other} & NAMED and EntityKind.PATH in {kind, other} and kind != other:
        return LinkType.DEFINED_IN
    return LinkType.MENTIONS


def neighbours(*, entity: Entity, depth: int = 1, fan_out: int = FAN_OUT) -> list[Neighbour]:
    """The entities within ``depth`` hops (1 to MAX_DEPTH) of ``entity``, each hop the
    ``fan_out`` heaviest not seen yet: two statements a hop."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be from 1 to {MAX_DEPTH}")
    seen = {entity.pk}
    frontier = [entity.pk]
    found: list[Neighbour] = []
    for hop in range(1, depth + 1):
        if not frontier:
            break
        hop_found = _hop(frontier, seen, hop, fan_out)
        found.extend(hop_found)
        seen.update(n.id for n in hop_found)
        frontier = [n.id for n in hop_found]
    return found


def _hop(frontier: Sequence[int], seen: set[int], hop: int, fan_out: int) -> list[Neighbour]:
    params: dict[str, Any] = {"ids": list(frontier), "seen": sorted(seen), "fan": fan_out}
    candidates: dict[int, Neighbour] = {}
    with connection.cursor() as cursor:
        cursor.execute(_COMPUTED, params)
        for via, other, name, kind, weight, imports, via_kind in cursor.fetchall():
            held = candidates.get(other)
            if held is None or weight > held.weight:
                link = _type(via_kind, kind, bool(imports))
                candidates[other] = Neighbour(other, name, kind, weight, link, "mentions", hop, via)
        cursor.execute(_LINKS, params)
        links = cursor.fetchall()
    removed: set[tuple[int, int]] = set()
    for via, other, name, kind, link, is_removed, weight in links:
        if is_removed:
            removed.add((via, other))
            continue
        if other in seen:
            continue
        candidates[other] = Neighbour(other, name, kind, weight, link, "reviewer", hop, via)
    kept = [n for n in candidates.values() if (n.via, n.id) not in removed]
    reviewer = [n for n in kept if n.source == "reviewer"]
    computed = [n for n in kept if n.source != "reviewer"]
    computed.sort(key=lambda n: (-n.weight, n.name.lower(), n.id))
    chosen = reviewer + computed[: max(0, fan_out - len(reviewer))]
    chosen.sort(key=lambda n: (-n.weight, n.name.lower(), n.id))
    return chosen


# --- what reviewers say -------------------------------------------------------------------------


def entity_link_set(
    *, entity: Entity, other: Entity, type: str, actor: Actor, removed: bool = False
) -> EntityLink:
    """Say two entities of one project are related (``type``), or are not (``removed``):
    it overrides what their mentions say, until said again."""
    if other.pk == entity.pk:
        raise ValidationError({"other": "An entity is not its own neighbour: name another."})
    if other.project_id != entity.project_id:
        raise ValidationError({"other": "Both entities must belong to the same project."})
    if type not in LinkType.values:
        raise ValidationError({"type": f"Use one of: {', '.join(LinkType.values)}."})
    first, second = sorted([entity.pk, other.pk])
    with transaction.atomic():
        link, _ = EntityLink.objects.update_or_create(
            first_id=first,
            second_id=second,
            defaults={
                "project_id": entity.project_id,
                "type": type,
                "removed": removed,
                "created_by": actor.user,
                "actor_label": actor.label,
            },
        )
    return link


def entity_link_remove(*, entity: Entity, other: Entity, actor: Actor) -> EntityLink:
    """Say two entities are not related, whatever their mentions say."""
    current = EntityLink.objects.filter(
        first_id=min(entity.pk, other.pk), second_id=max(entity.pk, other.pk)
    ).first()
    return entity_link_set(
        entity=entity,
        other=other,
        type=current.type if current else LinkType.MENTIONS,
        actor=actor,
        removed=True,
    )
