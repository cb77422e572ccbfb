"""Context assembly: the best memories for a task, fitted exactly into a token budget.

The request and its validation are assembly.requests; this module assembles, caches and
records.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from opentelemetry import trace

from assembly import cache
from assembly import preferences as user_preferences
from assembly.coherence import OpenPair, Settled, coherence, settle
from assembly.metrics import ASSEMBLY_SECONDS, CACHE_REQUESTS, COHERENCE
from assembly.packing import Packed, Weights, rank, weights_in_force
from assembly.render import render_prompt
from assembly.requests import (
    MAX_TIME_BUDGET_MS,
    ContextRequest,
    identity_digest,
    shares_for,
    validate_request,
)
from assembly.results import Context, ContextWarning, Coverage, Dropped, Item, Metadata
from assembly.sources import SOURCES, SourceResult, fetch_all
from knowledge import embeddings, queries
from memories import services as memory_services
from memories.actors import Actor
from memories.models import Project, Run
from memories.services import uses
from memories.text import clean_write_scope
from memories.tokens import count_tokens

EXCLUDED_SHOWN = 20

# The context path's spans (docs/operations.md, "Traces"): context.assemble (or, for a
# repeat the cache answers before validation, context.replay) over context.candidates,
# context.rank, context.pack and context.render. Only OpenTelemetry's API here: whether they
# are recorded, and where they go, is ops.telemetry's; untraced, they cost a no-op each.
_tracer = trace.get_tracer(__name__)


# Warnings of an answer that lacks a part: never kept in the cache.
DEGRADED = frozenset({"SOURCE_TIMEOUT", "SEMANTIC_UNAVAILABLE"})


def context_assemble(
    *,
    project: Project,
    request: ContextRequest,
    actor: Actor,
    defer: Callable[[Callable[[], None]], None] | None = None,
    identity: str | None = None,
    record: bool = True,
    encode: Callable[[Context], bytes] | None = None,
) -> Context:
    """Assemble, or serve from the cache, then record what was given: the run's record at
    once (a finished run refuses the request), the access counts through ``defer`` when
    given (e.g. once the response is sent: nothing in it depends on them), else at once.
    A preview (``record=False``, the review pages) shows the same answer and records
    nothing: no agent was given it.

    ``identity`` names the request in the cache instead of its digest, for a caller that can
    name a repeat before validating it (see context_replay); ``encode`` gives the answer as
    that caller sends it, kept with it in the cache for context_replay to send as it is."""
    with _tracer.start_as_current_span("context.assemble") as span:
        if span.is_recording():
            span.set_attributes(_project_attributes(project))
        result = _assemble_or_reuse(
            project=project,
            request=request,
            defer=defer,
            identity=identity,
            record=record,
            encode=encode,
        )
        if span.is_recording():
            span.set_attributes(_answer_attributes(result))
        return result


def _assemble_or_reuse(
    *,
    project: Project,
    request: ContextRequest,
    defer: Callable[[Callable[[], None]], None] | None,
    identity: str | None,
    record: bool,
    encode: Callable[[Context], bytes] | None,
) -> Context:
    started = time.perf_counter()
    pool, limit = validate_request(project, request)
    write_scope = clean_write_scope(list(request.write_scope))
    run = None
    if request.run_id is not None:
        run = _run(project, request.run_id)
        if run is None:
            raise ValidationError({"run_id": "No run with this id in this project."})
    cache_seconds = settings.ASSEMBLY_CACHE_SECONDS
    lookup = None
    if cache_seconds > 0:
        digest = (
            request.cache_digest(project.policy)
            if identity is None
            else identity_digest(identity, project.policy)
        )
        lookup = cache.get(project.pk, digest)
        # An answer kept only as a caller's encoding (the API's, sent by context_replay) is
        # assembled again here: this path needs the result itself.
        cached = lookup.answer.result if lookup.answer else None
        CACHE_REQUESTS.labels("miss" if cached is None else "hit").inc()
        if cached is not None:
            return _deliver(
                cached, run, cache_hit=True, started=started, defer=defer, record=record
            )
    versions = cache.owners(project.pk, lookup.versions) if lookup else cache.versions(project.pk)
    result = _assemble(project, request, run, write_scope, pool, limit, started, versions)
    result = replace(result, request=request.recorded())
    # An answer missing a part (a source too slow, no meaning) is not served again.
    degraded = any(w.code in DEGRADED for w in result.metadata.warnings)
    if lookup and not degraded:
        answer = cache.Answer(
            result=None if encode else result,
            body=encode(result) if encode else None,
            given=result.given,
            prompt_hash=result.metadata.prompt_hash,
            request=request.recorded(),
        )
        cache.put(project.pk, digest, lookup, answer, cache_seconds)
    return _deliver(result, run, cache_hit=False, started=started, defer=defer, record=record)


def context_replay(
    *,
    project: Project,
    identity: str,
    run_id: int | None,
    defer: Callable[[Callable[[], None]], None] | None = None,
) -> tuple[bytes, float] | None:
    """The answer to a request seen before under ``identity`` (given to context_assemble
    with an ``encode``), as that caller encoded it, and the milliseconds this took: served
    from the cache without validating the request again (it was valid when it was stored,
    and the key holds the project's policy) or decoding the answer, and recorded as
    context_assemble records it; None when the cache has no current answer."""
    if settings.ASSEMBLY_CACHE_SECONDS <= 0:
        return None
    with _tracer.start_as_current_span("context.replay") as span:
        if span.is_recording():
            span.set_attributes({**_project_attributes(project), "context.cache_hit": False})
        started = time.perf_counter()
        answer = cache.get(project.pk, identity_digest(identity, project.policy)).answer
        if answer is None or answer.body is None:
            return None  # context_assemble follows, and counts the miss
        CACHE_REQUESTS.labels("hit").inc()
        run = None
        if run_id is not None:
            run = _run(project, run_id)
            if run is None:  # removed since: the full path says so
                return None
        _record(answer.given, answer.prompt_hash, run, defer, answer.request)
        ASSEMBLY_SECONDS.labels("hit").observe(time.perf_counter() - started)
        if span.is_recording():
            span.set_attributes(
                {"context.cache_hit": True, "context.items_chosen": len(answer.given)}
            )
        return answer.body, _elapsed_ms(started)


def _project_attributes(project: Project) -> dict[str, Any]:
    return {"memory.project": project.slug, "memory.project_id": project.pk}


def _answer_attributes(result: Context) -> dict[str, Any]:
    """What a span of an assembly says of its answer (a cached one too)."""
    meta = result.metadata
    return {
        "context.token_budget": meta.budget,
        "context.tokens_used": meta.total_tokens,
        "context.candidates": sum(c.candidates for c in meta.source_coverage.values()),
        "context.items_chosen": len(result.items),
        "context.cache_hit": meta.cache_hit,
    }


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _run(project: Project, run_id: int) -> Run | None:
    return Run.objects.filter(project=project, pk=run_id).first()


def _deliver(
    result: Context,
    run: Run | None,
    *,
    cache_hit: bool,
    started: float,
    defer: Callable[[Callable[[], None]], None] | None,
    record: bool = True,
) -> Context:
    """Record what ``result`` gives (the run, access counts) and stamp its metadata."""
    if record:
        _record(result.given, result.metadata.prompt_hash, run, defer, result.request)
    metadata = replace(result.metadata, cache_hit=cache_hit, assembly_time_ms=_elapsed_ms(started))
    ASSEMBLY_SECONDS.labels("hit" if cache_hit else "miss").observe(time.perf_counter() - started)
    return replace(result, metadata=metadata)


def _record(
    given: list[tuple[int, float, dict[str, float]]],
    prompt_hash: str,
    run: Run | None,
    defer: Callable[[Callable[[], None]], None] | None,
    request: dict[str, Any] | None = None,
) -> None:
    """The run's record at once (a finished run is a Conflict, and then nothing else is
    recorded either), the uses through ``defer`` (or at once)."""
    if run is not None:
        memory_services.run_give_memories(
            run=run, ranked=given, prompt_hash=prompt_hash, request=request
        )
    if given:
        record = partial(uses.record, [memory_id for memory_id, *_ in given])
        if defer is None:
            record()
        else:
            defer(record)


def context_ranked(*, project: Project, recorded: Mapping[str, Any], weights: Weights) -> list[int]:
    """The memories a recorded request (ContextRequest.recorded) would be given now if the
    project ranked with ``weights``: assembled afresh, never cached, nothing recorded."""
    request = ContextRequest.from_recorded(recorded)
    pool, limit = validate_request(project, request)
    policy = copy.copy(project.policy)
    for name, value in asdict(weights).items():
        setattr(policy, f"weight_{name}", value)
    trial = copy.copy(project)
    trial.policy = policy
    result = _assemble(
        trial,
        request,
        None,
        clean_write_scope(list(request.write_scope)),
        pool,
        limit,
        time.perf_counter(),
        cache.versions(project.pk),
    )
    return [item.id for item in result.items]


def _assemble(
    project: Project,
    request: ContextRequest,
    run: Run | None,
    write_scope: list[str],
    pool: int,
    limit: int,
    started: float,
    versions: Mapping[str, str] | None = None,
) -> Context:
    """``versions``: of the memories of the project and the global ones, when the cache
    knows them (counted word frequencies are reused within a version)."""
    now = timezone.now()
    time_budget = min(
        request.time_budget_ms or settings.ASSEMBLY_TIME_BUDGET_MS, MAX_TIME_BUDGET_MS
    )
    policy = project.policy
    weights = weights_in_force(policy)
    with _tracer.start_as_current_span("context.candidates") as span:
        # The task's meaning, embedded once for all sources (None with semantic ranking off); a
        # remote model may take at most half the time budget.
        task = " ".join([request.intent, *request.entities]).strip()
        meaning = embeddings.query_vector(task, timeout=time_budget / 2000)
        asked = [source for source in SOURCES if source in request.sources]
        results = fetch_all(
            asked,
            deadline=started + time_budget / 1000,
            project=project,
            run=run,
            write_scope=write_scope,
            intent=request.intent,
            entities=request.entities,
            limit=limit,
            now=now,
            meaning=meaning,
            left_out={"project": EXCLUDED_SHOWN},
            weights=weights,
            versions=versions,
        )
        candidates = [c for r in results for c in r.candidates]
        span.set_attribute("context.candidates", len(candidates))
    with _tracer.start_as_current_span("context.rank") as span:
        ranked = rank(candidates, weights)
        pairs = [
            OpenPair(*row) for row in queries.open_pairs_among([s.candidate.id for s in ranked])
        ]
        settled = settle(ranked, pairs, flag=policy.conflict_mode == "flag")
        span.set_attribute("context.ranked", len(settled.ranked))
    with _tracer.start_as_current_span("context.pack") as span:
        fetched = time.perf_counter()
        offers = user_preferences.offered(project.pk, request.user_id) if request.user_id else []
        fetched_ms = (time.perf_counter() - fetched) * 1000
        fitted = user_preferences.fit(
            offers,
            settled.ranked,
            budget=pool,
            share=policy.share_preferences,
            encoding=request.encoding,
            prompt=request.prompt if request.format == "prompt" else None,
            limit=limit,
            lod=request.lod,
            shares=shares_for(project, request),
            similar=policy.similar_threshold,
            ids=request.ids,
        )
        packed = fitted.packed
        if span.is_recording():
            span.set_attributes(
                {
                    "context.token_budget": pool,
                    "context.tokens_used": packed.total_tokens,
                    "context.items_chosen": len(packed.chosen),
                }
            )
    with _tracer.start_as_current_span("context.render"):
        warnings = []
        if request.format == "prompt" and not packed.text:
            needed = count_tokens(render_prompt(request.prompt, ""), request.encoding)
            warnings.append(
                ContextWarning(
                    "BUDGET_EXCEEDED",
                    f"The prompt's own sections need {needed} tokens; "
                    f"the budget is {pool}. Nothing was returned.",
                )
            )
        elif ranked and not packed.chosen:
            warnings.append(ContextWarning("BUDGET_EXCEEDED", "Not even one memory fits."))
        for r in results:
            if r.timed_out:
                warnings.append(
                    ContextWarning("SOURCE_TIMEOUT", f"The {r.source} source was too slow.")
                )
        given = [c.scored.candidate.id for c in packed.chosen]
        coherent = coherence(given, settled.conflicts)
        COHERENCE.observe(coherent)
        warnings += _conflict_warnings(settled, given)
        if meaning is None and task and embeddings.configured() is not None:
            warnings.append(
                ContextWarning(
                    "SEMANTIC_UNAVAILABLE",
                    "The embedding model did not answer in time; ranked without meaning.",
                )
            )
        coverage = _coverage(results, packed)
        if request.user_id:
            coverage["preferences"] = Coverage(
                candidates=len(offers),
                chosen=len(fitted.given),
                tokens=fitted.tokens,
                allocated=fitted.ceiling,
                latency_ms=round(fetched_ms, 2),
                timed_out=False,
            )
        return Context(
            text=packed.text,
            items=_items(packed),
            preferences=fitted.explained,
            dropped=[
                Dropped(
                    c.candidate.id,
                    c.candidate.source,
                    why,
                    packed.similar_to.get(c.candidate.id),
                    score=c.score,
                )
                for c, why in packed.dropped
            ]
            + [
                Dropped(
                    s.candidate.id,
                    s.candidate.source,
                    why,
                    repeats=kept if why == "similar" else None,
                    conflicts_with=kept if why == "conflict" else None,
                    score=s.score,
                )
                for s, why, kept in settled.dropped
            ]
            + [_excluded(row) for r in results for row in r.left_out]
            + [Dropped(None, r.source, "source_timeout") for r in results if r.timed_out],
            metadata=Metadata(
                total_tokens=packed.total_tokens,
                budget=pool,
                encoding=request.encoding,
                lod=request.lod,
                prompt_hash=hashlib.sha256(packed.text.encode()).hexdigest(),
                quality_achieved=_quality(packed, ranked, limit),
                source_coverage=coverage,
                warnings=warnings,
                coherence=coherent,
            ),
        )


def _conflict_warnings(settled: Settled, given: Sequence[int]) -> list[ContextWarning]:
    """CONFLICT: memories left out for an open conflict with one given, or (policy ``flag``)
    given together although they may contradict each other."""
    left_out = [(s.candidate.id, kept) for s, why, kept in settled.dropped if why == "conflict"]
    chosen = set(given)
    together = [p for p in settled.conflicts if p.first in chosen and p.second in chosen]
    warnings = []
    if left_out:
        named = ", ".join(f"{memory} (conflicts with {kept})" for memory, kept in left_out[:5])
        warnings.append(
            ContextWarning(
                "CONFLICT",
                f"Left out for an open conflict with a memory given: {named}."
                " A reviewer decides which one stands.",
            )
        )
    if together:
        named = ", ".join(f"{p.first} and {p.second}" for p in together[:5])
        warnings.append(
            ContextWarning(
                "CONFLICT",
                f"Given together although they may contradict each other: {named}."
                " A reviewer decides which one stands.",
            )
        )
    return warnings


def _items(packed: Packed) -> list[Item]:
    return [
        Item(
            id=c.scored.candidate.id,
            source=c.scored.candidate.source,
            type=c.scored.candidate.type,
            rank=c.rank,
            detail=c.detail,
            tokens=c.tokens,
            score=c.scored.score,
            score_parts=c.scored.parts,
        )
        for c in packed.chosen
    ]


def _quality(packed: Packed, ranked: Sequence[Any], limit: int) -> float:
    """How much of the ideal selection (the best ``limit`` candidates) the budget allowed."""

    def value(scored: Any) -> float:
        return scored.parts["tag_match"] + scored.score

    ideal = sum(value(s) for s in ranked[:limit])
    if ideal <= 0:
        return 1.0
    return round(min(1.0, sum(value(c.scored) for c in packed.chosen) / ideal), 4)


def _coverage(results: Sequence[SourceResult], packed: Packed) -> dict[str, Coverage]:
    coverage = {}
    for r in results:
        chosen = [c for c in packed.chosen if c.scored.candidate.source == r.source]
        coverage[r.source] = Coverage(
            candidates=len(r.candidates),
            chosen=len(chosen),
            tokens=sum(c.tokens for c in chosen),
            allocated=packed.allocation.get(r.source, 0),
            latency_ms=round(r.latency_ms, 2),
            timed_out=r.timed_out,
        )
    return coverage


def _excluded(row: dict[str, Any]) -> Dropped:
    """A memory that matches the task but that the rules leave out, and why."""
    reason = "expired" if row["expired"] else "below_confidence"
    return Dropped(row["id"], "project", reason)
