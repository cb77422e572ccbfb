"""The memory store's models, one module per entity; import them from here."""

from memories.models.bulk import BulkAction, BulkEdit, BulkEditItem, BulkStatus, ItemState
from memories.models.choices import (
    CONTENT_HARD_LIMIT,
    DEFAULT_EXPIRY_DAYS,
    NEEDS_REVIEW,
    UNIT_INTERVAL,
    EventAction,
    MemoryType,
    Outcome,
    ReviewStatus,
    RunStatus,
    Scope,
    Source,
    Tier,
)
from memories.models.events import MemoryEvent
from memories.models.keys import ApiKey, IdempotencyRecord
from memories.models.members import RANKS, Membership, Role
from memories.models.memory import Memory, RunMemory
from memories.models.projects import MemoryPolicy, Project
from memories.models.runs import Run

__all__ = [
    "CONTENT_HARD_LIMIT",
    "DEFAULT_EXPIRY_DAYS",
    "NEEDS_REVIEW",
    "RANKS",
    "UNIT_INTERVAL",
    "ApiKey",
    "BulkAction",
    "BulkEdit",
    "BulkEditItem",
    "BulkStatus",
    "EventAction",
    "IdempotencyRecord",
    "ItemState",
    "Membership",
    "Memory",
    "MemoryEvent",
    "MemoryPolicy",
    "MemoryType",
    "Outcome",
    "Project",
    "ReviewStatus",
    "Role",
    "Run",
    "RunMemory",
    "RunStatus",
    "Scope",
    "Source",
    "Tier",
]
