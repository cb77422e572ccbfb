"""Schedules: how often and when a thing runs (every six hours, nightly, at 02:00, on
Tuesdays, a cron line), compared field by field where both say it. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.claims import NUMBER_WORDS, Sentence, meant
from knowledge.reading import STOPWORDS, word_set

_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_DAY = {day[:3]: n for n, day in enumerate(_DAYS)} | {day: n for n, day in enumerate(_DAYS)}
_PERIODS = {"hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800,
            "monthly": 2592000, "night": 86400, "day": 86400, "hour": 3600, "week": 604800,
            "second": 1, "minute": 60, "month": 2592000, "morning": 86400,
            "evening": 86400}  # fmt: skip
_CRON = re.compile(
    r"(?<![\w*/,-])([\d*/,-]+)\s+([\d*/,-]+)\s+([\d*/,?LW-]+)\s+([\d*/,a-zA-Z-]+)\s+([\d*/,a-zA-Z?#L-]+)(?![\w*/,-])"
)
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\b(\d{1,2}):(\d{2})\b", re.I)


# How often, by a setting's name: "periodInMinutes", "poll_interval_seconds", not a
# duration ("terminationGracePeriodSeconds", "trial_period_days").
_PERIOD_SETTING = re.compile(
    r"\b\w*(?:(?:interval|every|frequency)_?(?:in_?)?|period_?in_?)"
    r"(ms|millis|seconds?|secs?|minutes?|mins?|hours?|days?)\b[\"']?\s*[:=]\s*(\d+)\b"
)
_SETTING_UNITS = {
    "ms": 0.001, "milli": 0.001, "second": 1, "sec": 1, "minute": 60, "min": 60,
    "hour": 3600, "day": 86400,
}  # fmt: skip
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


# A day's name or abbreviation, its first three letters captured ("monitor" is none).
_DAY_NAME = (
    r"(?=(mon|tue|wed|thu|fri|sat|sun))(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)s?|mon|tues|tue|wed|thurs|thur|thu|fri|sat|sun)"
)
_DAY_WORD = re.compile(_DAY_NAME)
_ONCE = {"once": 1, "twice": 2, "thrice": 3}
_ADVERB_UNITS = {"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week",
            "monthly": "month"}  # fmt: skip
# How many units "every" counts: "every other day" is every two.
_EVERY_COUNT: dict[str, float | None] = {
    **NUMBER_WORDS, "other": 2, "n": None, "few": None, "couple": None, "several": None,
}  # fmt: skip
_MILLISECONDS = {"ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001}
# A bound on how often, not a schedule: "at most once per minute", "at least once a month".
_CAP = re.compile(
    r"(?:at\s+(?:most|least)|up\s+to|no\s+(?:more|less|fewer)\s+than|not\s+more\s+than|"
    r"\bmax(?:imum)?|\bmin(?:imum)?)\s*$"
)
# Words after a day that still say when: "Monday mornings", "Friday only".
_WHEN = word_set(
    "only morning mornings evening evenings night nights afternoon afternoons noon midnight "
    "during eod cob after before until till thru through lunch standup"
)


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
        r"\bevery\s+(?:(\d+|[a-z]+)\s+)?(ms|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|"
        r"months?|nights?|mornings?)\b",
        lowered,
    ):
        count, unit = match.groups()
        n: float | None = 1.0
        if count:
            # "every other day" is every two, "every single day" every one; "every N minutes"
            # says no number
            n = float(count) if count.isdigit() else _EVERY_COUNT.get(count, 1.0)
        if n is None:
            continue
        period = n * (_MILLISECONDS.get(unit) or _PERIODS[unit.rstrip("s")])
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in _PERIOD_SETTING.finditer(lowered):
        # A setting of how often, its unit in its name: "periodInMinutes: 15".
        unit = _SETTING_UNITS.get(match.group(1)) or _SETTING_UNITS[match.group(1).rstrip("s")]
        period = float(match.group(2)) * unit
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\b(hourly|daily|nightly|weekly|monthly|each night|each day)\b", lowered
    ):
        word = match.group(1).split()[-1]
        period = period or _PERIODS[word]
        spans.append((sentence.start + match.start(), sentence.start + match.end()))
    for match in re.finditer(
        r"\b(once|twice|thrice|\w+\s+times|\d+x)\s+(?:(?:an?|per|each)\s+"
        r"(second|minute|day|hour|week|night|month)|(hourly|daily|nightly|weekly|monthly))\b",
        lowered,
    ):
        said, unit, adverb = match.groups()
        if _CAP.search(lowered[: match.start()]):
            continue  # "at most once per minute" limits how often; it does not schedule
        # "sampled once per second", "three times a day", "twice daily"
        words = said.split()
        times_a = _ONCE.get(words[-1]) or NUMBER_WORDS.get(words[0])
        if times_a is None and words[0].rstrip("x").isdigit():
            times_a = int(words[0].rstrip("x"))  # "6x a day"
        unit = unit or _ADVERB_UNITS[adverb]
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
        rf"\b(?:on\s+)?{_DAY_NAME}\b(?:\s*(?:-|to|through)\s*{_DAY_NAME}\b)?",
        lowered,
    ):
        first, last = match.groups()
        # "mon", "sun" and "sat" are days only after "on", "every" or "each" ("every Mon")
        if match.group(0).strip() in ("mon", "sun", "sat") and not (
            match.group(0).startswith("on")
            or re.search(r"\b(?:every|each)\s+$", lowered[: match.start()])
        ):
            continue
        # "Sunday's data", "Monday dashboards": a day that says which, not when
        following = re.match(r"(?:'s|\u2019s)|\s+([a-z]+)", lowered[match.end() :])
        if following and (
            following.group(1) is None
            or (following.group(1) not in STOPWORDS and following.group(1) not in _WHEN)
        ):
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
    # what runs: the words of the sentence, an identifier's among them
    # ("reconcile-settlements", "cmd/reconcile")
    subject = frozenset(
        word
        for t in sentence.tokens
        if t.word not in _PERIODS
        and not _DAY_WORD.fullmatch(t.word)
        and t.word not in _NOT_SUBJECTS
        for word in meant(t)
    )
    span = (min(s for s, _ in spans), max(e for _, e in spans))
    return [Schedule(period, frozenset(times), frozenset(days), subject, span)]


def schedules_disagree(a: Schedule, b: Schedule) -> bool:
    if a.period is not None and b.period is not None and a.period != b.period:
        return True
    # some days of the week against every day ("Monday to Friday only" / "0 5 * * *")
    for some, every in ((a, b), (b, a)):
        if (
            0 < len(some.days) < 7
            and some.period != 86400  # "daily at 06:00; on Mondays it also ..."
            and every.period == 86400
            and not every.days
        ):
            return True
    if a.times and b.times and a.times.isdisjoint(b.times):
        return True
    return bool(a.days and b.days and a.days.isdisjoint(b.days))
