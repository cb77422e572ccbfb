"""The database part of assembly: one bounded candidate query per source, each under its
own statement timeout, so a slow source is cancelled by PostgreSQL, not left running."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.db import OperationalError, connection, transaction
from django.db.models import F, FloatField, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from assembly.packing import Candidate, recency
from memories.models import Memory, Project, Run, Scope
from memories.selectors import only_usable, tag_match_expression

SOURCES = ("run", "project", "global")
T = TypeVar("T")
# Rows taken per source before ranking in Python: enough for any limit the policy allows
# to be filled after budget drops, and never an unbounded set.
CANDIDATES_PER_LIMIT = 4
MIN_CANDIDATES = 40


@dataclass
class SourceResult:
    source: str
    candidates: list[Candidate]
    timed_out: bool = False
    latency_ms: float = 0.0


def source_queryset(
    source: str, *, project: Project, run: Run | None, now: datetime
) -> QuerySet[Memory] | None:
    policy = project.policy
    if source == "project":
        return only_usable(
            Memory.objects.filter(project=project, scope=Scope.PROJECT), policy=policy, now=now
        )
    if source == "global":
        return only_usable(Memory.objects.filter(scope=Scope.GLOBAL), policy=policy, now=now)
    if source == "run" and run is not None:
        return only_usable(
            Memory.objects.filter(project=project, scope=Scope.RUN, source_run=run),
            policy=policy,
            now=now,
        )
    return None


def fetch(
    source: str,
    *,
    project: Project,
    run: Run | None,
    write_scope: list[str],
    intent: str,
    limit: int,
    timeout_ms: int,
    now: datetime,
) -> SourceResult:
    """The best candidates of one source, ranked in SQL: write-scope matches first, then
    matches of the intent, then confidence x relevance; at most a bounded number of rows."""
    queryset = source_queryset(source, project=project, run=run, now=now)
    if queryset is None:
        return SourceResult(source, [])
    policy = project.policy
    text_rank: RawSQL | Cast
    if intent.strip():
        # Any word of the intent counts (OR of its stemmed lexemes); ts_rank_cd weighs how
        # many and how close. Normalisation 32: rank / (rank + 1), a value in [0, 1).
        text_rank = RawSQL(
            "ts_rank_cd(project_memories.search_vector,"
            " replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery, 32)",
            (intent,),
            output_field=FloatField(),
        )
    else:
        text_rank = Cast(Value(0.0), FloatField())
    rows = (
        queryset.annotate(
            tag_match=tag_match_expression(write_scope),
            text_rank=text_rank,
            quality=F("confidence") * F("relevance_score"),
        )
        .order_by(F("tag_match").desc(), F("text_rank").desc(), F("quality").desc(), "id")
        .values(
            "id", "type", "content", "summary", "confidence", "relevance_score",
            "created_at", "tag_match", "text_rank",
        )[: max(MIN_CANDIDATES, limit * CANDIDATES_PER_LIMIT)]
    )  # fmt: skip
    started = _clock()
    found = within_deadline(lambda: list(rows), timeout_ms)
    if found is None:
        return SourceResult(source, [], timed_out=True, latency_ms=_clock() - started)
    half_life = policy.recency_half_life_days
    return SourceResult(
        source,
        [
            Candidate(
                id=row["id"],
                source=source,
                type=row["type"],
                content=row["content"],
                summary=row["summary"],
                tag_match=row["tag_match"],
                text_relevance=float(row["text_rank"] or 0.0),
                confidence=row["confidence"],
                relevance_score=row["relevance_score"],
                recency=recency((now - row["created_at"]).total_seconds() / 86400, half_life),
            )
            for row in found
        ],
        latency_ms=_clock() - started,
    )


def within_deadline(query: Callable[[], T], timeout_ms: float) -> T | None:
    """Run ``query`` with a PostgreSQL statement timeout; None if PostgreSQL cancelled it."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = %s", [max(1, int(timeout_ms))])
            return query()
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) == "57014":  # query_canceled
            return None
        raise


def _clock() -> float:
    return time.perf_counter() * 1000
