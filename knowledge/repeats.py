"""Whether one memory repeats another: neither adds anything of substance (pure, two
readings in; knowledge.contradictions asks it once no class finds a disagreement)."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from knowledge.claims import Quantity
from knowledge.reading import NUMBER, STOPWORDS, Words, overlap, stem
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
    least ``threshold`` of the smaller side's as written, or each side's in any spelling),
    and either nearly all of the smaller one's words in the larger or, for a paraphrase,
    the model's meaning and the words in common together."""
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
    shared = small_content & large_content
    covered = len(shared) / len(small_content)
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
    missing = len(small_content) - len(shared)
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
    # the shorter one word for word in one run, yet not nearly all of its words in the
    # other, is one sentence edited ("log the full request body" / "mask the full request
    # body"), not one claim said again.
    return (
        cosine is not None
        and cosine + covered >= 1.2
        and covered >= 0.4
        and _in_common(a, b, content_a, content_b, common) >= PARAPHRASE_WORDS
        and len(extra) <= max(3, len(small_content))
        and not _edited(a, b)
    )


def _in_common(
    a: Words, b: Words, said_a: frozenset[str], said_b: frozenset[str], common: frozenset[str]
) -> int:
    """How many things the two say in common, a name counted once however many parts it
    has: each side's words and whole names that the other says in any way."""
    return max(
        len(_said(a, common, whole=True) & said_b), len(_said(b, common, whole=True) & said_a)
    )


def _edited(a: Words, b: Words) -> bool:
    """Half the shorter one word for word in one run: one sentence edited."""
    run, shorter = _longest_run(a, b)
    return 2 * run >= shorter


def _longest_run(a: Words, b: Words) -> tuple[int, int]:
    """The most words other than stop words that the two say in a row, in the same order,
    and how many such words the shorter says."""
    left, right = _sequence(a), _sequence(b)
    match = SequenceMatcher(None, left, right, autojunk=False).find_longest_match()
    return match.size, min(len(left), len(right))


def _sequence(words: Words) -> list[str]:
    return [_one_way(stem(token)) for token in words.tokens if token not in STOPWORDS]


def same_names(a: Words, b: Words, common: frozenset[str] = frozenset()) -> bool:
    """Each side's names, numbers and identifiers are said by the other, however written:
    a name in capitals as a plain word ("Celery" / "celery"), a qualified name by its
    parts ("tokio::sync::Mutex" / "tokio Mutex"), a quantity of the same thing in other
    units ("90 seconds" / "1.5 minutes"). One names something the other says. What one
    alone names says where or how, never what: at most two paths, abbreviations, units, a
    word that starts a sentence or a fuller spelling of a name the other says; never a
    number or a name of its own ("Stripe", and so never "Pillow" / "ImageMagick" or
    "Debug.xcconfig" / "Release.xcconfig": two things), and a path on one side only."""
    names_a, names_b = a.specific - common, b.specific - common
    if not (names_a or names_b):
        return True
    left, right = _unsaid(a, b, common), _unsaid(b, a, common)
    unsaid = {**left, **right}
    return (
        bool((names_a - left.keys()) or (names_b - right.keys()))
        and len(unsaid) <= 2
        and all(unsaid.values())
        # a unit or an abbreviation on each side ("2 GB" / "2048 MB"), never a place
        and not (left and right and any("/" in token for token in unsaid))
    )


def _unsaid(side: Words, other: Words, common: frozenset[str]) -> dict[str, bool]:
    """The names of ``side`` that ``other`` does not say in any spelling, each with whether
    it is incidental: where or how something is said, not what (``same_names``)."""
    words = {stem(token) for token in other.tokens} | other.specific
    qualified = [parts for parts in map(_parts, other.specific) if len(parts) > 1]
    said = words | {part for parts in qualified for part in parts}
    quantities, own = _quantities(other.text), _quantities(side.text)
    unsaid = {}
    for token in side.specific - common:
        if token in words:
            continue
        if NUMBER.match(token):
            if token in said:  # "40M" in "40M-row"
                continue
            stated = [q for q in own if token in _written(q, side.text)]
            if not any(
                _same(q, theirs, side.text, other.text) for q in stated for theirs in quantities
            ):
                unsaid[token] = False
            continue
        parts = _parts(token)
        if len(parts) == 1:
            if token not in said:
                unsaid[token] = _incidental(token, side)
            continue
        # A name of which the other says a part, or which says a part of the other's, is
        # the same name; one that shares a part with another of the other's names, and is
        # neither, names another thing ("six.BytesIO" beside "io.BytesIO").
        kin = [theirs for theirs in qualified if _within(parts, theirs) or _within(theirs, parts)]
        if not kin and any(set(parts) & set(theirs) for theirs in qualified):
            unsaid[token] = False
        elif not all(part in said for part in parts if len(part) > 1 and part not in STOPWORDS):
            # "tokio::sync::Mutex" beside "tokio Mutex": a fuller spelling.
            unsaid[token] = "/" in token or parts[-1] in words
    return unsaid


def _incidental(token: str, side: Words) -> bool:
    """A name that says where or how, not what: a path, an abbreviation in capitals
    ("CLI"), a unit after a number ("30 Hz"), a word that only ever starts a sentence."""
    if "/" in token:
        return True
    if (
        token.isalpha()
        and 1 < len(token) <= 5
        and re.search(rf"\b{re.escape(token.upper())}\b", side.text)
    ):
        return True
    tokens = side.tokens
    if any(NUMBER.match(tokens[i - 1]) for i, t in enumerate(tokens) if t == token and i):
        return True
    at = [m.start() for m in re.finditer(rf"\b{re.escape(token)}\b", side.text, re.I)]
    return bool(at) and all(
        not side.text[:start].strip() or side.text[:start].rstrip()[-1] in ".!?:;" for start in at
    )


def _same(ours: Quantity, theirs: Quantity, our_text: str, their_text: str) -> bool:
    """One quantity of the same thing: the same value in one measure (never minutes,
    metres or millions, "m", against a time), with words around it in common."""
    return bool(ours.subject & theirs.subject) and _value(ours, our_text) == _value(
        theirs, their_text
    )


def _within(short: list[str], long: list[str]) -> bool:
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def _said(words: Words, common: frozenset[str], whole: bool = False) -> frozenset[str]:
    """The words a memory says, each read one way ("change", "changed" and "changes"
    alike), a qualified name's parts among them ("tokio::sync::Mutex" says "mutex"), and
    each quantity as one word of its value ("90 seconds" and "1.5 minutes" are both
    "time=5400"). ``whole``: each name one word, without its parts (what says how many
    things two memories have in common)."""
    said = set(words.content - common)
    standalone = {stem(token) for token in words.tokens} if whole else set()
    for token in words.specific - common:
        parts = [part for part in _parts(token) if len(part) > 1]
        if NUMBER.match(token) or len(parts) < 2:
            continue
        if whole:
            said -= set(parts) - standalone
        else:
            said |= set(parts)
    for quantity in _quantities(words.text):
        said -= {stem(token) for token in _written(quantity, words.text)}
        dimension, value = _value(quantity, words.text)
        said.add(f"{dimension}={value:.6g}")
    return frozenset(_one_way(word) for word in said)


def _value(quantity: Quantity, text: str) -> tuple[str, float]:
    """A quantity's measure and value as compared: a percentage as a ratio ("10%" is
    "0.1x"), unless it is a change ("by 50%")."""
    dimension, value = quantity.dimension, quantity.value
    if dimension == "percent" and text[: quantity.span[0]].split()[-1:] != ["by"]:
        dimension, value = "ratio", value / 100
    return dimension, round(value, 9)


def _one_way(word: str) -> str:
    """A stem without its final "e": "change" as "changed" and "changes" are read."""
    return word[:-1] if word.endswith("e") and len(word) > 3 and word.isalpha() else word


def _written(quantity: Quantity, text: str) -> list[str]:
    """The tokens a quantity is written with ("1.5", "hours")."""
    return _TOKEN.findall(text[slice(*quantity.span)].lower())


def _quantities(text: str) -> list[Quantity]:
    return Read.of(text).quantities


def _parts(token: str) -> list[str]:
    return [stem(part) for part in _PARTS.split(token) if part]
