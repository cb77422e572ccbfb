"""Ranking candidates and fitting the best of them into a token budget: pure functions.

Costs of single lines are estimates (tokens do not add up exactly across line
breaks); the rendered text is then counted exactly and the lowest-ranked
memory is dropped until it fits, so the budget is never exceeded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assembly.budget import DEFAULT_SHARES, Share, allocate
from assembly.diversity import Seen
from assembly.render import memory_line, render_section
from memories.tokens import count_line_tokens, count_tokens

LODS: tuple[str, ...] = ("macro", "micro", "atomic", "adaptive")
MICRO_WORDS = 40


@dataclass(frozen=True)
class Weights:
    scope: float = 2.0
    entities: float = 1.0
    text: float = 0.5
    path: float = 1.5
    semantic: float = 0.5
    quality: float = 1.0
    recency: float = 0.2


# The policy's column of each weight (memories.models.MemoryPolicy).
WEIGHT_COLUMNS = {name: f"weight_{name}" for name in Weights.__dataclass_fields__}


def weights_in_force(policy: Any) -> Weights:
    """The ranking weights a project's policy sets."""
    return Weights(**{name: getattr(policy, column) for name, column in WEIGHT_COLUMNS.items()})


@dataclass(frozen=True)
class Candidate:
    id: int
    source: str  # run, project or global
    type: str
    content: str
    summary: str
    tag_match: bool
    text_relevance: float  # BM25 of the intent; 0 without a word of it
    confidence: float
    relevance_score: float
    recency: float  # 0..1
    scope: float = 0.0  # how well its tags fit the write scope, 0..1 (assembly.scope)
    entities: float = 0.0  # the share of the request's entities it mentions (assembly.entities)
    semantic: float = 0.0  # cosine of its embedding with the task's, 0..1 (knowledge.embeddings)
    approved: bool = False  # a reviewer approved it (precedence in a conflict)
    path_text: float = 0.0  # BM25 of the write scope's words (memories.words); 0 without one


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float
    parts: dict[str, float]


@dataclass
class Chosen:
    scored: Scored
    detail: str  # macro, micro or atomic
    line: str
    tokens: int
    rank: int = 0


@dataclass
class Packed:
    chosen: list[Chosen]
    dropped: list[tuple[Scored, str]]
    text: str
    total_tokens: int
    allocation: dict[str, int] = field(default_factory=dict)
    # A memory dropped as ``similar``: the id of the better-ranked one it repeats.
    similar_to: dict[int, int] = field(default_factory=dict)


def score(
    candidate: Candidate, weights: Weights, *, text_top: float = 1.0, path_top: float = 1.0
) -> Scored:
    """A candidate's score and its parts; its text relevance and path words are taken
    relative to the best of the request (``text_top``, ``path_top``), so every part lies in
    [0, 1]."""
    text = candidate.text_relevance / text_top if text_top > 0 else 0.0
    path = candidate.path_text / path_top if path_top > 0 else 0.0
    parts = {
        "tag_match": 1.0 if candidate.tag_match else 0.0,
        "scope": round(candidate.scope, 6),
        "entities": round(candidate.entities, 6),
        "text_relevance": round(text, 6),
        "path_text": round(path, 6),
        "semantic": round(candidate.semantic, 6),
        "quality": round(candidate.confidence * candidate.relevance_score, 6),
        "recency": round(candidate.recency, 6),
    }
    total = (
        weights.scope * parts["scope"]
        + weights.entities * parts["entities"]
        + weights.text * parts["text_relevance"]
        + weights.path * parts["path_text"]
        + weights.semantic * parts["semantic"]
        + weights.quality * parts["quality"]
        + weights.recency * parts["recency"]
    )
    return Scored(candidate=candidate, score=round(total, 6), parts=parts)


def rank(candidates: Sequence[Candidate], weights: Weights) -> list[Scored]:
    """Write-scope matches first (the seed's rule), then by score; ties by confidence, then id."""
    text_top = max((c.text_relevance for c in candidates), default=0.0)
    path_top = max((c.path_text for c in candidates), default=0.0)
    scored = [
        score(candidate, weights, text_top=text_top, path_top=path_top) for candidate in candidates
    ]
    return sorted(
        scored,
        key=lambda s: (
            not s.candidate.tag_match,
            -s.score,
            -s.candidate.confidence,
            s.candidate.id,
        ),
    )


def micro_text(content: str) -> str:
    words = content.split()
    return content if len(words) <= MICRO_WORDS else " ".join(words[:MICRO_WORDS]) + " …"


def _line(scored: Scored, detail: str, ids: bool = False) -> str:
    candidate = scored.candidate
    text = {
        "macro": candidate.summary or candidate.content,
        "micro": micro_text(candidate.content),
        "atomic": candidate.content,
    }[detail]
    return memory_line(candidate.type, text, candidate.id if ids else None)


def pack(
    ranked: Sequence[Scored],
    *,
    budget: int,
    limit: int,
    lod: str,
    encoding: str,
    shares: Mapping[str, Share] | None = None,
    render: Callable[[str], str] = lambda section: section,
    similar: float | None = None,
    ids: bool = False,
) -> Packed:
    """Choose memories in rank order so that ``render(section)`` fits ``budget`` tokens.

    ``render`` wraps the Memories section (e.g. into the whole prompt); the budget
    applies to what it returns. Each source is first filled within its share of
    the pool; what a source leaves unused flows to the others in rank order. With
    ``similar`` (a threshold, assembly.diversity), a memory that repeats a better-ranked
    one is not given (reason ``similar``). With ``ids``, each line names its memory's id
    (counted in the budget like the rest of the line).
    """
    shares = dict(shares or DEFAULT_SHARES)
    base = "macro" if lod == "adaptive" else lod

    def cost(line: str) -> int:
        return count_line_tokens("\n" + line, encoding)

    frame = count_tokens(render(render_section(["x"])), encoding) - count_tokens("\n- x", encoding)
    pool = max(0, budget - max(frame, 0))
    # The same line twice, or nearly the same, would spend tokens on a repeat: only the
    # best-ranked one stays. Candidates are looked at in rank order only as far as the
    # packing needs them (a full page of ``limit`` memories looks no further).
    options = _Options(ranked, lambda s: _line(s, base, ids), cost, similar)
    demand: dict[str, int] = {}
    for s, _ in options.first(limit):
        source = s.candidate.source
        demand[source] = demand.get(source, 0) + options.costs[s.candidate.id]
    allocation = allocate(pool, {k: shares.get(k, Share.auto(0.0)) for k in shares}, demand)

    taken: dict[int, Chosen] = {}
    spent = dict.fromkeys(allocation, 0)
    # 1. Each source within its own share.
    for s, line in options:
        if len(taken) >= limit:
            break
        source = s.candidate.source
        tokens = options.costs[s.candidate.id]
        if spent.get(source, 0) + tokens <= allocation.get(source, 0):
            taken[s.candidate.id] = Chosen(s, base, line, tokens)
            spent[source] = spent.get(source, 0) + tokens
    # 2. What sources left unused flows to the others, best first.
    left = pool - sum(spent.values())
    for s, line in options:
        if len(taken) >= limit:
            break
        tokens = options.costs[s.candidate.id]
        if s.candidate.id not in taken and tokens <= left:
            taken[s.candidate.id] = Chosen(s, base, line, tokens)
            left -= tokens
    # 3. Adaptive: the best memories get their full content while the budget allows.
    if lod == "adaptive":
        for s, _ in options.seen:
            chosen = taken.get(s.candidate.id)
            if chosen is None:
                continue
            full = _line(s, "atomic", ids)
            extra = cost(full) - chosen.tokens
            if extra <= left:
                taken[s.candidate.id] = Chosen(s, "atomic", full, chosen.tokens + extra)
                left -= extra
    chosen_list = [taken[s.candidate.id] for s, _ in options.seen if s.candidate.id in taken]
    # 4. Exact count of the final text; drop the lowest-ranked until it fits.
    while True:
        text = render(render_section([c.line for c in chosen_list]))
        total = count_tokens(text, encoding)
        if total <= budget or not chosen_list:
            break
        chosen_list.pop()
    if total > budget:  # not even the frame fits: nothing at all
        text, total = "", 0
    for position, chosen in enumerate(chosen_list, start=1):
        chosen.rank = position
    kept = {c.scored.candidate.id for c in chosen_list}
    dropped: list[tuple[Scored, str]] = [(s, "duplicate") for s in options.repeats]
    dropped += [(s, "similar") for s in ranked if s.candidate.id in options.similar_to]
    # What was not given: past the limit, or for the budget (a candidate never looked at
    # counts with the options after the last one looked at).
    unseen = list(ranked[options.looked_at :])
    for position, s in enumerate([s for s, _ in options.seen] + unseen):
        if s.candidate.id in kept:
            continue
        over_limit = position >= limit and len(kept) >= limit
        dropped.append((s, "limit" if over_limit or len(kept) >= limit else "budget"))
    return Packed(chosen_list, dropped, text, total, allocation, options.similar_to)


class _Options:
    """The ranked candidates that are worth a line, looked at lazily in rank order: a line
    already taken is a duplicate, a near-repeat of a better-ranked one is similar
    (assembly.diversity); each option's line and its cost are kept."""

    def __init__(
        self,
        ranked: Sequence[Scored],
        line: Callable[[Scored], str],
        cost: Callable[[str], int],
        similar: float | None,
    ) -> None:
        self.ranked, self.line, self.cost = ranked, line, cost
        self.seen: list[tuple[Scored, str]] = []
        self.costs: dict[int, int] = {}
        self.repeats: list[Scored] = []
        self.similar_to: dict[int, int] = {}
        self.looked_at = 0
        self.lines: set[str] = set()
        self.diversity = Seen(similar) if similar is not None else None

    def _next(self) -> bool:
        """Look at the next candidate; False when none is left."""
        while self.looked_at < len(self.ranked):
            s = self.ranked[self.looked_at]
            self.looked_at += 1
            line = self.line(s)
            if line in self.lines:
                self.repeats.append(s)
                continue
            if self.diversity is not None:
                repeated = self.diversity.repeated(s.candidate.content)
                if repeated is not None:
                    self.similar_to[s.candidate.id] = repeated
                    continue
                self.diversity.keep(s.candidate.id, s.candidate.content)
            self.lines.add(line)
            self.costs[s.candidate.id] = self.cost(line)
            self.seen.append((s, line))
            return True
        return False

    def first(self, count: int) -> list[tuple[Scored, str]]:
        while len(self.seen) < count and self._next():
            pass
        return self.seen[:count]

    def __iter__(self) -> Iterator[tuple[Scored, str]]:
        position = 0
        while position < len(self.seen) or self._next():
            yield self.seen[position]
            position += 1


def recency(age_days: float, half_life_days: float) -> float:
    """1.0 for brand new, 0.5 after one half-life."""
    if half_life_days <= 0:
        return 0.0
    return math.exp(-math.log(2) * max(age_days, 0.0) / half_life_days)
