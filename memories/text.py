"""Validation and normalisation of what agents and humans write into memories."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError

from memories.folding import visible
from memories.tags import glob_problem

_KEEP_CONTROL = {"\n", "\t"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
WRITE_SCOPE_MAX_ENTRIES = 100
WRITE_SCOPE_ENTRY_MAX_CHARS = 500


def is_whole_number(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also says yes to superscripts and to other
    scripts' digits, which ``int`` refuses or reads as another number."""
    return text.isascii() and text.isdigit()


def as_id(text: str) -> int | None:
    """``text`` as a row id (ASCII digits that fit a bigint), else None."""
    return int(text) if is_whole_number(text) and len(text) < 19 else None


def strip_control_characters(text: str) -> str:
    """Remove control characters (keeping newlines and tabs) and lone surrogates, which
    PostgreSQL cannot store. Format characters stay: the zero-width joiner of an emoji
    sequence or the non-joiner of Persian text is part of the text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        ch for ch in text if ch in _KEEP_CONTROL or unicodedata.category(ch) not in {"Cc", "Cs"}
    )


def clean_content(content: object) -> str:
    """Content as stored: a non-empty string without control characters, length-limited."""
    if not isinstance(content, str):
        raise ValidationError({"content": "Content must be a string."})
    cleaned = strip_control_characters(content).strip()
    if not visible(cleaned).strip():  # nothing a person would see
        raise ValidationError({"content": "Content must not be empty."})
    limit = settings.MEMORY_CONTENT_MAX_CHARS
    if len(cleaned) > limit:
        raise ValidationError(
            {"content": f"Content is {len(cleaned)} characters long; the limit is {limit}."}
        )
    return cleaned


def _clean_strings(
    values: object,
    *,
    field: str,
    noun: str,
    max_items: int,
    max_chars: int,
    patterns: bool = False,
) -> list[str]:
    """A list of stripped, non-empty, unique (first wins) strings, bounded in count and length
    (with ``patterns``, each glob also in complexity: memories.tags.glob_problem)."""
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise ValidationError({field: f"{noun.capitalize()}s must be a list of strings."})
    cleaned: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise ValidationError({field: f"{noun.capitalize()} {value!r} is not a string."})
        text = strip_control_characters(value).strip()
        if not text:
            raise ValidationError({field: f"{noun.capitalize()}s must not be empty."})
        if len(text) > max_chars:
            raise ValidationError(
                {
                    field: f"{noun.capitalize()} {text[:40]!r}... is {len(text)} characters long; "
                    f"the limit is {max_chars}."
                }
            )
        problem = glob_problem(text) if patterns else None
        if problem is not None:
            raise ValidationError({field: problem})
        if text not in cleaned:
            cleaned.append(text)
    if len(cleaned) > max_items:
        raise ValidationError({field: f"{len(cleaned)} {noun}s given; the limit is {max_items}."})
    return cleaned


def clean_tags(tags: object) -> list[str]:
    return _clean_strings(
        tags,
        field="tags",
        noun="tag",
        max_items=settings.MEMORY_MAX_TAGS,
        max_chars=settings.MEMORY_TAG_MAX_CHARS,
        patterns=True,
    )


def clean_write_scope(write_scope: object) -> list[str]:
    """A run's write scope: paths and globs."""
    return _clean_strings(
        list(write_scope) if isinstance(write_scope, tuple) else write_scope,
        field="write_scope",
        noun="write scope entry",
        max_items=WRITE_SCOPE_MAX_ENTRIES,
        max_chars=WRITE_SCOPE_ENTRY_MAX_CHARS,
        patterns=True,
    )


CHANGED_PATHS_MAX = 500


def clean_changed_paths(paths: object) -> list[str]:
    """The paths (or globs) a commit changed, as a write scope is cleaned."""
    return _clean_strings(
        paths,
        field="paths",
        noun="path",
        max_items=CHANGED_PATHS_MAX,
        max_chars=WRITE_SCOPE_ENTRY_MAX_CHARS,
        patterns=True,
    )


def content_hash(content: str) -> str:
    """sha256 of the content with white space folded and case ignored (for dedup)."""
    folded = " ".join(content.split()).casefold()
    return hashlib.sha256(folded.encode()).hexdigest()


def summarize(content: str) -> str:
    """The macro level of detail: the first sentence, cut to the summary limit."""
    limit = settings.MEMORY_SUMMARY_MAX_CHARS
    first = _SENTENCE_END.split(" ".join(content.split()), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[: limit - 1].rstrip() + "…"


def to_utc(value: datetime, field: str) -> datetime:
    """An aware date-time in UTC. PostgreSQL takes offsets only up to 15:59 and years from 1;
    Python allows more, so everything is normalised before it reaches the database."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError({field: "Must be a date-time with a time zone."})
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValidationError({field: "Is out of the supported range of dates."}) from None
