"""The service and its Python client each keep their own token counting and budget split
(memories.tokens and assembly.budget; memory_layer_client.tokens and .budget): the client
is published on its own and must not depend on the service, and the service must run
without the client. These tests keep the two copies from drifting apart: the same counts
for the same texts in every encoding, the same allocations for the same budgets and shares.
"""

from __future__ import annotations

import dataclasses

import pytest
from memory_layer_client import budget as client_budget
from memory_layer_client import tokens as client_tokens

from assembly import budget
from memories import tokens

TEXTS = [
    "",
    "hello world",
    "hello <|endoftext|>",
    "Run migrations with `python manage.py migrate --plan` before deploying.",
    "Timeouts: 30 s in production, 10 s on staging (see #812).",
    "ünïcödé — naïve café, 日本語のテキスト, emoji 🚀🔥, tabs\tand\nnew lines",
    "def count_tokens(text: str) -> int:\n    return len(encode(text))\n",
    " leading and trailing spaces  ",
    "x" * 5000,
]


def test_they_support_the_same_vocabularies() -> None:
    assert tokens.VOCABULARIES == client_tokens.VOCABULARIES
    assert tokens.SUPPORTED_ENCODINGS == client_tokens.SUPPORTED_ENCODINGS


@pytest.mark.parametrize("encoding", tokens.SUPPORTED_ENCODINGS)
def test_they_count_the_same_tokens(encoding: str) -> None:
    assert [tokens.count_tokens(text, encoding) for text in TEXTS] == [
        client_tokens.count_tokens(text, encoding) for text in TEXTS
    ]


def test_they_refuse_the_same_encodings() -> None:
    with pytest.raises(tokens.UnknownEncoding):
        tokens.count_tokens("x", "p50k_base")
    with pytest.raises(client_tokens.UnknownEncoding):
        client_tokens.count_tokens("x", "p50k_base")


# Shares as (constructor, arguments): each copy builds its own from the same recipe.
SHARES = [
    {},
    {"run": ("auto", (0.4,)), "project": ("auto", (0.4,)), "global": ("auto", (0.2,))},
    {"run": ("fixed", (300,)), "project": ("auto", (1.0,)), "global": ("auto", (0.0,))},
    {"run": ("range", (0.1, 0.5)), "project": ("range", (0.3, 0.2, 2.0)), "global": ("auto", (1,))},
    {"run": ("fixed", (5000,)), "project": ("fixed", (5000,))},
    {"run": ("range", (0.6, 0.9)), "project": ("range", (0.6, 0.9)), "global": ("fixed", (-5,))},
    {"only": ("auto", (0.0,))},
]
DEMANDS = [
    {},
    {"run": 0, "project": 0, "global": 0},
    {"run": 120, "project": 4000, "global": 35},
    {"run": 10**6, "project": 10**6, "global": 10**6, "only": 10**6},
    {"run": -3, "project": 7, "global": 1},
]
POOLS = [0, 1, 7, 100, 999, 2000, 8191, -50]


def _shares(module: object, recipe: dict[str, tuple[str, tuple[float, ...]]]) -> dict:
    share = module.Share  # type: ignore[attr-defined]
    return {name: getattr(share, kind)(*args) for name, (kind, args) in recipe.items()}


def test_they_have_the_same_default_shares() -> None:
    assert {name: dataclasses.asdict(share) for name, share in budget.DEFAULT_SHARES.items()} == {
        name: dataclasses.asdict(share) for name, share in client_budget.DEFAULT_SHARES.items()
    }


@pytest.mark.parametrize("recipe", SHARES)
def test_they_allocate_the_same(recipe: dict[str, tuple[str, tuple[float, ...]]]) -> None:
    ours, theirs = _shares(budget, recipe), _shares(client_budget, recipe)
    assert [dataclasses.asdict(s) for s in ours.values()] == [
        dataclasses.asdict(s) for s in theirs.values()
    ]
    for pool in POOLS:
        for demand in DEMANDS:
            assert budget.allocate(pool, ours, demand) == client_budget.allocate(
                pool, theirs, demand
            ), (pool, demand)
