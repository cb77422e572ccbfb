"""The selection at run start (the seed's rule), ranked by the candidate query."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from assembly.candidates import candidate_query, global_source, project_source
from memories.models import Memory, Project

# Memory columns for model instances built from the candidate query (not the generated ones).
_MODEL_COLUMNS = ", ".join(f"m.{f.column}" for f in Memory._meta.concrete_fields if not f.generated)


def memories_for_task(
    *,
    project: Project,
    write_scope: Sequence[str],
    limit: int | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The selection at run start: the project's and the global usable memories, those whose
    tags match the write scope first, then by confidence x relevance_score; ties by higher
    confidence, then older first. One query (assembly.candidates)."""
    sql, params = candidate_query(
        [project_source(project.pk), global_source()],
        write_scope=write_scope,
        intent="",
        size=limit or project.policy.selection_limit,
        min_confidence=project.policy.min_confidence,
        now=now or timezone.now(),
        columns=_MODEL_COLUMNS,
    )
    return list(Memory.objects.raw(sql, params))
