"""A request for context: what it asks (ContextRequest), what a run keeps of it, its key in
the cache, and its validation against the project (limits, formats, encodings, sources,
the shares of the token pool).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from assembly.budget import Share
from assembly.packing import LODS
from assembly.render import PROMPT_PARTS
from assembly.sources import SOURCES
from memories.models import MemoryPolicy, Project
from memories.tokens import SUPPORTED_ENCODINGS
from people.users import clean_user_ref

FORMATS = ("section", "prompt")


@dataclass(frozen=True)
class ContextRequest:
    token_budget: int
    write_scope: tuple[str, ...] = ()
    intent: str = ""
    entities: tuple[str, ...] = ()
    response_reserve: int = 0
    limit: int | None = None
    lod: str = "atomic"
    time_budget_ms: int | None = None
    sources: tuple[str, ...] = SOURCES
    run_id: int | None = None
    format: str = "section"
    encoding: str = "o200k_base"
    prompt: Mapping[str, str] = field(default_factory=dict)
    shares: Mapping[str, Share] | None = None
    ids: bool = False
    # The user the agent works for: their preferences come first (assembly.preferences).
    user_id: str | None = None

    def recorded(self) -> dict[str, Any]:
        """What a run keeps of the request that gave it memories (its parts that decide the
        ranking, for a fit of the weights to ask again: assembly.ranking)."""
        return {
            "token_budget": self.token_budget,
            "response_reserve": self.response_reserve,
            "write_scope": list(self.write_scope),
            "intent": self.intent,
            "entities": list(self.entities),
            "limit": self.limit,
            "lod": self.lod,
            "sources": list(self.sources),
            "encoding": self.encoding,
            "format": self.format,
            "prompt": dict(self.prompt),
            "ids": self.ids,
        }

    @classmethod
    def from_recorded(cls, recorded: Mapping[str, Any], **changes: Any) -> ContextRequest:
        values = {
            name: tuple(value) if isinstance(value, list) else value
            for name, value in recorded.items()
        }
        return cls(**{**values, **changes})

    def cache_digest(self, policy: MemoryPolicy) -> str:
        """Everything that decides the result (the run only decides where it is recorded):
        the request and the project's policy (an edited policy is a different result)."""
        described = asdict(self)
        described.pop("run_id")
        described.pop("time_budget_ms")
        described["prompt"] = dict(self.prompt)
        described["run_scoped"] = self.run_id if "run" in self.sources else None
        return _digest(described, policy)


def _digest(described: Any, policy: MemoryPolicy) -> str:
    policy_state = [
        getattr(policy, f.attname) for f in policy._meta.concrete_fields if not f.primary_key
    ]
    return hashlib.sha256(
        json.dumps([described, policy_state], sort_keys=True, default=str).encode()
    ).hexdigest()


def identity_digest(identity: str, policy: MemoryPolicy) -> str:
    """The cache key of a request named by its caller's own ``identity`` (the API: its
    canonical JSON body), under the project's policy."""
    return _digest({"identity": identity}, policy)


def validate_request(project: Project, request: ContextRequest) -> tuple[int, int]:
    errors: dict[str, str] = {}
    pool = request.token_budget - request.response_reserve
    if request.token_budget <= 0:
        errors["token_budget"] = "Must be more than 0."
    elif request.response_reserve < 0:
        errors["response_reserve"] = "Must be 0 or more."
    elif pool <= 0:
        errors["response_reserve"] = "Leaves no tokens: keep it below tokenBudget."
    if request.lod not in LODS:
        errors["lod"] = f"Use one of: {', '.join(LODS)}."
    if request.format not in FORMATS:
        errors["format"] = f"Use one of: {', '.join(FORMATS)}."
    if request.encoding not in SUPPORTED_ENCODINGS:
        errors["encoding"] = f"Use one of: {', '.join(SUPPORTED_ENCODINGS)}."
    unknown = set(request.sources) - set(SOURCES)
    if unknown or not request.sources:
        errors["sources"] = f"Use one or more of: {', '.join(SOURCES)}."
    if set(request.prompt) - set(PROMPT_PARTS):
        errors["prompt"] = f"Prompt sections are: {', '.join(PROMPT_PARTS)}."
    if request.user_id is not None:
        try:
            clean_user_ref(request.user_id, "user_id")
        except ValidationError as invalid:
            errors |= {name: " ".join(messages) for name, messages in invalid.message_dict.items()}
    limit = request.limit or project.policy.selection_limit
    if not 1 <= limit <= 1000:
        errors["limit"] = "Must be from 1 to 1000."
    if errors:
        raise ValidationError(errors)
    return pool, limit


def shares_for(project: Project, request: ContextRequest) -> dict[str, Share]:
    policy = project.policy
    shares = {
        "run": Share.auto(policy.share_run),
        "project": Share.auto(policy.share_project),
        "global": Share.auto(policy.share_global),
    }
    shares.update(request.shares or {})
    return {name: share for name, share in shares.items() if name in request.sources}


# The longest a request may ask assembly to take: well inside a web worker's timeout (30 s).
MAX_TIME_BUDGET_MS = 10_000
