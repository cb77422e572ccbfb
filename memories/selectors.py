"""Reads of the memory store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import BooleanField, F, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memories.keys import secret_matches, split_token
from memories.models import ApiKey, Memory, MemoryEvent, MemoryPolicy, Project, Scope
from memories.tags import scope_patterns

# A memory matches the write scope when one of its tag regexes matches a scope
# entry, or one of the scope's globs matches one of its tags (see memories.tags).
_TAG_MATCH_SQL = (
    "(EXISTS (SELECT 1 FROM unnest(project_memories.tag_patterns) AS r(pattern),"
    " unnest(%s::text[]) AS s(entry) WHERE s.entry ~ r.pattern)"
    " OR EXISTS (SELECT 1 FROM unnest(project_memories.tags) AS t(tag),"
    " unnest(%s::text[]) AS g(pattern) WHERE t.tag ~ g.pattern))"
)


def tag_match_expression(write_scope: Sequence[str]) -> RawSQL:
    scope = [entry for entry in write_scope if entry]
    return RawSQL(_TAG_MATCH_SQL, (scope, scope_patterns(scope)), output_field=BooleanField())


def only_usable(
    memories: QuerySet[Memory], *, policy: MemoryPolicy, now: datetime
) -> QuerySet[Memory]:
    """The seed's rule for what an agent may be given: active, not expired, and at or above
    the project's minimum confidence. Selection and context assembly both apply it."""
    return memories.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now),
        active=True,
        confidence__gte=policy.min_confidence,
    )


def usable_memories(*, project: Project, now: datetime | None = None) -> QuerySet[Memory]:
    """A project's usable memories: its own and the global ones."""
    return only_usable(
        Memory.objects.filter(Q(project=project, scope=Scope.PROJECT) | Q(scope=Scope.GLOBAL)),
        policy=project.policy,
        now=now or timezone.now(),
    )


def memories_for_task(
    *,
    project: Project,
    write_scope: Sequence[str],
    limit: int | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The selection at run start: usable memories, those whose tags match the write scope
    first, then by confidence x relevance_score; ties by higher confidence, then older first."""
    limit = limit or project.policy.selection_limit
    return list(
        usable_memories(project=project, now=now)
        .defer("search_vector")
        .annotate(
            tag_match=tag_match_expression(write_scope),
            weight=F("confidence") * F("relevance_score"),
        )
        .order_by(
            F("tag_match").desc(),
            F("weight").desc(),
            F("confidence").desc(),
            "id",
        )[:limit]
    )


def memory_history(*, memory_id: int) -> QuerySet[MemoryEvent]:
    return MemoryEvent.objects.filter(memory_id=memory_id).select_related("actor_user", "run")


def api_key_for_token(token: str) -> ApiKey | None:
    """The active key a bearer token proves, or None. Constant-time on the secret."""
    parts = split_token(token)
    if parts is None:
        return None
    prefix, secret = parts
    api_key = (
        ApiKey.objects.select_related("project").filter(prefix=prefix, revoked_at=None).first()
    )
    if api_key is None or not secret_matches(secret, api_key.secret_hash):
        return None
    return api_key
