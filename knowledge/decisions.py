"""Superseding memories, and deciding the pairs found to repeat or contradict each other.

Locks follow the store's one order (memories.locks): the memories (in id order), then the
pair, whether a supersede opens or settles pairs or a decision on a pair changes memories.

Nothing here deletes: a superseded memory is archived (inactive, frozen) with who, when
and by which memory, keeps its history and comes back with ``memories_restore``. A reviewer's
supersede takes effect at once; an agent's supersede of an approved memory (or of a global
one) opens a conflict pair for a reviewer instead, and changes nothing until one decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from knowledge.models import MemoryPair, PairKind, PairStatus, Resolution
from memories import hooks, selectors
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.metrics import PAIRS
from memories.models import EventAction, Memory, ReviewStatus, Scope, Source, Tier
from memories.services.changes import change_memories
from memories.services.memories import memory_create
from memories.services.reviews import memories_approve, memories_reject
from memories.services.validation import Conflict, scrubbed, scrubbed_for, secrets_mode

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


def _may_decide(actor: Actor, memory: Memory) -> bool:
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
        if _may_decide(actor, memory):
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
        _close(pair, resolution, outcome=outcome, actor=actor, reason=reason, now=now)
    return len(pairs)


def _close(
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


# --- deciding a pair ----------------------------------------------------------------------------

ACTIONS = ("keep", "merge", "dismiss", "reject")


def _locked(pair_id: int) -> MemoryPair:
    """The pair, locked after its memories (the store's order: the decision changes them)."""
    sides = MemoryPair.objects.filter(pk=pair_id).values_list("first_id", "second_id").first()
    if sides is not None:
        list(lock_memories(sides).values_list("id"))
    pair = MemoryPair.objects.select_for_update(no_key=True).filter(pk=pair_id).first()
    if pair is None:  # one of its memories was deleted meanwhile
        raise Conflict(f"Pair {pair_id} no longer exists: one of its memories was deleted.")
    if pair.status != PairStatus.OPEN:
        raise Conflict(f"Pair {pair.pk} was already decided ({pair.resolution}).")
    return pair


def _sides(pair: MemoryPair) -> dict[int, Memory]:
    return (
        Memory.objects.defer("search_vector", "match_keys")
        .select_related("project")
        .in_bulk(pair.memory_ids)
    )


def _choose(pair: MemoryPair, memory_id: int | None, name: str) -> int:
    if memory_id not in pair.memory_ids:
        raise ValidationError(
            {name: f"Name one of this pair's memories: {pair.first_id} or {pair.second_id}."}
        )
    assert memory_id is not None
    return memory_id


def _require(allowed: bool, what: str) -> None:
    if not allowed:
        raise PermissionDenied(
            f"{what} needs a reviewer: an approved or global memory changes only through"
            " review. The pair stays open for one."
        )


@retried
@transaction.atomic
def pair_resolve(
    *,
    pair_id: int,
    action: str,
    actor: Actor,
    memory_id: int | None = None,
    content: str | None = None,
    type: str | None = None,
    tags: Sequence[str] | None = None,
    reason: str = "",
    now: datetime | None = None,
) -> MemoryPair:
    """Decide an open pair:

    * ``keep`` ``memory_id``: the other is superseded by it;
    * ``merge``: a new memory says it once (``content``, by default the text of the one with
      precedence; ``type`` and ``tags`` by default theirs), both are superseded by it;
    * ``dismiss``: not a conflict, both kept; holds until either one's words change;
    * ``reject`` ``memory_id``: that one is rejected (a reviewer's act).

    A reviewer may do any of these; an agent (an API key) only where no approved or global
    memory would change, and never ``reject``."""
    if action not in ACTIONS:
        raise ValidationError({"action": f"Use one of: {', '.join(ACTIONS)}."})
    now = now or timezone.now()
    pair = _locked(pair_id)
    sides = _sides(pair)
    if len(sides) < 2:
        raise Conflict("One of the pair's memories no longer exists.")
    reason = scrubbed_for({"reason": reason}, pair.memory_ids)["reason"]
    if action == "keep":
        kept = _choose(pair, memory_id, "memory_id")
        other = sides[pair.other(kept)]
        _require(_may_decide(actor, other), "Superseding this memory")
        memories_supersede(memories=[other], by=sides[kept], actor=actor, reason=reason, now=now)
    elif action == "merge":
        ranked = sorted(sides.values(), key=precedence, reverse=True)
        _require(all(_may_decide(actor, m) for m in ranked), "Merging them")
        merged = _merged(pair, ranked, actor, content, type, tags, now)
        memories_supersede(
            memories=ranked,
            by=merged,
            actor=actor,
            reason=reason or f"merged into memory {merged.pk}",
            now=now,
        )
        _close(pair, Resolution.MERGED, outcome=merged.pk, actor=actor, reason=reason, now=now)
    elif action == "dismiss":
        _require(
            all(_may_decide(actor, m) for m in sides.values()),
            "Keeping both",
        )
        _close(pair, Resolution.NOT_CONFLICT, outcome=None, actor=actor, reason=reason, now=now)
    else:
        rejected = _choose(pair, memory_id, "memory_id")
        memories_reject(memory_ids=[rejected], actor=actor, reason=reason, now=now)
        _close(pair, Resolution.REJECTED, outcome=rejected, actor=actor, reason=reason, now=now)
    pair.refresh_from_db()
    return pair


def precedence(memory: Memory) -> tuple[bool, float, int]:
    """Which of two conflicting memories is given: approved over pending, then the more
    confident, then the newer (the higher id)."""
    return (memory.review_status == ReviewStatus.APPROVED, memory.confidence, memory.pk)


def _merged(
    pair: MemoryPair,
    ranked: Sequence[Memory],
    actor: Actor,
    content: str | None,
    type: str | None,
    tags: Sequence[str] | None,
    now: datetime,
) -> Memory:
    """The memory a merge makes: the pair's project's (a project memory and a global one
    merge into the project), global only for two global memories, where only a reviewer
    merges and the merged memory is approved at once (a global memory is active only
    through approval)."""
    best = ranked[0]
    if tags is None:
        tags = list(dict.fromkeys(tag for memory in ranked for tag in memory.tags))
    project = pair.project
    merged = memory_create(
        project=project,
        scope=Scope.PROJECT if project is not None else Scope.GLOBAL,
        type=type or best.type,
        content=content if content is not None else best.content,
        tags=tags,
        relevance_score=max(memory.relevance_score for memory in ranked),
        source=Source.HUMAN if actor.is_human else Source.LEARNING,
        actor=actor,
        now=now,
    )
    if project is None:
        merged = memories_approve(memory_ids=[merged.pk], actor=actor, now=now).changed[0]
    return merged


@retried
@transaction.atomic
def pairs_resolve(
    *, pair_ids: Iterable[int], action: str, actor: Actor, reason: str = ""
) -> tuple[list[int], list[tuple[int, str]]]:
    """Decide many pairs at once (the review pages' bulk actions): ``dismiss``, or
    ``keep-newer`` / ``keep-older`` (the other is superseded); each pair on its own
    savepoint. The ids decided, and (id, why) of the ones that could not be."""
    if action not in ("dismiss", "keep-newer", "keep-older"):
        raise ValidationError({"action": "Use dismiss, keep-newer or keep-older."})
    done: list[int] = []
    failed: list[tuple[int, str]] = []
    for pair_id in sorted(set(pair_ids)):
        try:
            with transaction.atomic():
                if action == "dismiss":
                    pair_resolve(pair_id=pair_id, action="dismiss", actor=actor, reason=reason)
                else:
                    pair = MemoryPair.objects.filter(pk=pair_id).first()
                    if pair is None:
                        raise Conflict(f"Pair {pair_id} no longer exists.")
                    keep = pair.second_id if action == "keep-newer" else pair.first_id
                    pair_resolve(
                        pair_id=pair_id, action="keep", memory_id=keep, actor=actor, reason=reason
                    )
        except (Conflict, ValidationError, PermissionDenied) as error:
            failed.append((pair_id, _message(error)))
        else:
            done.append(pair_id)
    return done, failed


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error) or error.__class__.__name__


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


def pair_memories(pairs: Sequence[MemoryPair]) -> dict[int, Memory]:
    """The memories of ``pairs``, in one query."""
    ids = {i for pair in pairs for i in pair.memory_ids}
    return Memory.objects.defer("search_vector", "match_keys").in_bulk(ids)
