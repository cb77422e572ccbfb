"""A memory's review: approved or rejected by a person who reviews its project (of global
memories, for a global one), or flagged for re-review by anyone who finds it wrong or stale.

Every change ends in ``change_memories``; every history row is built by memories.history.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from memories.actors import Actor
from memories.models import EventAction, Memory, ReviewStatus, Scope
from memories.services.changes import ChangeResult, change_memories, one
from memories.services.validation import scrubbed_for


def _require_reviewer(actor: Actor) -> None:
    if not actor.is_human:
        raise PermissionDenied("Approval and rejection are human acts: sign in as a reviewer.")


def require_reviewer_of(actor: Actor, memory: Memory) -> None:
    """A person approves or rejects a memory only as a reviewer of its project (of global
    memories, for a global one)."""
    if not actor.can_review(memory.project_id if memory.scope != Scope.GLOBAL else None):
        where = "global memories" if memory.scope == Scope.GLOBAL else "its project"
        raise PermissionDenied(
            f"You need the reviewer role in {where} to approve or reject memory {memory.pk}."
        )


def memories_approve(
    *, memory_ids: Iterable[int], actor: Actor, now: datetime | None = None, reason: str = ""
) -> ChangeResult:
    """Human approval: confidence 1.0, approver and time recorded, active again."""
    _require_reviewer(actor)
    now = now or timezone.now()

    values = {
        "confidence": 1.0,
        "review_status": ReviewStatus.APPROVED,
        "approved_by": actor.user,
        "approved_at": now,
        "active": True,
        # A review settles a code change's doubt.
        "stale_at": None,
    }

    def compute(memory: Memory) -> dict[str, Any]:
        require_reviewer_of(actor, memory)
        return values

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.APPROVED,
        actor=actor,
        reason=reason,
        now=now,
    )


def memory_approve(*, memory: Memory, actor: Actor) -> Memory:
    return one(memories_approve(memory_ids=[memory.pk], actor=actor), memory)


def memories_reject(
    *, memory_ids: Iterable[int], actor: Actor, reason: str = "", now: datetime | None = None
) -> ChangeResult:
    """Human rejection: the memory is set inactive and marked rejected. A secret in the
    reason is refused or redacted as the memories' projects say (``scrubbed_for``)."""
    _require_reviewer(actor)
    ids = sorted(set(memory_ids))
    reason = scrubbed_for({"reason": reason}, ids)["reason"]

    def compute(memory: Memory) -> dict[str, Any]:
        require_reviewer_of(actor, memory)
        return {
            "review_status": ReviewStatus.REJECTED,
            "active": False,
            "approved_by": None,
            "approved_at": None,
        }

    return change_memories(
        memory_ids=ids,
        compute=compute,
        action=EventAction.REJECTED,
        actor=actor,
        reason=reason,
        now=now,
    )


def memory_reject(*, memory: Memory, actor: Actor, reason: str = "") -> Memory:
    return one(memories_reject(memory_ids=[memory.pk], actor=actor, reason=reason), memory)


FLAG_REF = "flagged"


def memory_flag(*, memory: Memory, actor: Actor, reason: str) -> Memory:
    """Someone (an agent, mostly) says the memory looks wrong or stale: it is flagged for
    re-review, as a code change flags it, with the reason in its history. Nothing else
    changes: a reviewer decides (an approval clears the flag). Flagging a flagged memory
    again keeps the first time it was flagged. A secret in the reason is refused or redacted
    as the project says."""
    reason = scrubbed_for({"reason": reason}, [memory.pk])["reason"]

    def compute(current: Memory) -> dict[str, Any]:
        if current.stale_at is not None and current.stale_ref == FLAG_REF:
            return {}
        return {"stale_at": timezone.now(), "stale_ref": FLAG_REF}

    result = change_memories(
        memory_ids=[memory.pk],
        compute=compute,
        action=EventAction.STALE,
        actor=actor,
        reason=reason,
    )
    return one(result, memory)
