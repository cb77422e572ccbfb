"""The Celery tasks of the policy jobs, gathered for Celery's autodiscovery: each is
declared beside its job (policies.expiry, policies.decay ...), with the options of
policies.runner."""

from __future__ import annotations

from celery import shared_task

from memories.services import uses
from policies.compression import compress_memories_task as compress_memories
from policies.conflicts import find_conflicts_task as find_conflicts
from policies.consolidation import consolidate_memories_task as consolidate_memories
from policies.conversations import prune_conversations_task as prune_conversations
from policies.decay import decay_memories_task as decay_memories
from policies.eviction import evict_memories_task as evict_memories
from policies.expiry import expire_memories_task as expire_memories
from policies.runner import TASK_OPTIONS
from policies.scratch import clear_run_scratch_task as clear_run_scratch
from policies.tiers import update_tiers_task as update_tiers

__all__ = [
    "clear_run_scratch",
    "compress_memories",
    "consolidate_memories",
    "decay_memories",
    "evict_memories",
    "expire_memories",
    "find_conflicts",
    "flush_memory_uses",
    "prune_conversations",
    "update_tiers",
]


@shared_task(name="policies.flush_memory_uses", **TASK_OPTIONS)
def flush_memory_uses() -> int:
    """Write the uses of memories noted since the last flush (memories.services.uses)."""
    return uses.flush()
