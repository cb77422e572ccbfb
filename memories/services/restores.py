"""Taking changes back: a superseded or inactive memory restored, a compressed one's content
restored, memories deleted, and a change undone through its history rows.

Every change ends in ``change_memories``; every history row is built by memories.history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from memories import history
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.models import EventAction, Memory, MemoryEvent, Tier
from memories.secrets import SecretsPolicy
from memories.services.changes import ChangeResult, change_memories
from memories.services.reviews import require_reviewer_of
from memories.services.validation import tag_fields, text_fields


@retried
@transaction.atomic
def memories_restore(
    *, memory_ids: Iterable[int], actor: Actor, now: datetime | None = None
) -> ChangeResult:
    """Archived memories (evicted, merged, superseded or cleared run scratch) come back:
    active, warm,
    without the archive mark. One merged into another also takes back from the survivor what
    the merge gave it: its access count, and the tags that only it brought. Memories that are
    not archived are left as they are."""
    now = now or timezone.now()
    ids = sorted(set(memory_ids))
    # The survivors change too: locked with the restored ones, all in id order.
    survivors = Memory.objects.filter(id__in=ids, merged_into__isnull=False).values_list(
        "merged_into", flat=True
    )
    list(lock_memories({*ids, *(i for i in survivors if i is not None)}).values_list("id"))
    merged = list(
        Memory.objects.filter(id__in=ids, merged_into__isnull=False)
        .values_list("id", "merged_into", "access_count", "tags")
        .order_by("id")
    )
    restored = change_memories(
        memory_ids=ids,
        compute=lambda memory: (
            {
                "active": True,
                "tier": Tier.WARM,
                "archived_at": None,
                "merged_into": None,
                "superseded_by": None,
                "superseded_at": None,
                "superseded_actor": "",
            }
            if memory.archived_at is not None
            else {}
        ),
        action=EventAction.RESTORED,
        actor=actor,
        now=now,
    )
    gains: dict[int, tuple[int, set[str]]] = {}
    for memory_id, survivor_id, access_count, memory_tags in merged:
        assert survivor_id is not None
        event = history.merge_event(survivor_id, memory_id)
        tags_change = history.field_change(event, "tags") if event else None
        before = set(tags_change[0]) if tags_change else set()
        access, tags = gains.get(survivor_id, (0, set()))
        gains[survivor_id] = (access + access_count, tags | (set(memory_tags) - before))
    if gains:
        still_merged: dict[int | None, set[str]] = {}
        for survivor_id, merged_tags in Memory.objects.filter(merged_into__in=gains).values_list(
            "merged_into", "tags"
        ):
            still_merged.setdefault(survivor_id, set()).update(merged_tags)

        def give_back(survivor: Memory) -> dict[str, Any]:
            access, tags = gains[survivor.pk]
            keep = still_merged.get(survivor.pk, set())
            return {
                "access_count": max(0, survivor.access_count - access),
                **tag_fields([t for t in survivor.tags if t not in tags or t in keep]),
            }

        change_memories(
            memory_ids=gains,
            compute=give_back,
            action=EventAction.UPDATED,
            actor=actor,
            reason="gave back what a restored memory brought to the merge",
            now=now,
        )
    return restored


def memories_restore_content(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    """Compressed memories get their original content back (from their last ``compressed``
    history row); compression leaves them alone from then on."""
    ids = sorted(set(memory_ids))
    originals = history.original_contents(ids)

    def compute(memory: Memory) -> dict[str, Any]:
        original = originals.get(memory.pk)
        if original is None or original == memory.content:
            return {}
        # Stored once already (secrets were dealt with then); redact anything found anyway.
        values = text_fields(SecretsPolicy.REDACT, content=original)[0]
        values["summary"] = memory.summary
        return values

    return change_memories(
        memory_ids=ids,
        compute=compute,
        action=EventAction.RESTORED,
        actor=actor,
        reason="original content restored",
    )


@retried
@transaction.atomic
def memories_delete(*, memory_ids: Iterable[int], actor: Actor, reason: str = "") -> int:
    """Delete memories; their history stays, closed by a ``deleted`` event with the last content."""
    # FOR UPDATE, not NO KEY: a DELETE needs it (in id order still: memories.locks).
    memories = list(
        Memory.objects.select_for_update(of=("self",))
        .filter(id__in=sorted(set(memory_ids)))
        .defer("search_vector", "match_keys")
        .order_by("id")
    )
    history.record(
        [history.deleted(memory, actor=actor, reason=reason) for memory in memories],
        of_existing=False,
    )
    Memory.objects.filter(id__in=[memory.pk for memory in memories]).delete()
    return len(memories)


# Changes a reviewer may take back at once from the page that made them.
UNDOABLE = (
    EventAction.APPROVED,
    EventAction.REJECTED,
    EventAction.PINNED,
    EventAction.UNPINNED,
)


@dataclass
class Undone:
    undone: list[int] = field(default_factory=list)  # memories put back
    refused: list[tuple[int, str]] = field(default_factory=list)  # (memory, why not)


# What a bulk edit changes, and its undo takes back (memories.services.bulk).
BULK_UNDOABLE = (
    *UNDOABLE,
    EventAction.DEACTIVATED,
    EventAction.EXPIRED,
    EventAction.UPDATED,
)


@retried
def memories_undo(
    *,
    event_ids: Iterable[int],
    actor: Actor,
    actions: Iterable[str] = UNDOABLE,
    reason: str | None = None,
) -> Undone:
    """Take back changes through their history rows: each memory gets every field the row
    changed back to its value before, recorded as an ``undone`` row of its own. Exact: a
    memory changed since (its latest history row is another) is left as it is, and said so.
    Only rows of ``actions`` are taken back; ``reason`` says why on every ``undone`` row
    (by default, which rows it took back).

    Queries: the rows, a lock of their memories, their latest rows, then one change."""
    result = Undone()
    events = list(
        MemoryEvent.objects.filter(pk__in=set(event_ids), action__in=list(actions)).order_by("id")
    )
    if not events:
        return result
    with transaction.atomic():
        ids = sorted({event.memory_id for event in events})
        locked = {memory.pk: memory for memory in lock_memories(ids).only("id", "project", "scope")}
        latest = dict(
            MemoryEvent.objects.filter(memory_id__in=ids)
            .order_by("memory_id", "-id")
            .distinct("memory_id")
            .values_list("memory_id", "id")
        )
        before: dict[int, dict[str, Any]] = {}
        reasons: dict[int, str] = {}
        related: dict[tuple[str, Any], Any] = {}
        for event in events:
            memory = locked.get(event.memory_id)
            if memory is None:
                result.refused.append((event.memory_id, "it no longer exists"))
            elif latest.get(event.memory_id) != event.pk:
                result.refused.append((event.memory_id, "it changed since"))
            else:
                require_reviewer_of(actor, memory)
                before[memory.pk] = _values_before(event.changes, related)
                reasons[memory.pk] = f"undo of {event.action} (history row {event.pk})"
        if before:
            changed = change_memories(
                memory_ids=list(before),
                compute=lambda memory: before[memory.pk],
                action=EventAction.UNDONE,
                actor=actor,
                reason=reason if reason is not None else "; ".join(sorted(set(reasons.values()))),
            )
            result.undone = [memory.pk for memory in changed.changed]
    return result


def _values_before(
    changes: dict[str, Any], related: dict[tuple[str, Any], Any] | None = None
) -> dict[str, Any]:
    """The fields of a history row's ``changes`` as they were before it, as model values
    (a related row read once per ``related``; tags with the match data derived from them)."""
    related = {} if related is None else related
    values: dict[str, Any] = {}
    for name, (old, _new) in changes.items():
        model_field = Memory._meta.get_field(name)
        if model_field.is_relation and old is not None:
            if (name, old) not in related:
                manager = model_field.related_model._default_manager  # type: ignore[union-attr]
                related[name, old] = manager.filter(pk=old).first()
            old = related[name, old]
        elif isinstance(model_field, models.DateTimeField) and isinstance(old, str):
            old = datetime.fromisoformat(old)
        values[name] = old
    if isinstance(values.get("tags"), list):
        values |= tag_fields(values["tags"])
    return values
