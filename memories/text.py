"""Validation and normalisation of what agents and humans write into memories."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from django.conf import settings
from django.core.exceptions import ValidationError

_KEEP_CONTROL = {"\n", "\t"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def strip_control_characters(text: str) -> str:
    """Remove control and format characters (keeping newlines and tabs)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        ch
        for ch in text
        if ch in _KEEP_CONTROL or unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Co"}
    )


def clean_content(content: object) -> str:
    """Content as stored: a non-empty string without control characters, length-limited."""
    if not isinstance(content, str):
        raise ValidationError({"content": "Content must be a string."})
    cleaned = strip_control_characters(content).strip()
    if not cleaned:
        raise ValidationError({"content": "Content must not be empty."})
    limit = settings.MEMORY_CONTENT_MAX_CHARS
    if len(cleaned) > limit:
        raise ValidationError(
            {"content": f"Content is {len(cleaned)} characters long; the limit is {limit}."}
        )
    return cleaned


def clean_tags(tags: object) -> list[str]:
    """Tags as stored: stripped, non-empty, unique (first wins), bounded in count and length."""
    if tags is None:
        return []
    if isinstance(tags, str) or not isinstance(tags, list | tuple):
        raise ValidationError({"tags": "Tags must be a list of strings."})
    cleaned: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError({"tags": f"Tag {tag!r} is not a string."})
        value = strip_control_characters(tag).strip()
        if not value:
            raise ValidationError({"tags": "Tags must not be empty."})
        if len(value) > settings.MEMORY_TAG_MAX_CHARS:
            raise ValidationError(
                {
                    "tags": f"Tag {value[:40]!r}... is {len(value)} characters long; "
                    f"the limit is {settings.MEMORY_TAG_MAX_CHARS}."
                }
            )
        if value not in cleaned:
            cleaned.append(value)
    if len(cleaned) > settings.MEMORY_MAX_TAGS:
        raise ValidationError(
            {"tags": f"{len(cleaned)} tags given; the limit is {settings.MEMORY_MAX_TAGS}."}
        )
    return cleaned


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
