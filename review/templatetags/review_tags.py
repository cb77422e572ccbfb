"""Template filters of the review pages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

from policies.jobs import label

register = template.Library()


@register.filter
def marked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` escaped, with the ``spans`` (offsets; overlapping ones joined) in
    ``<mark>``, line breaks kept: the words a pair's evidence says disagree."""
    joined: list[list[int]] = []
    for start, end in sorted(spans):
        if joined and start <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], end)
        else:
            joined.append([start, end])
    pieces, at = [], 0
    for start, end in joined:
        pieces.append(escape(text[at:start]))
        pieces.append(format_html("<mark>{}</mark>", text[start:end]))
        at = end
    pieces.append(escape(text[at:]))
    # Every piece is escaped above.
    return mark_safe("".join(pieces).replace("\n", "<br>"))


@register.filter
def undo_events(tags: str) -> str:
    """The history rows a message offers to undo ("12,13"), from its ``undo:`` tag."""
    for tag in (tags or "").split():
        if tag.startswith("undo:"):
            return tag.removeprefix("undo:")
    return ""


@register.filter
def job_label(name: str) -> str:
    """A policy job's name in words ("decay_memories" -> "Confidence decay")."""
    return label(name)


@register.filter
def readable(value: Any) -> str:
    """A value of a history row as a person reads it: a date as a date, a list as its
    items, nothing as a dash (not ``['src/core/**']`` or a raw ISO string)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(readable(item) for item in value) if value else "none"
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and "T" in value:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
        return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")
    return str(value)


@register.filter
def as_json(value: Any) -> str:
    """A preference's value as JSON reads (a string as it is)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
