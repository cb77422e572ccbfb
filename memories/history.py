"""The history of memories: the one place that knows what a history row is.

Every change to a memory is a ``MemoryEvent`` row: who (a user, an API key or a system
job), what (``changes``: ``{field: [before, after]}`` as JSON) and why (the action, spelled
by ``EventAction``, and a free-text reason). Two kinds of writer make them, and both build
their rows here:

* the services, row by row through the ORM (``event``, ``record``);
* the set-based policy jobs, in SQL: ``update_memories`` and ``insert_events`` give them
  the two writing parts of their statements, and ``change`` and ``changes`` the JSON of
  ``changes``, so a job's row reads exactly like a service's.

Readers of the ``changes`` shape live here too (``field_change``, ``merge_event``,
``original_contents``), and so does the after-write effect every writer shares:
``written`` announces what changed (memories.hooks) once it commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memories import hooks
from memories.actors import Actor
from memories.models import EventAction, Memory, MemoryEvent, Run, Tier
from memories.models.choices import sql_literal

MEMORIES = Memory._meta.db_table
EVENTS = MemoryEvent._meta.db_table
BATCH_SIZE = 500

# A change: [before, after] in JSON.
Change = list[Any]

# --- the row, through the ORM -----------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """A field's value as its history row holds it."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "pk"):
        return value.pk
    return value


def diff(memory: Memory, values: Mapping[str, Any]) -> dict[str, Change]:
    """What setting ``values`` on ``memory`` would change, as a history row records it."""
    return {
        name: [jsonable(getattr(memory, name)), jsonable(value)]
        for name, value in values.items()
        if getattr(memory, name) != value
    }


def event(
    memory: Memory,
    *,
    action: str,
    changes: Mapping[str, Change],
    actor: Actor,
    reason: str = "",
    run: Run | None = None,
) -> MemoryEvent:
    """An unsaved history row of ``memory``."""
    return MemoryEvent(
        memory_id=memory.pk,
        project_id=memory.project_id,
        action=action,
        changes=dict(changes),
        reason=reason,
        run=run,
        **actor.event_fields(),
    )


# What a new memory's first row shows.
CREATED_FIELDS = ("type", "content", "tags", "source", "confidence", "expires_at")


def created(memory: Memory, *, actor: Actor, reason: str = "") -> MemoryEvent:
    """The ``created`` row of a new memory."""
    changes = {name: [None, jsonable(getattr(memory, name))] for name in CREATED_FIELDS}
    return event(
        memory,
        action=EventAction.CREATED,
        changes=changes,
        actor=actor,
        reason=reason,
        run=memory.source_run,
    )


def deleted(memory: Memory, *, actor: Actor, reason: str = "") -> MemoryEvent:
    """The row that closes a deleted memory's history, with its last words and tags."""
    return event(
        memory,
        action=EventAction.DELETED,
        changes={"content": [memory.content, None], "tags": [memory.tags, None]},
        actor=actor,
        reason=reason,
    )


def record(events: Sequence[MemoryEvent], *, of_existing: bool = True) -> None:
    """Write history rows, have what is read into memories read again where their words are
    new (memories.hooks, in this transaction), and announce their memories' change once it
    commits: with each memory's ``changes`` for changes of existing memories, by project
    only for memories that are new or gone (``of_existing=False``)."""
    # A history row points at its memory with no constraint to check, so writing it locks no
    # memory (its run's key is checked FOR KEY SHARE, which no writer waits for: memories.locks).
    MemoryEvent.objects.bulk_create(events, batch_size=BATCH_SIZE)
    changes = {e.memory_id: e.changes for e in events} if of_existing else None
    # New words are read again (an embedding, another look for repeats and contradictions),
    # and so is a memory that becomes active (an approved global one). One back from the
    # archive is not: restoring undoes (a bulk edit's undo restores a hundred thousand), and
    # the walk that compares every active memory again (policies.conflicts) meets it there.
    worded = [e for e in events if e.action != EventAction.DELETED and "content" in e.changes]
    activated = [
        e
        for e in events
        if e.changes.get("active") == [False, True] and "archived_at" not in e.changes
    ]
    # What a memory names is read from its summary and tags too.
    named = [
        e
        for e in events
        if e.action != EventAction.DELETED and {"content", "summary", "tags"} & e.changes.keys()
    ]
    if named or activated:
        hooks.reread(
            new_words=[e.memory_id for e in worded],
            activated=[e.memory_id for e in activated],
            new_names=[e.memory_id for e in named],
            actor_label=(named or activated)[0].actor_label,
        )
    written({e.project_id for e in events}, changes)


def written(
    project_ids: Iterable[int | None], changes: Mapping[int, Mapping[str, Change]] | None = None
) -> None:
    """The after-write effect of every writer of memories: announce the change (the assembly
    cache, the consolidation queue listen) once the current transaction commits."""
    hooks.announce(project_ids, changes)


# --- reading the shape --------------------------------------------------------------------------


def field_change(event: MemoryEvent, name: str) -> tuple[Any, Any] | None:
    """The (before, after) of field ``name`` in a history row, if it changed there."""
    change = event.changes.get(name) if isinstance(event.changes, dict) else None
    if isinstance(change, list) and len(change) == 2:
        return change[0], change[1]
    return None


def merge_event(survivor_id: int, merged_id: int) -> MemoryEvent | None:
    """The survivor's ``merged`` row that absorbed ``merged_id`` (see ``ABSORBED``)."""
    return (
        MemoryEvent.objects.filter(
            memory_id=survivor_id,
            action=EventAction.MERGED,
            changes__absorbed__1__contains=merged_id,
        )
        .order_by("-created_at", "-id")
        .first()
    )


def original_contents(memory_ids: Iterable[int]) -> dict[int, str]:
    """Each memory's content before its last compression, from its ``compressed`` row."""
    originals: dict[int, str] = {}
    for row in MemoryEvent.objects.filter(
        memory_id__in=sorted(set(memory_ids)), action=EventAction.COMPRESSED
    ).order_by("memory_id", "-created_at", "-id"):
        before = field_change(row, "content")
        if before is not None:
            originals.setdefault(row.memory_id, before[0])
    return originals


# --- the row, in SQL --------------------------------------------------------------------------


def change(name: str, before: str, after: str) -> str:
    """SQL of ``{name: [before, after]}`` (jsonb) from two SQL expressions."""
    return f"jsonb_build_object('{name}', jsonb_build_array({before}, {after}))"


def change_if(condition: str, part: str) -> str:
    """``part`` where ``condition`` holds, else nothing."""
    return f"CASE WHEN {condition} THEN {part} ELSE '{{}}'::jsonb END"


def changes(*parts: str) -> str:
    """SQL of one ``changes`` object from several ``change`` parts."""
    return " || ".join(parts)


# Common changes: deactivated; archived (evicted, merged, cleared: inactive, frozen, marked
# with the time, restorable), as ``update_memories`` assignments and as the history shows it.
DEACTIVATED = change("active", "true", "false")
ARCHIVE = {
    "active": "false",
    "tier": sql_literal(Tier.FROZEN),
    "archived_at": "%(now)s",
    "updated_at": "%(now)s",
}


def archived(tier: str = "tier") -> str:
    """The change of an archived memory whose tier was in column ``tier``."""
    return changes(DEACTIVATED, change("tier", tier, sql_literal(Tier.FROZEN)))


# The history of a lowered confidence (rows with before, after, active).
CONFIDENCE_CHANGES = changes(
    change("confidence", "before", "after"),
    change_if("NOT active", DEACTIVATED),
)


# The survivor's row of a merge names the memories it absorbed: [[], [ids]].
ABSORBED = "absorbed"


def actor_params(actor: Actor) -> dict[str, Any]:
    """The parameters ``insert_events`` reads the actor from."""
    return {
        "actor": actor.label,
        "actor_user_id": actor.user.pk if actor.user else None,
        "actor_api_key_id": actor.api_key.pk if actor.api_key else None,
    }


def update_memories(
    name: str,
    *,
    assignments: Mapping[str, str],
    source: str,
    where: str,
    returning: str,
) -> str:
    """A CTE ``name``: memories ``m`` updated from ``source`` (a FROM list) where ``where``,
    returning ``returning``. A change the history should show needs its ``insert_events``."""
    sets = ", ".join(f"{column} = {value}" for column, value in assignments.items())
    return (
        f"{name} AS (\n    UPDATE {MEMORIES} m SET {sets}\n    FROM {source}\n"
        f"    WHERE {where}\n    RETURNING {returning}\n)"
    )


@dataclass(frozen=True)
class Rows:
    """History rows from the rows of ``source`` (which have ``id`` and ``project_id``):
    ``action``, the SQL of their ``changes`` and of their reason, where ``where``."""

    source: str
    action: EventAction
    changes: str
    reason: str
    where: str = "true"


_EVENT_COLUMNS = (
    "memory_id, project_id, action, changes, reason, actor_label, actor_user_id,"
    " actor_api_key_id, created_at"
)


def insert_events(name: str, *rows: Rows) -> str:
    """A CTE ``name`` inserting the history rows of one statement; the actor comes from
    ``actor_params`` and the time from ``%(now)s``."""
    selects = "\n    UNION ALL\n".join(
        f"    SELECT id, project_id, {sql_literal(r.action)}, {r.changes},\n        {r.reason},"
        f" %(actor)s, %(actor_user_id)s::bigint, %(actor_api_key_id)s::bigint,"
        f" %(now)s\n"
        f"    FROM {r.source} WHERE {r.where}"
        for r in rows
    )
    return f"{name} AS (\n    INSERT INTO {EVENTS} ({_EVENT_COLUMNS})\n{selects}\n)"
