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

knowledge.rules reads the rest (polarity, exclusivity, naming, choice) and compares two
memories with all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
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


_SENTENCE = re.compile(r"[^.!?;\n]+(?:[.!?;]+(?=\s|$)|$)|[^\n]+", re.MULTILINE)
_TOKEN = re.compile(r"[A-Za-z0-9%][A-Za-z0-9_./:+#%@*'-]*[A-Za-z0-9+#%*]|[A-Za-z0-9%*]|[<>=~^]+")


def split(text: str) -> list[Sentence]:
    """The sentences of ``text`` with their tokens (a dot inside a number, version, path or
    name does not end one)."""
    found = []
    start = 0
    for match in re.finditer(r"(?<=[.!?])\s+(?=\S)|\n+|\s+-\s+|\s*\u2014\s*", text):
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
# Unit words and suffixes: (dimension, factor to the dimension's base).
UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(["ms", "msec", "millisecond", "milliseconds"], ("time", 0.001)),
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
_RATE = {"rps": ("time", 1.0), "qps": ("time", 1.0), "rpm": ("time", 60.0)}
# Words that make a count's number something else: an identifier, a position, a year.
_NOT_COUNTS = word_set(
    "pr issue ticket step rule item page line version v no number id port python node http "
    "status code phase stage level tier section chapter part"
)


def number(token: Token) -> tuple[float, str] | None:
    """The value of a number token and its attached suffix ("30s" -> 30, "s")."""
    if token.word in NUMBER_WORDS:
        return float(NUMBER_WORDS[token.word]), ""
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


def _meaningful(word: str) -> bool:
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
    ``after`` after tokens ``first``..``last`` (at ``most`` so many on each side)."""
    tokens = sentence.tokens
    found: set[str] = set()
    for side, indexes in enumerate(
        (range(first - 1, max(-1, first - before - 1), -1), range(last + 1, last + 1 + after))
    ):
        taken = 0
        for index in indexes:
            if index >= len(tokens) or (most is not None and taken >= most[side]):
                break
            if _meaningful(tokens[index].word):
                found.add(root(tokens[index].word))
                taken += 1
    return found


def quantities(sentence: Sentence) -> list[Quantity]:
    tokens = sentence.tokens
    found: list[Quantity] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        read = number(token)
        previous = tokens[index - 1].word if index else ""
        if read is None and token.word in ("a", "an") and index + 1 < len(tokens):
            following = tokens[index + 1].word
            read = (1.0, "") if following in UNITS and UNITS[following][0] == "time" else None
        if read is None or previous.startswith("#") or ":" in token.word:
            index += 1
            continue
        value, suffix = read
        last = index
        # "half an hour", "a dozen", "two hundred"
        ahead = tokens[index + 1].word if index + 1 < len(tokens) else ""
        if value == 0.5 and ahead in ("a", "an"):
            last += 1
        elif ahead in ("hundred", "thousand", "dozen") and token.word != ahead:
            value *= NUMBER_WORDS[ahead]
            last += 1
        unit = suffix
        if not unit and last + 1 < len(tokens) and tokens[last + 1].word in {*UNITS, *_RATE}:
            unit = tokens[last + 1].word
            last += 1
        if unit in _RATE:
            dimension, factor = "time-rate", 1 / _RATE[unit][1]
        elif unit in UNITS:
            dimension, factor = UNITS[unit]
            rest = [t.word for t in tokens[last + 1 : last + 3]]
            if rest[:1] == ["per"] and len(rest) > 1 and rest[1] in UNITS:
                per = UNITS[rest[1]]
                dimension, factor, last = f"{dimension}/{per[0]}", factor / per[1], last + 2
        elif unit:
            index += 1
            continue  # 3.11a1, 2fa: not a measure
        else:
            what = _counted(sentence, index, last)
            if what is None or (value >= 1900 and value <= 2100 and value.is_integer()):
                index = last + 1
                continue
            dimension, factor = f"count:{what}", 1.0
            rest = [t.word for t in tokens[last + 1 : last + 5]]
            for per_at, word in enumerate(rest[:-1]):
                after = rest[per_at + 1]
                if word in _PER and after in UNITS and UNITS[after][0] == "time":
                    per = UNITS[after]
                    dimension, factor = f"{dimension}/{per[0]}", 1 / per[1]
                    break
        subject = _around(sentence, index, last)
        anchor = _around(sentence, index, last, before=3, after=1, most=(2, 1))
        found.append(
            Quantity(
                dimension,
                value * factor,
                frozenset(subject),
                sentence.span(index, last),
                frozenset(anchor),
            )
        )
        index = last + 1
    return found


def _counted(sentence: Sentence, first: int, last: int) -> str | None:
    """What a bare number counts: the noun after it ("5 attempts", "three times" after its
    verb), or None for a number that counts nothing (a position, an identifier)."""
    tokens = sentence.tokens
    before = tokens[first - 1].word if first else ""
    if stem(before) in _NOT_COUNTS or "." in tokens[first].word:
        return None
    before_words = [t.word for t in reversed(tokens[max(0, first - 3) : first])]
    for at, token in enumerate(tokens[last + 1 : last + 3]):
        if token.word in ("times", "time", "x"):
            # "retry webhooks three times": what is repeated is the verb before
            said = [w for w in before_words if _meaningful(w)]
            for word in said:
                if root(word) in _same_count:
                    return _same_count[root(word)]
            return root(said[0]) if said else None
        if _meaningful(token.word):
            # The head of a noun phrase: "50 database connections" counts connections.
            following = tokens[last + 2 + at] if last + 2 + at < len(tokens) else None
            if following is not None and _meaningful(following.word) and at == 0:
                head = root(following.word)
                if head.endswith(("s", "ion")) or following.word.endswith("s"):
                    return _same_count.get(head, head)
            return _same_count.get(root(token.word), root(token.word))
    # "concurrency is 4": what it counts is said before it
    if before in ("is", "are", "of", "to", "=", ":") and len(before_words) > 1:
        said = [w for w in before_words[1:] if _meaningful(w)]
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


def _as(quantity: Quantity, other: Quantity) -> tuple[str, float]:
    """A quantity in "m" read as the other side's measure: minutes beside a time, metres
    beside a length."""
    if quantity.dimension != "m":
        return quantity.dimension, quantity.value
    if other.dimension == "time":
        return "time", quantity.value * 60
    if other.dimension == "length":
        return "length", quantity.value
    return "m", quantity.value


def same_quantity(a: Quantity, b: Quantity, *, aligned: bool = False, close: bool = False) -> bool:
    """The same measure of the same thing, with values that differ: a count of the same
    thing, or a measure whose nearest words (what it measures) one side shares with the
    other's; ``aligned``, two sentences with much in common, says so too, and so do two
    words around the numbers in common between memories about the same thing (``close``)."""
    (dimension_a, value_a), (dimension_b, value_b) = _as(a, b), _as(b, a)
    if dimension_a != dimension_b:
        return False
    if abs(value_a - value_b) <= 0.01 * max(abs(value_a), abs(value_b)):
        return False
    if dimension_a.startswith("count:"):
        return aligned or bool(a.subject & b.subject)
    return (
        aligned
        or bool(a.anchor & b.subject)
        or bool(b.anchor & a.subject)
        or (close and len(a.subject & b.subject) >= 2)
    )


def same_value(a: Quantity, b: Quantity) -> bool:
    (dimension_a, value_a), (dimension_b, value_b) = _as(a, b), _as(b, a)
    return dimension_a == dimension_b and abs(value_a - value_b) <= 0.01 * max(value_a, value_b)


# --- versions ------------------------------------------------------------------------------------

_VERSION = re.compile(r"^v?(\d+(?:\.\d+){0,3})(\+|\.x|\.\*)?$")
_OPERATORS = {
    ">=": "min", "=>": "min", ">": "above", "<=": "max", "<": "below",
    "~>": "pessimistic", "~=": "pessimistic", "^": "caret", "==": "pin", "=": "pin",
}  # fmt: skip
_NEWER = ("and newer", "or newer", "and later", "or later", "and above", "or above", "or higher",
          "and higher", "and up", "onwards", "or greater", "+")  # fmt: skip
_AT_LEAST = ("at least", "minimum", "min", "requires", "require", "required", "msrv", "floor",
             "minimum version", "no older than")  # fmt: skip
_PRODUCT_SKIP = word_set(
    "to on at is was be version versions v from of the a an with in for runs run uses use "
    "using require requires required support supports pinned pin pins at least minimum min "
    "newer ready this that it"
)
_INNER = re.compile(r"^(?:[\w.-]+/)*([a-z][a-z0-9_-]*?)(?:[:=@]|==|>=|~=|-)v?(\d+(?:\.\d+){1,3})")
INFINITY = (10**9,)
# Numbered references, not products: "RFC 2068", "section 4.4.1", "PEP 8".
_REFERENCES = word_set(
    "rfc section pep iso chapter issue step page figure table line draft appendix item rule "
    "part run pr ticket"
)


@dataclass(frozen=True)
class Version:
    product: str
    low: tuple[int, ...]
    high: tuple[int, ...] | None  # exclusive; None: no upper bound
    pin: bool  # a version stated, not a constraint
    span: tuple[int, int]
    context: frozenset[str] = frozenset()  # the words of its sentence


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _bump(parts: tuple[int, ...], at: int) -> tuple[int, ...]:
    at = max(0, min(at, len(parts) - 1))
    return (*parts[:at], parts[at] + 1)


def versions(sentence: Sentence) -> list[Version]:
    tokens = sentence.tokens
    context = frozenset(stem(t.word) for t in tokens if t.word[:1].isalpha())
    found: list[Version] = []
    lowered = sentence.text.lower()
    for index, token in enumerate(tokens):
        inner = _INNER.match(token.word)
        if inner:  # python:3.11-slim, django==4.2, torch-2.2.2
            product, text = inner.groups()
            parts = _parts(text)
            found.append(
                Version(
                    product, parts, _bump(parts, len(parts) - 1), True, (token.start, token.end)
                )
            )
            continue
        match = _VERSION.match(token.word)
        at = token.start - sentence.start
        if not match or (at and sentence.text[at - 1] in "#(-"):
            continue  # an issue (#442), not a version
        text, plus = match.groups()
        operator = tokens[index - 1].word if index and tokens[index - 1].word in _OPERATORS else ""
        dotted = "." in text
        product_at = index - (2 if operator else 1)
        while product_at >= 0 and (
            tokens[product_at].word in _PRODUCT_SKIP or tokens[product_at].word in _OPERATORS
        ):
            product_at -= 1
        if product_at < 0 or product_at < index - 5:
            continue
        product = tokens[product_at]
        if (
            not product.word[:1].isalpha()
            or product.word in UNITS
            or product.word in NUMBER_WORDS
            or stem(product.word) in _REFERENCES
        ):
            continue
        after = index + 1 < len(tokens) and tokens[index + 1].word
        if after and (after in UNITS or after in _RATE):
            continue  # a quantity
        tail = lowered[token.end - sentence.start : token.end - sentence.start + 14]
        head = lowered[max(0, product.start - sentence.start - 14) : token.start - sentence.start]
        newer = plus == "+" or any(tail.lstrip().startswith(p) for p in _NEWER if p != "+")
        least = any(re.search(rf"\b{re.escape(p)}\b", head) for p in _AT_LEAST)
        # A capitalised name, not the capital that starts the sentence ("Add 0.12 ...").
        capital = product_at > 0 and (product.text[:1].isupper() or product.text.isupper())
        if not (dotted or operator or newer or least or capital or plus):
            continue
        parts = _parts(text)
        kind = _OPERATORS.get(operator, "")
        if kind in ("min", "above") or newer or least:
            low, high, pin = parts, None, False
        elif kind == "pessimistic":
            low, high, pin = parts, _bump(parts, len(parts) - 2), False
        elif kind == "caret":
            low, high, pin = parts, _bump(parts, 0), False
        elif kind in ("max", "below"):
            low, high, pin = (0,), parts if kind == "below" else _bump(parts, len(parts) - 1), False
        else:
            low, high, pin = parts, _bump(parts, len(parts) - 1), plus is None
        span = sentence.span(product_at, index)
        found.append(Version(stem(product.word), low, high, pin, span, context))
    return found


def _same_product(a: str, b: str) -> bool:
    """One product by its names: "postgres" and "postgresql", "esp-idf" and "idf",
    "minimum_chrome_version" and "chrome"."""
    if a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a))):
        return True
    parts_a, parts_b = set(re.split(r"[-_.]", a)), set(re.split(r"[-_.]", b))
    return (a in parts_b and len(a) >= 3) or (b in parts_a and len(b) >= 3)


def _contains(outer: Version, inner: Version) -> bool:
    high = outer.high or INFINITY
    inner_high = inner.high or INFINITY
    return outer.low <= inner.low and inner_high <= high


def versions_disagree(a: Version, b: Version) -> bool:
    """Two statements of one product's version that cannot both hold."""
    if not (
        _same_product(a.product, b.product) or (a.product in b.context and b.product in a.context)
    ):
        return False
    if a.pin and b.pin:
        return not (_contains(a, b) or _contains(b, a))
    if a.pin != b.pin:
        pin, bound = (a, b) if a.pin else (b, a)
        return not _contains(bound, pin)
    return (a.low, a.high) != (b.low, b.high)


# --- schedules -----------------------------------------------------------------------------------

_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_DAY = {day[:3]: n for n, day in enumerate(_DAYS)} | {day: n for n, day in enumerate(_DAYS)}
_PERIODS = {"hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800,
            "monthly": 2592000, "night": 86400, "day": 86400, "hour": 3600, "week": 604800,
            "minute": 60, "month": 2592000, "morning": 86400, "evening": 86400}  # fmt: skip
_CRON = re.compile(
    r"(?<![\w*/,-])([\d*/,-]+)\s+([\d*/,-]+)\s+([\d*/,?LW-]+)\s+([\d*/,a-zA-Z-]+)\s+([\d*/,a-zA-Z?#L-]+)(?![\w*/,-])"
)
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\b(\d{1,2}):(\d{2})\b", re.I)


_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _cron_fields(fields: Sequence[str]) -> bool:
    """Five fields a cron line could hold: each a star, a step or numbers in its range."""
    if not any(ch.isdigit() for ch in "".join(fields)) or not any("*" in f for f in fields):
        return False
    for text, (low, high) in zip(fields, _CRON_RANGES, strict=True):
        for piece in text.split(","):
            piece = piece.removeprefix("*/").removeprefix("*")
            for bound in filter(None, piece.split("-")):
                if bound.isdigit() and not low <= int(bound) <= high:
                    return False
                if not bound.isdigit() and not bound.isalpha():
                    return False
    return True


# Words of a schedule that say nothing of what runs on it.
_NOT_SUBJECTS = word_set("every am pm utc gmt cet cron reset resets run runs job jobs")


@dataclass(frozen=True)
class Schedule:
    period: float | None  # seconds between runs
    times: frozenset[int]  # minutes after midnight
    days: frozenset[int]  # 0 = Monday
    subject: frozenset[str]
    span: tuple[int, int]


def schedules(sentence: Sentence) -> list[Schedule]:
    text = sentence.text
    lowered = text.lower()
    period: float | None = None
    times: set[int] = set()
    days: set[int] = set()
    spans: list[tuple[int, int]] = []
    for match in _CRON.finditer(text):
        fields = match.groups()
        if not _cron_fields(fields):
            continue
        minute, hour, _, _, weekday = fields
        if hour.startswith("*/") and hour[2:].isdigit():
            period = int(hour[2:]) * 3600
        elif minute.startswith("*/") and minute[2:].isdigit():
            period = int(minute[2:]) * 60
        elif hour.isdigit() and minute.isdigit():
            times.add(int(hour) * 60 + int(minute))
            period = 86400 if weekday == "*" else 604800
        elif hour == "*" and minute.isdigit():
            period = 3600
        if weekday not in ("*", "?"):
            for piece in weekday.split(","):
                if piece.isdigit():
                    days.add((int(piece) - 1) % 7)
                elif piece.lower()[:3] in _DAY:
                    days.add(_DAY[piece.lower()[:3]])
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\bevery\s+(?:(\d+|[a-z]+)\s+)?(minutes?|hours?|days?|weeks?|months?|nights?|mornings?)\b",
        lowered,
    ):
        count, unit = match.groups()
        n = 1.0
        if count:
            n = float(count) if count.isdigit() else float(NUMBER_WORDS.get(count, 1))
        period = n * _PERIODS[unit.rstrip("s")]
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\b(hourly|daily|nightly|weekly|monthly|each night|each day)\b", lowered
    ):
        word = match.group(1).split()[-1]
        period = period or _PERIODS[word]
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\b(once|twice|thrice|\w+\s+times|\w+\s+\w+)\s+(?:a|per|each)\s+(day|hour|week|night)\b",
        lowered,
    ):
        said, unit = match.groups()
        first = said.split()[0]
        times_a = {"once": 1, "twice": 2, "thrice": 3}.get(first) or NUMBER_WORDS.get(first)
        if times_a is None and first.isdigit():
            times_a = int(first)
        if times_a:
            period = _PERIODS[unit] / float(times_a)
            spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(r"\b(midnight|noon)\b", lowered):
        times.add(0 if match.group(1) == "midnight" else 720)
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in _CLOCK.finditer(text):
        if match.group(3):
            hour = int(match.group(1)) % 12 + (12 if match.group(3).lower() == "pm" else 0)
            minute = int(match.group(2) or 0)
        else:
            hour, minute = int(match.group(4)), int(match.group(5))
        if (
            hour < 24
            and minute < 60
            and not _CRON.search(text[max(0, match.start() - 3) : match.end() + 3] + " x x x")
        ):
            times.add(hour * 60 + minute)
            spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\b(?:on\s+)?(mon|tue|wed|thu|fri|sat|sun)[a-z]*(?:day)?s?\b(?:\s*(?:-|to|through)\s*(mon|tue|wed|thu|fri|sat|sun)[a-z]*)?",
        lowered,
    ):
        first, last = match.groups()
        if match.group(0).strip() in ("mon", "sun", "sat") and not match.group(0).startswith("on"):
            continue
        start = _DAY[first]
        end = _DAY[last] if last else start
        days.update(range(start, end + 1) if end >= start else [start])
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    if re.search(r"\bweekdays\b", lowered):
        days.update(range(5))
    if re.search(r"\bweekends?\b", lowered):
        days.update((5, 6))
    if not spans:
        return []
    if days and period is None and not times:
        period = 604800
    subject = frozenset(
        stem(t.word)
        for t in sentence.tokens
        if _meaningful(t.word)
        and t.word not in _PERIODS
        and t.word[:3] not in _DAY
        and t.word not in _NOT_SUBJECTS
    )
    span = (min(s for s, _ in spans), max(e for _, e in spans))
    return [Schedule(period, frozenset(times), frozenset(days), subject, span)]


def schedules_disagree(a: Schedule, b: Schedule) -> bool:
    if a.period is not None and b.period is not None and a.period != b.period:
        return True
    if a.times and b.times and a.times.isdisjoint(b.times):
        return True
    return bool(a.days and b.days and a.days.isdisjoint(b.days))


def pairs_of(left: Sequence[object], right: Sequence[object]) -> Iterator[tuple[object, object]]:
    for a in left:
        for b in right:
            yield a, b
