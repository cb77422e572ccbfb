"""What an assembly answers, as plain data: the front ends render it (the API as camelCase
JSON, the review pages as HTML)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assembly.preferences import PreferenceGiven


@dataclass(frozen=True)
class Item:
    """A memory given, at ``rank``, in ``detail``, costing ``tokens``; ``score_parts`` are the
    parts of its ``score``."""

    id: int
    source: str
    type: str
    rank: int
    detail: str
    tokens: int
    score: float
    score_parts: dict[str, float]


@dataclass(frozen=True)
class Dropped:
    """A candidate not given, and why (``id`` None: a whole source that timed out)."""

    id: int | None
    source: str
    reason: str
    # For ``similar``: the id of the memory given that it repeats.
    repeats: int | None = None
    # For ``conflict``: the id of the memory given instead (an open conflict between them).
    conflicts_with: int | None = None
    # Its score, where it was ranked (the review page's preview shows it).
    score: float | None = None


@dataclass(frozen=True)
class ContextWarning:
    code: str
    message: str


@dataclass(frozen=True)
class Coverage:
    """What one source offered and was given."""

    candidates: int
    chosen: int
    tokens: int
    allocated: int
    latency_ms: float
    timed_out: bool


@dataclass(frozen=True)
class Metadata:
    total_tokens: int
    budget: int
    encoding: str
    lod: str
    prompt_hash: str
    quality_achieved: float
    source_coverage: dict[str, Coverage]
    warnings: list[ContextWarning]
    # Per response: whether the cache answered, and how long the answer took.
    cache_hit: bool = False
    assembly_time_ms: float = 0.0
    # The share of the given memories' pairs with no open conflict between them.
    coherence: float = 1.0


@dataclass(frozen=True)
class Context:
    text: str
    items: list[Item]
    dropped: list[Dropped]
    metadata: Metadata
    # What was asked (ContextRequest.recorded): a run keeps it with what it was given.
    request: dict[str, Any] | None = None
    # The user's preferences (a request that names its user): given first, or left out.
    preferences: list[PreferenceGiven] = field(default_factory=list)

    @property
    def given(self) -> list[tuple[int, float, dict[str, float]]]:
        """What a run is recorded as given: (memory id, score, score parts), best first."""
        return [(item.id, item.score, item.score_parts) for item in self.items]
