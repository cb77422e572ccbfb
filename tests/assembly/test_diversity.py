"""Near-repeats (pure): an addition repeats, a changed number, path or version does not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembly.diversity import Seen, repeats, tokens

RULE = "API errors use the shape {error: {code, message, fields}}."


@pytest.mark.parametrize(
    ("first", "second", "repeat"),
    [
        (RULE, RULE + " (seen again in run-002)", True),
        (RULE, "API errors use the shape {error: {code, message, fields}}", True),
        ("HTTP client calls time out after 10 seconds.", "... after 30 seconds.", False),
        (
            "Run the full test suite when modifying src/core/ or its fixtures.",
            "Run the full test suite when modifying src/api/ or its fixtures.",
            False,
        ),
        ("Use pnpm for installs.", "Use npm for installs.", False),
        ("Pin Django to 5.2 in requirements.", "Pin Django to 5.1 in requirements.", False),
        ("Deploys happen on Tuesday.", "Migrations lock the events table.", False),
    ],
)
def test_what_counts_as_a_repeat(first, second, repeat):
    assert repeats(tokens(first), tokens(second), 0.9) is repeat
    assert repeats(tokens(second), tokens(first), 0.9) is repeat


def test_seen_names_the_better_ranked_text_repeated():
    seen = Seen(0.9)
    seen.keep(1, "Deploys happen on Tuesday.")
    seen.keep(2, RULE)
    assert seen.repeated(RULE + " (seen again in run-004)") == 2
    assert seen.repeated("Migrations lock the events table.") is None


WORDS = ["a", "b", "c", "d", "e", "f", "g", "h", "v1", "src/x", "id_7"]


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=9), min_size=1, max_size=12
    ),
    threshold=st.sampled_from([0.0, 0.5, 0.8, 0.9, 1.0]),
)
def test_the_index_finds_exactly_what_comparing_with_every_kept_text_finds(texts, threshold):
    seen = Seen(threshold)
    kept: dict[int, frozenset[str]] = {}
    for key, words in enumerate(texts):
        text = " ".join(words)
        new = tokens(text)
        expected = min(
            (k for k, old in kept.items() if new & old and repeats(new, old, threshold)),
            default=None,
        )
        assert seen.repeated(text) == expected
        if expected is None:
            seen.keep(key, text)
            kept[key] = new
