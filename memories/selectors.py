"""Reads of the memory store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.utils import timezone

from memories import roles
from memories.actors import Actor
from memories.counting import CountUpTo, Tally
from memories.keys import secret_matches, split_token
from memories.keyset import or_never
from memories.models import (
    NEEDS_REVIEW,
    ApiKey,
    EventAction,
    Memory,
    MemoryEvent,
    MemoryPolicy,
    Project,
    ReviewStatus,
    Role,
    Run,
    RunMemory,
    Scope,
)
from memories.statements import server_cursor


def memory_history(*, memory_id: int) -> QuerySet[MemoryEvent]:
    return MemoryEvent.objects.filter(memory_id=memory_id).select_related("actor_user", "run")


# The key with its project and the project's policy, in one hand-written statement: every
# API request runs it, and compiling it through the ORM took as long as running it.
_KEY_MODELS = (ApiKey, Project, MemoryPolicy)
_KEY_SQL = (
    "SELECT "
    + ", ".join(
        f'{alias}."{f.column}"'
        for alias, model in zip(("k", "p", "policy"), _KEY_MODELS, strict=True)
        for f in model._meta.concrete_fields
    )
    + f" FROM {ApiKey._meta.db_table} k"
    f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
    f" LEFT JOIN {MemoryPolicy._meta.db_table} policy ON policy.project_id = p.id"
    " WHERE k.prefix = %s AND k.revoked_at IS NULL"
)


def api_key_for_token(token: str) -> ApiKey | None:
    """The active key a bearer token proves, with its project and policy loaded, or None.
    Constant-time on the secret."""
    parts = split_token(token)
    if parts is None:
        return None
    prefix, secret = parts
    with server_cursor(prepare=True) as cursor:  # one plan for every request
        cursor.execute(_KEY_SQL, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key, project, policy = _instances(row)
    if not secret_matches(secret, api_key.secret_hash):
        return None
    api_key.project = project
    if policy.pk is not None:
        project.policy = policy
    return api_key


def _instances(row: Sequence[Any]) -> list[Any]:
    instances = []
    start = 0
    for model in _KEY_MODELS:
        names = [f.attname for f in model._meta.concrete_fields]
        instances.append(model.from_db(connection.alias, names, row[start : start + len(names)]))
        start += len(names)
    return instances


# --- review pages -----------------------------------------------------------------------------

LOW_CONFIDENCE = 0.3
EXPIRING_DAYS = 7

# The columns a page row shows (never the generated search columns).
_ROW_FIELDS = (
    "id",
    "project_id",
    "scope",
    "type",
    "content",
    "source",
    "source_run_id",
    "tags",
    "relevance_score",
    "confidence",
    "active",
    "expires_at",
    "review_status",
    "pinned",
    "tier",
    "token_count",
    "access_count",
    "last_accessed_at",
    "archived_at",
    "stale_at",
    "stale_ref",
    "created_at",
)


@dataclass
class ProjectCounts:
    project: Project
    active: Tally
    needs_review: Tally
    stale: Tally
    expiring: Tally
    low_confidence: Tally
    archived: Tally


def projects_overview(
    *, now: datetime | None = None, within: QuerySet[Project] | None = None
) -> list[ProjectCounts]:
    """Every project (of ``within``) with its memory counts for the dashboard, in one query:
    each count a range of one of the project's indexes, read no further than the bound
    (LIST_COUNT_BOUND; "10,000+" above it), so a project of a million costs what one of
    ten thousand does."""
    now = now or timezone.now()
    bound = settings.LIST_COUNT_BOUND
    expiry = or_never("expires_at")  # memory_list_expiry_idx's order
    horizon = now + timedelta(days=EXPIRING_DAYS)
    counted = {
        "active": Q(active=True),
        "needs_review": NEEDS_REVIEW,
        "stale": Q(active=True, stale_at__isnull=False),
        "expiring": Q(active=True, expiry_key__gt=now, expiry_key__lte=horizon),
        "low_confidence": Q(active=True, confidence__lt=LOW_CONFIDENCE),
        "archived": Q(archived_at__isnull=False),
    }
    projects = (within if within is not None else Project.objects.all()).order_by("name")
    projects = projects.annotate(
        **{
            f"n_{name}": CountUpTo(
                Memory.objects.alias(expiry_key=expiry)
                .filter(condition, project=OuterRef("pk"))
                .order_by()
                .values("pk")[: bound + 1]
            )
            for name, condition in counted.items()
        }
    )
    return [
        ProjectCounts(
            project, **{name: Tally.of(getattr(project, f"n_{name}"), bound) for name in counted}
        )
        for project in projects
    ]


def memory_rows(queryset: QuerySet[Memory]) -> QuerySet[Memory]:
    """Memories as a page's rows show them: their columns, and their run and project."""
    return queryset.only(*_ROW_FIELDS, "source_run__external_id", "project__slug").select_related(
        "source_run", "project"
    )


# Each in one direction, ties by id: memories.keyset pages them through an index.
REVIEW_ORDERS = {"newest": ("-created_at", "-id"), "least-confident": ("confidence", "id")}


def global_readable(actor: Actor) -> Q:
    """Which global memories ``actor`` may read. An approved one is everyone's; a proposal
    not yet approved (waiting, or rejected) only global reviewers' and its proposer's: every
    key of the project whose key proposed it and the people with a role there, or the person
    who proposed it (its ``created`` history row says who). System jobs read them all."""
    if actor.api_key is None and actor.user is None:
        return Q()
    if actor.user is not None and roles.may(actor.user, None, Role.REVIEWER):
        return Q()
    created = MemoryEvent.objects.filter(memory=OuterRef("pk"), action=EventAction.CREATED)
    if actor.api_key is not None:
        proposed = created.filter(actor_api_key__project_id=actor.api_key.project_id)
    else:
        assert actor.user is not None
        proposed = created.filter(
            Q(actor_user=actor.user) | Q(actor_api_key__project__in=roles.projects_for(actor.user))
        )
    return Q(review_status=ReviewStatus.APPROVED) | Q(Exists(proposed))


def global_memories_for(*, actor: Actor) -> QuerySet[Memory]:
    """The global memories ``actor`` may read (``global_readable``). A global memory has no
    project (a check constraint): saying so lets an index that starts with the project find
    the few global rows instead of a walk of every project's."""
    return Memory.objects.filter(global_readable(actor), scope=Scope.GLOBAL, project__isnull=True)


def memories_for_review(
    *,
    project: Project | None = None,
    order: str = "newest",
    within: QuerySet[Project] | None = None,
    reader: Actor | None = None,
) -> QuerySet[Memory]:
    """The review queue of a project, or of every project (global memories included):
    newest or least confident first. ``within`` narrows the queue of every project to the
    projects a person may see, and ``reader`` to the global memories they may read."""
    queryset = Memory.objects.filter(NEEDS_REVIEW)
    if project is not None:
        queryset = queryset.filter(project=project)
    elif within is not None:
        seen = Q(project__in=within)
        if reader is not None:
            seen |= Q(global_readable(reader), project__isnull=True)
        queryset = queryset.filter(seen)
    return memory_rows(queryset).order_by(*REVIEW_ORDERS.get(order, REVIEW_ORDERS["newest"]))


def memory_runs(*, memory_id: int, limit: int = 50) -> QuerySet[RunMemory]:
    """The runs that were given a memory, latest first, with their outcome."""
    return (
        RunMemory.objects.filter(memory_id=memory_id)
        .select_related("run")
        .order_by("-created_at", "-id")[:limit]
    )


def confidence_over_time(
    *, memory: Memory, history: Sequence[MemoryEvent]
) -> list[tuple[datetime, float]]:
    """A memory's confidence at each change, oldest first, from its history (and now)."""
    points: list[tuple[datetime, float]] = []
    for event in sorted(history, key=lambda e: (e.created_at, e.pk)):
        change = event.changes.get("confidence") if isinstance(event.changes, dict) else None
        if isinstance(change, list) and len(change) == 2:
            before, after = change
            if not points and isinstance(before, int | float):
                points.append((event.created_at, float(before)))
            if isinstance(after, int | float):
                points.append((event.created_at, float(after)))
        elif event.action == EventAction.CREATED and not points:
            points.append((event.created_at, memory.confidence))
    points.append((timezone.now(), memory.confidence))
    return points


def runs_recent(*, project: Project) -> QuerySet[Run]:
    """A project's runs, latest first, each with the memories it was given."""
    given = (
        RunMemory.objects.select_related("memory")
        .only("run_id", "rank", "score", "memory__id", "memory__type", "memory__content")
        .order_by("rank")
    )
    return (
        Run.objects.filter(project=project)
        .order_by("-started_at", "-id")
        .prefetch_related(Prefetch("given", queryset=given))
    )
