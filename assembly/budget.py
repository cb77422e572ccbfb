"""Splitting a token pool across sources (run, project, global).

Each source has a share: a fixed number of tokens, a range (minimum and maximum
fractions of the pool), or auto (a weight). Sources first get what their share
says, capped at what they can use (their demand); what a source does not use
flows to the others that still want more, by weight, within their maximum. The
allocations always add up to the pool exactly: tokens nobody can use go to the
auto sources (or, failing that, to the first source).

Why the service keeps its own copy: the Python client (clients/python,
``memory_layer_client.budget``) is a separately published package that must stand alone,
and the service must run without it (DESIGN.md 6c), so each owns this small piece of
arithmetic. The two must allocate alike, or an agent that splits its budget itself and the
service disagree: tests/test_client_agrees.py pins them to the same allocations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["fixed", "range", "auto"]


@dataclass(frozen=True)
class Share:
    kind: Kind = "auto"
    tokens: int = 0  # fixed
    minimum: float = 0.0  # range, as fractions of the pool
    maximum: float = 1.0
    weight: float = 1.0  # auto and range: how surplus is shared

    @classmethod
    def fixed(cls, tokens: int) -> Share:
        return cls(kind="fixed", tokens=max(0, tokens), weight=0.0)

    @classmethod
    def range(cls, minimum: float, maximum: float, weight: float = 1.0) -> Share:
        low, high = sorted((min(max(minimum, 0.0), 1.0), min(max(maximum, 0.0), 1.0)))
        return cls(kind="range", minimum=low, maximum=high, weight=weight)

    @classmethod
    def auto(cls, weight: float) -> Share:
        return cls(kind="auto", weight=max(weight, 0.0))


DEFAULT_SHARES: dict[str, Share] = {
    "run": Share.auto(0.4),
    "project": Share.auto(0.4),
    "global": Share.auto(0.2),
}


def _ceiling(share: Share, pool: int) -> float:
    if share.kind == "fixed":
        return float(min(share.tokens, pool))
    if share.kind == "range":
        return share.maximum * pool
    return float(pool)


def _floor(share: Share, pool: int) -> float:
    if share.kind == "fixed":
        return float(min(share.tokens, pool))
    if share.kind == "range":
        return share.minimum * pool
    return 0.0


def allocate(pool: int, shares: dict[str, Share], demand: dict[str, int]) -> dict[str, int]:
    """Whole-token allocations per source that add up to ``pool``.

    ``demand`` is what each source could use at most (e.g. the cost of all its
    candidates). A source never gets less than min(its floor, its demand) while
    the pool allows, and never more than its ceiling unless nobody else can use it.
    """
    pool = max(0, int(pool))
    names = list(shares)
    if not names:
        return {}
    want = {
        name: float(min(max(demand.get(name, 0), 0), _ceiling(shares[name], pool)))
        for name in names
    }
    # 1. Floors (fixed tokens, range minimums), scaled down if they ask for more than the pool.
    floors = {name: min(_floor(shares[name], pool), want[name]) for name in names}
    total_floor = sum(floors.values())
    scale = pool / total_floor if total_floor > pool else 1.0
    given = {name: floors[name] * scale for name in names}
    # 2. Water-filling: what is left goes to sources still below their want, by weight.
    left = pool - sum(given.values())
    while left > 1e-9:
        hungry = [n for n in names if want[n] - given[n] > 1e-9 and shares[n].weight > 0]
        if not hungry:
            break
        weights = sum(shares[n].weight for n in hungry)
        step = {n: left * shares[n].weight / weights for n in hungry}
        spent = 0.0
        for name in hungry:
            add = min(step[name], want[name] - given[name])
            given[name] += add
            spent += add
        left -= spent
        if spent <= 1e-9:
            break
    # 3. Tokens nobody can use still belong to someone: the auto sources, else the first.
    if left > 1e-9:
        takers = [n for n in names if shares[n].kind == "auto" and shares[n].weight > 0] or names[
            :1
        ]
        weights = sum(shares[n].weight for n in takers) or len(takers)
        for name in takers:
            given[name] += left * ((shares[name].weight or 1.0) / weights)
    return _round_to_pool(given, pool)


def _round_to_pool(given: dict[str, float], pool: int) -> dict[str, int]:
    """Largest-remainder rounding: whole tokens that add up to the pool exactly."""
    whole = {name: int(value) for name, value in given.items()}
    short = pool - sum(whole.values())
    by_remainder = sorted(given, key=lambda name: (given[name] - whole[name], name), reverse=True)
    for name in by_remainder[: max(short, 0)]:
        whole[name] += 1
    return whole
