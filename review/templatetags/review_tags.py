"""Template filters of the review pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def undo_events(tags: str) -> str:
    """The history rows a message offers to undo ("12,13"), from its ``undo:`` tag."""
    for tag in (tags or "").split():
        if tag.startswith("undo:"):
            return tag.removeprefix("undo:")
    return ""
