"""Template filters of the review pages."""

from __future__ import annotations

from django import template

from policies.jobs import label

register = template.Library()


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
