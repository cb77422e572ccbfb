"""Entities a request names (identifiers, package names, paths): how much of them a memory
mentions (pure).

An entity is mentioned when the memory's content holds it as a whole word (``url_for`` is
not mentioned by ``url_for_endpoint``), ignoring case, or when one of its tags matches it as
a path (``src/auth/**`` mentions ``src/auth/login.py``). The part is the share of the
request's entities a memory mentions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from memories.tags import tag_matches_scope

MAX_ENTITIES = 50
ENTITY_MAX_CHARS = 200


@lru_cache(maxsize=4096)
def _pattern(entity: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(entity)}(?![\w])", re.IGNORECASE)


def mentions(entity: str, content: str, tags: Sequence[str]) -> bool:
    if _pattern(entity).search(content):
        return True
    return "/" in entity and any(tag_matches_scope(tag, [entity]) for tag in tags)


def entity_share(entities: Sequence[str], content: str, tags: Sequence[str]) -> float:
    """The share of ``entities`` that a memory with ``content`` and ``tags`` mentions."""
    if not entities:
        return 0.0
    found = sum(1 for entity in entities if mentions(entity, content, tags))
    return round(found / len(entities), 6)
