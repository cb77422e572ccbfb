"""Deciding the pairs found to repeat or contradict each other: keep one (the other is
superseded by it, knowledge.supersedes), merge both into a new memory, dismiss (keep both)
or reject one.

Locks follow the store's one order (memories.locks): the memories (in id order), then the
pair, as a decision on a pair changes memories. Nothing here deletes: what a decision
supersedes is archived and comes back with ``memories_restore``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from knowledge.models import MemoryPair, PairStatus, Resolution
from knowledge.supersedes import close_pair, may_decide, memories_supersede
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.models import Memory, ReviewStatus, Scope, Source
from memories.services.memories import memory_create
from memories.services.reviews import memories_approve, memories_reject
from memories.services.validation import Conflict, scrubbed_for

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
        _require(may_decide(actor, other), "Superseding this memory")
        memories_supersede(memories=[other], by=sides[kept], actor=actor, reason=reason, now=now)
    elif action == "merge":
        ranked = sorted(sides.values(), key=precedence, reverse=True)
        _require(all(may_decide(actor, m) for m in ranked), "Merging them")
        merged = _merged(pair, ranked, actor, content, type, tags, now)
        memories_supersede(
            memories=ranked,
            by=merged,
            actor=actor,
            reason=reason or f"merged into memory {merged.pk}",
            now=now,
        )
        close_pair(pair, Resolution.MERGED, outcome=merged.pk, actor=actor, reason=reason, now=now)
    elif action == "dismiss":
        _require(
            all(may_decide(actor, m) for m in sides.values()),
            "Keeping both",
        )
        close_pair(pair, Resolution.NOT_CONFLICT, outcome=None, actor=actor, reason=reason, now=now)
    else:
        rejected = _choose(pair, memory_id, "memory_id")
        memories_reject(memory_ids=[rejected], actor=actor, reason=reason, now=now)
        close_pair(pair, Resolution.REJECTED, outcome=rejected, actor=actor, reason=reason, now=now)
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


def pair_memories(pairs: Sequence[MemoryPair]) -> dict[int, Memory]:
    """The memories of ``pairs``, in one query."""
    ids = {i for pair in pairs for i in pair.memory_ids}
    return Memory.objects.defer("search_vector", "match_keys").in_bulk(ids)
