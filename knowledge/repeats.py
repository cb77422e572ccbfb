"""Whether one memory repeats another: neither adds anything of substance (pure, two
readings in; knowledge.contradictions asks it once no class finds a disagreement)."""

from __future__ import annotations

import re

from knowledge.claims import Quantity, root, same_value
from knowledge.reading import STOPWORDS, Words, overlap, stem
from knowledge.said import Read

# How many words that carry meaning a memory needs to repeat another with other words.
SUBSTANCE = 3
# How many such words two memories that say one thing in other words have in common.
PARAPHRASE_WORDS = 4

# The parts of a qualified name, a path or a compound ("tokio::sync::Mutex",
# "subscription.billing_anchor", "request/response", "40M-row").
_PARTS = re.compile(r"::|[./:\-]+")
_TOKEN = re.compile(r"[\w.%]+")


def repeats(
    a: Words, b: Words, threshold: float, cosine: float | None, common: frozenset[str] = frozenset()
) -> bool:
    """Neither adds anything of substance: the same names, numbers and identifiers (at
    least ``threshold`` of the smaller side's are in the other), and either nearly all of
    the smaller one's words in the larger or, for a paraphrase, one meaning to the model."""
    content_a, content_b = _said(a, common), _said(b, common)
    (small, small_content), (large, large_content) = sorted(
        ((a, content_a), (b, content_b)), key=lambda side: len(side[1])
    )
    # A text of one or two words that carry meaning ("fix for the fix") says too little to
    # repeat another, unless the other says it word for word.
    if len(small_content) < SUBSTANCE and a.tokens != b.tokens:
        return False
    if not small_content:
        return a.tokens == b.tokens and bool(a.tokens)
    covered = len(small_content & large_content) / len(small_content)
    specific_small, specific_large = small.specific - common, large.specific - common
    if (specific_small or specific_large) and not (
        # most of the smaller one's names as written, and few more in the larger; or each
        # side's names in any spelling (``same_names``)
        (
            overlap(specific_small, specific_large) >= threshold
            and len(specific_large - specific_small) <= max(2, len(specific_small))
        )
        or same_names(a, b, common)
    ):
        return False
    extra = large_content - small_content
    missing = len(small_content) - len(small_content & large_content)
    # Nearly all of the smaller one's words, at most one in four of them missing (in a short
    # memory, a missing word is often the very thing it is about: "cookie support").
    if (
        covered >= threshold
        and missing * 4 < len(small_content)
        and (len(extra) <= max(3, len(small_content)))
    ):
        return True
    # Paraphrases: other words for the same claim, which the model sees as one meaning: the
    # nearer in meaning, the fewer words they need in common, but never fewer than
    # PARAPHRASE_WORDS (two short lines of a history about one file are two events).
    return (
        cosine is not None
        and cosine + covered >= 1.2
        and covered >= 0.4
        and len(small_content & large_content) >= PARAPHRASE_WORDS
        and len(extra) <= max(3, len(small_content))
    )


def same_names(a: Words, b: Words, common: frozenset[str] = frozenset()) -> bool:
    """Each side's names, numbers and identifiers are said by the other, however written:
    a name in capitals as a plain word ("Celery" / "celery"), a qualified name by its last
    part ("tokio::sync::Mutex" / "Mutex"), a quantity in other units ("90 seconds" / "1.5
    minutes"). At most two are not, all on one side: each naming a thing of its own
    ("Pillow" / "ImageMagick") is two things, not one said twice."""
    left, right = _unsaid(a, b, common), _unsaid(b, a, common)
    return not (left and right) and len(left | right) <= 2


def _unsaid(side: Words, other: Words, common: frozenset[str]) -> set[str]:
    """The names of ``side`` that ``other`` does not say in any spelling."""
    plain = other.content | other.specific
    said = plain | {part for token in other.specific for part in _parts(token)}
    quantities, own = _quantities(other.text), _quantities(side.text)
    unsaid = set()
    for token in side.specific - common:
        if token in said:
            continue
        parts = _parts(token)
        # Said whole, or a qualified name by its last part on its own ("Mutex"), not by
        # another name of that last part ("Release.xcconfig").
        if parts and all(part in said for part in parts):
            continue
        if len(parts) > 1 and parts[-1] in plain:
            continue
        if any(ch.isdigit() for ch in token):
            stated = [q for q in own if token in side.text[q.span[0] : q.span[1]].lower()]
            if any(same_value(q, theirs) for q in stated for theirs in quantities):
                continue
        unsaid.add(token)
    return unsaid


def _said(words: Words, common: frozenset[str]) -> frozenset[str]:
    """The words a memory says, a qualified name's parts among them, each read one way
    ("change", "changed" and "changes" alike), and each quantity as one word of its value
    ("90 seconds" and "1.5 minutes" are both "time=90")."""
    said = set(words.content - common)
    said |= {part for token in words.specific - common for part in _parts(token)}
    for quantity in _quantities(words.text):
        first, last = quantity.span
        said -= {stem(token) for token in _TOKEN.findall(words.text[first:last].lower())}
        dimension, value = quantity.dimension, quantity.value
        if dimension == "percent":
            dimension, value = "ratio", value / 100
        elif dimension == "m":  # minutes more often than metres
            dimension, value = "time", value * 60
        said.add(f"{dimension}={value:g}")
    return frozenset(root(word) for word in said)


def _quantities(text: str) -> list[Quantity]:
    return [quantity for said in Read.of(text).said for quantity in said.quantities]


def _parts(token: str) -> list[str]:
    return [stem(part) for part in _PARTS.split(token) if len(part) > 1 and part not in STOPWORDS]
