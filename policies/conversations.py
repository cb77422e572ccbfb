"""Conversation retention: messages older than their project's retention are deleted, then
the conversations left with none (people.conversations.conversations_prune), in batches,
recorded like every job."""

from __future__ import annotations

import time
from datetime import datetime

from people.conversations import PRUNE_BATCH, conversations_prune
from policies.runner import JobResult, start, task


def prune_conversations(
    *, now: datetime | None = None, batch_size: int = PRUNE_BATCH, seconds: float | None = None
) -> JobResult:
    """Messages past their project's ``conversation_retention_days`` (default 30) are
    deleted, in batches, then the conversations left with no message. Idempotent; a second
    run at once returns at once."""
    result = start("prune_conversations", seconds)
    pruned = conversations_prune(
        now=now, batch_size=batch_size, deadline=result.deadline, clock=time.monotonic
    )
    result.batches = pruned.batches
    result.finished = pruned.finished
    result.changed = {None: pruned.messages} if pruned.messages else {}
    result.report = {
        "messages": pruned.messages,
        "conversations": pruned.conversations,
        "busy": int(pruned.busy),
    }
    return result


prune_conversations_task = task("policies.prune_conversations", prune_conversations)
