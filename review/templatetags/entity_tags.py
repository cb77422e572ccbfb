"""The entities a memory names, linked to their pages (review/entities.py), for the memory
page."""

from __future__ import annotations

from typing import Any

from django import template

from knowledge import graph

register = template.Library()


@register.inclusion_tag("review/memory_entities.html")
def memory_entities(memory: Any) -> dict[str, Any]:
    return {"entities": graph.memory_entities(memory_id=memory.pk)}
