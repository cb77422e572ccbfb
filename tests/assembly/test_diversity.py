"""Near-repeats (pure): an addition repeats, a changed number, path or version does not."""

from __future__ import annotations

import pytest

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
