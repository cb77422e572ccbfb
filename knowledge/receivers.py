"""What the knowledge layer does when the store writes (memories.hooks)."""

from __future__ import annotations

from typing import Any

from knowledge import embeddings, entities, pairs
from memories.hooks import MemoriesWritten


def reread(*, written: MemoriesWritten, **kwargs: Any) -> None:
    """In the writing transaction: embed the memories whose words are new and read the
    entities they mention, then compare them and those that became active with their
    candidates (repeats and conflicts). A memory that became active kept its mentions."""
    embeddings.refresh(list(written.new_words))
    if written.new_words:
        entities.refresh(written.new_words)
    pairs.find([*written.new_words, *written.activated], found_by=written.actor_label)
