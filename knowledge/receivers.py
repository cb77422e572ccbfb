"""What the knowledge layer does when the store writes (memories.hooks)."""

from __future__ import annotations

from typing import Any

from knowledge import embeddings, entities, pairs
from memories.hooks import MemoriesWritten


def reread(*, written: MemoriesWritten, **kwargs: Any) -> None:
    """In the writing transaction: embed the memories whose words are new, read the
    entities of those whose content, summary or tags changed, then compare the new words and
    the memories that became active with their candidates (repeats and conflicts). A memory
    that became active kept its mentions."""
    if written.new_words:
        embeddings.refresh(list(written.new_words))
    if written.new_names:
        entities.refresh(written.new_names)
    pairs.find([*written.new_words, *written.activated], found_by=written.actor_label)
