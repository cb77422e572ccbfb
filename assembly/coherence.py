"""Coherence (pure): of two qualifying memories in an open pair, one is given.

An open **conflict** (two memories that may contradict each other, waiting for a reviewer):
the one with precedence is given (approved over pending, then the more confident, then the
newer), the other dropped as ``conflict`` naming the one kept; under the policy's ``flag``
mode both are given and the answer says so. An open **repeat**: the better-ranked one is
given, the other dropped as ``similar`` (as a near-repeat the ranking finds is). A pair
that was decided is no longer open: the decision already archived one of them, or judged
them compatible.

``coherence`` is the share of the given memories' pairs with no open conflict between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from assembly.packing import Scored

CONFLICT = "conflict"
REPEAT = "repeat"


@dataclass(frozen=True)
class OpenPair:
    id: int
    kind: str
    first: int
    second: int


@dataclass
class Settled:
    """The candidates left to pack, those left out (scored, reason, the id kept instead),
    and the open conflicts both of whose memories are still in."""

    ranked: list[Scored]
    dropped: list[tuple[Scored, str, int]] = field(default_factory=list)
    conflicts: list[OpenPair] = field(default_factory=list)


def precedence(scored: Scored) -> tuple[bool, float, int]:
    candidate = scored.candidate
    return (candidate.approved, candidate.confidence, candidate.id)


def settle(ranked: Sequence[Scored], pairs: Sequence[OpenPair], *, flag: bool = False) -> Settled:
    """Leave out the memory without precedence of each open conflict both of whose memories
    qualify, and the lower-ranked memory of each open repeat (see the module); ``flag``
    keeps both of a conflict."""
    if not pairs:
        return Settled(list(ranked))
    out: dict[int, tuple[str, int]] = {}
    conflicts = [p for p in pairs if p.kind == CONFLICT and not flag]
    repeats = [p for p in pairs if p.kind == REPEAT]
    _leave_out(sorted(ranked, key=precedence, reverse=True), conflicts, "conflict", out)
    _leave_out([s for s in ranked if s.candidate.id not in out], repeats, "similar", out)
    settled = Settled([s for s in ranked if s.candidate.id not in out])
    settled.dropped = [(s, *out[s.candidate.id]) for s in ranked if s.candidate.id in out]
    given = {s.candidate.id for s in settled.ranked}
    settled.conflicts = [
        pair
        for pair in pairs
        if pair.kind == CONFLICT and pair.first in given and pair.second in given
    ]
    return settled


def _leave_out(
    order: Sequence[Scored], pairs: Sequence[OpenPair], reason: str, out: dict[int, tuple[str, int]]
) -> None:
    """Walk ``order``: a memory paired with one kept before it is left out (``reason``,
    naming that one); the others are kept."""
    partners: dict[int, list[int]] = {}
    for pair in pairs:
        partners.setdefault(pair.first, []).append(pair.second)
        partners.setdefault(pair.second, []).append(pair.first)
    kept: set[int] = set()
    for scored in order:
        memory_id = scored.candidate.id
        clash = next((other for other in partners.get(memory_id, ()) if other in kept), None)
        if clash is None:
            kept.add(memory_id)
        else:
            out[memory_id] = (reason, clash)


def coherence(chosen: Sequence[int], conflicts: Sequence[OpenPair]) -> float:
    """The share of pairs of ``chosen`` memories with no open conflict between them."""
    n = len(chosen)
    if n < 2:
        return 1.0
    given = set(chosen)
    clashing = {
        (pair.first, pair.second)
        for pair in conflicts
        if pair.first in given and pair.second in given
    }
    return round(1 - len(clashing) / (n * (n - 1) / 2), 4)
