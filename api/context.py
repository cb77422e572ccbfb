"""POST /api/projects/:id/context: what an agent must know, in its token budget."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from api.access import project_or_404, require_reviewer
from api.auth import actor_for
from api.common import PROJECT_PARAM, WRITE_ERRORS, errors
from api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictInput,
    StrictIntegerField,
)
from api.responses import ThenJSONResponse
from assembly.budget import Share
from assembly.entities import ENTITY_MAX_CHARS, MAX_ENTITIES
from assembly.packing import LODS
from assembly.render import PROMPT_PARTS
from assembly.requests import FORMATS, MAX_TIME_BUDGET_MS, ContextRequest
from assembly.results import Context, Dropped
from assembly.services import context_assemble, context_replay
from assembly.sources import SOURCES
from memories.text import WRITE_SCOPE_ENTRY_MAX_CHARS, WRITE_SCOPE_MAX_ENTRIES
from memories.tokens import SUPPORTED_ENCODINGS


class ShareIn(StrictInput):
    fixed = StrictIntegerField(min_value=0, max_value=10_000_000, required=False)
    min = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    max = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    auto = StrictFloatField(min_value=0.0, max_value=100.0, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kinds = [kind for kind in ("fixed", "auto") if kind in attrs]
        ranged = "min" in attrs or "max" in attrs
        if len(kinds) + ranged != 1:
            raise serializers.ValidationError(
                'Give exactly one of: {"fixed": tokens}, {"min": f, "max": f}, {"auto": weight}.'
            )
        if attrs.get("min", 0.0) > attrs.get("max", 1.0):
            raise serializers.ValidationError("min must not be greater than max.")
        return attrs


def _share(data: dict[str, Any]) -> Share:
    if "fixed" in data:
        return Share.fixed(data["fixed"])
    if "auto" in data:
        return Share.auto(data["auto"])
    return Share.range(data.get("min", 0.0), data.get("max", 1.0))


@extend_schema_serializer(component_name="ContextRequest")
class ContextIn(StrictInput):
    tokenBudget = StrictIntegerField(min_value=1, max_value=2_000_000)
    responseReserve = StrictIntegerField(
        min_value=0, max_value=2_000_000, required=False, default=0
    )
    writeScope = serializers.ListField(
        child=StrictCharField(max_length=WRITE_SCOPE_ENTRY_MAX_CHARS, visible=True),
        max_length=WRITE_SCOPE_MAX_ENTRIES,
        required=False,
        default=list,
    )
    intent = StrictCharField(max_length=4000, required=False, default="", allow_blank=True)
    entities = serializers.ListField(
        child=StrictCharField(max_length=ENTITY_MAX_CHARS),
        max_length=MAX_ENTITIES,
        required=False,
        default=list,
        help_text="Identifiers, package names or paths the task is about: memories that "
        "mention them rank higher.",
    )
    limit = StrictIntegerField(min_value=1, max_value=1000, required=False, allow_null=True)
    lod = StrictChoiceField(choices=LODS, required=False, default="adaptive")
    timeBudgetMs = StrictIntegerField(min_value=1, max_value=MAX_TIME_BUDGET_MS, required=False)
    sources = serializers.ListField(
        child=StrictChoiceField(choices=SOURCES),
        min_length=1,
        max_length=len(SOURCES),
        required=False,
        default=lambda: list(SOURCES),
    )
    shares = serializers.DictField(
        child=ShareIn(), required=False, help_text="Per source: fixed tokens, a range or auto."
    )
    runId = StrictIntegerField(required=False, allow_null=True)
    format = StrictChoiceField(choices=FORMATS, required=False, default="section")
    encoding = StrictChoiceField(choices=SUPPORTED_ENCODINGS, required=False, default="o200k_base")
    ids = StrictBooleanField(
        required=False,
        default=False,
        help_text="Name each memory's id in its line (`- [warning #42] ...`), counted in the"
        " budget: for an agent that will flag a memory or report it used.",
    )
    userId = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        help_text="The user the agent works for, as your system names them: their preferences"
        " come first, in a `## Preferences` section inside the budget.",
    )
    role = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    task = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    workspace = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    readFirst = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    constraints = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    retryDigest = StrictCharField(max_length=20_000, required=False, allow_blank=True)
    outputFormat = StrictCharField(max_length=20_000, required=False, allow_blank=True)

    def validate_shares(self, value: dict[str, Any]) -> dict[str, Any]:
        unknown = set(value) - set(SOURCES)
        if unknown:
            raise serializers.ValidationError(f"Sources are: {', '.join(SOURCES)}.")
        return value


class ScorePartsOut(serializers.Serializer):
    tagMatch = serializers.FloatField()
    scope = serializers.FloatField(
        help_text="How much of the write scope its tags cover, and how specifically (0 to 1)."
    )
    entities = serializers.FloatField(help_text="The share of the request's entities it mentions.")
    textRelevance = serializers.FloatField(
        help_text="BM25 of the intent's words, relative to the best candidate's (0 to 1)."
    )
    pathText = serializers.FloatField(
        help_text="BM25 of the write scope's words (its folders and file names) against the "
        "memory's words, relative to the best candidate's (0 to 1)."
    )
    semantic = serializers.FloatField(help_text="Cosine of its meaning with the task's (0 to 1).")
    quality = serializers.FloatField()
    recency = serializers.FloatField()


class ContextItemOut(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.ChoiceField(choices=SOURCES)
    type = serializers.CharField()
    rank = serializers.IntegerField()
    detail = serializers.ChoiceField(choices=["macro", "micro", "atomic"])
    tokens = serializers.IntegerField()
    score = serializers.FloatField()
    scoreParts = ScorePartsOut()


class DroppedOut(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True)
    source = serializers.ChoiceField(choices=SOURCES)
    reason = serializers.ChoiceField(
        choices=[
            "budget",
            "limit",
            "duplicate",
            "similar",
            "conflict",
            "below_confidence",
            "expired",
            "source_timeout",
        ]
    )
    repeats = serializers.IntegerField(
        required=False, help_text="For `similar`: the id of the memory given that it repeats."
    )
    conflictsWith = serializers.IntegerField(
        required=False,
        help_text="For `conflict`: the id of the memory given instead (an open conflict).",
    )


class WarningOut(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=["BUDGET_EXCEEDED", "SOURCE_TIMEOUT", "SEMANTIC_UNAVAILABLE", "CONFLICT"]
    )
    message = serializers.CharField()


@extend_schema_serializer(component_name="SourceCoverage")
class SourceCoverageOut(serializers.Serializer):
    candidates = serializers.IntegerField()
    chosen = serializers.IntegerField()
    tokens = serializers.IntegerField()
    allocated = serializers.IntegerField()
    latencyMs = serializers.FloatField()
    timedOut = serializers.BooleanField()


class ContextMetadataOut(serializers.Serializer):
    totalTokens = serializers.IntegerField()
    budget = serializers.IntegerField()
    encoding = serializers.CharField()
    lod = serializers.CharField()
    promptHash = serializers.CharField()
    qualityAchieved = serializers.FloatField()
    coherence = serializers.FloatField(
        help_text="Share of the given memories' pairs with no open conflict between them."
    )
    sourceCoverage = serializers.DictField(child=SourceCoverageOut())
    warnings = WarningOut(many=True)
    cacheHit = serializers.BooleanField()
    assemblyTimeMs = serializers.FloatField()


class PreferenceGivenOut(serializers.Serializer):
    key = serializers.CharField()
    scope = serializers.ChoiceField(choices=["project", "global"])
    category = serializers.CharField()
    tokens = serializers.IntegerField(help_text="What its line costs.")
    rank = serializers.IntegerField(allow_null=True, help_text="Its place in the section.")
    reason = serializers.ChoiceField(
        choices=["budget", "limit"], allow_null=True, help_text="Why it was left out."
    )


@extend_schema_serializer(component_name="Context")
class ContextOut(serializers.Serializer):
    text = serializers.CharField()
    items = ContextItemOut(many=True)
    dropped = DroppedOut(many=True)
    preferences = PreferenceGivenOut(
        many=True, help_text="The preferences of the user named by userId, given or not."
    )
    metadata = ContextMetadataOut()


class ContextView(APIView):
    # A POST that reads: on a replica when there is one (memories.replicas).
    replica_reads = True

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=ContextIn,
        responses={200: ContextOut, **errors(*WRITE_ERRORS, 409)},
        summary="Assemble the memories for a task into a token budget",
    )
    def post(self, request: Request, project: str) -> ThenJSONResponse:
        target = project_or_404(request, project)
        if isinstance(request.data, dict) and request.data.get("runId") is not None:
            # What a run is given is recorded with it: a write (a viewer only previews).
            require_reviewer(request, target, "assemble the context of a run")
        then: list[Callable[[], None]] = []
        identity = _identity(request.data)
        if identity is not None:
            replayed = context_replay(
                project=target, identity=identity[0], run_id=identity[1], defer=then.append
            )
            if replayed is not None:
                return ThenJSONResponse(stamped(*replayed), then=then)
        serializer = ContextIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        context_request = ContextRequest(
            token_budget=data["tokenBudget"],
            response_reserve=data["responseReserve"],
            write_scope=tuple(data["writeScope"]),
            intent=data["intent"],
            entities=tuple(dict.fromkeys(e.strip() for e in data["entities"] if e.strip())),
            limit=data.get("limit"),
            lod=data["lod"],
            time_budget_ms=data.get("timeBudgetMs"),
            sources=tuple(dict.fromkeys(data["sources"])),
            shares={name: _share(share) for name, share in data.get("shares", {}).items()},
            run_id=data.get("runId"),
            format=data["format"],
            encoding=data["encoding"],
            prompt={part: data[part] for part in PROMPT_PARTS if data.get(part)},
            ids=data["ids"],
            user_id=data.get("userId"),
        )
        result = context_assemble(
            project=target,
            request=context_request,
            actor=actor_for(request),
            defer=then.append,
            identity=None if identity is None else identity[0],
            encode=stored_body,
        )
        return ThenJSONResponse(json_bytes(context_json(result)), then=then)


# --- the wire format -----------------------------------------------------------------------------


def json_bytes(value: Any) -> bytes:
    """JSON as the API renders it (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


@cache
def camel(name: str) -> str:
    """A snake_case name of plain data as the API spells it (remembered: few names)."""
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def context_json(result: Context, *, stamp: bool = True) -> dict[str, Any]:
    """An assembly as the API sends it (ContextOut), in camelCase; without ``stamp``, less
    the two per-response values that end it (cacheHit, assemblyTimeMs)."""
    meta = result.metadata
    metadata: dict[str, Any] = {
        "totalTokens": meta.total_tokens,
        "budget": meta.budget,
        "encoding": meta.encoding,
        "lod": meta.lod,
        "promptHash": meta.prompt_hash,
        "qualityAchieved": meta.quality_achieved,
        "coherence": meta.coherence,
        "sourceCoverage": {
            source: {
                "candidates": coverage.candidates,
                "chosen": coverage.chosen,
                "tokens": coverage.tokens,
                "allocated": coverage.allocated,
                "latencyMs": coverage.latency_ms,
                "timedOut": coverage.timed_out,
            }
            for source, coverage in meta.source_coverage.items()
        },
        "warnings": [{"code": w.code, "message": w.message} for w in meta.warnings],
    }
    if stamp:
        metadata |= {"cacheHit": meta.cache_hit, "assemblyTimeMs": meta.assembly_time_ms}
    return {
        "text": result.text,
        "items": [
            {
                "id": item.id,
                "source": item.source,
                "type": item.type,
                "rank": item.rank,
                "detail": item.detail,
                "tokens": item.tokens,
                "score": item.score,
                "scoreParts": {camel(name): value for name, value in item.score_parts.items()},
            }
            for item in result.items
        ],
        "dropped": [_dropped(d) for d in result.dropped],
        "preferences": [
            {
                "key": p.key,
                "scope": p.scope,
                "category": p.category,
                "tokens": p.tokens,
                "rank": p.rank,
                "reason": p.reason,
            }
            for p in result.preferences
        ],
        "metadata": metadata,  # last: a stored answer is stamped at its end (stamped)
    }


def _dropped(dropped: Dropped) -> dict[str, Any]:
    body: dict[str, Any] = {"id": dropped.id, "source": dropped.source, "reason": dropped.reason}
    if dropped.repeats is not None:
        body["repeats"] = dropped.repeats
    if dropped.conflicts_with is not None:
        body["conflictsWith"] = dropped.conflicts_with
    return body


def stored_body(result: Context) -> bytes:
    """The JSON the cache keeps for a repeat: the answer less its per-response values."""
    return json_bytes(context_json(result, stamp=False))


def stamped(body: bytes, assembly_time_ms: float) -> bytes:
    """A stored answer with this response's two values: the stored JSON ends with the
    metadata object, which ends the answer, so they close both."""
    stamp = {"cacheHit": True, "assemblyTimeMs": assembly_time_ms}
    return body[:-2] + b"," + json_bytes(stamp)[1:] + b"}"


def _identity(body: Any) -> tuple[str, int | None] | None:
    """A request body's name in the assembly cache (its canonical JSON, without a run id that
    decides nothing when the run is no source) and its run id: a repeat is answered before
    it is validated again. None for a body no valid request has."""
    if not isinstance(body, dict):
        return None
    run_id = body.get("runId")
    if run_id is not None and type(run_id) is not int:
        return None
    sources = body.get("sources")
    if isinstance(sources, list) and "run" not in sources:
        body = {name: value for name, value in body.items() if name != "runId"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")), run_id
