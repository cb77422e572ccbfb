"""The database part of assembly: one bounded candidate query per source, each under its
own statement timeout, so a slow source is cancelled by PostgreSQL, not left running."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from django.db import close_old_connections, connection

from assembly.candidates import (
    Cancelled,
    Meaning,
    Ranking,
    Source,
    candidate_query,
    fetch_dicts,
    global_source,
    project_source,
    run_source,
)
from assembly.entities import entity_share
from assembly.metrics import SOURCE_ERRORS, SOURCE_SECONDS
from assembly.packing import Candidate, Weights, recency
from assembly.scope import scope_grade
from knowledge import embeddings
from memories.models import Project, ReviewStatus, Run
from memories.models.choices import sql_literal

SOURCES = ("run", "project", "global")
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
    # Active write-scope matches the usable rule leaves out: (id, confidence, expires_at).
    left_out: list[dict] = field(default_factory=list)


def candidate_source(source: str, *, project: Project, run: Run | None) -> Source | None:
    if source == "project":
        return project_source(project.pk)
    if source == "global":
        return global_source()
    if source == "run" and run is not None:
        return run_source(project.pk, run.pk)
    return None


# Ages and expiry come computed (floats and booleans read faster than timestamps). A
# memory's age is the number of UTC midnights since it was written, so that recency moves
# once a day, never between two requests seconds apart: the same store and request give the
# same answer all day.
_COLUMNS = (
    "m.id, m.type, m.content, m.summary, m.tags, m.confidence, m.relevance_score,"
    " greatest(floor(extract(epoch FROM %(now)s) / 86400)"
    " - floor(extract(epoch FROM m.created_at) / 86400), 0)::float8 AS age_days,"
    " coalesce(m.expires_at <= %(now)s, false) AS expired,"
    f" m.review_status = {sql_literal(ReviewStatus.APPROVED)} AS approved"
)


def fetch(
    source: str,
    *,
    project: Project,
    run: Run | None,
    write_scope: list[str],
    intent: str,
    limit: int,
    entities: Sequence[str] = (),
    timeout_ms: int,
    now: datetime,
    left_out: int = 0,
    meaning: np.ndarray | None = None,
    weights: Weights | None = None,
    versions: Mapping[str, str] | None = None,
) -> SourceResult:
    """The best candidates of one source, ranked in SQL (assembly.candidates): write-scope
    matches first, then matches of the intent, then confidence x relevance; at most a
    bounded number of rows, read through indexes whatever the project's size. With
    ``left_out``, also up to that many write-scope matches the usable rule leaves out.
    With ``meaning`` (the task's embedding), each candidate's semantic part is the cosine of
    its embedding with it (0 without a fresh one, never below 0)."""
    described = candidate_source(source, project=project, run=run)
    if described is None:
        return SourceResult(source, [])
    policy = project.policy
    sql, params = candidate_query(
        [described],
        write_scope=write_scope,
        # The entities' words find and rank memories as the intent's do.
        intent=" ".join([intent, *entities]).strip(),
        size=max(MIN_CANDIDATES, limit * CANDIDATES_PER_LIMIT),
        min_confidence=policy.min_confidence,
        now=now,
        columns=_COLUMNS,
        left_out=left_out,
        meaning=_meaning(meaning),
        ranking=Ranking.of(weights or Weights(), policy.recency_half_life_days),
        versions=versions,
    )
    started = _clock()
    try:
        found = fetch_dicts(sql, params, timeout_ms=timeout_ms, generic=True)
    except Cancelled:
        SOURCE_ERRORS.labels(source).inc()
        return SourceResult(source, [], timed_out=True, latency_ms=_clock() - started)
    except Exception:
        SOURCE_ERRORS.labels(source).inc()
        raise
    finally:
        SOURCE_SECONDS.labels(source).observe((_clock() - started) / 1000)
    half_life = policy.recency_half_life_days
    usable = [row for row in found if row["usable"]]
    semantic = (
        embeddings.similarities(meaning, [row["embedding"] for row in usable])
        if meaning is not None
        else [0.0] * len(usable)
    )
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
                path_text=float(row["path_rank"] or 0.0),
                confidence=row["confidence"],
                relevance_score=row["relevance_score"],
                recency=recency(row["age_days"], half_life),
                scope=scope_grade(row["tags"], write_scope) if row["tag_match"] else 0.0,
                entities=entity_share(entities, row["content"], row["tags"]),
                semantic=max(0.0, cosine),
                approved=row["approved"],
            )
            for row, cosine in zip(usable, semantic, strict=True)
        ],
        latency_ms=_clock() - started,
        left_out=sorted(
            (row for row in found if not row["usable"]), key=lambda r: (-r["confidence"], r["id"])
        ),
    )


# Sources are asked at once, each on a connection of its own, when no transaction holds the
# request's connection (a transaction's reads must stay in it): the request waits for the
# slowest source, not for their sum.
_helpers = ThreadPoolExecutor(max_workers=len(SOURCES) - 1, thread_name_prefix="sources")


def close_helper_connections() -> None:
    """Close the helper threads' database connections (e.g. before a test database is
    dropped): one task on each thread, held until all have started."""
    count = _helpers._max_workers
    started = threading.Barrier(count)

    def close() -> None:
        started.wait(timeout=10)
        connection.close()

    for future in [_helpers.submit(close) for _ in range(count)]:
        future.result()


def _fetch_on_helper(source: str, **kwargs: Any) -> SourceResult:
    close_old_connections()  # this thread's connection: renewed when too old or broken
    return fetch(source, **kwargs)


def fetch_all(
    sources: Sequence[str],
    *,
    deadline: float,
    left_out: Mapping[str, int],
    **kwargs: Any,
) -> list[SourceResult]:
    """The candidates of each source, in the order given, each within what is left of the
    time budget at ``deadline`` (``time.perf_counter()``): the project's on this thread, the
    others at the same time on helper threads when the request's connection is in no
    transaction, else one after the other."""

    def remaining() -> int:
        return int((deadline - time.perf_counter()) * 1000)

    def ask(source: str) -> SourceResult:
        left = remaining()
        if left < 1:
            return SourceResult(source, [], timed_out=True)
        return fetch(source, timeout_ms=left, left_out=left_out.get(source, 0), **kwargs)

    here = "project" if "project" in sources else sources[0]
    elsewhere = [
        source
        for source in sources
        if source != here and candidate_source(source, project=kwargs["project"], run=kwargs["run"])
    ]
    if not elsewhere or connection.in_atomic_block:
        return [ask(source) for source in sources]
    later = {
        source: _helpers.submit(
            # In this request's context: its reads go where the request's do (a replica),
            # and its statements are in the request's trace, not traces of their own.
            contextvars.copy_context().run,
            partial(
                _fetch_on_helper,
                source,
                timeout_ms=max(1, remaining()),
                left_out=left_out.get(source, 0),
                **kwargs,
            ),
        )
        for source in elsewhere
    }
    found = {here: ask(here)}
    found.update((source, future.result()) for source, future in later.items())
    return [found[source] if source in found else ask(source) for source in sources]


def _meaning(vector: np.ndarray | None) -> Meaning | None:
    """What the candidate query needs of the task's embedding: the model whose vectors to
    read, and the vector itself where pgvector's index of that model can find the nearest."""
    model = embeddings.configured()
    if vector is None or model is None:
        return None
    index = embeddings.nearest_index()
    if index is None:
        return Meaning(model.name)
    return Meaning(model.name, embeddings.vector_text(vector, "[]"), index[1])


def _clock() -> float:
    return time.perf_counter() * 1000
