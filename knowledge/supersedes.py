"""Superseding memories: one memory replaces others, at once or, when a reviewer must
decide, through a conflict pair opened for them.

Locks follow the store's one order (memories.locks): the memories (in id order), then the
pair, whether a supersede opens or settles pairs.

Nothing here deletes: a superseded memory is archived (inactive, frozen) with who, when
and by which memory, keeps its history and comes back with ``memories_restore``. A reviewer's
supersede takes effect at once; an agent's supersede of an approved memory (or of a global
one) opens a conflict pair for a reviewer instead, and changes nothing until one decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from knowledge.models import MemoryPair, PairKind, PairStatus, Resolution
from memories import hooks, selectors
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.metrics import PAIRS
from memories.models import EventAction, Memory, ReviewStatus, Scope, Tier
from memories.services.changes import change_memories
from memories.services.validation import Conflict, scrubbed, secrets_mode

MEMORIES = Memory._meta.db_table
# Longest chain of supersedes followed to its live end (a chain is never a cycle: supersede
# refuses one, whatever its length).
CHAIN_LIMIT = 100


@dataclass
class Superseded:
    """What a supersede did: the memories superseded at once, and the pairs opened for a
    reviewer (an agent's supersede of approved or global memories)."""

    done: list[int] = field(default_factory=list)
    waiting: list[MemoryPair] = field(default_factory=list)


def live_successors(memory_ids: Iterable[int]) -> dict[int, int]:
    """For each superseded memory of ``memory_ids``, the live end of its chain of
    supersedes (A by B, B by C: C), in one query."""
    ids = sorted(set(memory_ids))
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE chain(start, id, depth) AS (
                SELECT m.id, m.superseded_by_id, 1 FROM {MEMORIES} m
                WHERE m.id = ANY(%s::bigint[]) AND m.superseded_by_id IS NOT NULL
                UNION ALL
                SELECT c.start, m.superseded_by_id, c.depth + 1
                FROM chain c JOIN {MEMORIES} m ON m.id = c.id
                WHERE m.superseded_by_id IS NOT NULL AND c.depth < {CHAIN_LIMIT}
            )
            SELECT DISTINCT ON (start) start, id FROM chain ORDER BY start, depth DESC""",
            [ids],
        )
        return dict(cursor.fetchall())


def may_decide(actor: Actor, memory: Memory) -> bool:
    """Whether ``actor`` may supersede or reject ``memory`` at once: a reviewer may; an agent
    only a memory no reviewer approved, never a global one."""
    if actor.can_review(memory.project_id):
        return True
    return memory.review_status != ReviewStatus.APPROVED and memory.scope != Scope.GLOBAL


def _check_pair(memory: Memory, by: Memory) -> None:
    if memory.pk == by.pk:
        raise ValidationError({"by": "A memory cannot supersede itself."})
    if memory.project_id is not None and by.project_id not in (None, memory.project_id):
        raise ValidationError({"by": "The memory that replaces it belongs to another project."})
    if memory.superseded_by_id is not None:
        live = live_successors([memory.pk]).get(memory.pk, memory.superseded_by_id)
        raise Conflict(
            f"Memory {memory.pk} is already superseded (by memory {memory.superseded_by_id};"
            f" the live one is {live}): supersede that one instead, or restore this one first."
        )
    if memory.archived_at is not None:
        raise Conflict(f"Memory {memory.pk} is archived: restore it before superseding it.")
    chain = _successors(by.pk)
    if memory.pk in chain:
        cycle = " → ".join(map(str, [memory.pk, by.pk, *chain[: chain.index(memory.pk) + 1]]))
        raise ValidationError(
            {
                "by": f"Memory {by.pk} is itself superseded, in the end by memory {memory.pk}:"
                f" superseding {memory.pk} by {by.pk} would make a cycle ({cycle})."
            }
        )


def _successors(memory_id: int) -> list[int]:
    """The memories that supersede ``memory_id``, nearest first, however long the chain (the
    walk stops where it would come back, so even a cycle ends it).

    Under concurrent supersedes this reads the chain as committed: two supersedes that each
    close one half of a cycle of four or more memories at the same moment both pass. Every
    supersede locks both its memories (in id order), so any two that share a memory, and so
    every cycle of three, are checked one after the other."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE chain(id, path) AS (
                SELECT superseded_by_id, ARRAY[superseded_by_id] FROM {MEMORIES}
                WHERE id = %s AND superseded_by_id IS NOT NULL
                UNION ALL
                SELECT m.superseded_by_id, c.path || m.superseded_by_id
                FROM chain c JOIN {MEMORIES} m ON m.id = c.id
                WHERE m.superseded_by_id IS NOT NULL AND m.superseded_by_id <> ALL(c.path)
            )
            SELECT path FROM chain ORDER BY cardinality(path) DESC LIMIT 1""",
            [memory_id],
        )
        row = cursor.fetchone()
        return list(row[0]) if row else []


@retried
@transaction.atomic
def memory_supersede(
    *, memory: Memory, by: Memory, actor: Actor, reason: str = "", now: datetime | None = None
) -> Superseded:
    """``by`` replaces ``memory``: archived with who, when and by which memory, or, for an
    agent's supersede of an approved or global memory, a conflict pair waiting for a
    reviewer (see the module)."""
    return memories_supersede(memories=[memory], by=by, actor=actor, reason=reason, now=now)


@transaction.atomic
def memories_supersede(
    *,
    memories: Sequence[Memory],
    by: Memory,
    actor: Actor,
    reason: str = "",
    now: datetime | None = None,
    pair_reason: str = "",
) -> Superseded:
    now = now or timezone.now()
    reason = scrubbed({"reason": reason}, secrets_mode(by.project))["reason"]
    # Decided on the stored state, locked (in id order, as every writer locks).
    locked = {
        memory.pk: memory
        for memory in lock_memories({m.pk for m in memories} | {by.pk})
        .defer("search_vector", "match_keys")
        .select_related("project")
    }
    if by.pk not in locked or any(m.pk not in locked for m in memories):
        raise Conflict("A memory to supersede, or the one replacing it, no longer exists.")
    by = locked[by.pk]
    result = Superseded()
    at_once: list[Memory] = []
    for memory in (locked[m.pk] for m in memories):
        _check_pair(memory, by)
        if may_decide(actor, memory):
            at_once.append(memory)
        else:
            result.waiting.append(_propose(memory, by, actor, reason, now))
    if at_once:
        label = actor.label
        changed = change_memories(
            memory_ids=[m.pk for m in at_once],
            compute=lambda m: (
                {
                    "active": False,
                    "tier": Tier.FROZEN,
                    "archived_at": now,
                    "superseded_by": by,
                    "superseded_at": now,
                    "superseded_actor": label,
                }
                if m.archived_at is None
                else {}
            ),
            action=EventAction.SUPERSEDED,
            actor=actor,
            reason=" ".join(part for part in (f"superseded by memory {by.pk}.", reason) if part),
            now=now,
        )
        result.done = [m.pk for m in changed.changed]
        _settle(
            [(m.pk, by.pk) for m in at_once],
            Resolution.KEPT,
            outcome=by.pk,
            actor=actor,
            reason=pair_reason or reason,
            now=now,
        )
    return result


def _ordered(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _propose(memory: Memory, by: Memory, actor: Actor, reason: str, now: datetime) -> MemoryPair:
    """An agent's supersede that needs a reviewer: the pair, open as a conflict."""
    first, second = _ordered(memory.pk, by.pk)
    sides = {memory.pk: memory, by.pk: by}
    evidence = {"supersede": {"by": by.pk, "replaces": memory.pk, "proposedBy": actor.label}}
    if reason:
        evidence["supersede"]["reason"] = reason
    pair, created = MemoryPair.objects.select_for_update(no_key=True).get_or_create(
        first_id=first,
        second_id=second,
        defaults={
            "project_id": memory.project_id if memory.project_id is not None else by.project_id,
            "kind": PairKind.CONFLICT,
            "similarity": 1.0,
            "evidence": evidence,
            "first_hash": sides[first].content_hash,
            "second_hash": sides[second].content_hash,
            "found_by": actor.label,
        },
    )
    if not created:
        pair.kind = PairKind.CONFLICT
        pair.status = PairStatus.OPEN
        pair.evidence = {**pair.evidence, **evidence}
        pair.resolution = ""
        pair.resolved_at = None
        pair.resolved_by = None
        pair.resolved_actor = ""
        pair.save()
    PAIRS.labels(PairKind.CONFLICT, "found").inc()
    hooks.announce([pair.project_id])
    return pair


def _settle(
    sides: Sequence[tuple[int, int]],
    resolution: str,
    *,
    outcome: int | None,
    actor: Actor,
    reason: str,
    now: datetime,
) -> int:
    """Close the open pairs between each two memories of ``sides``."""
    if not sides:
        return 0
    condition = Q()
    for a, b in sides:
        first, second = _ordered(a, b)
        condition |= Q(first_id=first, second_id=second)
    pairs = list(
        MemoryPair.objects.select_for_update(no_key=True)
        .filter(condition, status=PairStatus.OPEN)
        .order_by("id")
    )
    for pair in pairs:
        close_pair(pair, resolution, outcome=outcome, actor=actor, reason=reason, now=now)
    return len(pairs)


def close_pair(
    pair: MemoryPair,
    resolution: str,
    *,
    outcome: int | None,
    actor: Actor,
    reason: str,
    now: datetime,
) -> None:
    pair.status = (
        PairStatus.DISMISSED if resolution == Resolution.NOT_CONFLICT else PairStatus.RESOLVED
    )
    pair.resolution = resolution
    pair.outcome_memory_id = outcome
    pair.resolved_by = actor.user
    pair.resolved_actor = actor.label
    pair.resolved_at = now
    pair.reason = reason
    pair.save()
    PAIRS.labels(pair.kind, "resolved").inc()
    hooks.announce([pair.project_id])


def supersede_on_create(
    *, memory: Memory, ids: Sequence[int], actor: Actor, reason: str = ""
) -> Superseded:
    """``supersedes`` of a new memory: each of ``ids`` (of its project, or global) is
    superseded by it, or waits for a reviewer (see memory_supersede)."""
    found = Memory.objects.defer("search_vector", "match_keys").in_bulk(sorted(set(ids)))
    missing = [i for i in ids if i not in found]
    wrong = [i for i, m in found.items() if m.project_id not in (None, memory.project_id)]
    global_ids = [i for i, m in found.items() if m.project_id is None]
    if global_ids:  # a global memory the actor may not read does not exist for it
        readable = selectors.global_memories_for(actor=actor).filter(pk__in=global_ids)
        wrong += sorted(set(global_ids) - set(readable.values_list("pk", flat=True)))
    if missing or wrong:
        raise ValidationError(
            {"supersedes": f"No memory {', '.join(map(str, missing + wrong))} in this project."}
        )
    # All at once: their locks in id order with the new memory's.
    return memories_supersede(
        memories=sorted(found.values(), key=lambda m: m.pk),
        by=memory,
        actor=actor,
        reason=reason or "replaced on create",
    )
