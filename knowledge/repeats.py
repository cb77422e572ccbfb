"""Whether one memory repeats another: neither adds anything of substance (pure, two
readings in; knowledge.contradictions asks it once no class finds a disagreement)."""

from __future__ import annotations

import re

from knowledge.claims import UNITS, Quantity, same_value
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
    # PARAPHRASE_WORDS (two short lines of a history about one file are two events). Half
    # the smaller one word for word in one run, with a quarter of its words not in the
    # other, is one sentence edited ("log the full request body" / "mask the full request
    # body"), not one claim said again.
    return (
        cosine is not None
        and cosine + covered >= 1.2
        and covered >= 0.4
        and len(small_content & large_content) >= PARAPHRASE_WORDS
        and len(extra) <= max(3, len(small_content))
        and 2 * _longest_run(a, b) < len(small_content)
    )


def _longest_run(a: Words, b: Words) -> int:
    """The most words that carry meaning the two say in a row, in the same order."""
    left, right = _sequence(a), _sequence(b)
    longest, previous = 0, [0] * (len(right) + 1)
    for word in left:
        current = [0] * (len(right) + 1)
        for j, theirs in enumerate(right):
            if word == theirs:
                current[j + 1] = previous[j] + 1
                longest = max(longest, current[j + 1])
        previous = current
    return longest


def _sequence(words: Words) -> list[str]:
    return [_one_way(stem(token)) for token in words.tokens if token not in STOPWORDS]


def same_names(a: Words, b: Words, common: frozenset[str] = frozenset()) -> bool:
    """Each side's names, numbers and identifiers are said by the other, however written:
    a name in capitals as a plain word ("Celery" / "celery"), a qualified name by its
    parts ("tokio::sync::Mutex" / "tokio Mutex", "subscription.billing_anchor" / "the
    subscription's billing_anchor"), a quantity of the same thing in other units ("90
    seconds" / "1.5 minutes"). One names something the other says; what one alone names is
    at most two names and no number; and never does each name a thing of its own ("Pillow"
    / "ImageMagick", "Debug.xcconfig" / "Release.xcconfig"): that is two things."""
    names_a, names_b = a.specific - common, b.specific - common
    if not (names_a or names_b):
        return True
    left, right = _unsaid(a, b, common), _unsaid(b, a, common)
    unsaid = left | right
    return (
        bool((names_a - left) or (names_b - right))
        and not (left and right)
        and len(unsaid) <= 2
        and not any(ch.isdigit() for token in unsaid for ch in token)
    )


def _unsaid(side: Words, other: Words, common: frozenset[str]) -> set[str]:
    """The names of ``side`` that ``other`` does not say in any spelling."""
    words = {stem(token) for token in other.tokens} | other.specific
    qualified = [parts for parts in map(_parts, other.specific) if len(parts) > 1]
    said = words | {part for parts in qualified for part in parts}
    quantities, own = _quantities(other.text), _quantities(side.text)
    unsaid = set()
    for token in side.specific - common:
        if token in words or token in UNITS:  # "GB" is a unit, not a name
            continue
        parts = _parts(token)
        if len(parts) > 1:
            # Another name that shares a part with it names another thing ("six.BytesIO"
            # beside "io.BytesIO"); otherwise its parts of substance said anywhere say it.
            if not any(_rival(parts, theirs) for theirs in qualified) and all(
                part in said for part in parts if len(part) > 1 and part not in STOPWORDS
            ):
                continue
        elif token in said:
            continue
        if token[0].isdigit():
            stated = [q for q in own if token in _TOKEN.findall(side.text[slice(*q.span)].lower())]
            if any(
                same_value(q, theirs)
                and q.subject & theirs.subject
                and "m" not in (q.dimension, theirs.dimension)  # minutes, metres or millions
                for q in stated
                for theirs in quantities
            ):
                continue
        unsaid.add(token)
    return unsaid


def _rival(ours: list[str], theirs: list[str]) -> bool:
    """Two qualified names that share a part, neither of them within the other."""
    return bool(set(ours) & set(theirs)) and not (_within(ours, theirs) or _within(theirs, ours))


def _within(short: list[str], long: list[str]) -> bool:
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def _said(words: Words, common: frozenset[str]) -> frozenset[str]:
    """The words a memory says, a qualified name's parts among them, each read one way
    ("change", "changed" and "changes" alike), and each quantity as one word of its value
    ("90 seconds" and "1.5 minutes" are both "time=90")."""
    said = set(words.content - common)
    said |= {part for token in words.specific - common for part in _parts(token) if len(part) > 1}
    for quantity in _quantities(words.text):
        said -= {stem(token) for token in _TOKEN.findall(words.text[slice(*quantity.span)].lower())}
        dimension, value = quantity.dimension, quantity.value
        if dimension == "percent":
            dimension, value = "ratio", value / 100
        said.add(f"{dimension}={value:g}")
    return frozenset(_one_way(word) for word in said)


def _one_way(word: str) -> str:
    """A stem without its final "e": "change" as "changed" and "changes" are read."""
    return word[:-1] if word.endswith("e") and len(word) > 3 and word.isalpha() else word


def _quantities(text: str) -> list[Quantity]:
    return [quantity for said in Read.of(text).said for quantity in said.quantities]


def _parts(token: str) -> list[str]:
    return [stem(part) for part in _PARTS.split(token) if part]
