"""Reading two memories side by side: repeat, possible conflict, or neither (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge import embeddings
from knowledge.contradictions import CONFLICT, REPEAT, Verdict
from knowledge.contradictions import compare as compare_words
from knowledge.reading import read


def compare(a: str, b: str) -> Verdict:
    """As the store compares two memories: with the cosine of their embeddings by the
    configured (offline) model."""
    model = embeddings.configured()
    assert model is not None
    vectors = model.embed([a, b])
    return compare_words(a, b, cosine=float(np.dot(vectors[0], vectors[1])))


CONFLICTS = [
    # a different number for the same quantity
    ("HTTP calls time out after 10 seconds.", "HTTP calls time out after 30 seconds."),
    ("The worker pool runs 8 workers.", "The worker pool runs 4 workers."),
    # another version of the same thing, inside longer tokens too
    ("The service runs on Python 3.11 (python:3.11-slim).", "The image is python:3.12-slim now."),
    # one side denies what the other asserts
    ("Always run migrations in tests.", "Never run migrations in tests."),
    ("Run tests with pytest -n auto.", "Tests run with manage.py test; pytest is not installed."),
    # opposite words
    ("Feature flags are enabled in staging.", "Feature flags are disabled in staging."),
    # a declared change against a memory that still says the old thing
    ("Use pnpm for installs.", "We moved from pnpm to npm for installs."),
    ("Config loading uses viper.", "We replaced viper with koanf for config loading."),
    # the thing prescribed, swapped
    ("Use pnpm for installs.", "Use npm for installs."),
]

REPEATS = [
    ("Full test suite required when modifying src/core/.", "Full test suite required when"
     " modifying src/core/. (seen again in run-004)"),
    ("Do not commit .env files.", "Never commit .env files."),
    ("Rule 1: keep the ledger balanced.", "Rule 2: keep the ledger balanced."),
]  # fmt: skip

NEITHER = [
    # related, both true: another quantity of the same thing
    ("HTTP client timeout is 10 s.", "HTTP client retries 3 times."),
    # the same setting for another scope
    ("Staging uses 2 replicas.", "Production uses 6 replicas."),
    ("The block cache defaults to 512 MiB.", "Tests set the block cache to 8 MiB."),
    # more about the same subject
    ("Use pnpm for installs.", "Run pnpm install --frozen-lockfile in CI."),
    # unrelated
    ("Use pnpm for installs.", "Invoice PDFs are rendered by WeasyPrint in a Celery task."),
    # references and trailers are provenance: these say different things
    ("Add Client.stream() method (#600).", "Consistent multidict methods (#1089)."),
    (
        "Tighten public client methods. Co-authored-by: Ann Lee <ann@example.com>",
        "Tighten public API on auth classes. Co-authored-by: Ann Lee <ann@example.com>",
    ),
    # related only through a name: another word beside it is no contradiction
    ("Disable HTTP/2 strict header validation.", "HTTP/2 refactoring of the pool."),
]


@pytest.mark.parametrize(("a", "b"), CONFLICTS)
def test_a_different_claim_about_the_same_thing_is_a_possible_conflict(a, b):
    verdict = compare(a, b)
    assert verdict.kind == CONFLICT, verdict.evidence
    assert verdict.evidence["signals"]
    assert verdict.evidence["differs"]
    # It is the same verdict whichever side comes first.
    assert compare(b, a).kind == CONFLICT


@pytest.mark.parametrize(("a", "b"), REPEATS)
def test_the_same_claim_is_a_repeat(a, b):
    assert compare(a, b).kind == REPEAT
    assert compare(b, a).kind == REPEAT


@pytest.mark.parametrize(("a", "b"), NEITHER)
def test_compatible_and_unrelated_memories_are_neither(a, b):
    assert compare(a, b).kind is None
    assert compare(b, a).kind is None


def test_the_evidence_names_what_differs():
    verdict = compare("Requests time out after 10 seconds.", "Requests time out after 30 seconds.")
    number = verdict.evidence["differs"][0]
    assert (number["signal"], number["first"], number["second"]) == ("number", "10 s", "30 s")
    assert verdict.evidence["similarity"] >= 0.6


def test_the_threshold_decides_what_is_compared():
    a, b = "Use pnpm for installs.", "Use npm for installs."
    # Without an embedding the share of shared words decides; a cosine raises it.
    assert compare_words(a, b, similarity=0.6).kind is None
    assert compare_words(a, b, cosine=0.86, similarity=0.6).kind == CONFLICT
    assert compare_words(a, b, cosine=0.86, similarity=0.9).kind is None


def test_a_numbered_label_and_a_run_reference_are_not_claims():
    words = read("Rule 3: retries are capped (seen again in run-042).")
    assert not any(value == "3" for _, _, value in words.numbers)
    assert "run-042" not in words.content


def test_a_negative_word_denies_like_not():
    assert "icloud" in read("The cache is excluded from iCloud backup.").negated
    assert "pytest" in read("pytest is not a dependency.").negated
    assert "pytest" in read("Run tests with pytest.").asserted
