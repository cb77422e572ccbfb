"""Every write to the memory store goes through these functions (and the history rows of
the set-based policy jobs through memories.history).

Typed, keyword-only ``<entity>_<action>`` functions, one module per entity: memories
(created and edited in ``memories``, reviewed in ``reviews``, taken back in ``restores``),
runs, projects, API keys, uses. Each change to a memory is made under a row lock and
recorded as a history row with who, what and why; bulk operations are the same code path
as single ones (the admin's bulk approve and the API's approve both end in
``memories_approve``).
"""

from memories.services.changes import ChangeResult
from memories.services.keys import api_key_create, api_key_revoke, api_key_touch
from memories.services.memories import (
    INITIAL_CONFIDENCE,
    memories_archive,
    memories_change_type,
    memories_clear_expiry,
    memories_expire,
    memories_extend_expiry,
    memories_promote,
    memories_retag,
    memories_set_active,
    memories_set_pinned,
    memories_set_tier,
    memory_create,
    memory_update,
)
from memories.services.projects import project_create
from memories.services.restores import (
    Undone,
    memories_delete,
    memories_restore,
    memories_restore_content,
    memories_undo,
)
from memories.services.reviews import (
    memories_approve,
    memories_reject,
    memory_approve,
    memory_flag,
    memory_reject,
)
from memories.services.runs import (
    OUTCOME_STEP,
    OutcomeResult,
    run_give_memories,
    run_record_outcome,
    run_start,
)
from memories.services.validation import Conflict, clamp_confidence, default_expiry

__all__ = [
    "INITIAL_CONFIDENCE",
    "OUTCOME_STEP",
    "ChangeResult",
    "Conflict",
    "OutcomeResult",
    "Undone",
    "api_key_create",
    "api_key_revoke",
    "api_key_touch",
    "clamp_confidence",
    "default_expiry",
    "memories_approve",
    "memories_archive",
    "memories_change_type",
    "memories_clear_expiry",
    "memories_delete",
    "memories_expire",
    "memories_extend_expiry",
    "memories_promote",
    "memories_reject",
    "memories_restore",
    "memories_restore_content",
    "memories_retag",
    "memories_set_active",
    "memories_set_pinned",
    "memories_set_tier",
    "memories_undo",
    "memory_approve",
    "memory_create",
    "memory_flag",
    "memory_reject",
    "memory_update",
    "project_create",
    "run_give_memories",
    "run_record_outcome",
    "run_start",
]
