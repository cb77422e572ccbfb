"""Contradictions by class between two memories (pure: two texts in, findings out).

Two sentences, one from each memory, are read side by side when they are about the same
thing (they share words that carry meaning, beside those the neighbourhood shares anyway).
Each class reads them in its own way (knowledge.claims for quantities, versions and
schedules; here for the rest):

* **polarity**: one forbids ("never", "must not", "don't", "avoid") what the other does or
  prescribes, the same action on the same thing, in other words too ("never write to the
  cache from handlers" / "handlers fill the cache on a miss"); or opposite words about the
  same thing ("enabled" / "disabled", "required" / "optional");
* **exclusivity**: "only X" against another thing in X's place ("also Y", "Y too");
* **naming**: the same names start or end with something else, or follow another case
  style (snake_case / camelCase);
* **choice**: a declared change against a memory that still says the old thing, or one
  prescribed thing swapped for another ("use pnpm" / "use npm"): knowledge.contradictions.

Each finding names its class, what it is about and the two spans that disagree (offsets in
each memory's text), for a reviewer to see side by side.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from knowledge import claims
from knowledge.claims import Sentence, split
from knowledge.reading import STOPWORDS, Words, read, stem, word_set

# Words that say where a claim holds: two claims for different ones are about different
# scopes, not opposite claims (knowledge.contradictions.SCOPES, by stem).
QUANTITY, VERSION, SCHEDULE = "quantity", "version", "schedule"
POLARITY, EXCLUSIVITY, NAMING, CHOICE = "polarity", "exclusivity", "naming", "choice"
CLASSES = (QUANTITY, VERSION, SCHEDULE, POLARITY, EXCLUSIVITY, NAMING, CHOICE)


@dataclass(frozen=True)
class Finding:
    kind: str  # one of CLASSES
    about: str
    first: tuple[int, int]  # offsets in the first text
    second: tuple[int, int]
    # How sure the rule is (a strong finding opens a pair on its own).
    strength: float = 1.0

    def evidence(self, a: str, b: str) -> dict[str, object]:
        return {
            "class": self.kind,
            "about": self.about,
            "first": a[self.first[0] : self.first[1]],
            "second": b[self.second[0] : self.second[1]],
            "firstSpan": list(self.first),
            "secondSpan": list(self.second),
        }


@dataclass
class Read:
    """A memory's sentences with what each claims, each read once (a memory is compared
    with several candidates: ``of`` keeps the latest texts read)."""

    text: str
    sentences: list[Sentence]
    words: list[frozenset[str]] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> Read:
        return _read(text)


@dataclass
class Said:
    """What one sentence claims, by class, read when first asked."""

    sentence: Sentence
    _versions: list[claims.Version] | None = None
    _schedules: list[claims.Schedule] | None = None
    _quantities: list[claims.Quantity] | None = None
    _reading: Words | None = None

    @property
    def versions(self) -> list[claims.Version]:
        if self._versions is None:
            self._versions = claims.versions(self.sentence)
        return self._versions

    @property
    def schedules(self) -> list[claims.Schedule]:
        if self._schedules is None:
            self._schedules = claims.schedules(self.sentence)
        return self._schedules

    @property
    def quantities(self) -> list[claims.Quantity]:
        if self._quantities is None:
            self._quantities = claims.quantities(self.sentence)
        return self._quantities

    @property
    def reading(self) -> Words:
        if self._reading is None:
            self._reading = read(self.sentence.text)
        return self._reading


@functools.lru_cache(maxsize=4096)
def _read(text: str) -> Read:
    sentences = split(text)
    return Read(
        text, sentences, [frozenset(_words(s)) for s in sentences], [Said(s) for s in sentences]
    )


# Words that say a thing does harm: a memory that says so of X agrees with one that says
# "don't X", it does not rely on X.
HARM = frozenset(
    stem(word)
    for word in word_set(
        "slow slows slowed revert reverted hang hangs break breaks broke broken leak leaks "
        "error errors problem issue bug wrong bad stale duplicate duplicates lose lost loses "
        "corrupt corrupts timeout risk careful beware caution danger dangerous expensive "
        "costly deadlock deadlocks race fail fails failed crash crashes crashed"
    )
)


@functools.lru_cache(maxsize=16384)
def _all(pattern: re.Pattern[str], text: str) -> tuple[re.Match[str], ...]:
    """A pattern's matches in a sentence, found once: a sentence is compared with many."""
    return tuple(pattern.finditer(text))


def _first(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = _all(pattern, text)
    return found[0] if found else None


def _words(sentence: Sentence) -> set[str]:
    """The stems of a sentence's words that carry meaning; a path or a dotted name gives
    its parts too ("log/slog" says "slog")."""
    return {word for token in sentence.tokens for word in _words_of(token.word)}


def _words_of(token: str) -> set[str]:
    return {
        stem(word)
        for word in {token, *re.split(r"[/.:]+", token)}
        if word and word[:1].isalpha() and word not in STOPWORDS and len(word) > 1
    }


# Verbs that do the same to a thing: a prohibition of one is contradicted by another.
_SAME_ACTION = [
    "write writ fill populate store save set put cache persist insert update",
    "read fetch load get query look",
    "call invoke hit use request",
    "run execute start launch spawn trigger schedule",
    "delete remove drop purge truncate clear wipe",
    "create add insert make generate",
    "commit push merge deploy release ship publish",
    "log print emit record",
    "block wait sleep",
    "retry rerun repeat",
    "import depend require",
    "share expose return send",
    "mock stub fake patch",
    "enable set turn activate switch",
]
ACTION: dict[str, set[int]] = {}
for _group, _said in enumerate(_SAME_ACTION):
    for _word in _said.split():
        ACTION.setdefault(stem(_word), set()).add(_group)

_PROHIBIT = re.compile(
    r"\b(?:never|do\s+not|don't|does\s+not|doesn't|must\s+not|mustn't|should\s+not|"
    r"shouldn't|cannot|can't|may\s+not|avoid(?:s|ing)?|no\s+longer|not\s+allowed\s+to|"
    r"forbidden\s+to|(?:is|are)\s+not\s+(?:allowed|permitted)\s+to|stop(?:ped)?|without)\b",
    re.I,
)
_NEGATED = re.compile(r"\b(?:not|never|no|don't|doesn't|isn't|aren't|cannot|can't|without)\b", re.I)
_OPPOSITE_PAIRS = [
    ("enabl", "disabl"), ("allow", "forbid"), ("allow", "deny"), ("allow", "block"),
    ("sync", "async"), ("synchronous", "asynchronous"), ("requir", "optional"),
    ("mandatory", "optional"), ("always", "never"), ("public", "private"),
    ("lazy", "eager"), ("lazily", "eagerly"), ("inclusive", "exclusive"), ("on", "off"),
    ("accept", "reject"), ("include", "exclude"), ("includ", "exclud"), ("strict", "lenient"),
    ("mutable", "immutable"), ("manual", "automatic"), ("manually", "automatically"),
    ("sequential", "parallel"), ("serial", "parallel"), ("blocking", "non-blocking"),
    ("incremental", "full"), ("before", "after"), ("over", "under"), ("must", "optional"),
    ("enabl", "off"), ("on", "disabl"),
]  # fmt: skip
OPPOSITE: dict[str, set[str]] = {}
for _left, _right in _OPPOSITE_PAIRS:
    OPPOSITE.setdefault(_left, set()).add(_right)
    OPPOSITE.setdefault(_right, set()).add(_left)

_CASE_STYLES = {
    "snake_case": "snake", "snake": "snake", "camelcase": "camel", "camel": "camel",
    "pascalcase": "pascal", "pascal": "pascal", "kebab-case": "kebab", "kebab": "kebab",
    "screaming_snake_case": "screaming", "upper_snake_case": "screaming",
    "screaming_snake": "screaming", "dotted": "dotted",
    "lowercase": "lower", "lower-case": "lower", "uppercase": "upper", "upper-case": "upper",
}  # fmt: skip
_AFFIX = re.compile(
    r"\b(start|begin|end|prefix|suffix)(?:s|es|ed|ing)?\b(?:\s+(?:with|by))?\s+(?P<what>[^.;,]+)"
    r"|\b(?:the|a|an)\s+(?P<what2>\S+)\s+(prefix|suffix)\b"
    r"|\bnamed?\s+(?:\w+\s+){0,2}?(after|with|by|for)\s+(?P<what3>[^.;,]+)",
    re.I,
)
_ONLY = re.compile(
    r"\b(?:only|exclusively|solely|nothing\s+but)\s+(?:(?:via|through|with|by|on|in|from|use|"
    r"uses|using|the|a|an)\s+)*(?P<after>[\w./@+-]+)|(?P<before>[\w./@+-]+)[- ]only\b",
    re.I,
)
_MORE = re.compile(r"\b(?:also|too|as\s+well|either|any|or|alongside|besides)\b", re.I)


def _shared(a: frozenset[str], b: frozenset[str], common: frozenset[str]) -> set[str]:
    return set(a & b) - common


def _action(sentence: Sentence, after: int) -> tuple[set[int], str | None, int]:
    """After a prohibition: the action (its groups), the thing it acts on first (its
    object's stem), and the index of the last token read."""
    groups: set[int] = set()
    last = after
    for index in range(after, min(len(sentence.tokens), after + 6)):
        word = sentence.tokens[index].word
        if word in STOPWORDS or word in ("not", "no"):
            continue
        last = index
        if not groups:
            groups = ACTION.get(stem(word), set())
            if not groups:
                return groups, None, last
            continue
        return groups, stem(word), last
    return groups, None, last


def _token_at(sentence: Sentence, offset: int) -> int:
    for index, token in enumerate(sentence.tokens):
        if token.end > offset:
            return index
    return len(sentence.tokens) - 1


def polarity(a: Sentence, b: Sentence, words_b: frozenset[str]) -> Finding | None:
    """``a`` forbids an action that ``b`` does or prescribes, on the same thing (not one
    that says it does harm: "module-level calls slow the parser" agrees with "don't")."""
    if _first(_NEGATED, b.text) or words_b & HARM:
        return None
    for match in _all(_PROHIBIT, a.text):
        at = _token_at(a, a.start + match.end())
        groups, thing, last = _action(a, at)
        if not groups or thing is None or thing not in words_b:
            continue
        if any(ACTION.get(stem(token.word), set()) & groups for token in b.tokens):
            first = (a.start + match.start(), a.tokens[last].end)
            return Finding(POLARITY, thing, first, (b.start, b.tokens[-1].end))
    return None


_ABSENT = re.compile(
    r"(?P<name>(?:[\w./@+-]+\s+){0,2}[\w./@+-]+)\s+(?:is|are|was|were)(?:\s+not|n't)\s+"
    r"(?:installed|used|available|supported|a\s+dependency|present|enabled|allowed|needed|"
    r"required|in\s+use)\b",
    re.I,
)


def absent(a: Sentence, b: Sentence, words_b: frozenset[str]) -> Finding | None:
    """``a`` says a named thing is not installed, used or supported where ``b`` relies on
    it ("pytest is not a dependency" / "run tests with pytest")."""
    if _first(_NEGATED, b.text):
        return None
    for match in _all(_ABSENT, a.text):
        said = match.group("name").split()
        names = [
            stem(word.lower())
            for n, word in enumerate(said)
            if word.lower() not in STOPWORDS and (_name_like(word) or n == len(said) - 1)
        ]
        if names and all(name in words_b for name in names):
            where = next(t for t in b.tokens if names[-1] in _words_of(t.word))
            return Finding(
                POLARITY,
                " ".join(names),
                (a.start + match.start(), a.start + match.end()),
                (where.start, where.end),
            )
    return None


_DENY_BEFORE = re.compile(
    r"\b(?:don't|do\s+not|does\s+not|doesn't|never|not|no|no\s+longer|without|avoid|"
    r"stop\s+using|instead\s+of|rather\s+than)\s+((?:[\w`'./@:-]+\s+){0,3}?[\w`'./@:-]+)",
    re.I,
)
_DENY_AFTER = re.compile(
    r"([\w`'./@:-]+(?:\s+[\w`'./@:-]+)?)\s+(?:is|are|was|were|has\s+been|have\s+been|got)\s+"
    r"(?:not\b|no\s+longer|removed|dropped|deprecated|gone|banned|disabled|retired)",
    re.I,
)


@functools.lru_cache(maxsize=4096)
def denied(text: str) -> frozenset[str]:
    """The stems a text denies in so many words: after "don't", "never", "not", "no
    longer", "instead of" (up to four words on), or before "is not", "was removed", "was
    dropped" (not what a bug report mentions: "fixes a bug with X" denies nothing)."""
    found: set[str] = set()
    for pattern in (_DENY_BEFORE, _DENY_AFTER):
        for match in pattern.finditer(text):
            for word in match.group(1).split():
                found |= _words_of(word.strip("`'.,:").lower())
    return frozenset(found)


_SETTING = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*[A-Za-z_0-9])\s*=\s*[\"']?([\w-]+(?:\.[\w-]+)*)")
_BOOLEAN = {"true", "false", "on", "off", "yes", "no", "enabled", "disabled"}


def _values(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for match in _SETTING.finditer(text):
        found.setdefault(match.group(1).lower(), set()).add(match.group(2).lower())
    return found


def settings(a: Sentence, b: Sentence, whole_a: str = "", whole_b: str = "") -> Finding | None:
    """The same setting given another value (``catchup=False`` / ``catchup=True``), where
    neither memory gives it the other's value anywhere (``whole_a``, ``whole_b``: their
    texts)."""
    right = {m.group(1).lower(): m for m in _all(_SETTING, b.text)}
    values_a, values_b = _values(whole_a or a.text), _values(whole_b or b.text)
    for left in _all(_SETTING, a.text):
        name = left.group(1).lower()
        other = right.get(name)
        if other is None:
            continue
        value_a, value_b = left.group(2).lower(), other.group(2).lower()
        if value_a == value_b or values_a.get(name, set()) & values_b.get(name, set()):
            continue
        kind = POLARITY if value_a in _BOOLEAN and value_b in _BOOLEAN else CHOICE
        if kind == CHOICE and value_a.replace(".", "").isdigit():
            kind = QUANTITY
        return Finding(
            kind,
            left.group(1),
            (a.start + left.start(), a.start + left.end()),
            (b.start + other.start(), b.start + other.end()),
        )
    return None


def opposites(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """Opposite words in two sentences that otherwise say the same ("X is enabled in
    staging" / "X is disabled in staging")."""
    # Opposites may be words too common to carry meaning alone ("on", "off").
    said_a = words_a | {stem(t.word) for t in a.tokens}
    said_b = words_b | {stem(t.word) for t in b.tokens}
    only_a, only_b = said_a - said_b, said_b - said_a
    rest = _shared(words_a, words_b, common)
    if len(rest) < 2:
        return None
    # Much in common, or the opposite words beside the same thing on both sides ("with phased
    # release enabled" / "phased release is off").
    alike = len(rest) >= 0.5 * min(len(words_a), len(words_b)) - 1
    for word in sorted(only_a):
        other = OPPOSITE.get(word, set()) & only_b
        if not other:
            continue
        found = sorted(other)[0]
        at_a = next(i for i, t in enumerate(a.tokens) if stem(t.word) == word)
        at_b = next(i for i, t in enumerate(b.tokens) if stem(t.word) == found)
        near = _near(a, at_a) & _near(b, at_b) & rest
        if alike or near:
            left, right = a.tokens[at_a], b.tokens[at_b]
            return Finding(
                POLARITY,
                " ".join(sorted(near or rest))[:80],
                (left.start, left.end),
                (right.start, right.end),
            )
    return None


def _near(sentence: Sentence, at: int, reach: int = 3) -> set[str]:
    """The stems within ``reach`` tokens of token ``at``."""
    tokens = sentence.tokens[max(0, at - reach) : at + reach + 1]
    return {word for token in tokens for word in _words_of(token.word)}


def exclusivity(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """``a`` says only X where ``b`` names something else in X's place, or X and more."""
    match = _first(_ONLY, a.text)
    if not match:
        return None
    said = match.group("after") or match.group("before") or ""
    only = stem(said.lower())
    if not only or only in STOPWORDS or not _name_like(said):
        return None
    context = _shared(words_a, words_b, common) - {only}
    if len(context) < 2:
        return None
    others = [
        t for t in b.tokens[1:]
        if _name_like(t.text) and stem(t.word) not in words_a and t.word not in STOPWORDS
    ]  # fmt: skip
    if (only in words_b and _first(_MORE, b.text) and others) or (only not in words_b and others):
        other = others[0]
    else:
        return None
    return Finding(
        EXCLUSIVITY,
        only,
        (a.start + match.start(), a.start + match.end()),
        (other.start, other.end),
    )


_EXCEPT = re.compile(r"\b(?:except|but|unless|apart\s+from|other\s+than)\b", re.I)
_EXCLUSIVE = re.compile(r"\b(?:only|alone|exclusively|solely)\b", re.I)
_INCLUSIVE = re.compile(
    r"\b(?:any|anyone|anybody|every|everyone|all|also|too|as\s+well|own|itself|themselves|"
    r"both)\b",
    re.I,
)


def inclusive(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """``a`` says one alone does a thing ("only owners can merge", "created by the
    matchmaker alone") where ``b`` has any, every or another do it too ("anyone can merge",
    "the game server creates its own")."""
    only, more = _first(_EXCLUSIVE, a.text), _first(_INCLUSIVE, b.text)
    if only is None or more is None or _first(_EXCLUSIVE, b.text):
        return None
    if _first(_EXCEPT, a.text) or _first(_EXCEPT, b.text):
        return None  # "all but X", "every one except X": the exception is said
    # What "only" restricts, said by the other side too: the same restriction in other
    # words ("only mutated on the main actor" / "all updates happen on the main actor").
    restricted = [
        stem(t.word)
        for t in a.tokens
        if t.start >= a.start + only.end() and t.word.isalpha() and t.word not in STOPWORDS
    ][:4]
    said = [word for word in restricted if word in words_b]
    if len(said) >= 2 and 2 * len(said) >= len(restricted):
        return None
    if len(_shared(words_a, words_b, common)) < 2:
        return None
    return Finding(
        EXCLUSIVITY,
        " ".join(sorted(_shared(words_a, words_b, common)))[:80],
        (a.start + only.start(), a.start + only.end()),
        (b.start + more.start(), b.start + more.end()),
    )


def _name_like(word: str) -> bool:
    """A name, not a plain word: capitals, or the marks of an identifier, path or package."""
    return (
        word[:1].isupper()
        or any(ch in word for ch in "._/@")
        or (any(ch.isupper() for ch in word[1:]) and word.isalnum())
    )


# Words of a sentence about names.
NAME_WORDS = frozenset(
    stem(word)
    for word in word_set(
        "name names named naming prefix prefixed prefixes suffix suffixed suffixes called "
        "convention conventions identifier identifiers id ids key keys slug slugs label labels "
        "tag tags branch branches topic topics title titles case"
    )
)


def naming(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """The same names start (or end) with something else, or follow another case style:
    between two sentences about names ("started working on the docs" is about no name)."""
    context = _shared(words_a, words_b, common)
    if not context or not (words_a & NAME_WORDS) or not (words_b & NAME_WORDS):
        return None
    for left in _all(_AFFIX, a.text):
        for right in _all(_AFFIX, b.text):
            if _anchor(left) != _anchor(right):
                continue
            what_a = _content(_what(left))
            what_b = _content(_what(right))
            if (
                what_a
                and what_b
                and what_a.isdisjoint(what_b)
                and len(context - what_a - what_b) >= 1
            ):
                return Finding(
                    NAMING,
                    " ".join(sorted(context))[:80],
                    (a.start + left.start(), a.start + left.end()),
                    (b.start + right.start(), b.start + right.end()),
                )
    styles_a = {_CASE_STYLES[t.word]: t for t in a.tokens if t.word in _CASE_STYLES}
    styles_b = {_CASE_STYLES[t.word]: t for t in b.tokens if t.word in _CASE_STYLES}
    if styles_a and styles_b and set(styles_a).isdisjoint(styles_b) and len(context) >= 2:
        left_token, right_token = next(iter(styles_a.values())), next(iter(styles_b.values()))
        return Finding(
            NAMING,
            " ".join(sorted(context))[:80],
            (left_token.start, left_token.end),
            (right_token.start, right_token.end),
        )
    return None


def _anchor(match: re.Match[str]) -> str:
    """Where a naming rule puts what it says: at the start (a prefix), the end, or the name
    as a whole ("named after the ticket")."""
    # Groups 1, 4 and 5: the verb or noun of each of _AFFIX's three forms.
    word = next(g for g in (match.group(1), match.group(4), match.group(5)) if g).lower()
    if word in ("start", "begin", "prefix"):
        return "start"
    return "end" if word in ("end", "suffix") else "name"


def _what(match: re.Match[str]) -> str:
    return match.group("what") or match.group("what2") or match.group("what3") or ""


def _content(text: str) -> set[str]:
    return {
        stem(w) for w in re.findall(r"[\w'-]+", text.lower()) if w not in STOPWORDS and len(w) > 1
    }


def measured(
    a: Said, b: Said, aligned: bool, close: bool = False, strong: bool = False
) -> list[Finding]:
    """Versions of the same product (in two sentences about the same thing, ``aligned``, or
    two memories about it, ``close``), quantities of the same measure (``strong``: two
    sentences with much in common say so too),
    and quantities and schedules of the same thing, that disagree."""
    found: list[Finding] = []
    versions_a, versions_b = a.versions, b.versions
    for left in versions_a:
        for right in versions_b:
            # Two full versions (x.y.z) of one product named alike say what they are about;
            # "Python 2.6" beside "Python 3.3" needs the sentences or memories to be alike.
            exact = left.product == right.product and len(left.low) > 2 and len(right.low) > 2
            if (aligned or close or exact) and claims.versions_disagree(left, right):
                found.append(Finding(VERSION, left.product, left.span, right.span))
    for left_s in a.schedules:
        for right_s in b.schedules:
            subject = left_s.subject & right_s.subject
            if subject and claims.schedules_disagree(left_s, right_s):
                found.append(
                    Finding(SCHEDULE, " ".join(sorted(subject))[:80], left_s.span, right_s.span)
                )
    taken = {v.span for v in (*versions_a, *versions_b)}
    left_all = [q for q in a.quantities if q.span not in taken]
    right_all = [q for q in b.quantities if q.span not in taken]
    for left_q in left_all:
        # A value the other side names anywhere, in the same measure, is no contradiction.
        if any(claims.same_value(left_q, q) for q in right_all):
            continue
        for right_q in right_all:
            if any(claims.same_value(right_q, q) for q in left_all):
                continue
            if claims.same_quantity(left_q, right_q, aligned=strong, close=close):
                about = " ".join(sorted(left_q.subject & right_q.subject))[:80]
                found.append(Finding(QUANTITY, about, left_q.span, right_q.span))
                break
    return found
