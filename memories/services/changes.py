"""The one change primitive every service of an existing memory ends in.

Rows are locked in id order, ``FOR NO KEY UPDATE`` (the store's one lock order:
memories.locks), each one's new values computed from its locked state, and only what
differs written: one bulk UPDATE and one bulk INSERT of history rows (memories.history) per
batch, whatever the number of memories. The admin's bulk actions, the review pages and the
API all end here; as the outermost transaction, it runs once more after a deadlock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memories import history
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.models import Memory, MemoryEvent, Run

BATCH_SIZE = history.BATCH_SIZE

# Fields kept by the services beside the content and tags; not worth a line of history.
_DERIVED_SILENT = {"tag_patterns", "tag_keys", "content_hash"}


@dataclass
class ChangeResult:
    changed: list[Memory] = field(default_factory=list)
    unchanged_ids: list[int] = field(default_factory=list)
    missing_ids: list[int] = field(default_factory=list)
    # The history rows written, one per changed memory (what an undo goes back through).
    events: list[MemoryEvent] = field(default_factory=list)


@retried
def change_memories(
    *,
    memory_ids: Iterable[int],
    compute: Callable[[Memory], dict[str, Any]],
    action: str,
    actor: Actor,
    reason: str = "",
    run: Run | None = None,
    now: datetime | None = None,
) -> ChangeResult:
    """Lock the memories, compute each one's new values, write the changed ones and their history.

    Queries: one locking read, then per batch of up to BATCH_SIZE changed rows one
    UPDATE and one INSERT of history rows, whatever the number of memories. The change is
    announced once it commits (memories.hooks).
    """
    ids = sorted(set(memory_ids))
    result = ChangeResult()
    if not ids:
        return result
    now = now or timezone.now()
    with transaction.atomic():
        memories = list(lock_memories(ids).defer("search_vector", "match_keys"))
        found = {memory.pk for memory in memories}
        result.missing_ids = [pk for pk in ids if pk not in found]
        events = []
        written: set[str] = set()
        for memory in memories:
            values = compute(memory)
            diff = history.diff(memory, values)
            if not diff:
                result.unchanged_ids.append(memory.pk)
                continue
            for name, value in values.items():
                setattr(memory, name, value)
            memory.updated_at = now
            written.update(diff)
            result.changed.append(memory)
            events.append(
                history.event(
                    memory,
                    action=action,
                    changes={k: v for k, v in diff.items() if k not in _DERIVED_SILENT},
                    actor=actor,
                    reason=reason,
                    run=run,
                )
            )
        if result.changed:
            # Derived fields travel with what they derive from.
            if "content" in written:
                written |= {"summary", "token_count", "content_hash"}
            if "tags" in written:
                written |= {"tag_patterns", "tag_keys"}
            _write(result.changed, sorted(written | {"updated_at"}))
            history.record(events)
            result.events = events
    return result


def _write(changed: list[Memory], names: list[str]) -> None:
    """The changed rows written (already locked): one UPDATE per set of identical new values
    when that takes no more statements than a bulk update in batches would (a bulk edit's
    memories mostly get the same values: one statement for the whole batch), else the bulk
    update. The number of statements never grows with the grouping."""
    attnames = {field.name: field.attname for field in Memory._meta.concrete_fields}
    columns = [attnames[name] for name in names]
    groups: dict[tuple[Any, ...], list[int]] = {}
    try:
        for memory in changed:
            key = tuple(_frozen(getattr(memory, column)) for column in columns)
            groups.setdefault(key, []).append(memory.pk)
            if len(groups) > -(-len(changed) // BATCH_SIZE):
                raise _ManyValues
    except (_ManyValues, TypeError):
        Memory.objects.bulk_update(changed, names, batch_size=BATCH_SIZE)
        return
    first = {memory.pk: memory for memory in changed}
    for ids in groups.values():
        sample = first[ids[0]]
        Memory.objects.filter(pk__in=ids).update(
            **{column: getattr(sample, column) for column in columns}
        )


class _ManyValues(Exception):
    """More distinct sets of values than statements a bulk update would take."""


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a field's value (to group rows that get the same values)."""
    if isinstance(value, list | tuple):
        return ("list", *(_frozen(item) for item in value))
    if isinstance(value, dict):
        return ("dict", *sorted((key, _frozen(item)) for key, item in value.items()))
    hash(value)
    return (type(value).__name__, value)


def one(result: ChangeResult, memory: Memory) -> Memory:
    if result.missing_ids:
        raise Memory.DoesNotExist(f"memory {memory.pk} no longer exists")
    if result.changed:
        return result.changed[0]
    memory.refresh_from_db()
    return memory
