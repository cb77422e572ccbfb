"""How the comparison of two memories reads a text (pure: text in, ``Words`` out).

A text is spelled out (contractions, labels, issue references and commit trailers
removed), cut into lower-cased tokens and read into the stems of the words that carry
meaning, the specific ones (numbers, versions, paths, identifiers, names in capitals),
what is said under a negation and what is asserted, the numbers with what they count and
their unit, and what a declared change retires and brings. knowledge.contradictions
compares two such readings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry no claim of their own.
STOPWORDS = word_set(
    "a an the this that these those it its it's of in on at by for from to into onto with "
    "and or but if then than so as is are was were be been being am do does did done has "
    "have had having will would shall should can could may might must our we us you your "
    "they them their he she his her i me my there here when where which who whom whose "
    "what why how all any each every some such also just only very too more most much "
    "many few other same own about above below over under up down out off again further "
    "once both either one ones via per etc eg ie e.g i.e please note make sure get got "
    "let lets use s"
)
# Words that deny what follows (contractions are spelled out first).
NEGATORS = word_set(
    "not no never without avoid nor none neither cannot stop stopped forbid forbidden "
    "prohibited disallow disallowed dont doesnt isnt arent wasnt werent wont cant "
    "shouldnt mustnt"
)


# Unit words beside a number, folded to one spelling.
UNITS = {
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], "s"),
    **dict.fromkeys(["ms", "millisecond", "milliseconds"], "ms"),
    **dict.fromkeys(["m", "min", "mins", "minute", "minutes"], "min"),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], "h"),
    **dict.fromkeys(["d", "day", "days"], "d"),
    **dict.fromkeys(["w", "week", "weeks"], "w"),
    **dict.fromkeys(["kb", "kib", "k"], "kb"),
    **dict.fromkeys(["mb", "mib"], "mb"),
    **dict.fromkeys(["gb", "gib", "g"], "gb"),
    **dict.fromkeys(["tb", "tib"], "tb"),
    **dict.fromkeys(["%", "percent", "pct"], "%"),
    **dict.fromkeys(["x", "times"], "x"),
    **dict.fromkeys(["meter", "meters", "metre", "metres"], "min"),
}
# Words that name no particular quantity: a number beside them says nothing of what it counts.
GENERIC = word_set(
    "default defaults value values set sets number count total about around up least "
    "most than and or to of by at in on is are be was were the a an with for from every "
    "each per only now then see use uses after before within under over until since"
)
# Words of a negative sense: a claim made with them denies like "not" does (a warning that
# X breaks something says "don't X" as much as "never X" does).
NEGATIVE = word_set(
    "exclude excluded excludes disable disabled disables skip skips skipped omit omitted "
    "lacks lack missing wrong broke broken breaks bug otherwise instead_of rather_than fail "
    "fails failed failing hang hangs hung crash crashes crashed leak leaks exhaust "
    "exhausted exhausting saturate saturated revert reverted reverts corrupt corrupted lose "
    "loses losing lost unsorted"
)
# Verbs before "not" whose subject is what "not" denies ("pytest is not a dependency").
_COPULAS = word_set("is are was were be been do does did has have had can will would should")

# A word: letters, digits and the marks inside identifiers, paths and versions.
_WORD = re.compile(r"[A-Za-z0-9%][A-Za-z0-9_./:+#%@-]*[A-Za-z0-9+#%]|[A-Za-z0-9%]")
_SENTENCE = re.compile(
    r"(?<=[.!?;])(?<![Ee]\.g\.)(?<![Ii]\.e\.)(?<!\bvs\.)\s+(?=\S)|\n+|\s+-\s+"
    r"|\s*\u2014\s*|\s+--\s+"
)
NUMBER = re.compile(r"^v?(\d+(?:[._]\d+)*)(?:\.x)?([a-z%]*)$")
# Numbers inside a longer token ("python:3.11-slim", "constraints-2.7.3"), after a name.
_INNER_NUMBER = re.compile(r"(?<![a-z_])([a-z][a-z_]*)[:=@-]?v?(\d+(?:\.\d+)+|\d+)")
# Where a memory came from ("seen again in run-004", "#12"): provenance, not a claim.
_REFERENCE = re.compile(r"^(?:run|pr|mr|issue|ticket)[-_#]?\d+$|^#\d+$")
_CAMEL = re.compile(r"[a-z][A-Z]|^[A-Z]{2,}[a-z]*$")
_CONTRACTIONS = [
    (re.compile(r"\b(can)'?t\b", re.I), r"\1 not"),
    (re.compile(r"\bwon'?t\b", re.I), "will not"),
    (re.compile(r"n['\u2019]t\b", re.I), " not"),
    (re.compile(r"\bno longer\b", re.I), "not anymore"),
    (re.compile(r"\binstead of\b", re.I), "instead_of"),
    (re.compile(r"\brather than\b", re.I), "rather_than"),
    (re.compile(r"\bnot null\b", re.I), "not_null"),
    (
        re.compile(r"\b(?:turn|turned|turns|switch|switched|switches)\s+(\S+\s+)?on\b", re.I),
        r"enabled \1",
    ),
    (
        re.compile(r"\b(?:turn|turned|turns|switch|switched|switches)\s+(\S+\s+)?off\b", re.I),
        r"disabled \1",
    ),
    (re.compile(r"\bmust\s+not\b", re.I), "not"),
    (re.compile(r"\bmust\b", re.I), "required"),
]
_ABBREVIATIONS = frozenset(("e.g", "i.e", "vs", "etc", "cf", "approx"))
_NAME = r"[\w./+#@-]+"
# Where a name a change begins with may start: never inside another name, which would
# try every start of a long one ("a-b-c-...-z was removed").
_STARTS = r"(?<![\w./+#@-])"
# A declared change: the old thing (group "old") and the new one (group "new"), where said.
_CHANGES = [
    re.compile(
        r"\b(?:moved|migrated|switched|changed|went|converted|upgraded|downgraded|ported|bumped)"
        rf"\s+(?:\w+\s+){{0,3}}?from\s+(?P<old>{_NAME})(?:\s+\w+)?\s+to\s+(?P<new>{_NAME})",
        re.I,
    ),
    re.compile(
        r"\b(?:moved|migrated|switched|upgraded|downgraded|ported|bumped|raised|lowered|"
        rf"changed|now\s+uses?|now\s+runs?\s+on)\s+(?:\w+\s+){{0,3}}?to\s+(?P<new>{_NAME})",
        re.I,
    ),
    re.compile(
        rf"\breplac\w*\s+(?:\w+\s+)?(?P<old>{_NAME})\s+(?:with|by)\s+(?P<new>{_NAME})", re.I
    ),
    re.compile(
        # (two names, never across a sentence's end: "runs on HashMapStateBackend. RocksDB")
        rf"{_STARTS}(?P<old>{_NAME}(?<![.:;])(?:\s+{_NAME})?)\s+(?:is|was|has\s+been|have\s+been|"
        r"got|are|were)\s+"
        r"(?:now\s+)?(?:replaced|deprecated|removed|dropped|retired|gone|obsolete|banned|"
        r"decommissioned|sunset|abandoned)"
        rf"(?:\s+(?:with|by|in\s+favou?r\s+of)\s+(?:\w+\s+)?(?P<new>{_NAME}))?",
        re.I,
    ),
    re.compile(
        rf"{_STARTS}(?P<new>{_NAME})\s+replaced\s+(?:the\s+)?(?P<old>{_NAME})(?!\s+(?:with|by))",
        re.I,
    ),
    re.compile(
        # (a kind of thing may follow the name: "the `export_nightly` CronJob no longer exists")
        rf"{_STARTS}(?P<old>{_NAME})`?(?:\s+[A-Z]\w+)?\s+"
        r"(?:(?:no\s+longer|not\s+anymore)\s+exists?|(?:does|do)\s+not\s+exist\s+any\s*more)",
        re.I,
    ),
    re.compile(rf"\binstead_of\s+(?:\w+\s+)?(?P<old>{_NAME})", re.I),
    re.compile(rf"\b(?:stop|stopped|quit)\s+using\s+(?P<old>{_NAME})", re.I),
    re.compile(
        # ("get rid of X" as what is done, not its purpose: "to get rid of a warning")
        r"\b(?:deprecated|removed|dropped|retired|(?<!to\s)g[eo]t\s+rid\s+of)\s+(?:the\s+)?"
        rf"(?P<old>{_NAME})",
        re.I,
    ),
]


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A crude English stem: enough for "timeouts"/"timeout", "runs"/"run"/"running"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "sses", "xes", "zes")):
                continue
            return word[: len(word) - len(suffix)] + keep
    return word


NEGATIVE_STEMS = frozenset(stem(word) for word in NEGATIVE)


# A numbered item's label ("Rule 3:", "Step 2)", "#4 -"): which item, not what it says.
_LABEL = re.compile(r"^\s*(?:[A-Za-z]+\s+)?#?\d+\s*[:.)\]-]\s+")
# A reference to an issue or a pull request ("(#600)", "fixes #822", "GH-12"): where a
# memory came from, not a quantity.
_ISSUE = re.compile(r"\(?(?<![\w#])(?:#|gh-|GH-)\d+\)?")
# A commit's trailer ("Co-authored-by: Name <mail>", "Signed-off-by: ..."): who, not what.
# (from the start of a word only: inside "a-b-c-..." every start would be tried)
_TRAILER = re.compile(r"(?<![\w-])[A-Za-z]+(?:-[A-Za-z]+)*-by:\s*[^<\n]*(?:<[^>\n]*>)?")


def _spelled_out(text: str) -> str:
    text = _TRAILER.sub(" ", _ISSUE.sub(" ", _LABEL.sub("", text)))
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def is_specific(token: str) -> bool:
    """A number, version, path or identifier: a token that changes what is said."""
    return any(ch.isdigit() or ch in "_./:#@" for ch in token) or (
        "-" in token.strip("-") and not token.replace("-", "").isalpha()
    )


def _value(number: str) -> str:
    """A number as compared: "16.0" is "16", "30_000" is "30000"."""
    value = number.replace("_", "")
    while value.endswith(".0") and value.count(".") >= 1 and len(value) > 2:
        value = value[:-2]
    return value


@dataclass(frozen=True)
class Words:
    """A piece of text as the comparison reads it."""

    text: str
    tokens: tuple[str, ...]  # lower-cased, in order
    content: frozenset[str]  # stems of the words that carry meaning
    specific: frozenset[str]  # identifiers, paths, versions, names in capitals
    negated: frozenset[str]  # content stems only ever in the reach of a negation
    asserted: frozenset[str]  # content stems never in the reach of a negation
    denies: bool  # holds a negation at all
    numbers: frozenset[tuple[str, str, str]]  # (what it counts, unit, value)
    nearness: Mapping[str, int]  # how near its number each of those words stands
    old: frozenset[str]  # things a declared change retires
    new: frozenset[str]  # things a declared change brings


def _meaningful(word: str) -> bool:
    return not (
        word in STOPWORDS
        or stem(word) in STOPWORDS
        or word in NEGATORS
        or word in GENERIC
        or NUMBER.match(word)
        or word in UNITS
    )


def _anchors(tokens: Sequence[str], index: int) -> dict[str, int]:
    """What the number at ``index`` may count, and how far from it: the nearest meaningful
    word after it and the two nearest before it (within four words)."""
    anchors: dict[str, int] = {}
    for step, wanted in ((1, 1), (-1, 2)):
        position, found = index + step, 0
        while 0 <= position < len(tokens) and abs(position - index) <= 4 and found < wanted:
            word = tokens[position]
            if _meaningful(word):
                distance = abs(position - index)
                anchors[stem(word)] = min(distance, anchors.get(stem(word), distance))
                found += 1
            position += step
    return anchors


def _unit(tokens: Sequence[str], index: int, suffix: str) -> str:
    if suffix:
        return UNITS.get(suffix, suffix)
    for position in (index + 1, index - 1):
        if 0 <= position < len(tokens) and tokens[position] in UNITS:
            return UNITS[tokens[position]]
    return ""


@lru_cache(maxsize=1024)
def stems(text: str) -> frozenset[str]:
    """The stems of a text's words, lightly read (no spelling out): what counting the
    words a neighbourhood shares needs."""
    return frozenset(
        stem(token) for token in (t.lower() for t in _WORD.findall(text)) if token not in STOPWORDS
    )


@lru_cache(maxsize=1024)
def read(text: str) -> Words:
    spelled = _spelled_out(text)
    spans = list(_WORD.finditer(spelled))
    raw = [match.group() for match in spans]
    tokens = tuple(token.lower() for token in raw)
    # the words that open a sentence: a capital there says nothing of a name (after a
    # colon it may: "Cache: Redis"; nor does "e.g." end a sentence)
    opening = {0} | {
        index
        for index in range(1, len(spans))
        if re.search(r"[.!?]\s|\n", spelled[spans[index - 1].end() : spans[index].start()] + " ")
        and tokens[index - 1] not in _ABBREVIATIONS
    }
    content: set[str] = set()
    specific: set[str] = set()
    negated: set[str] = set()
    plain: set[str] = set()
    denies = False
    numbers: set[tuple[str, str, str]] = set()
    nearness: dict[str, int] = {}
    reach = 0
    for index, (token, original) in enumerate(zip(tokens, raw, strict=True)):
        if token in NEGATORS or stem(token) in NEGATIVE_STEMS:
            reach = 2
            denies = True
            # "X is not ...": the subject before the verb is denied too.
            if index >= 2 and tokens[index - 1] in _COPULAS and _meaningful(tokens[index - 2]):
                subject = stem(tokens[index - 2])
                negated.add(subject)
                plain.discard(subject)
            if token not in NEGATORS:
                content.add(stem(token))
            continue
        if _REFERENCE.match(token):
            continue
        number = NUMBER.match(token)
        if number:
            value, suffix = number.groups()
            unit = _unit(tokens, index, suffix)
            anchors = _anchors(tokens, index) or {"": 0}
            for anchor, distance in anchors.items():
                numbers.add((anchor, unit, _value(value)))
                nearness[anchor] = min(distance, nearness.get(anchor, distance))
            content.add(token)
            specific.add(token)
            continue
        word = stem(token)
        if token in STOPWORDS or word in STOPWORDS:
            continue
        content.add(word)
        proper = original[:1].isupper() and index not in opening
        if is_specific(token) or _CAMEL.search(original) or proper:
            specific.add(word)
            for name, value in _INNER_NUMBER.findall(token):
                if name not in STOPWORDS:
                    numbers.add((stem(name), "", _value(value)))
                    nearness[stem(name)] = 0
                    content.add(stem(name))
        # A path's parts count as words too ("src/core/**" says "core").
        if "/" in token:
            content.update(part for part in re.split(r"[/.*]+", token) if len(part) > 2)
        if reach > 0:
            negated.add(word)
            reach -= 1
        else:
            plain.add(word)
    old: set[str] = set()
    new: set[str] = set()
    for pattern in _CHANGES:
        for match in pattern.finditer(spelled):
            found = match.groupdict()
            for name, into in (("old", old), ("new", new)):
                words = (found.get(name) or "").lower().split()
                # "Python 2.3 was dropped" retires a version, not Python.
                if len(words) > 1 and NUMBER.match(words[-1].strip(".")):
                    words = words[-1:]
                for word in words:
                    into.add(stem(word.strip(".")))
    old -= STOPWORDS
    new -= STOPWORDS
    return Words(
        text,
        tokens,
        frozenset(content),
        frozenset(specific),
        frozenset(negated - plain),
        frozenset(content - negated),
        denies,
        frozenset(numbers),
        nearness,
        frozenset(old - new),
        frozenset(new - old),
    )


def sentences(text: str) -> list[str]:
    parts = [part.strip() for part in _SENTENCE.split(text) if part and part.strip()]
    return parts or [text]


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller set's words found in the larger."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def kin(a: frozenset[str], b: frozenset[str]) -> bool:
    """A qualified name on one side that the other's begins with: one thing ("Rails.cache" /
    "Rails.cache.fetch", "billing.tasks" / "billing.tasks.retry")."""
    return any(
        long.startswith(short) and long[len(short) : len(short) + 1] in (".", ":", "/")
        for short in a | b
        if "." in short.strip(".") or "::" in short
        for long in (b if short in a else a)
        if len(long) > len(short)
    )


# The verbs a change log entry starts with ("Added ...", "fix ...", "[svn] removed ...").
EVENTS = word_set(
    "add added adds adding remove removed removes fix fixed fixes move moved moves update "
    "updated updates change changed changes drop dropped drops bump bumped bumps merge merged "
    "rename renamed replace replaced refactor refactored port ported improve improved clean "
    "cleaned delete deleted implement implemented document documented revert reverted "
    "upgrade upgraded downgrade downgraded introduce introduced deprecate deprecated "
    "release released prepare preparing finish finished make made rework reworked split "
    "simplify simplified tweak tweaked ready bumping"
)
_EVENT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*(?:[a-z]+:\s*)?[^\w\[]*([A-Za-z]+)")


def reports(text: str) -> bool:
    """A change log entry: it says what was done, not how things are. Two of them are
    history, not claims that can contradict each other."""
    return (match := _EVENT.match(text)) is not None and match.group(1).lower() in EVENTS
