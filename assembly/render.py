"""Rendering: the ``## Memories`` section, a user's ``## Preferences`` before it, and the whole
prompt, in the seed's section order."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MEMORIES_TITLE = "## Memories"
PREFERENCES_TITLE = "## Preferences"

# The prompt's sections in order; Memories sits between Read First and Constraints.
PROMPT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("role", "## Role"),
    ("task", "## Task"),
    ("workspace", "## Workspace"),
    ("readFirst", "## Read First"),
    ("preferences", PREFERENCES_TITLE),
    ("memories", MEMORIES_TITLE),
    ("constraints", "## Constraints"),
    ("retryDigest", "## Retry Digest"),
    ("outputFormat", "## Output Format"),
)
PROMPT_PARTS = tuple(key for key, _ in PROMPT_SECTIONS if key not in ("memories", "preferences"))


def memory_line(memory_type: str, text: str, memory_id: int | None = None) -> str:
    """One memory as one line: ``- [type] content`` (white space folded, so a line stays one),
    or ``- [type #id] content`` with its id, for an agent that will name it back."""
    label = memory_type if memory_id is None else f"{memory_type} #{memory_id}"
    return f"- [{label}] {' '.join(text.split())}"


def preference_line(key: str, value: Any) -> str:
    """One preference as one line: ``- key: value`` (a value other than a string as compact
    JSON; white space folded, so a line stays one)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"- {key}: {' '.join(text.split())}"


def render_section(lines: Sequence[str], title: str = MEMORIES_TITLE) -> str:
    """The Memories section (or another, by its ``title``), or nothing when no line is
    chosen."""
    if not lines:
        return ""
    return "\n".join([title, *lines])


def render_sections(preferences_section: str, memories_section: str) -> str:
    """A user's preferences, then the memories: the sections that are not empty."""
    return "\n\n".join(s for s in (preferences_section, memories_section) if s)


def render_prompt(
    parts: Mapping[str, str], memories_section: str, preferences_section: str = ""
) -> str:
    """The whole prompt: the given sections in the seed's order, empty ones left out."""
    blocks = []
    given = {"memories": memories_section, "preferences": preferences_section}
    for key, title in PROMPT_SECTIONS:
        if key in given:
            if given[key]:
                blocks.append(given[key])
            continue
        body = (parts.get(key) or "").strip()
        if body:
            blocks.append(f"{title}\n{body}")
    return "\n\n".join(blocks)
