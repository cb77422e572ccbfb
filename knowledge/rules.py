"""Contradictions by class between two memories (pure: two texts in, findings out).

Two sentences, one from each memory, are read side by side when they are about the same
thing (they share words that carry meaning, beside those the neighbourhood shares anyway).
Each class reads them in its own way (knowledge.claims, knowledge.versions and
knowledge.schedules read quantities, versions and schedules, compared here by ``measured``;
knowledge.polarity reads prohibitions, denials, opposites and settings; knowledge.exclusive
"only X" against another thing in X's place; here naming):

* **naming**: the same names start or end with something else, or follow another case
  style (snake_case / camelCase), or patterns of names of other shapes;
* **choice**: a declared change against a memory that still says the old thing, one
  prescribed thing swapped for another ("use pnpm" / "use npm"), one role filled by two
  tools: knowledge.contradictions and knowledge.roles.

Each finding names its class, what it is about and the two spans that disagree (offsets in
each memory's text), for a reviewer to see side by side.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from knowledge import schedules, versions
from knowledge.claims import EXTENSIONS, NAME_PARTS, Quantity, Sentence
from knowledge.measures import same_name, same_quantity, same_value
from knowledge.reading import STOPWORDS, stem, word_set
from knowledge.said import Read, Said, all_matches, shared
from knowledge.scopes import TIME_SCOPES

# The classes of a possible conflict.
QUANTITY, VERSION, SCHEDULE = "quantity", "version", "schedule"
# How many versions, or quantities, of one sentence are compared.
MOST = 32
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


_CASE_STYLES = {
    "snake_case": "snake", "snake": "snake", "camelcase": "camel", "camel": "camel",
    "pascalcase": "pascal", "pascal": "pascal", "kebab-case": "kebab", "kebab": "kebab",
    "screaming_snake_case": "screaming", "upper_snake_case": "screaming",
    "screaming_snake": "screaming", "dotted": "dotted",
    "lowercase": "lower", "lower-case": "lower", "uppercase": "upper", "upper-case": "upper",
}  # fmt: skip
_AFFIX = re.compile(
    # "prefix your branch with your initials": what is put at the start is after "with"
    r"\b(?P<verb0>prefix|suffix)(?:es|ed)?\s+(?:(?!with\b)\w+\s+){1,3}with\s+(?P<what0>[^.;,]+)"
    r"|\b(?P<verb1>start|begin|end|prefix|suffix)(?:s|es|ed|ing)?\b(?:\s+(?:with|by))?\s+"
    r"(?P<what>[^.;,]+)"
    r"|\b(?:the|a|an)\s+(?P<what2>\S+)\s+(?P<verb2>prefix|suffix)\b"
    r"|\bnamed?\s+(?:\w+\s+){0,3}?(?P<verb3>after|with|by|for)\s+(?P<what3>[^.;,]+)"
    # A pattern of names: "named raidhall_<subsystem>_total" (its start is fixed).
    r"|\b(?P<verb4>named)\s+(?P<what4>[\w<>.:/-]*[_<][\w<>.:/-]*)"
    # "with the owning team first", "ticket number first: ..." (not "rebase on main first")
    r"|\bwith\s+(?:the\s+)?(?P<what5>(?:\w+\s+){0,2}?\w+)\s+(?P<verb5>first)\b"
    r"|(?P<what6>\b\w+(?:\s+\w+)?)\s+(?P<verb6>first)\s*[:(]",
    re.I,
)
# Where what a naming rule says ends: "after the ticket that introduced it" is the ticket.
_CLAUSE = re.compile(r"\s(?:that|which|who|so|because|since|when|to|and|or|but)\s|\(", re.I)
# Words of a sentence about names (a case style's name among them: "fields use camelCase").
NAME_WORDS = frozenset(
    stem(word)
    for word in word_set(
        "name names named naming prefix prefixed prefixes suffix suffixed suffixes called "
        "convention conventions identifier identifiers id ids key keys slug slugs label labels "
        "tag tags branch branches topic topics title titles case"
    )
) | frozenset(stem(word) for word in _CASE_STYLES if "_" not in word and "-" not in word)


def naming(
    a: Sentence,
    b: Sentence,
    words_a: frozenset[str],
    words_b: frozenset[str],
    common: frozenset[str],
) -> Finding | None:
    """The same names start (or end) with something else, or follow another case style:
    between two sentences about names ("started working on the docs" is about no name)."""
    context = shared(words_a, words_b, common)
    if not context or not (_said_of_names(a) and _said_of_names(b)):
        return None
    for left in all_matches(_AFFIX, a.text):
        for right in all_matches(_AFFIX, b.text):
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
    # the same names in two styles say what both are about ("order-placed" / "OrderPlaced")
    spelled = {_squashed(word) for word in words_a} & {_squashed(word) for word in words_b}
    if (
        styles_a
        and styles_b
        and set(styles_a).isdisjoint(styles_b)
        # ... with a word in common besides the examples' ("columns ... like `created_at`" /
        # "fields ... like `createdAt`" are two layers)
        and bool(context - _EXAMPLES)
        and len(context | spelled) >= 2
    ):
        left_token, right_token = next(iter(styles_a.values())), next(iter(styles_b.values()))
        return Finding(
            NAMING,
            " ".join(sorted(context))[:80],
            (left_token.start, left_token.end),
            (right_token.start, right_token.end),
        )
    # Patterns of names ("match:<match_id>" / "<plural>/<id>") of other shapes.
    # Patterns of names built otherwise: other separators ("match:<id>" / "<plural>/<id>"),
    # not other words between the same ones ("user:<id>" / "session:<sid>" name two things).
    shapes_a = {_shape(m.group(0)): m for m in all_matches(_TEMPLATE, a.text)}
    shapes_b = {_shape(m.group(0)): m for m in all_matches(_TEMPLATE, b.text)}
    shapes_a.pop("*", None)  # a lone placeholder ("<id>") says no shape
    shapes_b.pop("*", None)
    if shapes_a and shapes_b and set(shapes_a).isdisjoint(shapes_b):
        left, right = next(iter(shapes_a.values())), next(iter(shapes_b.values()))
        return Finding(
            NAMING,
            " ".join(sorted(context))[:80],
            (a.start + left.start(), a.start + left.end()),
            (b.start + right.start(), b.start + right.end()),
        )
    return None


_EXAMPLES = word_set("like such example e.g eg for instance")


def _said_of_names(sentence: Sentence) -> bool:
    """Whether a sentence speaks of names, outside its patterns of names ("{id}" in a route
    says nothing of names)."""
    outside = _TEMPLATE.sub(" ", sentence.text)
    return any(stem(word.lower()) in NAME_WORDS for word in re.findall(r"[A-Za-z]+", outside)) or (
        any(re.search(rf"\b{re.escape(style)}\b", outside, re.I) for style in _CASE_STYLES)
    )


def _squashed(word: str) -> str:
    """A name however its words are joined: "order-placed", "order_placed" and
    "OrderPlaced" alike."""
    return stem(re.sub(r"[^a-z0-9]", "", word.lower()))


# A pattern of names: literal parts and <placeholders>, at least one of each.
# A placeholder in angle brackets or braces ("<id>", "{layer}").
_TEMPLATE = re.compile(r"(?<![\w.:/-])[\w.:/-]*(?:<[\w-]+>|\{[\w-]+\})[\w<>{}.:/-]*")


def _shape(template: str) -> str:
    """A pattern's separators and placeholders: "match:<match_id>" is ":*", "<plural>/<id>"
    is "*/*"."""
    return re.sub(r"[a-z0-9]+", "", re.sub(r"<[^>]*>|\{[^}]*\}", "*", template.lower()))


def _anchor(match: re.Match[str]) -> str:
    """Where a naming rule puts what it says: at the start (a prefix), the end, or the name
    as a whole ("named after the ticket")."""
    word = next(match.group(f"verb{form}") for form in range(7) if match.group(f"verb{form}"))
    word = word.lower()
    if word in ("start", "begin", "prefix", "named", "first"):
        return "start"
    return "end" if word in ("end", "suffix") else "name"


def _what(match: re.Match[str]) -> str:
    said = (
        match.group("what0")
        or match.group("what")
        or match.group("what2")
        or match.group("what3")
        or match.group("what4")
        or match.group("what5")
        or match.group("what6")
        or ""
    )
    return _CLAUSE.split(said, maxsplit=1)[0]


def _content(text: str) -> set[str]:
    return {
        stem(w) for w in re.findall(r"[\w'-]+", text.lower()) if w not in STOPWORDS and len(w) > 1
    }


def _apart(a: Said, b: Said) -> bool:
    """Two sentences that schedule two things: each names what it schedules and neither says
    any part of the other's names ("Chrome Web Store submissions" / "Firefox Add-ons
    submissions"), or each names its own job in code and none is the other's
    ("cleanup_stale_uploads" / "cleanup_stale_sessions", "Billing.Jobs.Reconcile" /
    "Payments.Jobs.Reconcile")."""
    things_a, things_b = _things(a), _things(b)
    if things_a and things_b and not (things_a & _said(b) or things_b & _said(a)):
        return True
    code_a, code_b = _identifiers(a), _identifiers(b)
    return bool(code_a and code_b) and not _one_job(code_a, code_b)


def _things(said: Said) -> frozenset[str]:
    """The parts of the names of a sentence that say what, not when (no day, time zone or
    number): "Raidhall.Jobs.ResetWeekly" says "raidhall", "job", "reset" and "weekly"."""
    return frozenset(
        stem(part.lower())
        for name in _names(said)
        for part in NAME_PARTS.split(name)
        if len(part) > 2 and part.isalpha() and stem(part.lower()) not in TIME_SCOPES
    )


def _names(said: Said) -> set[str]:
    """A sentence's names as written, but days, time zones and numbers."""
    specific = said.reading.specific
    return {
        token.text
        for token in said.sentence.tokens
        if token.word in specific and not _ZONE.fullmatch(token.word)
    }


def _identifiers(said: Said) -> set[str]:
    """A sentence's identifiers of code that name a job or a function ("cleanup_stale_uploads",
    "Billing.Jobs.Reconcile"), lower case: no path, file, address or product name."""
    found = set()
    for name in _names(said):
        parts = name.split(".")
        if not re.fullmatch(r"[A-Za-z][\w.]*\w", name) or parts[-1].lower() in _NOT_CODE:
            continue
        if "_" in name or (len(parts) > 1 and any(part[:1].isupper() for part in parts)):
            found.add(name.lower())
    return found


def _said(said: Said) -> frozenset[str]:
    """Every word of a sentence and every part of its names."""
    tokens = said.reading.tokens
    return frozenset(stem(part) for token in tokens for part in (token, *NAME_PARTS.split(token)))


def _one_job(a: set[str], b: set[str]) -> bool:
    """Some identifier of one is one of the other's, or ends it ("ResetWeekly" /
    "Raidhall.Jobs.ResetWeekly")."""
    return any(same_name(x, y) for x in a for y in b)


# The last parts of files and addresses, not of code: "runtime.exs", "docs.quill.dev".
_NOT_CODE = EXTENSIONS | word_set("com dev io org net app")


# A time zone ("UTC", "Europe/Berlin"): when, not what.
_ZONE = re.compile(
    r"utc|gmt|cet|cest|pst|pdt|est|edt|"
    r"(?:africa|america|antarctica|asia|atlantic|australia|europe|indian|pacific)/[a-z_]+",
    re.I,
)


def measured(
    a: Said,
    b: Said,
    aligned: bool,
    close: bool = False,
    strong: bool = False,
    memories: tuple[Read, Read] | None = None,
) -> list[Finding]:
    """Versions of the same product (in two sentences about the same thing, ``aligned``, or
    two memories about it, ``close``), quantities of the same measure (``strong``: two
    sentences with much in common say so too), and quantities and schedules of the same
    thing, that disagree. ``memories``: the two the sentences are of, whose other sentences
    may state a value about the same words."""
    found: list[Finding] = []
    # (at most MOST of a class per sentence: past that it is a dump, not a claim, and each
    # pair of them would be compared)
    versions_a, versions_b = a.versions[:MOST], b.versions[:MOST]
    for left in versions_a:
        for right in versions_b:
            # Two full versions (x.y.z) of one product named alike say what they are about,
            # and so do a requirement of it and another bound ("supports PostgreSQL 12 and
            # newer" / "has to be PostgreSQL 15") and two versions of a package ("dbt-core
            # 1.7.x" / "dbt-core 1.8"); "Python 2.6" beside "Python 3.3", or "fixed in Python
            # 3.2+" beside "escape errors in Python 3.6+", needs the sentences alike.
            exact = left.product == right.product and (
                (len(left.low) > 2 and len(right.low) > 2)
                or left.required
                or right.required
                or left.kept
                or right.kept
                or (bool(re.search(r"[-_]", left.product)) and len(left.low) > 1 < len(right.low))
            )
            if (aligned or close or exact) and versions.versions_disagree(left, right):
                found.append(Finding(VERSION, left.product, left.span, right.span))
    for left_s in a.schedules:
        for right_s in b.schedules:
            subject = left_s.subject & right_s.subject
            if subject and schedules.schedules_disagree(left_s, right_s) and not _apart(a, b):
                found.append(
                    Finding(SCHEDULE, " ".join(sorted(subject))[:80], left_s.span, right_s.span)
                )
    taken = {v.span for v in (*versions_a, *versions_b)}
    left_all = [q for q in a.quantities if q.span not in taken][:MOST]
    right_all = [q for q in b.quantities if q.span not in taken][:MOST]

    def agreed(quantity: Quantity, sentence: Sequence[Quantity], memory: Read | None) -> bool:
        # A value the other sentence names, in the same measure, or another of its memory's
        # sentences names about the same words, is no contradiction: the other's values
        # there measure other things ("batches of 5000 rows" beside "a table of 40M rows.
        # The backfill commits 5000 rows per batch"), unlike "times out after 10 seconds.
        # Health checks poll every 30 seconds" against "times out after 30 seconds".
        return any(same_value(quantity, q) for q in sentence) or any(
            same_value(quantity, q) and quantity.subject & q.subject
            for q in (memory.quantities if memory else ())
        )

    if memories:
        # a value its memory gives a setting too restates that setting ("the reminder goes
        # out a day before" beside `REMINDER_LEAD_HOURS = 24`)
        left_all = [_restating(q, memories[0]) for q in left_all]
        right_all = [_restating(q, memories[1]) for q in right_all]
    for left_q in left_all:
        if agreed(left_q, right_all, memories[1] if memories else None):
            continue
        for right_q in right_all:
            if agreed(right_q, left_all, memories[0] if memories else None):
                continue
            if same_quantity(left_q, right_q, aligned=strong, close=close, related=aligned):
                about = " ".join(sorted(left_q.subject & right_q.subject))[:80]
                found.append(Finding(QUANTITY, about, left_q.span, right_q.span))
                break
    return found


def _restating(quantity: Quantity, memory: Read) -> Quantity:
    """``quantity`` with the setting its memory gives the same value, about a word of the
    setting's name, if it names none ("the reminder goes out a day before" beside
    `REMINDER_LEAD_HOURS = 24`; "the refresh token lasts 30 minutes" is not
    `SESSION_TIMEOUT_MINS = 30`)."""
    if quantity.setting:
        return quantity
    named = (
        q.setting
        for q in memory.quantities
        if q.setting and same_value(quantity, q) and quantity.subject & _name_words(q.setting)
    )
    return replace(quantity, setting=next(named, ""))


def _name_words(setting: str) -> set[str]:
    return {stem(part) for part in NAME_PARTS.split(setting) if part}
