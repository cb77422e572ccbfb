"""What the knowledge layer does when the store writes (memories.hooks)."""

from __future__ import annotations

from typing import Any

from knowledge import embeddings, pairs
from memories.hooks import MemoriesWritten


def reread(*, written: MemoriesWritten, **kwargs: Any) -> None:
    """In the writing transaction: embed the memories whose words are new, then compare them
    and those that became active with their candidates (repeats and conflicts)."""
    embeddings.refresh(list(written.new_words))
    pairs.find([*written.new_words, *written.activated], found_by=written.actor_label)
