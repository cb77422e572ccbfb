"""Repeats and contradictions between two memories (pure: text in, verdict out).

Each text is read by knowledge.reading; this module compares the two readings.

Two memories about the same subject (their embeddings close, or many words shared) are
read side by side, sentence by sentence:

* a **conflict** when a sentence of one and its counterpart in the other make different
  claims about what they share: a different number for the same quantity ("time out after
  10 seconds" / "after 30 seconds"), another version of the same thing ("Python 3.11" /
  "3.12"), one side denying what the other asserts ("run migrations in tests" / "never run
  migrations in tests"), opposite words ("enable" / "disable", "sync" / "async"), a
  declared change ("we moved from pnpm to npm", "X was replaced by Y", "X is deprecated")
  against a memory that still says the old thing, or the one thing they prescribe swapped
  for another ("use pnpm" / "use npm");
* a **repeat** when neither adds anything of substance to the other: the smaller one's
  words are (almost) all in the larger one, and what differs is no number, version, path
  or name;
* otherwise nothing (related but compatible, or unrelated).

Differences about a different scope are not contradictions: the same setting for another
environment ("staging" / "production"), platform or path says something else, not the
opposite. The evidence names what differs, for a reviewer to see at a glance.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from knowledge.reading import (
    NEGATORS,
    NUMBER,
    STOPWORDS,
    Words,
    overlap,
    read,
    sentences,
    stem,
    word_set,
)

REPEAT = "repeat"
CONFLICT = "conflict"


# Opposites, by their stems (see ``stem``): one on each side is a contradiction.
_OPPOSITES = [
    ("enabl", "disabl"),
    ("allow", "deny"),
    ("allow", "block"),
    ("allow", "forbid"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("synchronously", "asynchronously"),
    ("requir", "optional"),
    ("mandatory", "optional"),
    ("always", "never"),
    ("before", "after"),
    ("increas", "decreas"),
    ("true", "false"),
    ("on", "off"),
    ("includ", "exclud"),
    ("accept", "reject"),
    ("add", "remov"),
    ("keep", "drop"),
    ("keep", "delet"),
    ("public", "private"),
    ("lazy", "eager"),
    ("lazily", "eagerly"),
    ("strict", "lenient"),
    ("upper", "lower"),
    ("larger", "smaller"),
    ("more", "less"),
    ("faster", "slower"),
    ("higher", "lower"),
    ("first", "last"),
    ("start", "stop"),
    ("open", "clos"),
    ("safe", "unsafe"),
    ("supported", "unsupported"),
    ("work", "break"),
    ("pass", "fail"),
    ("succeed", "fail"),
    ("encrypt", "decrypt"),
    ("mutable", "immutable"),
    ("enabled", "disabled"),
    ("inclusive", "exclusive"),
    ("serial", "parallel"),
    ("sequential", "parallel"),
    ("local", "remote"),
    ("manual", "automatic"),
    ("manually", "automatically"),
]
OPPOSITES: dict[str, frozenset[str]] = {}
for _left, _right in _OPPOSITES:
    OPPOSITES[_left] = OPPOSITES.get(_left, frozenset()) | {_right}
    OPPOSITES[_right] = OPPOSITES.get(_right, frozenset()) | {_left}
# Words that name where a claim holds: two claims for different ones of these are about
# different scopes, not opposite claims.
SCOPES = word_set(
    "staging stage production prod dev development test testing qa ci local preview "
    "sandbox canary live beta alpha nightly ios android web mobile desktop linux windows "
    "macos mac darwin arm arm64 x86 amd64 server client frontend backend admin internal "
    "external public private read write reads writes primary replica leader follower eu "
    "us asia weekday weekend weekdays weekends night day monday tuesday wednesday "
    "thursday friday saturday sunday"
)
# Verbs and prepositions before the thing a memory prescribes: "use X", "prefer X", ...
PRESCRIBE = word_set(
    "use uses using prefer prefers preferred choose chose pick adopt adopted rely relies via "
    "switch switched migrate migrated move moved replace replaced"
)


SCOPE_STEMS = frozenset(stem(word) for word in SCOPES)
# Spellings of the same scope.
_SAME_SCOPE = {
    "prod": "production",
    "stage": "staging",
    "stag": "staging",
    "dev": "development",
    "develop": "development",
    "testing": "test",
    "mac": "macos",
    "darwin": "macos",
    "amd64": "x86",
    "arm64": "arm",
    "read": "reads",
    "write": "writes",
}


@dataclass(frozen=True)
class Verdict:
    """``kind`` is REPEAT, CONFLICT or None; ``evidence`` says why, for a reviewer."""

    kind: str | None
    similarity: float
    evidence: dict[str, object] = field(default_factory=dict)


def _said(words: Words) -> str:
    return words.text if len(words.text) <= 120 else words.text[:119] + "…"


def _scopes(words: Words) -> set[str]:
    return {_SAME_SCOPE.get(word, word) for word in words.content & SCOPE_STEMS}


def _other_scope(a: Words, b: Words) -> bool:
    """Whether the two speak of different scopes: another environment, platform or path, or
    a default against a scope's own setting."""
    scopes_a, scopes_b = _scopes(a), _scopes(b)
    if (scopes_a - scopes_b) and (scopes_b - scopes_a):
        return True
    if (scopes_a ^ scopes_b) and "default" in (a.content | b.content):
        return True
    only_a, only_b = a.content - b.content, b.content - a.content
    paths_a = {t for t in only_a if "/" in t.strip("/")}
    paths_b = {t for t in only_b if "/" in t.strip("/")}
    return bool(paths_a and paths_b)


def _numbers(a: Words, b: Words) -> list[dict[str, str]]:
    """The same quantity (a shared word it counts, the same kind of unit) with values that
    have nothing in common."""
    found = []
    said: list[dict[str, set[str]]] = []
    shared = {n[0] for n in a.numbers} & {n[0] for n in b.numbers} - {""}
    # The nearest word to the numbers first: it names what they count.
    for what in sorted(shared, key=lambda w: (a.nearness[w] + b.nearness[w], w)):
        units = {n[1] for n in a.numbers if n[0] == what} | {
            n[1] for n in b.numbers if n[0] == what
        }
        if len(units - {""}) > 1:
            continue  # 30 s and 5 min: the same span, perhaps, in other units
        left = {n[2] for n in a.numbers if n[0] == what}
        right = {n[2] for n in b.numbers if n[0] == what}
        # A value the other side names anywhere, in the same unit, is no contradiction.
        every_a = {n[2] for n in a.numbers if n[1] in units}
        every_b = {n[2] for n in b.numbers if n[1] in units}
        if (
            left.isdisjoint(every_b)
            and right.isdisjoint(every_a)
            and (left, right) not in [(f["left"], f["right"]) for f in said]
        ):
            said.append({"left": left, "right": right})
            unit = next(iter(units - {""}), "")
            found.append(
                {
                    "signal": "number",
                    "first": " ".join(sorted(left)) + (f" {unit}" if unit else ""),
                    "second": " ".join(sorted(right)) + (f" {unit}" if unit else ""),
                    "about": what,
                }
            )
    return found


def _denied(a: Words, b: Words, words: frozenset[str]) -> set[str]:
    """The words of ``words`` one side only ever denies and the other, which denies
    nothing, asserts."""
    if a.denies == b.denies:
        return set()
    return {
        word
        for word in words
        if (word in a.negated and word in b.asserted) or (word in b.negated and word in a.asserted)
    }


def _claims(a: Words, b: Words, *, whole: bool) -> list[dict[str, str]]:
    """The contradictions between two texts (``whole``) or two aligned sentences: each a
    ``signal`` (number, negation, opposite, change, name) with what the ``first`` and the
    ``second`` say, and what it is ``about``."""
    found: list[dict[str, str]] = []
    if _other_scope(a, b):
        return found
    found += _numbers(a, b)
    # One side denies what the other asserts: a name or identifier anywhere, any word of two
    # sentences about the same thing.
    denied = _denied(a, b, a.content & b.content)
    if denied:
        found.append(
            {
                "signal": "negation",
                "first": _said(a),
                "second": _said(b),
                "about": " ".join(sorted(denied)),
            }
        )
    only_a, only_b = a.content - b.content, b.content - a.content
    for word in sorted(only_a):
        opposite = OPPOSITES.get(word, frozenset()) & only_b
        if opposite:
            found.append({"signal": "opposite", "first": word, "second": sorted(opposite)[0]})
    # A declared change against a memory that still says the old thing (or not the new one).
    for changed, other in ((a, b), (b, a)):
        still = {word for word in changed.old if word in other.content and word not in other.old}
        brought = {word for word in changed.new if word not in other.content}
        if still or (whole and brought and not changed.old and other.content & changed.content):
            about = still or brought
            found.append(
                {
                    "signal": "change",
                    "first": _said(a),
                    "second": _said(b),
                    "about": " ".join(sorted(about)),
                }
            )
    swapped = [] if whole and len(a.content) + len(b.content) > 16 else _swapped(a, b)
    if swapped:
        found.append({"signal": "name", "first": swapped[0], "second": swapped[1]})
    return found


def _swapped(a: Words, b: Words) -> list[str]:
    """A word in the same place after the same prescribing word ("use pnpm" / "use npm"),
    each missing from the other side, neither a scope or a common word."""
    follows_a = _prescribed(a)
    follows_b = _prescribed(b)
    for verb in sorted(set(follows_a) & set(follows_b)):
        left, right = follows_a[verb], follows_b[verb]
        if (
            left != right
            and left not in b.content
            and right not in a.content
            and left not in SCOPE_STEMS
            and right not in SCOPE_STEMS
            and stem(left) not in OPPOSITES.get(stem(right), frozenset())
        ):
            return [left, right]
    return []


def _prescribed(words: Words) -> dict[str, str]:
    """Each prescribing word's object: the first word after it that carries meaning."""
    found: dict[str, str] = {}
    tokens = words.tokens
    for index, token in enumerate(tokens[:-1]):
        if token not in PRESCRIBE:
            continue
        for ahead in tokens[index + 1 : index + 3]:
            if ahead in STOPWORDS or ahead in NEGATORS or NUMBER.match(ahead):
                continue
            found.setdefault(token, stem(ahead))
            break
    return found


def _aligned(a: str, b: str, threshold: float) -> Iterable[tuple[Words, Words]]:
    """The sentence pairs of ``a`` and ``b`` about the same thing: each sentence with its
    closest counterpart, where they share at least ``threshold`` of the smaller one's words."""
    left = [read(s) for s in sentences(a)]
    right = [read(s) for s in sentences(b)]
    for one in left:
        best = max(right, key=lambda other: overlap(one.content, other.content))
        if overlap(one.content, best.content) >= threshold:
            yield one, best
    for other in right:
        best = max(left, key=lambda one: overlap(one.content, other.content))
        if overlap(best.content, other.content) >= threshold:
            yield best, other


# Two sentences are about the same thing when they share this share of the smaller one's words.
ALIGNED = 0.5
# Two memories that share a name or identifier are about the same thing at a lower
# similarity than ``similarity`` asks of the others, but not below this.
NAMED = 0.25


def compare(
    a: str,
    b: str,
    *,
    cosine: float | None = None,
    similarity: float = 0.6,
    repeat_overlap: float = 0.7,
) -> Verdict:
    """Whether ``a`` and ``b`` repeat or contradict each other. ``cosine`` is their
    embeddings' (None without a model). They are read side by side when they are about the
    same thing: that cosine, or the share of words they share, at least ``similarity``; or
    a name, identifier or version in common and at least NAMED."""
    whole_a, whole_b = read(a), read(b)
    shared = overlap(whole_a.content, whole_b.content)
    score = max(cosine if cosine is not None else 0.0, shared)
    named = (
        bool(whole_a.specific & whole_b.specific)
        or bool(_measured(whole_a) & _measured(whole_b))
        or bool((whole_a.old | whole_a.new) & whole_b.content)
        or bool((whole_b.old | whole_b.new) & whole_a.content)
    )
    evidence: dict[str, object] = {
        "similarity": round(score, 3),
        "sharedWords": round(shared, 3),
        **({"cosine": round(cosine, 3)} if cosine is not None else {}),
    }
    if score < similarity and not (named and score >= NAMED):
        return Verdict(None, score, evidence)
    differs = _claims(whole_a, whole_b, whole=True)
    seen: set[tuple[str, str]] = set()
    for left, right in _aligned(a, b, ALIGNED):
        if (left.text, right.text) in seen or (left.text, right.text) == (a, b):
            continue
        seen.add((left.text, right.text))
        differs += [c for c in _claims(left, right, whole=False) if c not in differs]
    if score < similarity:
        # Related only through a shared name: only a value or a declared change of it
        # counts (a denial or another word beside a name says something else about it).
        differs = [c for c in differs if c["signal"] in ("number", "change")]
    only_a = sorted(whole_a.content - whole_b.content)
    only_b = sorted(whole_b.content - whole_a.content)
    evidence["onlyFirst"] = only_a[:12]
    evidence["onlySecond"] = only_b[:12]
    if differs:
        evidence["signals"] = sorted({claim["signal"] for claim in differs})
        evidence["differs"] = differs[:6]
        return Verdict(CONFLICT, score, evidence)
    if score >= similarity and _repeats(whole_a, whole_b, repeat_overlap, cosine):
        return Verdict(REPEAT, score, evidence)
    return Verdict(None, score, evidence)


def _measured(words: Words) -> set[str]:
    """What a text gives a version or a measure of (a value with a unit or a dot): a name
    that two texts share only through such values is the same subject ("Airflow 2.7.3" /
    "Airflow 2.9.1"); a bare count says too little ("method 600")."""
    return {what for what, unit, value in words.numbers if what and (unit or "." in value)}


def _repeats(a: Words, b: Words, threshold: float, cosine: float | None) -> bool:
    """Neither adds anything of substance: the same names, numbers and identifiers (at
    least ``threshold`` of the smaller side's are in the other), and either nearly all of
    the smaller one's words in the larger or, for a paraphrase, one meaning to the model."""
    small, large = (a, b) if len(a.content) <= len(b.content) else (b, a)
    if not small.content:
        return False
    covered = len(small.content & large.content) / len(small.content)
    if small.specific or large.specific:
        names = overlap(small.specific, large.specific) if small.specific else 0.0
        if names < threshold or len(large.specific - small.specific) > max(2, len(small.specific)):
            return False
    extra = large.content - small.content
    missing = len(small.content) - len(small.content & large.content)
    # Nearly all of the smaller one's words, at most one in four of them missing (in a short
    # memory, a missing word is often the very thing it is about: "cookie support").
    if (
        covered >= threshold
        and missing * 4 < len(small.content)
        and (len(extra) <= max(3, len(small.content)))
    ):
        return True
    # Paraphrases: other words for the same claim, which the model sees as one meaning.
    return cosine is not None and cosine >= 0.8 and covered >= 0.4
