"""Rendering: the ``## Memories`` section and the whole prompt, in the seed's section order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MEMORIES_TITLE = "## Memories"

# The prompt's sections in order; Memories sits between Read First and Constraints.
PROMPT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("role", "## Role"),
    ("task", "## Task"),
    ("workspace", "## Workspace"),
    ("readFirst", "## Read First"),
    ("memories", MEMORIES_TITLE),
    ("constraints", "## Constraints"),
    ("retryDigest", "## Retry Digest"),
    ("outputFormat", "## Output Format"),
)
PROMPT_PARTS = tuple(key for key, _ in PROMPT_SECTIONS if key != "memories")


def memory_line(memory_type: str, text: str, memory_id: int | None = None) -> str:
    """One memory as one line: ``- [type] content`` (white space folded, so a line stays one),
    or ``- [type #id] content`` with its id, for an agent that will name it back."""
    label = memory_type if memory_id is None else f"{memory_type} #{memory_id}"
    return f"- [{label}] {' '.join(text.split())}"


def render_section(lines: Sequence[str]) -> str:
    """The Memories section, or nothing when no memory is chosen."""
    if not lines:
        return ""
    return "\n".join([MEMORIES_TITLE, *lines])


def render_prompt(parts: Mapping[str, str], memories_section: str) -> str:
    """The whole prompt: the given sections in the seed's order, empty ones left out."""
    blocks = []
    for key, title in PROMPT_SECTIONS:
        if key == "memories":
            if memories_section:
                blocks.append(memories_section)
            continue
        body = (parts.get(key) or "").strip()
        if body:
            blocks.append(f"{title}\n{body}")
    return "\n\n".join(blocks)
