"""What a sentence claims that another sentence can contradict, read by class (pure).

Each reader finds, in one sentence, the claims of its class with the span of text that
says them, and each comparer says whether two such claims about the same subject disagree:

* **quantity**: a number with its unit, normalised (durations to seconds, sizes to bytes,
  percentages, rates per second, counts of a thing), number words included ("three",
  "a dozen", "half an hour");
* **version**: a product's version or constraint as a range ("12 and newer" is [12, ∞),
  "~> 1.5" is [1.5, 1.6), "3.11" is 3.11.*); a pin outside the other's range disagrees, one
  inside it does not;
* **schedule**: how often and when (every six hours, nightly, at 02:00, on Tuesdays, a cron
  line), compared field by field where both say it.

Versions (knowledge.versions) and schedules (knowledge.schedules) are read beside them;
knowledge.rules and knowledge.polarity read the rest and compare two memories with all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.reading import STOPWORDS, stem, word_set


@dataclass(frozen=True)
class Token:
    word: str  # lower case
    text: str  # as written
    start: int  # offsets in the memory's text
    end: int


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    tokens: tuple[Token, ...]

    def span(self, first: int, last: int) -> tuple[int, int]:
        """The offsets from token ``first`` to token ``last`` (inclusive)."""
        return self.tokens[first].start, self.tokens[last].end


# A number with thousands separated by commas ("12,500") is one token; a list ("80,443,8080")
# is not.
_THOUSANDS = r"\d{1,3}(?:,\d{3})+(?!,?\d)"
_TOKEN = re.compile(
    _THOUSANDS + r"|[A-Za-z0-9%][A-Za-z0-9_./:+#%@*'-]*[A-Za-z0-9+#%*]|[A-Za-z0-9%*]|[<>=~^]+"
)


# "e.g.", "i.e." and "vs." end no sentence ("etc." often does).
_NOT_ABBREVIATED = r"(?<![Ee]\.g\.)(?<![Ii]\.e\.)(?<!\bvs\.)"


def split(text: str) -> list[Sentence]:
    """The sentences of ``text`` with their tokens (a dot inside a number, version, path or
    name, or ending an abbreviation, does not end one)."""
    found = []
    start = 0
    for match in re.finditer(
        rf"(?<=[.!?]){_NOT_ABBREVIATED}\s+(?=\S)|\n+|\s+-\s+|\s*\u2014\s*", text
    ):
        found.append((start, match.start()))
        start = match.end()
    found.append((start, len(text)))
    sentences = []
    for begin, end in found:
        piece = text[begin:end]
        tokens = tuple(
            Token(m.group(0).lower().rstrip("."), m.group(0), begin + m.start(), begin + m.end())
            for m in _TOKEN.finditer(piece)
        )
        if tokens:
            sentences.append(Sentence(piece, begin, tokens))
    return sentences


# --- numbers -------------------------------------------------------------------------------------

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90,
    "hundred": 100, "thousand": 1000, "dozen": 12, "twice": 2, "thrice": 3, "half": 0.5,
}  # fmt: skip
# Parts of a unit, a quantity only before one ("half an hour", "a quarter second"; never
# "half the workers", "every quarter").
FRACTIONS = {"half": 0.5, "quarter": 0.25, "quarters": 0.25}
# Thousands and millions of a thing ("10k rows", "2.5M events"), not kilobytes or minutes.
_MULTIPLES = {"k": 1000.0, "m": 1e6}
# Unit words and suffixes: (dimension, factor to the dimension's base).
UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(["ms", "msec", "millis", "millisecond", "milliseconds"], ("time", 0.001)),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], ("time", 1.0)),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], ("time", 60.0)),
    # "m" is minutes or metres: read as the other side's (``same_quantity``).
    "m": ("m", 1.0),
    **dict.fromkeys(["meter", "meters", "metre", "metres"], ("length", 1.0)),
    **dict.fromkeys(
        ["km", "kilometer", "kilometers", "kilometre", "kilometres"], ("length", 1000.0)
    ),
    **dict.fromkeys(["cm", "centimeter", "centimeters"], ("length", 0.01)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], ("time", 3600.0)),
    **dict.fromkeys(["d", "day", "days"], ("time", 86400.0)),
    **dict.fromkeys(["w", "wk", "week", "weeks"], ("time", 604800.0)),
    **dict.fromkeys(["month", "months"], ("time", 2592000.0)),
    **dict.fromkeys(["b", "byte", "bytes"], ("size", 1.0)),
    **dict.fromkeys(["kb", "kib", "k", "kilobytes"], ("size", 1024.0)),
    **dict.fromkeys(["mb", "mib", "megabytes"], ("size", 1024.0**2)),
    **dict.fromkeys(["gb", "gib", "gigabytes", "g"], ("size", 1024.0**3)),
    **dict.fromkeys(["tb", "tib", "terabytes"], ("size", 1024.0**4)),
    **dict.fromkeys(["%", "percent", "pct"], ("percent", 1.0)),
    **dict.fromkeys(["px", "pixel", "pixels"], ("pixels", 1.0)),
}
_NUMBER = re.compile(r"^(\d{1,3}(?:,\d{3})+|\d+(?:[._]\d+)?)([a-z%]*)$")
# "20 requests per second", "600 requests a minute", "each hour".
_PER = frozenset(("per", "a", "an", "each", "every"))
RATES = {"rps": ("time", 1.0), "qps": ("time", 1.0), "rpm": ("time", 60.0)}
# What holds so many of a thing at a time ("batches of 5000 rows").
_PARTS_OF = word_set("batch batches chunk chunks page pages group groups block blocks")
# What "a second" counts when it is no time ("a second attempt", "a second replica").
_COUNTED_NOUNS = word_set(
    "attempt try retry pass run round look copy instance replica node worker server request "
    "call release deploy opinion reviewer"
)
# Words that make a count's number something else: an identifier, a position, a year.
_NOT_COUNTS = word_set(
    "pr issue ticket step rule item page line version v no number id port python node http "
    "status code phase stage level tier section chapter part"
)


def number(token: Token) -> tuple[float, str] | None:
    """The value of a number token and its attached suffix ("30s" -> 30, "s"; a unit
    joined by a hyphen, "30-second", "five-minute", "quarter-second", is one too)."""
    if token.word in NUMBER_WORDS:
        return float(NUMBER_WORDS[token.word]), ""
    if token.word in FRACTIONS:
        return FRACTIONS[token.word], ""
    amount, hyphen, unit = token.word.partition("-")
    if hyphen and unit in UNITS and "-" not in unit:
        read = number(Token(amount, amount, token.start, token.end))
        return (read[0], unit) if read is not None and not read[1] else None
    match = _NUMBER.match(token.word)
    if not match:
        return None
    digits, suffix = match.groups()
    digits = digits.replace(",", "").replace("_", "")
    if digits.count(".") > 1:
        return None
    return float(digits), suffix


@dataclass(frozen=True)
class Quantity:
    dimension: str  # time, size, percent, time-rate, or count:<what>
    value: float
    subject: frozenset[str]  # the stems of the words around it
    span: tuple[int, int]
    # The nearest words that carry meaning before it (two) and after it (one): what it
    # measures ("time out after 10 s", "keys rotate every 90 days").
    anchor: frozenset[str] = frozenset()
    # The setting it is the value of ("warn_after: 12 hours", "SessionPolicy.IDLE_TIMEOUT is
    # 15 minutes"), lower case.
    setting: str = ""
    # A measure of the thing it names, joined to its unit ("a 24-hour format", "the 4-hour
    # window"): its anchor is that thing.
    modifies: bool = False


def meaningful(word: str) -> bool:
    return (
        word.isalpha()
        and word not in STOPWORDS
        and word not in NUMBER_WORDS
        and word not in UNITS
        and len(word) > 1
    )


def _around(
    sentence: Sentence,
    first: int,
    last: int,
    before: int = 5,
    after: int = 3,
    most: tuple[int, int] | None = None,
) -> set[str]:
    """The stems of the words that carry meaning within ``before`` tokens before and
    ``after`` after tokens ``first``..``last`` (at ``most`` so many on each side), an
    identifier's words among them ("SessionPolicy.BACKGROUND_TIMEOUT is 15 minutes" is
    about a background timeout)."""
    tokens = sentence.tokens
    found: set[str] = set()
    for side, indexes in enumerate(
        (range(first - 1, max(-1, first - before - 1), -1), range(last + 1, last + 1 + after))
    ):
        taken = 0
        for index in indexes:
            if index >= len(tokens) or (most is not None and taken >= most[side]):
                break
            said = meant(tokens[index])
            found |= said
            taken += bool(said)
    return found


# Where an identifier's words part: "BACKGROUND|_TIMEOUT", "max|Age", "reconcile|-settlements";
# NAME_PARTS also where its namespace does ("Raidhall.|Jobs", "cmd/|reconcile").
_IDENTIFIER_PARTS = re.compile(r"[_-]+|(?<=[a-z])(?=[A-Z])")
NAME_PARTS = re.compile(r"[./:_-]+|(?<=[a-z])(?=[A-Z])")


def meant(token: Token) -> set[str]:
    """The stems of what a token says: a word, or the words of an identifier's own name,
    without its namespace or a file's extension ("Raidhall.Jobs.ResetWeekly" says "reset
    weekly", "cmd/reconcile" says "reconcile", "/api/cron/inventory-sync" says "inventory
    sync", "vercel.json" says "vercel")."""
    segments = [segment for segment in re.split(r"[./:]+", token.text) if segment]
    if len(segments) > 1 and segments[-1].lower() in EXTENSIONS:
        segments.pop()
    parts = _IDENTIFIER_PARTS.split(segments[-1]) if segments else []
    return {root(part.lower()) for part in parts if meaningful(part.lower())}


EXTENSIONS = word_set(
    "py rb js ts tsx jsx go rs ex exs java kt swift json yml yaml toml ini cfg xml md txt sql "
    "sh html css"
)


def quantities(sentence: Sentence) -> list[Quantity]:
    tokens = sentence.tokens
    found: list[Quantity] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        limit = _limit(tokens, index)
        read = limit or number(token)
        previous = tokens[index - 1].word if index else ""
        whole = 0  # "a full week", "a whole day": the adjective before the unit
        if read is None and token.word in ("a", "an"):
            # "after a minute", never "a second attempt"
            whole = _word(tokens, index + 1) in ("full", "whole", "entire")
            following = _word(tokens, index + 1 + whole)
            ordinal = following == "second" and _word(tokens, index + 2 + whole) in _COUNTED_NOUNS
            timed = following in UNITS and UNITS[following][0] == "time" and not ordinal
            # "twice a day", "six times an hour", "3x a week": how often, not how long
            rate = re.fullmatch(r"once|twice|thrice|times|\d+x", previous)
            read = (1.0, "") if timed and not rate else None
        if read is None or previous.startswith("#") or ":" in token.word:
            index += 1
            continue
        value, suffix = read
        last = read_to = index + whole
        # "a dozen", "two hundred", "three quarters"
        ahead = _word(tokens, index + 1)
        if ahead in ("hundred", "thousand", "dozen", "quarters") and token.word != ahead:
            value *= FRACTIONS.get(ahead) or NUMBER_WORDS[ahead]
            last += 1
        if tokens[last].word in FRACTIONS:
            # "half an hour", "a quarter of an hour": a part of the unit that follows, or
            # no quantity at all ("half the workers")
            last += _word(tokens, last + 1) == "of"
            last += _word(tokens, last + 1) in ("a", "an")
            if _word(tokens, last + 1) not in UNITS:
                index = last + 1
                continue
        # "one and a half hours"
        last += 3 * _and_a_half(tokens, last)
        value += 0.5 * (last > index and tokens[last].word == "half")
        unit = suffix
        if not unit and _word(tokens, last + 1) in {*UNITS, *RATES}:
            unit = tokens[last + 1].word
            last += 1
            # "an hour and a half"
            if _and_a_half(tokens, last):
                value, last = value + 0.5, last + 3
        elif suffix in _MULTIPLES and _many(tokens, index, suffix):
            value, unit = value * _MULTIPLES[suffix], ""
        setting = _setting(tokens, index)
        if unit in RATES:
            dimension, factor = "time-rate", 1 / RATES[unit][1]
        elif unit in UNITS:
            dimension, factor = UNITS[unit]
            rest = [t.word for t in tokens[last + 1 : last + 3]]
            if rest[:1] == ["per"] and len(rest) > 1 and rest[1] in UNITS:
                per = UNITS[rest[1]]
                dimension, factor, last = f"{dimension}/{per[0]}", factor / per[1], last + 2
        elif unit == "x" and _word(tokens, last + 1) not in _PER:
            dimension, factor = "ratio", 1.0  # "0.1x the peak", "2x"; "3x a week" is how often
        elif unit:
            index += 1
            continue  # 3.11a1, 2fa: not a measure
        elif (named := _named_unit(setting)) and _assigned(sentence, token):
            dimension, factor = UNITS[named]  # "TTL_SECS=86400"
        else:
            attempts = limit or _ATTEMPTS.search(setting)  # `MaxDeliveryCount = 10`
            what = "attempt" if attempts else _counted(sentence, index, last, scaled=bool(suffix))
            if what is None or (value >= 1900 and value <= 2100 and value.is_integer()):
                index = last + 1
                continue
            dimension, factor = f"count:{what}", 1.0
            if index > 1 and previous == "of" and tokens[index - 2].word in _PARTS_OF:
                # "in batches of 5000 rows": rows per batch
                dimension += "/" + root(tokens[index - 2].word)
            rest = [t.word for t in tokens[last + 1 : last + 5]]
            for per_at, word in enumerate(rest[:-1]):
                after = rest[per_at + 1]
                if word in _PER and after in UNITS and UNITS[after][0] == "time":
                    per = UNITS[after]
                    dimension, factor = f"{dimension}/{per[0]}", 1 / per[1]
                    # "a day" in "2.5M events a day" is no quantity of its own
                    read_to = last + 2 + per_at
                    break
                if word in ("per", "each") and meaningful(after):
                    # "5000 rows per batch" counts batches' rows, not a table's
                    dimension = f"{dimension}/{root(after)}"
                    break
        if (
            dimension in ("time", "m")
            and _word(tokens, last + 1) in ("before", "ahead", "prior")
            and root(previous) not in _WAITS
        ):
            # "3 days before the trial ends": how early, not how long ("5m before" minutes)
            dimension, factor = "lead", factor * (60 if dimension == "m" else 1)
        subject = _around(sentence, index, last)
        modifies = "-" in token.word and bool(suffix) and meaningful(_word(tokens, last + 1))
        anchor = _around(sentence, index, last, *((0, 2, (0, 2)) if modifies else (5, 3, (2, 1))))
        found.append(
            Quantity(
                dimension,
                value * factor,
                frozenset(subject),
                sentence.span(index, last),
                frozenset(anchor),
                setting.lower(),
                modifies,
            )
        )
        index = max(last, read_to) + 1
    return found


_UNTIL = word_set("after until till past beyond")
# "waits up to two minutes before giving up": a wait, not how early
# What makes a time before an event how long after all: a wait ("waits up to two minutes
# before giving up"), what something is ("the TTL is 30 seconds before ..."), a limit
# ("times out after 10 minutes before being killed").
_WAITS = word_set("wait waits waited sleep sleeps paus delay idl to is are was be after")
ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip


def _limit(tokens: tuple[Token, ...], index: int) -> tuple[float, str] | None:
    """The attempts an ordinal counts where it ends them ("stop after the fifth attempt",
    "locked after the 3rd failed attempt"): so many in all; never one attempt among others
    ("on the second retry it pages")."""
    word = tokens[index].word
    # the attempt counted, one word between at most ("after the 3rd failed attempt")
    counted = [_word(tokens, index + 1), _word(tokens, index + 2)]
    if (
        index < 2
        or tokens[index - 1].word not in ("the", "its", "their")
        or tokens[index - 2].word not in _UNTIL
        # "... after the third failed delivery": what failed was an attempt
        or not (
            any(_same_count.get(root(noun)) == "attempt" for noun in counted)
            or counted[0] == "failed"
        )
    ):
        return None
    if word in ORDINALS:
        return float(ORDINALS[word]), ""
    match = re.fullmatch(r"(\d+)(?:st|nd|rd|th)", word)
    return (float(match.group(1)), "") if match else None


def _setting(tokens: tuple[Token, ...], index: int) -> str:
    """The identifier a value is given to, just before it ("warn_after: 12 hours",
    "SessionPolicy.BACKGROUND_TIMEOUT is 15 minutes", "max_age=604800")."""
    at = index - 1 - (_word(tokens, index - 1) in ("is", "to", "of", "=", "are", "at"))
    if at < 0 or not re.fullmatch(r"[A-Za-z][\w.]*[A-Za-z]", tokens[at].text):
        return ""
    name = tokens[at].text
    return name if "_" in name or "." in name or re.search(r"[a-z][A-Z]", name) else ""


# The unit a setting's name ends in, an amount's ("TTL_SECS=86400", "timeoutMs: 500",
# "MAX_UPLOAD_MB=25"), never a point in time's ("BACKUP_HOUR=3") nor a bound ("POOL_MIN");
# a time only in the name of how long something lasts or waits ("WORK_DAYS=5" counts days).
_AMOUNTS = word_set(
    "ms msec millis sec secs seconds mins minutes hrs hours days weeks bytes kb mb gb"
)
_LASTS = re.compile(
    r"ttl|timeout|interval|delay|age|expir|retention|period|duration|window|wait|lifetime|"
    r"grace|backoff|lead|lease|idle|keep|stale|cooldown|deadline",
    re.I,
)


def _assigned(sentence: Sentence, token: Token) -> bool:
    """A value given to a setting ("TTL_SECS=86400", "timeoutMs: 500"), not an argument
    ("Duration.ofSeconds(8)")."""
    before = sentence.text[: token.start - sentence.start].rstrip(" \"'")
    return before.endswith(("=", ":")) or bool(re.search(r"\b(?:is|to)$", before))


# A setting that caps attempts by its name: `max_retries`, `MaxDeliveryCount`,
# `maxReceiveCount`, `MAX_ATTEMPTS`.
_ATTEMPTS = re.compile(
    r"^(?=.*max).*(?:attempts?|retries|tries|(?:retry|delivery|receive)_?count)$", re.I
)


def _named_unit(setting: str) -> str:
    last = NAME_PARTS.split(setting)[-1].lower() if setting else ""
    if last not in _AMOUNTS or (UNITS[last][0] == "time" and not _LASTS.search(setting)):
        return ""
    return last


def _word(tokens: tuple[Token, ...], index: int) -> str:
    return tokens[index].word if index < len(tokens) else ""


def _and_a_half(tokens: tuple[Token, ...], last: int) -> bool:
    return [token.word for token in tokens[last + 1 : last + 4]] == ["and", "a", "half"]


def _many(tokens: tuple[Token, ...], index: int, suffix: str) -> bool:
    """ "10k" or "2.5M" before things it counts ("10k rows"): thousands or millions of
    them. A lower-case "m" is minutes or metres, "8K" before one thing a size ("an 8K
    buffer")."""
    following = _word(tokens, index + 1)
    return (
        (suffix == "k" or tokens[index].text.endswith("M"))
        and meaningful(following)
        and following.endswith("s")
    )


def _counted(sentence: Sentence, first: int, last: int, scaled: bool = False) -> str | None:
    """What a bare number counts: the noun after it ("5 attempts", "three times" after its
    verb), or None for a number that counts nothing (a position, an identifier). A
    decimal counts only ``scaled``: "2.5M events"."""
    tokens = sentence.tokens
    before = tokens[first - 1].word if first else ""
    if stem(before) in _NOT_COUNTS or ("." in tokens[first].word and not scaled):
        return None
    before_words = [t.word for t in reversed(tokens[max(0, first - 3) : first])]
    for at, token in enumerate(tokens[last + 1 : last + 3]):
        if token.word in ("times", "time", "x"):
            # "retry webhooks three times": what is repeated is the verb before
            said = [w for w in before_words if meaningful(w)]
            for word in said:
                if root(word) in _same_count:
                    return _same_count[root(word)]
            return root(said[0]) if said else None
        if meaningful(token.word):
            # The head of a noun phrase: "50 database connections" counts connections.
            following = tokens[last + 2 + at] if last + 2 + at < len(tokens) else None
            if following is not None and meaningful(following.word) and at == 0:
                head = root(following.word)
                if head.endswith(("s", "ion")) or following.word.endswith("s"):
                    return _same_count.get(head, head)
            return _same_count.get(root(token.word), root(token.word))
    # "concurrency is 4": what it counts is said before it
    if before in ("is", "are", "of", "to", "=", ":") and len(before_words) > 1:
        said = [w for w in before_words[1:] if meaningful(w)]
        return root(said[0]) if said else None
    return None


def root(word: str) -> str:
    """A word's stem with a final "e" dropped, so that "cache" and "cached" (stem "cach"),
    "use" and "used" meet."""
    stemmed = stem(word)
    return stemmed[:-1] if stemmed.endswith("e") and len(stemmed) > 3 else stemmed


# Nouns that count the same thing.
_same_count = {
    "try": "attempt", "retry": "attempt", "retri": "attempt", "process": "worker",
    "pod": "replica", "instanc": "replica", "node": "replica", "record": "row",
    "entry": "item", "call": "request", "attempt": "attempt", "connection": "connection",
    "conn": "connection",
}  # fmt: skip
